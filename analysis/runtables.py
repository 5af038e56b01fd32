"""Shared input and output of the paper 000 section 2 analyses (cmp_stacking, io_latency,
llc_miss, implicit_io): the collected job and run tables, each run's tidy monitor tables, the
T_k / T_1 ratio with its confidence interval, and the parts every report section shares.

Inputs (written by analysis.collect and the runner)
  jobs.csv   one row per job: run_id, the run's labels (k, rep, ...), cmp, job_id, runtime_s,
             exit_code and the job's own JSON output as result_* columns.
  runs.csv   one row per run: run_id, labels, variant, throttle_read_bps, device,
             memory_limit_bytes, caches_dropped, duration_s, status, metadata_path, run_dir.
             Relative paths are read from the runs.csv folder, else from the current directory.
  <run_dir>/tidy/<monitor>.csv   iostat, psi, perf, memory (see corun/monitors/*.py).

Tidy tables that are absent (monitor disabled, or the run was shorter than one interval) or
have no rows give a reason instead of a table: the metric they feed is missing with that
reason, never zero. `MissingLog` counts such reasons per metric, like the runs' own `missing`
records (analysis.runmeta.collect_missing), and the section lists both.

Intervals of the run: rows whose sampling interval ends inside the run, 0 < t_s <= duration_s
(t_s counts from the run start); every row with t_s > 0 when duration_s is unknown.

Ratio to k = 1 (`ratio_table`, paper eq. 1: T_k-c / T_1-c)
  T_1      mean time of the group's valid k = 1 jobs, all reps pooled.
  ratio    T_k / T_1, T_k the mean time of the group's valid jobs at k, all reps pooled.
  95% CI   t-interval over the per-rep ratios (each rep's mean time / T_1), T_1 held fixed;
           NaN with fewer than 2 reps.
"""

from __future__ import annotations

import json
import math
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runmeta
from analysis.common import (
    AnalysisInputError,
    check_columns,
    check_ints,
    dumps_json,
    fmt_num,
    read_csv,
    resolve_run_paths,
    table_to_csv,
    validate,
    write_atomic,
)
from analysis.figures import log2_k_axis, no_data, save_png  # noqa: F401 - the figures' helpers, here too
from analysis.stats import t_interval

TIDY_DIR = "tidy"
TIDY_TEXT_COLUMNS = {"iostat": ["device"], "psi": ["resource"], "perf": ["event", "unit"]}


# ----------------------------------------------------------------------------- input tables


def read_table(
    path: str | os.PathLike,
    *,
    required: list[str],
    ints: dict[str, int | None],
    floats: list[str] = (),
    texts: list[str] = (),
    experiments: tuple[str, ...] = (),
    what: str = "one row per job",
) -> pd.DataFrame:
    """A collected CSV: columns checked, integers and floats typed, one-line errors.

    With `experiments`, an `experiment` column (when present) must hold one of them.
    """
    df = read_csv(path, ["run_id", *texts])
    return check_table(df, str(path), required=required, ints=ints, floats=floats, experiments=experiments, what=what)


def check_table(
    df: pd.DataFrame,
    source: str,
    *,
    required: list[str],
    ints: dict[str, int | None],
    floats: list[str] = (),
    experiments: tuple[str, ...] = (),
    what: str = "one row per job",
) -> pd.DataFrame:
    """`read_table`'s checks on a table already read (an analysis' inputs): columns, rows, the
    experiment, integers and floats typed; one-line errors naming `source`."""
    check_columns(df, required, source)
    if df.empty:
        raise AnalysisInputError(f"{source}: no rows (expected {what})")
    if experiments and "experiment" in df.columns:
        values = df["experiment"].astype(str)
        bad = df["experiment"].notna() & ~values.isin(experiments)
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise AnalysisInputError(
                f"{source}: row {row + 2}: experiment: {values.iloc[row]!r} "
                f"(expected {' or '.join(repr(e) for e in experiments)})"
            )
    df = check_ints(df, ints, source)
    for col in floats:
        if col in df.columns:
            df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    return df


def optional_ints(df: pd.DataFrame, columns: dict[str, int], source: str) -> pd.DataFrame:
    """Nullable integer columns (Int64): empty cells stay missing, anything else must be an
    integer >= its minimum; an absent column is added, all missing."""
    df = df.copy()
    for col, minimum in columns.items():
        if col not in df.columns:
            df[col] = pd.array([pd.NA] * len(df), dtype="Int64")
            continue
        raw = df[col]
        num = pd.to_numeric(raw, errors="coerce")
        bad = raw.notna() & (num.isna() | (num != np.floor(num)) | (num < minimum))
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            raise AnalysisInputError(
                f"{source}: row {row + 2}: {col}: {raw.iloc[row]!r} (expected an integer >= {minimum} or empty)"
            )
        df[col] = num.astype("Int64")
    return df


def one_variant(runs: pd.DataFrame, runs_csv: str | os.PathLike) -> str:
    variants = sorted(runs["variant"].dropna().astype(str).unique())
    if len(variants) != 1:
        raise AnalysisInputError(f"{runs_csv}: variant: {variants!r} (expected exactly one scheduler variant)")
    return variants[0]


def valid_jobs_mask(jobs: pd.DataFrame, check_required: bool = True) -> pd.Series:
    """True for jobs that count: exit code 0, finite positive runtime_s and self-check 'ok'.

    With check_required False a job without a self-check (empty result_check, or no such
    column: a program that prints no JSON) counts too; a check other than 'ok' never does.
    """
    runtime = jobs["runtime_s"]
    ok = (jobs["exit_code"] == 0) & np.isfinite(runtime) & (runtime > 0)
    if "result_check" not in jobs.columns:
        return ok & (not check_required)
    check = jobs["result_check"]
    if check_required:
        return ok & (check.fillna("") == "ok")
    return ok & (check.isna() | (check.astype(str).str.strip() == "") | (check == "ok"))


def one_value(series: pd.Series, what: str, where: str) -> object:
    """The single distinct non-empty value of a per-group column, or a one-line error."""
    values = series.dropna().unique()
    if len(values) > 1:
        shown = sorted(str(v) for v in values)
        raise AnalysisInputError(f"jobs: {where}: {what}: {shown} (expected one value)")
    return values[0] if len(values) else None


def run_dirs(runs: pd.DataFrame, runs_csv: str | os.PathLike) -> dict[str, Path]:
    """run_id -> the run's folder (relative paths as for metadata_path)."""
    paths = resolve_run_paths(runs, runs_csv, "run_dir")
    return dict(zip(runs["run_id"].astype(str), paths))


def load_tidy(run_dir: Path, name: str) -> tuple[pd.DataFrame | None, str | None]:
    """(table, None) or (None, reason) for <run_dir>/tidy/<name>.csv."""
    path = Path(run_dir) / TIDY_DIR / f"{name}.csv"
    if not path.is_file():
        return None, f"{TIDY_DIR}/{name}.csv absent (monitor disabled or run too short)"
    try:
        df = pd.read_csv(path, dtype={c: "str" for c in TIDY_TEXT_COLUMNS.get(name, [])})
    except pd.errors.EmptyDataError:
        return None, f"{TIDY_DIR}/{name}.csv empty (no sample)"
    except (pd.errors.ParserError, UnicodeDecodeError) as exc:
        raise AnalysisInputError(f"{path}: not a readable CSV ({exc})") from None
    if df.empty:
        return None, f"{TIDY_DIR}/{name}.csv has no rows (no sample)"
    if "t_s" not in df.columns:
        raise AnalysisInputError(f"{path}: columns: t_s absent (expected a tidy monitor table)")
    return df, None


def in_run(df: pd.DataFrame, duration_s: float | None) -> pd.DataFrame:
    """Rows whose interval ends inside the run: 0 < t_s <= duration_s (see module doc)."""
    t = pd.to_numeric(df["t_s"], errors="coerce")
    keep = t > 0
    if duration_s is not None and math.isfinite(duration_s):
        keep &= t <= duration_s
    return df[keep]


def device_rows(df: pd.DataFrame, device: object) -> tuple[pd.DataFrame | None, str, str | None]:
    """(rows, device name, None) of an iostat table for the run's device, or (None, name, why).

    An empty `device` (runs.csv) is accepted when the table lists exactly one device.
    """
    devices = sorted(df["device"].dropna().astype(str).unique())
    if isinstance(device, str) and device.strip():
        name = device.strip().removeprefix("/dev/")
        rows = df[df["device"].astype(str) == name]
        if rows.empty:
            return None, name, f"iostat lists no rows for device {name} ({', '.join(devices)})"
        return rows, name, None
    if len(devices) == 1:
        return df, devices[0], None
    return None, "", f"runs.csv device empty and iostat lists {len(devices)} devices"


def number_or_none(value: object) -> float | None:
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


class MissingLog:
    """Metrics the analysis could not compute, counted per (metric, reason, source) over runs."""

    def __init__(self) -> None:
        self._runs: dict[tuple[str, str, str], set[str]] = {}

    def add(self, metric: str, reason: str, source: str, run_id: str) -> None:
        self._runs.setdefault((metric, reason, source), set()).add(run_id)

    def records(self) -> list[dict]:
        return [{"metric": m, "reason": r, "source": s, "runs": len(ids)} for (m, r, s), ids in self._runs.items()]


# ----------------------------------------------------------------------------- ratio to k = 1


RATIO_COLUMNS = [
    "k",
    "n_reps",
    "n_jobs",
    "n_failed",
    "mean_time_s",
    "t1_s",
    "ratio",
    "ci95_low",
    "ci95_high",
    "reason",
]


def ratio_table(jobs: pd.DataFrame, valid: pd.Series, key: str, time_col: str) -> pd.DataFrame:
    """One row per (key, k): T_k / T_1 with its 95% CI over reps (see module doc)."""
    rows = []
    for value, g in jobs.groupby(key, sort=True):
        gv = g[valid.loc[g.index] & np.isfinite(g[time_col])]
        k1 = gv[gv["k"] == 1]
        t1 = float(k1[time_col].mean()) if len(k1) else math.nan
        group_reason = "" if len(k1) else "no valid k=1 job: T_1 undefined"
        for k, gk in g.groupby("k", sort=True):
            vk = gv[gv["k"] == k]
            row = {
                key: value,
                "k": int(k),
                "n_reps": int(vk["rep"].nunique()),
                "n_jobs": len(vk),
                "n_failed": len(gk) - len(vk),
                "mean_time_s": float(vk[time_col].mean()) if len(vk) else math.nan,
                "t1_s": t1,
                "ratio": math.nan,
                "ci95_low": math.nan,
                "ci95_high": math.nan,
                "reason": group_reason,
            }
            if not group_reason and vk.empty:
                row["reason"] = f"no valid job at k={k}"
            elif not group_reason:
                row["ratio"] = row["mean_time_s"] / t1
                per_rep = vk.groupby("rep")[time_col].mean().to_numpy() / t1
                row["ci95_low"], row["ci95_high"] = t_interval(per_rep)
            rows.append(row)
    return pd.DataFrame(rows, columns=[key, *RATIO_COLUMNS])


def exceeds(ratio: float, low: float, n_reps: int, threshold: float) -> bool | None:
    """Above `threshold`: the CI lower bound with >= 2 reps, else the point estimate."""
    if not math.isfinite(ratio):
        return None
    return bool(low > threshold) if n_reps >= 2 else bool(ratio > threshold)


# ----------------------------------------------------------------------------- section


def records(table: pd.DataFrame, digits: int | None = None) -> list[dict]:
    """Rows as plain dicts: NaN and NA become None, numpy numbers plain Python numbers; with
    `digits`, floats rounded to that many decimals (no 21.999999999999996 in a report)."""
    out = []
    for row in table.to_dict(orient="records"):
        clean = {}
        for k, v in row.items():
            if v is pd.NA or v is pd.NaT:
                v = None
            elif isinstance(v, np.generic):
                v = v.item()
            if isinstance(v, float) and not math.isfinite(v):
                v = None
            elif isinstance(v, float) and digits is not None:
                v = round(v, digits) + 0.0
            clean[k] = v
        out.append(clean)
    return out


def section_missing(metadata_paths: list[Path], log: MissingLog) -> list[dict]:
    """The runs' own missing records, then the analysis' (a tidy table absent, no I/O, ...)."""
    return runmeta.collect_missing(metadata_paths) + log.records()


def run_summaries(metadata_paths: list[Path]) -> list[dict]:
    return [runmeta.summarize_metadata(p) for p in metadata_paths]


def throttle_values(runs: pd.DataFrame) -> list[float]:
    """Distinct read caps (B/s) of the runs; empty when no run was throttled."""
    values = pd.to_numeric(runs["throttle_read_bps"], errors="coerce")
    return sorted(float(v) for v in values.dropna().unique() if v > 0)


def throttle_note(caps: list[float], consequence: str, lead: str = "Runs throttled to a read cap of") -> list[str]:
    """The report note on the runs' read caps (throttle_values, B/s): `<lead> <caps in MB/s><consequence>`;
    no note when no run was throttled."""
    if not caps:
        return []
    return [f"{lead} " + ", ".join(f"{fmt_num(c / 1e6)} MB/s" for c in caps) + consequence]


def device_note(metadata_paths: list) -> str:
    """The device the runs read from and the I/O elevator each variant ran on, from the runs'
    metadata (the elevator in effect while the jobs ran); a report note."""
    kinds, presets, elevators = set(), set(), {}
    for p in metadata_paths:
        meta = runmeta.load_metadata(p)
        kinds.add(meta.get("device_kind") or "throttle")
        if meta.get("device_kind") == "rotating_disk":
            presets.add(str((meta.get("device_setup") or {}).get("preset")))
        variant = str((meta.get("scheduler") or {}).get("name"))
        elevators.setdefault(variant, set()).add(str((meta.get("device") or {}).get("elevator")))
    if not elevators:
        return "No run metadata: the device and its elevator are not known."
    where = (
        f"an emulated rotating disk built for each run (preset {', '.join(sorted(presets))})"
        if kinds == {"rotating_disk"}
        else "the disk holding the data folder"
        if kinds == {"throttle"}
        else f"devices of several kinds ({', '.join(sorted(kinds))})"
    )
    per = "; ".join(f"{v}: {', '.join(sorted(e))}" for v, e in sorted(elevators.items()))
    disk = (
        " iostat, the elevator and any cap act on the disk's loop device; its one actuator serves one "
        "request at a time, so there the serving time derived from %util holds."
        if "rotating_disk" in kinds
        else ""
    )
    return (
        f"The runs read from {where}.{disk} I/O elevator of the device under test while the jobs ran: {per}. "
        "CFQ, the default elevator of the Linux of paper 000's time, was removed in Linux 5.0 with the "
        "single-queue block layer; bfq (elevator_bfq) is its nearest successor, mq-deadline the default "
        "for rotating disks."
    )


def write_outputs(
    out_dir: str | os.PathLike,
    section: dict,
    tables: dict[str, pd.DataFrame | str],
    plots: list[Callable[[Path], None]] = (),
) -> Path:
    """Validate the section first, then write the tables (a DataFrame as CSV, text as is), the
    figures (each callable gets the output folder) and section.json last."""
    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    validate(section, "section.schema.json", str(out / "section.json"))
    for name, table in tables.items():
        write_atomic(out / name, table if isinstance(table, str) else table_to_csv(table))
    for plot in plots:
        plot(out)
    write_atomic(out / "section.json", dumps_json(section))
    return out


# ----------------------------------------------------------------------------- runs for the claims


def run_status(jobs: pd.DataFrame, runs: pd.DataFrame, valid: pd.Series) -> pd.DataFrame:
    """One row per run of runs.csv: run_id, n_jobs, n_failed, failed, failed_reason.

    A run failed when one of its jobs does not count (`valid`: exit code, runtime, self-check),
    when it has no job, or when its status (runs.csv, when present) is not ok: its mean over the
    jobs that count would favour the point whose slow jobs failed, so a claim on it says failed.
    """
    ids = jobs["run_id"].astype(str)
    rows = []
    for _, r in runs.iterrows():
        rid = str(r["run_id"])
        mine = ids == rid
        n_jobs = int(mine.sum())
        n_bad = int((mine & ~valid).sum())
        reasons = []
        if not n_jobs:
            reasons.append("no job")
        elif n_bad:
            reasons.append(f"{n_bad} of {n_jobs} jobs failed (exit code, runtime or self-check)")
        status = r.get("status")
        if isinstance(status, str) and status.strip() and status.strip() != "ok":
            reasons.append(f"status {status.strip()}")
        rows.append(
            {
                "run_id": rid,
                "n_jobs": n_jobs,
                "n_failed": n_bad,
                "failed": bool(reasons),
                "failed_reason": "; ".join(reasons),
            }
        )
    return pd.DataFrame(rows, columns=["run_id", "n_jobs", "n_failed", "failed", "failed_reason"])


def run_means(jobs: pd.DataFrame, runs: pd.DataFrame, valid: pd.Series, column: str = "runtime_s") -> dict:
    """Per run of runs.csv, by run_id: n_jobs, n_failed, mean_<column> over its valid jobs (NaN
    when none), failed, failed_reason (run_status: a failed run is never a point of a claim)."""
    ok = jobs[valid]
    means = ok.groupby(ok["run_id"].astype(str))[column].mean()
    out = {}
    for s in run_status(jobs, runs, valid).to_dict("records"):
        rid = s["run_id"]
        out[rid] = {
            "n_jobs": int(s["n_jobs"]),
            "n_failed": int(s["n_failed"]),
            f"mean_{column}": float(means.get(rid, math.nan)),
            "failed": bool(s["failed"]),
            "failed_reason": s["failed_reason"],
        }
    return out


def ratio_to_k1(per_run: pd.DataFrame, by: list[str], metrics: dict[str, str]) -> pd.DataFrame:
    """Each run at k > 1 over the k = 1 run of the same group (the columns `by`) and rep: the
    ratio paired by rep, one row per run at k > 1.

    per_run has run_id, the `by` columns, k, rep, failed, failed_reason and the metric columns;
    for each metric column m the result has metrics[m] = m(k, rep) / m(1, rep), missing when the
    rep has no k = 1 run or either value is missing or <= 0 (`reason` says which). A row is failed
    when its run or that k = 1 run failed; failed_reason names the k = 1 run when it is that one.
    """
    keys = [*by, "rep"]
    base = per_run[per_run["k"] == 1]
    dup = base[base.duplicated(keys, keep=False)]
    if len(dup):
        where = ", ".join(f"{c} {dup.iloc[0][c]}" for c in keys)
        raise AnalysisInputError(
            f"runs: {where}: k = 1 in runs {', '.join(sorted(dup['run_id'].astype(str)))} (expected one run)"
        )
    base = {tuple(r[c] for c in keys): r for _, r in base.iterrows()}
    rows = []
    for _, r in per_run[per_run["k"] > 1].iterrows():
        b = base.get(tuple(r[c] for c in keys))
        row = {c: r[c] for c in ["run_id", *by, "k", "rep"]}
        row["k1_run_id"] = None if b is None else b["run_id"]
        reasons, failed = [], [str(r["failed_reason"])] if bool(r["failed"]) else []
        if b is None:
            reasons.append(f"no k = 1 run in rep {r['rep']}")
        elif bool(b["failed"]):
            failed.append(f"its k = 1 run {b['run_id']}: {b['failed_reason']}")
        for m, out in metrics.items():
            head = number_or_none(r[m])
            low = None if b is None else number_or_none(b[m])
            if head is not None and low is not None and head > 0 and low > 0:
                row[out] = head / low
                continue
            row[out] = math.nan
            if b is not None:
                reasons.append(f"no {out}: {m} {_shown(head)} at k = {r['k']}, {_shown(low)} at k = 1")
        row["failed"] = bool(failed)
        row["failed_reason"] = "; ".join(failed)
        row["reason"] = "; ".join(reasons)
        rows.append(row)
    columns = ["run_id", *by, "k", "rep", "k1_run_id", *metrics.values(), "failed", "failed_reason", "reason"]
    out = pd.DataFrame(rows, columns=columns)
    out["failed"] = out["failed"].astype(bool)
    return out


def _shown(value: float | None) -> str:
    return "missing" if value is None else f"{value:.4g}"


def config_section(config: dict | None, name: str, schema_path: str | os.PathLike) -> dict:
    """An experiment's section of the effective configuration; without one (an analysis run on
    tables alone), the defaults of its config.schema.json, where the defaults live."""
    if config and isinstance(config.get(name), dict):
        return config[name]
    schema = json.loads(Path(schema_path).read_text(encoding="utf-8"))
    return {k: p["default"] for k, p in schema.get("properties", {}).items() if "default" in p}

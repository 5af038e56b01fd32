"""The metrics of the implicit_io section (paper 000, Sec. 2.4.2.2, Fig. 8): per run and per level
(scale, edge factor, k). Metrics only; analysis.verdicts judges the claims on the `runs` table.

Definitions (per run; its intervals are monitor rows with 0 < t_s <= duration_s)
  memory utilization  mem_util_pct: the mean over the run's memory.csv intervals of cg_used_pct
                      (usage of the run's memory cgroup over its limit) when the run had a memory
                      cap (runs.csv memory_limit_bytes set), else of mem_used_pct (system-wide,
                      100 x (MemTotal - MemAvailable) / MemTotal); `memory_basis` says which,
                      mem_util_peak_pct is the largest interval value.
  contention share    contention_share: the fraction of the run's sampling intervals that meet the
                      criterion (implicit_io.criterion, METRIC>=NUMBER):
                        psi_io_some_pct / psi_io_full_pct  PSI io rows
                        iostat_util_pct, iostat_await_ms, iostat_wait_ms  iostat rows of the run's
                                                           device (await, wait: NaN without I/O)
                      An interval whose value is NaN does not meet it but counts in the denominator.
  major faults/s      mean of cg_pgmajfault_per_s with a cap, else of pgmajfault_per_s.
  failed run          a job that did not exit 0 with self-check 'ok' (a graph job killed under the
                      cap takes its memory with it), no memory utilization or no contention share
                      (the reason named), a run shorter than MIN_INTERVALS monitor intervals
                      (analysis.run_length), or a run on an emulated disk that failed its
                      calibration.
  level               (scale, edge factor, k): graph_edges = edgefactor x 2^scale, its designed
                      size; below_half: the level's mean memory utilization over its runs is below
                      the paper's onset (50 %, of the cap with one); resolves_rare: its runs
                      together have RARE_TRIALS intervals or more, enough that a share of RARE would
                      show at least one contended interval with 95 % probability.
  per level (table)   reps pooled: memory utilization and major faults are means over all the
                      level's intervals, the share is sum(contended) / sum(intervals); runtime the
                      mean over valid jobs, TEPS the harmonic mean of the jobs' harmonic-mean TEPS
                      (Graph500's result_bfs_harmonic_mean_teps, graph_bfs's
                      result_harmonic_mean_teps), storage the mean result_storage_bytes per job
                      and the sum over a run's jobs (storage_pct_of_memory: that sum over the cap,
                      or over MemTotal without one; graph_bfs reports its storage, Graph500 does
                      not: missing, with the reason, for its jobs).
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from pathlib import Path

import pandas as pd

from analysis import runtables as rt
from analysis.common import AnalysisInputError, fmt_num
from analysis.run_length import short_run_reason

SOURCE = "experiments.implicit_io.metrics"
DEFAULT_CRITERION = "psi_io_some_pct>=10"
RARE = 0.01  # the null of the claim "rare below half" (claims.yaml)
RARE_TRIALS = math.ceil(math.log(0.05) / math.log(1 - RARE))  # 299 intervals
LEVEL = ["scale", "edgefactor", "k"]
# a share of the run's intervals, a mean utilization over them: from fewer than 3 a share is 0,
# 1/2 or 1, no measurement (analysis.run_length; the plan sizes runs to implicit_io.min_intervals)
MIN_INTERVALS = 3

# criterion metric -> (tidy table, column, PSI resource or None)
CRITERIA = {
    "psi_io_some_pct": ("psi", "some_pct", "io"),
    "psi_io_full_pct": ("psi", "full_pct", "io"),
    "iostat_util_pct": ("iostat", "util_pct", None),
    "iostat_await_ms": ("iostat", "await_ms", None),
    "iostat_wait_ms": ("iostat", "wait_ms", None),
}
NUMBER = r"[-+]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][-+]?\d+)?"
CRITERION_RE = re.compile(rf"^\s*([a-z_]+)\s*>=\s*({NUMBER})\s*$")

RUN_COLUMNS = [
    "run_id",
    *LEVEL,
    "rep",
    "level",
    "graph_edges",
    "memory_basis",
    "memory_limit_bytes",
    "n_memory_intervals",
    "mem_util_pct",
    "mem_util_peak_pct",
    "majfault_per_s",
    "criterion",
    "n_intervals",
    "n_contended",
    "contention_share",
    "storage_bytes_run",
    "storage_pct_of_memory",
    "below_half",
    "resolves_rare",
    "n_jobs",
    "n_failed_jobs",
    "failed",
    "failed_reason",
]
LEVEL_COLUMNS = [
    *LEVEL,
    "level",
    "graph_edges",
    "n_runs",
    "n_failed_runs",
    "n_jobs",
    "n_failed_jobs",
    "memory_basis",
    "mem_util_pct",
    "mem_util_peak_pct",
    "below_half",
    "criterion",
    "n_intervals",
    "n_contended",
    "contention_share",
    "resolves_rare",
    "mean_runtime_s",
    "teps_harmonic_mean",
    "storage_bytes_per_job",
    "storage_bytes_run",
    "storage_pct_of_memory",
    "majfault_per_s",
]


@dataclass(frozen=True)
class Criterion:
    metric: str
    threshold: float
    table: str
    column: str
    resource: str | None

    @property
    def text(self) -> str:
        return f"{self.metric}>={fmt_num(self.threshold, 6)}"


def parse_criterion(text: str, key: str = "implicit_io.criterion") -> Criterion:
    """'metric>=number' -> Criterion; anything else is a one-line error naming the key."""
    match = CRITERION_RE.match(text or "")
    metric = match.group(1) if match else None
    if match is None or metric not in CRITERIA:
        raise AnalysisInputError(f"{key}: {text!r} (expected METRIC>=NUMBER with METRIC one of {', '.join(CRITERIA)})")
    threshold = float(match.group(2))
    if not math.isfinite(threshold):
        raise AnalysisInputError(f"{key}: {text!r} (expected a finite number)")
    return Criterion(metric, threshold, *CRITERIA[metric])


def label(scale: int, edgefactor: int) -> str:
    return f"s{scale}/e{edgefactor}"


# ----------------------------------------------------------------------------- per run


def memory_values(run: dict, run_dir: Path | None, log: rt.MissingLog) -> dict:
    """The run's memory utilization intervals and major faults, or why they are missing."""
    cap = rt.number_or_none(run.get("memory_limit_bytes"))
    capped = cap is not None and cap > 0
    basis = "cgroup cap (cg_used_pct)" if capped else "system (mem_used_pct)"
    out = {
        "basis": basis,
        "util": pd.Series(dtype=float),
        "majflt": pd.Series(dtype=float),
        "mem_total_bytes": math.nan,
        "reason": "",
    }
    df, why = rt.load_tidy(run_dir, "memory") if run_dir is not None else (None, "no run folder")
    if df is not None:
        df = rt.in_run(df, rt.number_or_none(run.get("duration_s")))
        column = "cg_used_pct" if capped else "mem_used_pct"
        fault = "cg_pgmajfault_per_s" if capped else "pgmajfault_per_s"
        if df.empty:
            why = "no memory interval inside the run"
        elif column not in df.columns:
            why = f"tidy/memory.csv has no {column} column (memory cgroup not recorded)"
        else:
            out["util"] = pd.to_numeric(df[column], errors="coerce").dropna()
            if fault in df.columns:
                out["majflt"] = pd.to_numeric(df[fault], errors="coerce").dropna()
            if "mem_total_kb" in df.columns:
                total = pd.to_numeric(df["mem_total_kb"], errors="coerce").dropna()
                out["mem_total_bytes"] = float(total.iloc[0]) * 1024 if len(total) else math.nan
            if out["util"].empty:
                why = f"{column} empty in every interval of the run"
    if out["util"].empty:
        out["reason"] = why
        log.add(f"memory utilization ({basis})", why, SOURCE, str(run["run_id"]))
    return out


def contention_values(run: dict, run_dir: Path | None, criterion: Criterion, log: rt.MissingLog):
    """(intervals, intervals meeting the criterion, reason) of one run."""
    df, why = rt.load_tidy(run_dir, criterion.table) if run_dir is not None else (None, "no run folder")
    if df is not None:
        if criterion.resource is not None:
            df = df[df["resource"].astype(str) == criterion.resource]
        else:
            df, _, why = rt.device_rows(df, run.get("device"))
        if df is not None:
            df = rt.in_run(df, rt.number_or_none(run.get("duration_s")))
            if df.empty:
                why = f"no {criterion.table} interval inside the run"
            elif criterion.column not in df.columns:
                why = f"tidy/{criterion.table}.csv has no {criterion.column} column"
            else:
                values = pd.to_numeric(df[criterion.column], errors="coerce")
                return len(values), int((values >= criterion.threshold).sum()), ""
    log.add(f"contention share ({criterion.text})", why, SOURCE, str(run["run_id"]))
    return 0, 0, why


def _job_failures(js: pd.DataFrame) -> list[str]:
    code = pd.to_numeric(js["exit_code"], errors="coerce")
    check = js["result_check"].fillna("").astype(str) if "result_check" in js else pd.Series("ok", js.index)
    out = [f"exit code {int(c)}" if math.isfinite(c) else "no exit code" for c in code[code != 0]]
    out += [f"self-check {c or 'absent'}" for c in check[(code == 0) & (check != "ok")]]
    return out


def per_run(jobs, runs, run_dirs, criterion: Criterion, onset_pct: float, disk_failed: dict, log: rt.MissingLog):
    """One row per run (the evidence table `runs`) and the pooled intervals per level."""
    rows, pooled = [], {}
    for run in rt.records(runs):
        rid = str(run["run_id"])
        key = tuple(int(run[c]) for c in LEVEL)
        mem = memory_values(run, run_dirs.get(rid), log)
        n, hit, why = contention_values(run, run_dirs.get(rid), criterion, log)
        js = jobs[jobs["run_id"].astype(str) == rid]
        first = js[pd.to_numeric(js["repeat"], errors="coerce").fillna(0) == 0] if "repeat" in js else js
        # at once: a slot's copies run one after another (corun.run.run_length), the first counts
        storage = first["result_storage_bytes"] if "result_storage_bytes" in first else pd.Series(dtype=float)
        storage_run = float(storage.sum()) if storage.notna().any() else math.nan
        if not js.empty and not storage.notna().any():
            log.add("storage of the file-backed arrays", "its program reports none (Graph500)", SOURCE, rid)
        cap = rt.number_or_none(run.get("memory_limit_bytes"))
        memory_bytes = cap if cap else mem["mem_total_bytes"]
        bad = _job_failures(js)
        problems = [f"{len(bad)} of {len(js)} jobs failed ({'; '.join(sorted(set(bad))[:2])})"] if bad else []
        problems += ["no job"] if js.empty else []
        problems += [f"no memory utilization: {mem['reason']}"] if mem["reason"] else []
        problems += [f"no contention share: {why}"] if why else []
        problems += [disk_failed[rid]] if rid in disk_failed else []
        short = short_run_reason(run, MIN_INTERVALS)
        problems += [short] if short else []
        b = pooled.setdefault(key, {"util": [], "majflt": [], "n": 0, "hit": 0, "basis": set()})
        b["util"].append(mem["util"])
        b["majflt"].append(mem["majflt"])
        b["n"] += n
        b["hit"] += hit
        b["basis"].add(mem["basis"])
        rows.append(
            {
                "run_id": rid,
                **dict(zip(LEVEL, key)),
                "rep": int(run["rep"]),
                "level": label(key[0], key[1]),
                "graph_edges": key[1] * 2 ** key[0],
                "memory_basis": mem["basis"],
                "memory_limit_bytes": cap if cap else math.nan,
                "n_memory_intervals": len(mem["util"]),
                "mem_util_pct": float(mem["util"].mean()) if len(mem["util"]) else math.nan,
                "mem_util_peak_pct": float(mem["util"].max()) if len(mem["util"]) else math.nan,
                "majfault_per_s": float(mem["majflt"].mean()) if len(mem["majflt"]) else math.nan,
                "criterion": criterion.text,
                "n_intervals": n,
                "n_contended": hit,
                "contention_share": hit / n if n else math.nan,
                "storage_bytes_run": storage_run,
                "storage_pct_of_memory": (
                    100.0 * storage_run / memory_bytes if memory_bytes and math.isfinite(memory_bytes) else math.nan
                ),
                "below_half": False,
                "resolves_rare": False,
                "n_jobs": len(js),
                "n_failed_jobs": len(bad),
                "failed": bool(problems),
                "failed_reason": "; ".join(problems),
            }
        )
    out = pd.DataFrame(rows, columns=RUN_COLUMNS)
    for key, b in pooled.items():
        util = pd.concat([u for u in b["util"] if len(u)] or [pd.Series(dtype=float)])
        mask = (out["scale"] == key[0]) & (out["edgefactor"] == key[1]) & (out["k"] == key[2])
        out.loc[mask, "below_half"] = bool(len(util) and util.mean() < onset_pct)
        out.loc[mask, "resolves_rare"] = b["n"] >= RARE_TRIALS
        b["util_all"] = util
    out["below_half"] = out["below_half"].astype(bool)
    out["resolves_rare"] = out["resolves_rare"].astype(bool)
    if out["k"].nunique() > 1:  # levels differ in k too: say so in their labels
        out["level"] = out["level"] + ", k=" + out["k"].astype(str)
    out = out.sort_values([*LEVEL, "rep", "run_id"], kind="stable").reset_index(drop=True)
    return out, pooled


def teps_column(jobs: pd.DataFrame) -> pd.Series:
    """Each job's harmonic-mean TEPS: Graph500's result_bfs_harmonic_mean_teps, graph_bfs's
    result_harmonic_mean_teps (a job has one or the other)."""
    out = pd.Series(math.nan, index=jobs.index, dtype=float)
    for col in ("result_bfs_harmonic_mean_teps", "result_harmonic_mean_teps"):
        if col in jobs:
            out = out.fillna(pd.to_numeric(jobs[col], errors="coerce"))
    return out


def per_level(jobs: pd.DataFrame, by_run: pd.DataFrame, pooled: dict, criterion: Criterion) -> pd.DataFrame:
    """One row per level, reps pooled (see the module doc)."""
    ok_job = (pd.to_numeric(jobs["exit_code"], errors="coerce") == 0) & (
        jobs["result_check"].fillna("").astype(str) == "ok" if "result_check" in jobs else True
    )
    rows = []
    for key, b in sorted(pooled.items()):
        scale, edgefactor, k = key
        at = (jobs["scale"] == scale) & (jobs["edgefactor"] == edgefactor) & (jobs["k"] == k)
        lj, lv = jobs[at], jobs[at & ok_job]
        sub = by_run[(by_run["scale"] == scale) & (by_run["edgefactor"] == edgefactor) & (by_run["k"] == k)]
        util = b["util_all"]
        majflt = pd.concat([x for x in b["majflt"] if len(x)] or [pd.Series(dtype=float)])
        teps = teps_column(lv)
        teps = teps[teps > 0]
        rows.append(
            {
                **dict(zip(LEVEL, key)),
                "level": sub["level"].iloc[0],
                "graph_edges": edgefactor * 2**scale,
                "n_runs": len(sub),
                "n_failed_runs": int(sub["failed"].sum()),
                "n_jobs": len(lj),
                "n_failed_jobs": len(lj) - len(lv),
                "memory_basis": " + ".join(sorted(b["basis"])),
                "mem_util_pct": float(util.mean()) if len(util) else math.nan,
                "mem_util_peak_pct": float(util.max()) if len(util) else math.nan,
                "below_half": bool(sub["below_half"].iloc[0]),
                "criterion": criterion.text,
                "n_intervals": b["n"],
                "n_contended": b["hit"],
                "contention_share": b["hit"] / b["n"] if b["n"] else math.nan,
                "resolves_rare": bool(sub["resolves_rare"].iloc[0]),
                "mean_runtime_s": float(lv["runtime_s"].mean()) if len(lv) else math.nan,
                "teps_harmonic_mean": float(len(teps) / (1.0 / teps).sum()) if len(teps) else math.nan,
                "storage_bytes_per_job": (
                    float(lj["result_storage_bytes"].mean()) if len(lj) and "result_storage_bytes" in lj else math.nan
                ),
                "storage_bytes_run": float(sub["storage_bytes_run"].mean()),
                "storage_pct_of_memory": float(sub["storage_pct_of_memory"].mean()),
                "majfault_per_s": float(majflt.mean()) if len(majflt) else math.nan,
            }
        )
    return pd.DataFrame(rows, columns=LEVEL_COLUMNS)

"""The metrics of the I/O latency split (paper 000, Sec. 2.4, eq. 2, Figs. 5-7), from the
cmp_stacking runs' iostat and PSI tables.

Definitions
  intervals      iostat rows of the run's device (runs.csv `device`) that end inside the run,
                 0 < t_s <= duration_s; an interval "has I/O" when r/s + w/s + d/s + f/s > 0.
  serving time   svc_ms = 10 * %util / (r/s + w/s + d/s + f/s) ms, DERIVED: sysstat removed
                 svctm in 12.1.2, so corun's iostat monitor computes it from %util and the
                 request rates (corun/monitors/iostat.py). It assumes the device serves one
                 request at a time; on devices with internal parallelism (virtio with a deep
                 queue, NVMe) %util saturates, svc_ms underestimates and wait_ms overestimates.
  waiting time   wait_ms = await_ms - svc_ms (DERIVED likewise).
  per run        await_ms, svc_ms and wait_ms: means over the run's intervals with I/O, each
                 weighted by its request rate, i.e. by its request count since iostat's interval
                 is fixed: the mean over requests, not over seconds (latency_runs.csv).
  per k          the same over all intervals with I/O of the workload's runs at that k, reps
                 pooled (latency.csv, the figures).
  ratio_*        the pooled value at k over the pooled value at k = 1 of the same workload
                 (growth factor, Fig. 7); undefined when the k = 1 value is missing or <= 0.
  psi_io_*_pct   PSI io some/full share of time, mean over the run's PSI intervals weighted by
                 their length, reps pooled. A throttled run (throttle_read_bps set) queues
                 requests in the cgroup's blk-throttle BEFORE they reach the device queue:
                 iostat cannot see that wait, PSI io and the runtimes include it.
  io_requests    sum over intervals of the request rate times the iostat interval (the median
                 spacing of the device's rows; missing when the run has fewer than 2 rows).
  failed run     a cmp_stacking run with a job that did not count (exit code, runtime or
                 self-check), no job, or a status other than ok (analysis.runtables.run_status);
                 or one that lasted fewer than MIN_IO_INTERVALS iostat intervals
                 (analysis.run_length), whose intervals are not pooled into its k either.

The claims' evidence (one workload: cmp_stacking.latency_workload)
  runs           latency_runs.csv's rows of that workload, with failed and failed_reason.
  growth         per run at k > 1, paired with the k = 1 run of the same rep:
                 wait_growth_ratio = wait_ms(k) / wait_ms(1), svc_growth_ratio and
                 await_growth_ratio likewise (missing where a time is missing or <= 0: the
                 derived waiting time at k = 1 can be a little below 0, await below the derived
                 svc); wait_increase_ms = wait_ms(k) - wait_ms(1); and wait_share_increase =
                 wait/await at k - wait/await at k = 1, the growth of the waiting time's share of
                 the latency, above 0 exactly when the waiting time grows by a larger factor than
                 the serving time (wait/await = q / (1 + q) rises with q = wait/svc), and defined
                 when the waiting time at k = 1 is <= 0, where a factor is not.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.run_length import short_run_reason

SOURCE_EXPERIMENTS = ("cmp_stacking", "io_latency")
SOURCE = "experiments.io_latency_split.metrics"
LATENCY_METRIC = "iostat await_ms, svc_ms, wait_ms"
PSI_METRIC = "psi io some_pct"
# iostat intervals a run lasts at least for its latencies (analysis.run_length): a shorter run is
# failed with that reason and its intervals are not pooled into its k
MIN_IO_INTERVALS = 3
JOB_TEXT = ["workload", "job_id", "result_check"]
RUN_TEXT = ["workload", "device", "status", "metadata_path", "run_dir"]
JOB_COLUMNS = ["run_id", "workload", "k", "rep", "cmp", "job_id", "runtime_s", "exit_code"]
RUN_COLUMNS = [
    "run_id",
    "workload",
    "k",
    "rep",
    "variant",
    "throttle_read_bps",
    "device",
    "duration_s",
    "metadata_path",
    "run_dir",
]
RUN_TABLE_COLUMNS = [
    "run_id",
    "workload",
    "k",
    "rep",
    "device",
    "n_intervals",
    "n_io_intervals",
    "io_requests",
    "await_ms",
    "svc_ms",
    "wait_ms",
    "util_pct",
    "psi_io_some_pct",
    "psi_io_full_pct",
    "throttle_read_bps",
    "reason",
]
TABLE_COLUMNS = [
    "workload_id",
    "workload",
    "k",
    "n_runs",
    "n_runs_with_io",
    "n_io_intervals",
    "io_requests",
    "await_ms",
    "svc_ms",
    "wait_ms",
    "ratio_await",
    "ratio_svc",
    "ratio_wait",
    "psi_io_some_pct",
    "psi_io_full_pct",
    "mean_runtime_s",
    "throttle_read_bps",
    "reason",
]
GROWTH = {"wait_ms": "wait_growth_ratio", "svc_ms": "svc_growth_ratio", "await_ms": "await_growth_ratio"}


# ----------------------------------------------------------------------------- input


def check_jobs(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The cmp_stacking per-job table (runtimes are shown beside the latencies)."""
    return rt.check_table(
        df,
        source,
        required=JOB_COLUMNS,
        ints={"k": 1, "rep": 0, "exit_code": None},
        floats=["runtime_s", "workload_id"],
        experiments=SOURCE_EXPERIMENTS,
    )


def check_runs(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """runs.csv of the cmp_stacking runs, columns checked and typed."""
    return rt.check_table(
        df,
        source,
        required=RUN_COLUMNS,
        ints={"k": 1, "rep": 0},
        floats=["throttle_read_bps", "duration_s", "workload_id"],
        experiments=SOURCE_EXPERIMENTS,
        what="one row per run",
    )


# ----------------------------------------------------------------------------- per run and per k


def _requests(df: pd.DataFrame) -> pd.Series:
    """r/s + w/s + d/s + f/s; r and w must be there, d and f count 0 when not reported."""
    total = pd.to_numeric(df["r_per_s"], errors="coerce") + pd.to_numeric(df["w_per_s"], errors="coerce")
    for kind in ("d", "f"):
        col = f"{kind}_per_s"
        if col in df.columns:
            total = total + pd.to_numeric(df[col], errors="coerce").fillna(0.0)
    return total


def iostat_intervals(run: dict, run_dir: Path, log: rt.MissingLog) -> tuple[pd.DataFrame, dict]:
    """(the run's device intervals with I/O: req, await_ms, svc_ms, wait_ms; summary fields)."""
    empty = pd.DataFrame(columns=["req", "await_ms", "svc_ms", "wait_ms"])
    info = {"device": run.get("device"), "n_intervals": 0, "n_io_intervals": 0}
    info.update(io_requests=math.nan, util_pct=math.nan, reason="")
    df, why = rt.load_tidy(run_dir, "iostat")
    if df is None:
        info["reason"] = why
        log.add(LATENCY_METRIC, why, SOURCE, run["run_id"])
        return empty, info
    rows, name, why = rt.device_rows(df, run.get("device"))
    info["device"] = name or info["device"]
    if rows is None:
        info["reason"] = why
        log.add(LATENCY_METRIC, why, SOURCE, run["run_id"])
        return empty, info
    stamps = np.sort(pd.to_numeric(rows["time_epoch_s"], errors="coerce").dropna().unique())
    step = float(np.median(np.diff(stamps))) if len(stamps) >= 2 else math.nan
    rows = rt.in_run(rows, rt.number_or_none(run.get("duration_s")))
    req = _requests(rows)
    out = pd.DataFrame(
        {
            "req": req,
            "await_ms": pd.to_numeric(rows["await_ms"], errors="coerce"),
            "svc_ms": pd.to_numeric(rows["svc_ms"], errors="coerce"),
            "wait_ms": pd.to_numeric(rows["wait_ms"], errors="coerce"),
        }
    )
    info["n_intervals"] = len(rows)
    info["util_pct"] = float(pd.to_numeric(rows["util_pct"], errors="coerce").mean())
    io = out[(out["req"] > 0) & out[["await_ms", "svc_ms", "wait_ms"]].notna().all(axis=1)]
    info["n_io_intervals"] = len(io)
    info["io_requests"] = float(io["req"].sum() * step) if len(io) else 0.0
    if len(rows) == 0:
        info["reason"] = "no iostat interval inside the run"
        log.add(LATENCY_METRIC, info["reason"], SOURCE, run["run_id"])
    elif io.empty:
        info["reason"] = "no iostat interval with I/O on the run's device during the run"
        log.add(LATENCY_METRIC, info["reason"], SOURCE, run["run_id"])
    return io, info


def psi_io(run: dict, run_dir: Path, log: rt.MissingLog) -> tuple[pd.DataFrame, str]:
    """The run's PSI io intervals (some_pct, full_pct, interval_s), or a reason."""
    empty = pd.DataFrame(columns=["some_pct", "full_pct", "interval_s"])
    df, why = rt.load_tidy(run_dir, "psi")
    if df is None:
        log.add(PSI_METRIC, why, SOURCE, run["run_id"])
        return empty, why
    io = rt.in_run(df[df["resource"].astype(str) == "io"], rt.number_or_none(run["duration_s"]))
    io = io[["some_pct", "full_pct", "interval_s"]].apply(pd.to_numeric, errors="coerce")
    io = io[io["some_pct"].notna() & (io["interval_s"] > 0)]
    if io.empty:
        why = "no PSI io interval inside the run"
        log.add(PSI_METRIC, why, SOURCE, run["run_id"])
        return empty, why
    return io, ""


def _weighted(values: pd.Series, weights: pd.Series) -> float:
    ok = values.notna() & weights.notna() & (weights > 0)
    w = weights[ok]
    return float((values[ok] * w).sum() / w.sum()) if w.sum() > 0 else math.nan


def latency_tables(jobs: pd.DataFrame, runs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog) -> dict:
    """{'runs': per-run table, 'table': per (workload, k) table}."""
    run_rows, pooled, short_ids = [], {}, set()
    for run in rt.records(runs):
        run_dir = dirs[str(run["run_id"])]
        io, info = iostat_intervals(run, run_dir, log)
        psi, psi_why = psi_io(run, run_dir, log)
        key = (run["workload"], int(run["k"]))
        bucket = pooled.setdefault(key, {"io": [], "psi": [], "runs": 0, "with_io": 0, "why": set()})
        bucket["runs"] += 1
        short = short_run_reason(run, MIN_IO_INTERVALS, "iostat")
        if short:  # too few intervals to mean anything: failed in the evidence, never pooled
            bucket["why"].add(short)
            short_ids.add(str(run["run_id"]))
        bucket["with_io"] += int(len(io) > 0 and not short)
        bucket["io"].append(io.iloc[0:0] if short else io)
        bucket["psi"].append(psi.iloc[0:0] if short else psi)
        if info["reason"]:
            bucket["why"].add(info["reason"])
        reasons = [r for r in (info["reason"], psi_why and f"PSI: {psi_why}") if r]
        run_rows.append(
            {
                "run_id": run["run_id"],
                "workload": run["workload"],
                "k": int(run["k"]),
                "rep": int(run["rep"]),
                "device": info["device"],
                "n_intervals": info["n_intervals"],
                "n_io_intervals": info["n_io_intervals"],
                "io_requests": info["io_requests"],
                "await_ms": _weighted(io["await_ms"], io["req"]),
                "svc_ms": _weighted(io["svc_ms"], io["req"]),
                "wait_ms": _weighted(io["wait_ms"], io["req"]),
                "util_pct": info["util_pct"],
                "psi_io_some_pct": _weighted(psi["some_pct"], psi["interval_s"]),
                "psi_io_full_pct": _weighted(psi["full_pct"], psi["interval_s"]),
                "throttle_read_bps": run["throttle_read_bps"],
                "reason": "; ".join(reasons),
            }
        )
    per_run = pd.DataFrame(run_rows, columns=RUN_TABLE_COLUMNS)
    per_run = per_run.sort_values(["workload", "k", "rep", "run_id"], kind="stable")

    valid = rt.valid_jobs_mask(jobs, check_required=False)
    runtime = jobs[valid].groupby(["workload", "k"])["runtime_s"].mean()
    ids = {}
    for source in (runs, jobs):  # a run label, else a job label (Table 2 number)
        if not len(ids) and "workload_id" in source.columns:
            ids = source.dropna(subset=["workload_id"]).groupby("workload")["workload_id"].first()
    rows = []
    for (workload, k), b in sorted(pooled.items()):
        io = pd.concat([x for x in b["io"] if len(x)] or [b["io"][0]], ignore_index=True)
        psi = pd.concat([x for x in b["psi"] if len(x)] or [b["psi"][0]], ignore_index=True)
        sub = per_run[(per_run["workload"] == workload) & (per_run["k"] == k)]
        sub = sub[~sub["run_id"].astype(str).isin(short_ids)]
        caps = sorted(sub["throttle_read_bps"].dropna().unique())
        reqs = sub["io_requests"]
        rows.append(
            {
                "workload_id": int(ids[workload]) if workload in ids else None,
                "workload": workload,
                "k": k,
                "n_runs": b["runs"],
                "n_runs_with_io": b["with_io"],
                "n_io_intervals": int(sub["n_io_intervals"].sum()),
                "io_requests": float(reqs.sum()) if reqs.notna().all() else math.nan,
                "await_ms": _weighted(io["await_ms"], io["req"]),
                "svc_ms": _weighted(io["svc_ms"], io["req"]),
                "wait_ms": _weighted(io["wait_ms"], io["req"]),
                "ratio_await": math.nan,
                "ratio_svc": math.nan,
                "ratio_wait": math.nan,
                "psi_io_some_pct": _weighted(psi["some_pct"], psi["interval_s"]),
                "psi_io_full_pct": _weighted(psi["full_pct"], psi["interval_s"]),
                "mean_runtime_s": float(runtime.get((workload, k), math.nan)),
                "throttle_read_bps": float(caps[0]) if len(caps) == 1 else math.nan,
                "reason": "" if len(io) else "; ".join(sorted(b["why"])),
            }
        )
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    table["workload_id"] = table["workload_id"].astype("Int64")
    for _workload, g in table.groupby("workload"):
        base = g[g["k"] == 1]
        for metric in ("await", "svc", "wait"):
            b = float(base[f"{metric}_ms"].iloc[0]) if len(base) else math.nan
            if math.isfinite(b) and b > 0:
                table.loc[g.index, f"ratio_{metric}"] = g[f"{metric}_ms"] / b
    table = table.sort_values(["workload_id", "workload", "k"], kind="stable")
    return {"runs": per_run.reset_index(drop=True), "table": table.reset_index(drop=True)}


def iostat_interval(runs: pd.DataFrame, dirs: dict[str, Path]) -> float | None:
    """iostat's interval from the first run that has one (median spacing of its rows)."""
    for run_id in runs["run_id"].astype(str):
        df, _ = rt.load_tidy(dirs[run_id], "iostat")
        if df is None:
            continue
        for _, rows in df.groupby("device"):
            stamps = np.sort(pd.to_numeric(rows["time_epoch_s"], errors="coerce").dropna())
            if len(stamps) >= 2:
                return float(np.median(np.diff(stamps)))
    return None


# ----------------------------------------------------------------------------- the claims' evidence


def evidence(per_run: pd.DataFrame, jobs: pd.DataFrame, runs: pd.DataFrame, workload: str) -> dict[str, pd.DataFrame]:
    """The claims' tables for one workload: its runs and the growth of each run at k > 1 over the
    k = 1 run of its rep. A run is failed (failed_reason says why) when a job of it failed or
    when it has no iostat interval with I/O: its latencies are missing, not zero."""
    status = rt.run_status(jobs, runs, rt.valid_jobs_mask(jobs, check_required=False))
    mine = per_run[per_run["workload"] == workload].merge(status, on="run_id", how="left")
    mine["jobs_failed"] = mine["failed"].fillna(True).astype(bool)
    mine["failed_reason"] = mine["failed_reason"].fillna("not in runs.csv")
    mine["no_io"] = mine["wait_ms"].isna()
    short = {str(r["run_id"]): short_run_reason(r, MIN_IO_INTERVALS, "iostat") for r in rt.records(runs)}
    mine["short"] = mine["run_id"].astype(str).map(short).fillna("")
    mine["failed"] = mine["jobs_failed"] | mine["no_io"] | (mine["short"] != "")
    io_why = ["; ".join(p for p in str(r or "").split("; ") if p and not p.startswith("PSI: ")) for r in mine["reason"]]
    mine["failed_reason"] = [
        "; ".join(x for x in (short, why if bad else "", (io or "no latency") if no_io else "") if x)
        for short, bad, why, no_io, io in zip(
            mine["short"], mine["jobs_failed"], mine["failed_reason"], mine["no_io"], io_why
        )
    ]
    mine = mine.drop(columns=["n_jobs", "n_failed", "short"]).reset_index(drop=True)
    growth = rt.ratio_to_k1(mine, ["workload"], GROWTH)
    by_id = mine.set_index("run_id")
    with np.errstate(divide="ignore", invalid="ignore"):
        share = by_id["wait_ms"] / by_id["await_ms"].where(by_id["await_ms"] > 0)

    def change(values: pd.Series) -> pd.Series:
        """The run's value minus that of the k = 1 run of its rep."""
        return growth["run_id"].map(values).astype(float) - growth["k1_run_id"].map(values).astype(float)

    growth.insert(5 + len(GROWTH), "wait_increase_ms", change(by_id["wait_ms"]))
    growth.insert(6 + len(GROWTH), "wait_share_increase", change(share))
    return {"runs": mine, "growth": growth}

"""The dynamic_io evidence beyond one run's metrics (experiments.dynamic_io.metrics): the overhead
runs against their baseline and the gain of each workload against its sensitivity. No verdicts;
the claims read these tables (claims.yaml).

Evidence
  overhead  Sec. 3.5. One row per overhead run (arm `observer`: dynamic_io sampling every job
            each TIMESLICE with no job over its bound) and, for each TIMESLICE, one row per
            baseline run of the same workload (arm `linux`, the rep's campaign run, repeated at
            every TIMESLICE so each point pairs by rep): t_workload_s, the makespan. An observer
            run that suspended a job fails: it reordered the jobs, so it measures no overhead.
  gain      Sec. 4.4. One row per workload and rep with both schedulers measured:
            io_sensitivity, the workload's mean over reps of its jobs' slowdown under Linux
            (mean T_k-c / T_alone: how much co-running on the shared disk slows them), and
            runtime_speedup, Linux's average runtime over the dynamic scheduler's in that rep
            (above 1: the scheduler gains). The sensitivity is the workload's, not the rep's, so a
            slow Linux run of one rep does not raise both of its own coordinates.
  latency   Figs. 18-22. The campaign runs' waiting and serving times (iostat's intervals), one
            row per run: failed where the run failed, or where it lasted fewer than
            MIN_IO_INTERVALS monitor intervals (analysis.run_length: too short for its intervals
            to mean anything, never pooled); its wall-time metrics (the runs table) stand.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.run_length import short_run_reason
from experiments.dynamic_io import metrics as mx
from experiments.dynamic_io import sizing
from experiments.dynamic_io.plan import OVERHEAD_VARIANT

ARMS = ("observer", "linux")
# iostat intervals a campaign run lasts at least for its latencies (the plan declares
# dynamic_io.min_intervals, at least this, and records it in the runs' labels)
MIN_IO_INTERVALS = 3
LATENCY_COLUMNS = [*mx.KEYS, "wait_ms", "svc_ms", "wait_iv_ms", "svc_iv_ms", "wait_over_svc", "n_io_intervals",
                   "duration_s", "failed", "failed_reason"]  # fmt: skip
OVERHEAD_COLUMNS = ["run_id", "workload", "arm", "variant", "timeslice_s", "rep", "t_workload_s", "quanta",
                    "suspends", "daemon_cpu_pct", "failed", "failed_reason"]  # fmt: skip
GAIN_COLUMNS = ["run_id", "base_run_id", "workload", "rep", "io_sensitivity", "runtime_speedup", "failed",
                "failed_reason"]  # fmt: skip


def overhead_table(jobs: pd.DataFrame, runs: pd.DataFrame, by_run: pd.DataFrame, dirs: dict, log) -> pd.DataFrame:
    """The overhead runs and, at each of their TIMESLICEs, the baseline runs of their workload."""
    over = runs[runs["run_kind"] == "overhead"]
    if over.empty:
        return pd.DataFrame(columns=OVERHEAD_COLUMNS)
    rows = []
    for run in rt.records(over):
        rid = str(run["run_id"])
        m, failed, _ = mx.job_metrics(jobs[jobs["run_id"].astype(str) == rid], {})
        status = str(run.get("status") or "ok")
        if status != "ok":
            failed = f"run status {status}" + (f"; {failed}" if failed else "")
        sched, _ = mx.scheduler_metrics({**run, "variant": OVERHEAD_VARIANT}, dirs[rid], log)
        if not failed and not sched["suspends"] >= 0:
            failed = "no daemon summary (sched/state/summary.json): whether it suspended a job is unknown"
        elif not failed and sched["suspends"] > 0:
            failed = f"the daemon suspended {int(sched['suspends'])} job(s): it reordered the jobs"
        if failed:
            log.add("overhead run (makespan)", failed, mx.SOURCE, rid)
        rows.append(
            {
                "run_id": rid,
                "workload": run["workload"],
                "arm": "observer",
                "variant": run["variant"],
                "timeslice_s": rt.number_or_none(run.get("timeslice_s")),
                "rep": int(run["rep"]),
                "t_workload_s": m["t_workload_s"],
                "quanta": sched["quanta"],
                "suspends": sched["suspends"],
                "daemon_cpu_pct": sched["daemon_cpu_pct"],
                "failed": bool(failed),
                "failed_reason": failed,
            }
        )
    observer = pd.DataFrame(rows)
    base = by_run[(by_run["paper_role"] == "linux") & by_run["workload"].isin(set(observer["workload"]))]
    linux = [
        {**{c: r.get(c) for c in OVERHEAD_COLUMNS if c in r}, "arm": "linux", "timeslice_s": t}
        for t in sorted(set(observer["timeslice_s"]))
        for r in rt.records(base)
    ]
    out = pd.concat([observer, pd.DataFrame(linux, columns=OVERHEAD_COLUMNS)], ignore_index=True)
    out["failed"] = out["failed"].astype(bool)
    for c in ("timeslice_s", "t_workload_s", "quanta", "suspends", "daemon_cpu_pct"):
        out[c] = pd.to_numeric(out[c], errors="coerce").astype("float64")
    return out[OVERHEAD_COLUMNS].sort_values(["timeslice_s", "arm", "rep"], kind="stable").reset_index(drop=True)


def gain_table(by_run: pd.DataFrame, slowdown: pd.DataFrame) -> pd.DataFrame:
    """Per workload and rep: the workload's sensitivity under Linux and the rep's speed-up."""
    runs = by_run.set_index("run_id")
    slow = slowdown.set_index("run_id")
    lin = by_run[by_run["paper_role"] == "linux"]
    ok = slow.loc[lin["run_id"]]
    ok = ok[~ok["failed"].astype(bool)]
    sens = ok.groupby("workload")["mean_slowdown"].mean().to_dict()
    rows = []
    for (w, rep), g in by_run[by_run["paper_role"].isin(["dynamic", "linux"])].groupby(["workload", "rep"]):
        dyn, base = g[g["paper_role"] == "dynamic"], g[g["paper_role"] == "linux"]
        if dyn.empty or base.empty:
            continue
        d, b = str(dyn["run_id"].iloc[0]), str(base["run_id"].iloc[0])
        why = [f"{r}: {runs.loc[r, 'failed_reason'] or slow.loc[r, 'failed_reason']}"
               for r in (d, b) if runs.loc[r, "failed"] or slow.loc[r, "failed"]]  # fmt: skip
        s = sens.get(w, math.nan)
        if not why and not math.isfinite(s):
            why.append(f"no Linux run of {w} with a slowdown")
        dv, bv = float(runs.loc[d, "avg_runtime_s"]), float(runs.loc[b, "avg_runtime_s"])
        rows.append(
            {
                "run_id": d,
                "base_run_id": b,
                "workload": w,
                "rep": int(rep),
                "io_sensitivity": s,
                "runtime_speedup": bv / dv if not why and dv > 0 else math.nan,
                "failed": bool(why),
                "failed_reason": "; ".join(why),
            }
        )
    return pd.DataFrame(rows, columns=GAIN_COLUMNS)


def overhead_summary(table: pd.DataFrame) -> list[str]:
    """One line per TIMESLICE: the paired makespan ratio observer / linux (descriptive)."""
    lines = []
    if table.empty:
        return lines
    ok = table[~table["failed"].astype(bool)]
    for t, g in ok.groupby("timeslice_s", sort=True):
        h = g[g["arm"] == "observer"].set_index("rep")["t_workload_s"]
        b = g[g["arm"] == "linux"].groupby("rep")["t_workload_s"].mean()
        reps = sorted(set(h.index) & set(b.index))
        if reps:
            r = np.exp(np.mean(np.log(h.loc[reps].to_numpy(float) / b.loc[reps].to_numpy(float))))
            lines.append(f"TIMESLICE {t:g} s: makespan x{r:.4g} of linux's over {len(reps)} rep(s)")
    return lines


def mark_lengthened(by_run: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The campaign runs with a run the runner measured again longer (its batch repeated: labels
    copies > 1) failed for their wall-time metrics, naming why (sizing.lengthened_reason): its
    batch is not its pair's. The latency table reads the runs before this (the lengthening is
    what its intervals needed)."""
    meta = {str(r["run_id"]): r for r in rt.records(runs)}
    out = by_run.copy()
    why = [sizing.lengthened_reason(meta.get(str(rid), {})) for rid in out["run_id"]]
    if not any(why):
        return out
    old = out["failed_reason"].fillna("").astype(str)
    out["failed_reason"] = ["; ".join(x for x in (str(o), w) if x) for o, w in zip(old, why)]
    out["failed"] = [bool(f) or bool(w) for f, w in zip(out["failed"], why)]
    return out


def latency_table(by_run: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """The campaign runs' latencies; a run that failed, or lasted fewer than MIN_IO_INTERVALS
    monitor intervals, is failed here with the reason."""
    meta = {str(r["run_id"]): r for r in rt.records(runs)}
    out = by_run.copy()
    out["duration_s"] = [rt.number_or_none(meta.get(str(rid), {}).get("duration_s")) for rid in out["run_id"]]
    why = []
    for rid, failed in zip(out["run_id"].astype(str), out["failed_reason"].fillna("")):
        short = short_run_reason(meta.get(rid, {}), MIN_IO_INTERVALS, "iostat")
        why.append("; ".join(x for x in (short, str(failed)) if x))
    out["failed_reason"] = why
    out["failed"] = [bool(w) for w in why]
    return out[LATENCY_COLUMNS].reset_index(drop=True)

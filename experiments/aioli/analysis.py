"""aIOLi (paper 002): server-side scheduling policies against FIFO on the striped parallel file
system, per access pattern, request size, clients, operation and applications.

Inputs: the collected jobs.csv / runs.csv of the `aioli` experiment, each run's
pfs_counters.json and the effective configuration (`inputs.config["aioli"]`: the baseline of
the points' speed-ups, the servers and disks described). The metrics are defined in
experiments/aioli/metrics.py.

Evidence the claims (claims.yaml) read, judged by analysis.verdicts:
  runs         one row per run: throughput, time, the translator's counters (average aggregation
               performed, possible from the arrivals, waiting), failed and why;
  aggregation  two rows per run: requests per aggregation performed and possible.

Run by the workflow: python -m experiments analyze aioli.
"""

from __future__ import annotations

import pandas as pd

from analysis import runtables as rt
from analysis.common import fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from experiments.aioli import figures as af
from experiments.aioli import metrics as am

JOB_TEXT = ["kind", "policy", "pattern", "op", "disk"]
RUN_TEXT = ["kind", "policy", "pattern", "op", "disk"]
NAME = "aioli"
POLICIES = {"pfs_fifo", "aioli", "aioli_no_wait", "aioli_no_agg", "time_order_agg", "app_aware"}


def levels(sec: dict, per_run: pd.DataFrame) -> dict[str, set]:
    return {
        "policy": POLICIES | set(sec.get("policies") or []) | set(per_run.get("policy", [])),
        "pattern": {"strided", "contiguous"},
        "op": {"read", "write"},
        "measure": {"performed", "possible"},
    }


def setup(inputs: Inputs, sec: dict, per_run: pd.DataFrame) -> pd.DataFrame:
    """The slides' setup beside ours: compared, never judged."""
    v = inputs.claims.values
    servers = sec.get("servers") or (int(per_run["servers"].max()) if len(per_run) else None)
    clients = max(sec.get("clients") or ([int(per_run["clients"].max())] if len(per_run) else [0]))
    return setup_frame(
        [
            ("data servers", v["data_servers"], servers),
            ("clients of one application", v["clients"], clients),
        ]
    )


def summary_lines(sec: dict, per_run: pd.DataFrame, pts: pd.DataFrame) -> list[str]:
    disk = sec.get("disk") or {}
    applied = bool(len(per_run)) and bool(per_run["policy_applied"].all())
    bricks = (
        f"ext4 on an emulated rotating disk each ({disk.get('preset', 'sata_7200_2010')}, stroke "
        f"{disk.get('stroke', '?')})"
        if disk.get("backend", "rotating_disk") == "rotating_disk"
        else f"backend {disk.get('backend')}"
    )
    n_failed = int(per_run["failed"].sum()) if len(per_run) else 0
    return [
        f"{len(per_run)} run(s), {n_failed} failed, at {len(pts)} (policy, pattern, operation, request size, "
        f"clients, applications) point(s) on {sec.get('servers', '?')} data servers; clients: kernels/pfs_read "
        "with MPI-IO Test's layouts (--rank/--ranks, strided = IOR's segmented layout with one request per block), "
        f"meeting at a barrier before their first request; bricks: {bricks}"
        + (", opened with O_DIRECT (posix o-direct)" if disk.get("o_direct", True) else "")
        + ".",
        "The policies were applied by the corun/aioli translator (pfs_sched variants)."
        if applied
        else "The corun/aioli translator was not in the data servers (aioli.translator.enabled: false): every "
        "run is the stock server, so the policy columns are an A/A comparison that shows the noise level; the "
        "claims select the runs with the translator and measured none.",
    ]


def analyse(inputs: Inputs) -> Result:
    sec = (inputs.config or {}).get(NAME) or {}
    baseline = sec.get("baseline", "pfs_fifo")
    log = rt.MissingLog()
    per_run, hist_rows = am.read_runs(inputs.jobs, inputs.run_dirs, log)
    if per_run.empty:
        per_run = pd.DataFrame(columns=["run_id", "policy", "policy_applied", *am.KEY, "servers", "rep",
                                        "throughput_mib_s", "avg_aggregation", "avg_possible", "failed",
                                        "failed_reason"])  # fmt: skip
    pts = am.points(per_run, baseline, inputs.looks.confidence)
    hist = am.histogram_table(per_run, hist_rows)
    notes = [
        f"points.csv, for reading: speedup_pct = 100 x (mean throughput of the policy / mean of {baseline} - 1) "
        "at the same point over the runs that did not fail; norm_time the ratio of mean execution times; 95% "
        "intervals: t-intervals of the per-rep log ratios (rep i of each policy ran in the same repetition block).",
        "Execution time is the slowest client's; throughput is all clients' bytes over it. A run with a client "
        "that failed or printed no result is failed, and so is an app_aware run without a trace on its servers.",
        "Aggregation: the translator's counters over each run, summed over the servers. performed = requests per "
        "dispatch; possible = requests per aggregation the arrivals allowed (contiguous requests of one file and "
        "operation, each within app_wait_max_us of the run's latest, within max_agg_kib), counted whatever the "
        "policy decides; queued = the contiguous requests queued around each dispatch, which counts the "
        "dispatched ones and is never below performed (shown, never compared).",
        "The translator's own counters per run: queue_max (the most requests queued in one server), "
        "queue_mean (requests queued, sampled at each arrival, over all servers), waits taken and their "
        "outcome (waits_useful: ended by an aggregation; waits_timed_out), starved (requests sent by the "
        "starvation bound); a point's figures are the means over its reps (queue_max: the largest).",
        *run_checks(inputs.jobs, inputs.runs),
    ]
    agg = per_run[per_run["policy"] == "aioli"]["avg_aggregation"].dropna() if len(per_run) else pd.Series()
    summary = summary_lines(sec, per_run, pts)
    if len(agg):
        summary.append(f"aioli's requests per dispatch: {fmt_num(agg.min())} to {fmt_num(agg.max())} over its runs.")
    outputs = {
        "points.csv": pts,
        "aggregation.csv": hist,
        "runs_table.csv": per_run,
        "setup.csv": setup(inputs, sec, per_run),
    }
    tables = [
        {"title": f"Throughput, time and aggregation per point, against {baseline} (for reading)", "csv": "points.csv"},
        {"title": "Aggregation sizes performed, possible (the arrivals') and queued", "csv": "aggregation.csv"},
        {"title": "Runs, with the translator's and the disks' counters", "csv": "runs_table.csv"},
        {"title": "The slides' setup beside this run's (compared, not judged)", "csv": "setup.csv"},
    ]
    figures = [
        Figure(af.GAIN_FIG, f"Throughput gain over {baseline} per point (pattern, operation, request size, "
               "clients, applications); error bars: 95% t-interval of the per-rep log ratios.",
               lambda out: af.plot_gains(pts, out, baseline)),
        Figure(af.HIST_FIG, "aioli's aggregation sizes performed and possible (the arrivals'), % of "
               "aggregations, over its points.", lambda out: af.plot_hist(hist, out)),
    ]  # fmt: skip
    return Result(
        summary=summary,
        evidence={"runs": per_run, "aggregation": am.aggregation_rows(per_run)},
        levels=levels(sec, per_run),
        outputs=outputs,
        tables=tables,
        figures=figures,
        notes=notes,
        log=log,
    )

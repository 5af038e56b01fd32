"""I/O waiting and serving time while stacking CMPs (paper 000, Sec. 2.4, eq. 2, Figs. 5-7).

Reads the cmp_stacking runs (their jobs.csv and runs.csv) and each run's tidy iostat and PSI
tables. The paper splits each request's latency (iostat await) into the device's serving time
(iostat svctm) and the waiting time before it (await - svctm), and shows that stacking CMPs
makes the waiting time grow far more than the serving time. The metrics are defined in
experiments/io_latency_split/metrics.py.

Claims (claims.yaml, judged by analysis.verdicts) on one workload, cmp_stacking.latency_workload
(the paper's workload #1 by default), per rep: each run at k over the k = 1 run of the same rep
at the highest k measured (the waiting time's increase against 0 and the growth of its share of
the latency against 0, by the signed-rank test; the serving time's growth factor against 1), and
the paper's numbers at 1 and 8 CMPs. A run with a failed job is failed; a run without an iostat
interval with I/O has no value, and a claim on it says failed with the reason in
latency_runs.csv.

Outputs: latency.csv (every workload and k), latency_runs.csv (per run), growth.csv (the
chosen workload per rep), setup.csv, fig5_6_wait_serve.png and fig7_growth.png. Run by the
workflow: python -m experiments analyze io_latency_split.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import runtables as rt
from analysis.common import AnalysisInputError, fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from experiments.io_latency_split import metrics as m
from experiments.io_latency_split.figures import FIG_GROWTH, FIG_LATENCY, plot_growth, plot_latency

STACKING_SCHEMA = Path(__file__).resolve().parents[1] / "cmp_stacking" / "config.schema.json"
JOB_TEXT = m.JOB_TEXT
RUN_TEXT = m.RUN_TEXT


def chosen_workload(inputs: Inputs, runs: pd.DataFrame) -> str:
    """cmp_stacking.latency_workload, one of the workloads run, or a one-line error."""
    workload = rt.config_section(inputs.config, "cmp_stacking", STACKING_SCHEMA)["latency_workload"]
    known = sorted(runs["workload"].dropna().astype(str).unique())
    if workload not in known:
        raise AnalysisInputError(
            f"config: cmp_stacking.latency_workload: {workload!r} (expected one of {', '.join(known)})"
        )
    return workload


def setup_table(table: pd.DataFrame, values: dict, interval_s: float | None) -> pd.DataFrame:
    ks = sorted(int(k) for k in table["k"].unique())
    rows = [
        ("k values (loaded CMPs)", values["k_values"], ", ".join(map(str, ks))),
        (
            "iostat sampling interval",
            values["sampling_interval_s"],
            None if interval_s is None else fmt_num(interval_s),
        ),
    ]
    return setup_frame(rows)


def summary_and_notes(table: pd.DataFrame, evidence: dict, inputs: Inputs, workload: str) -> tuple[list, list]:
    runs = inputs.runs
    g = table[table["workload"] == workload].sort_values("k")
    ks = ", ".join(str(k) for k in sorted(table["k"].unique()))
    per_k = "; ".join(
        f"k = {r['k']}: waiting {fmt_num(r['wait_ms'])} ms, serving {fmt_num(r['svc_ms'])} ms, "
        f"PSI io some {fmt_num(r['psi_io_some_pct'])} %"
        for r in rt.records(g)
    )
    mine = evidence["runs"]
    summary = [
        f"iostat on the runs' device during the cmp_stacking runs of {table['workload'].nunique()} "
        f"workload(s), k = {ks}; figures and claims for workload {workload} "
        "(cmp_stacking.latency_workload): " + per_k + ".",
        f"{int(mine['jobs_failed'].sum())} of {len(mine)} run(s) of {workload} had a failed job, "
        f"{int(mine['no_io'].sum())} no iostat interval with I/O: a claim on them says failed.",
        "Serving time is derived, not measured: sysstat removed svctm in 12.1.2, so svc = "
        "10 x %util / (r/s + w/s + d/s + f/s) ms and waiting = await - svc.",
    ]
    caps = rt.throttle_values(runs)
    if caps:
        summary.append(
            "The runs were throttled: throttled requests wait in the cgroup before the device "
            "queue, which iostat cannot see; PSI io and the runtimes include that wait."
        )
    notes = [
        "Per run and per k, await, serving and waiting time are means over every iostat interval with I/O "
        "(r/s + w/s + d/s + f/s > 0), each weighted by its request rate, which for iostat's fixed interval is "
        "its request count: means over requests. Per k the reps are pooled (the figures, latency.csv); the "
        "claims pair each run at k with the k = 1 run of its rep (growth.csv). Intervals count when they end "
        "inside the run (0 < t_s <= duration_s).",
        "Serving time svc = 10 x %util / (r/s + w/s + d/s + f/s) assumes the device serves one "
        "request at a time; with internal parallelism (virtio with a deep queue, NVMe) %util "
        "saturates, so svc underestimates and waiting (await - svc) overestimates the true split.",
        "PSI io some/full: share of wall time in which some/all non-idle tasks stalled on I/O, "
        "mean over the run's PSI intervals weighted by their length, reps pooled.",
        *rt.throttle_note(
            caps,
            ": a request over the cap waits in the cgroup's blk-throttle queue BEFORE it "
            "reaches the device queue. iostat measures only the device side (await, %util), so "
            "that wait is not in the waiting time above; PSI io and the runtimes include it.",
        ),
    ]
    notes.append("Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().astype(str).unique())) + ".")
    notes.append(rt.device_note(inputs.metadata_paths))
    if "jobs_per_cmp" in inputs.jobs.columns:
        notes.extend(run_checks(inputs.jobs, runs))
    return summary, notes


def analyse(inputs: Inputs) -> Result:
    jobs = m.check_jobs(inputs.jobs, str(inputs.runs_csv.with_name("jobs.csv")))
    runs = m.check_runs(inputs.runs, str(inputs.runs_csv))
    rt.one_variant(runs, inputs.runs_csv)
    workload = chosen_workload(inputs, runs)
    log = rt.MissingLog()
    dirs = rt.run_dirs(runs, inputs.runs_csv)
    tables = m.latency_tables(jobs, runs, dirs, log)
    evidence = m.evidence(tables["runs"], jobs, runs, workload)
    summary, notes = summary_and_notes(tables["table"], evidence, inputs, workload)
    values = inputs.claims.values
    ks = ", ".join(str(k) for k in sorted(tables["table"]["k"].unique()))
    figures = [
        Figure(
            FIG_LATENCY,
            f"Waiting time (left) and serving time (right) per request of workload {workload} as k CMPs are "
            f"loaded (k = {ks}, log2 axis), reps pooled; both derived from iostat await and %util. Compare "
            f"paper Figs. 5 and 6 (k = {values['k_values']['value']}).",
            lambda out: plot_latency(tables["table"], workload, out),
        ),
        Figure(
            FIG_GROWTH,
            f"Growth factor (value at k / value at k = 1, reps pooled) of the waiting and serving time of "
            f"workload {workload}. Compare paper Fig. 7.",
            lambda out: plot_growth(tables["table"], workload, out),
        ),
    ]
    return Result(
        summary=summary,
        evidence=evidence,
        levels={},
        outputs={
            "latency.csv": tables["table"],
            "latency_runs.csv": tables["runs"],
            "growth.csv": evidence["growth"],
            "setup.csv": setup_table(tables["table"], values, m.iostat_interval(runs, dirs)),
        },
        tables=[
            {"title": "I/O latency per workload and k, reps pooled", "csv": "latency.csv"},
            {"title": "I/O latency per run", "csv": "latency_runs.csv"},
            {
                "title": f"Growth per rep of workload {workload}: each run at k over the k = 1 run of its rep",
                "csv": "growth.csv",
            },  # fmt: skip
            {"title": "Setup: paper vs this run (no verdict)", "csv": "setup.csv"},
        ],
        figures=figures,
        notes=notes,
        log=log,
    )

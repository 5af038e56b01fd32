"""CMP stacking (paper 000, Sec. 2.1 and 2.3.1, eq. 1, Table 2, Fig. 1).

Duplicated copies of one benchmark (a workload of Table 2) fully load k = 1..K CMPs, the same
number of jobs on each; the paper's normalized runtime shows how much a job slows down when
other CMPs run the same workload. Locally the workloads are scaled down (label `scale_note`)
and run by stand-in programs (labels `binary`, `stands_in_for`). The metrics are defined in
experiments/cmp_stacking/metrics.py.

Claims (claims.yaml, judged by analysis.verdicts): on the per-rep normalized runtime (table
growth: each run at k over the same workload's k = 1 run of the same rep), each at a point
named in advance: x264's degradation at the highest k measured against 1.05; the graph
workloads stable within 5 % at k = 2 and degraded from 4 CMPs on; the paper's 16x at 8 CMPs;
the runtimes alone (7 s at 1 CMP, 122 s at 8) compared, not judged. A run with a failed job is
failed (columns failed, failed_reason).

Outputs: normalized_runtime.csv (llc_miss reads it), workloads.csv, runs_table.csv,
growth.csv, setup.csv and fig1_normalized_runtime.png. Run by the workflow:
python -m experiments analyze cmp_stacking.
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import runtables as rt
from analysis.common import fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from experiments.cmp_stacking import metrics as m
from experiments.cmp_stacking.experiment import PAPER_WORKLOADS
from experiments.cmp_stacking.figures import FIG_NAME, plot_fig1

NAME = "cmp_stacking"
FOLDER = Path(__file__).resolve().parent
JOB_TEXT = m.JOB_TEXT
RUN_TEXT = m.RUN_TEXT


def _name(w: dict) -> str:
    return f"#{w['workload_id']} {w['workload']}" if w["workload_id"] else str(w["workload"])


def setup_table(table: pd.DataFrame, values: dict) -> pd.DataFrame:
    """Design parameters beside the paper's: not results, so no verdict."""
    jpc = sorted(int(j) for j in table["jobs_per_cmp"].unique())
    rows = [
        ("k values (loaded CMPs)", values["k_values"], ", ".join(str(k) for k in sorted(table["k"].unique()))),
        ("jobs per CMP", values["jobs_per_cmp"], ", ".join(map(str, jpc))),
        ("workloads", values["n_workloads"], int(table["workload"].nunique())),
    ]
    return setup_frame(rows)


def levels(runs: pd.DataFrame) -> dict[str, set]:
    """What a claim may select: Table 2's workloads and those run."""
    return {"workload": set(PAPER_WORKLOADS) | set(runs["workload"].dropna().astype(str))}


def summary_and_notes(
    table: pd.DataFrame, workloads: pd.DataFrame, by_run: pd.DataFrame, inputs: Inputs, tol_pct: float
) -> tuple[list[str], list[str]]:
    values = inputs.claims.values
    runs = inputs.runs
    ks = ", ".join(str(k) for k in sorted(table["k"].unique()))
    jpc = ", ".join(str(j) for j in sorted(table["jobs_per_cmp"].unique()))
    at_k = "; ".join(
        f"{_name(w)} {fmt_num(w['normalized_at_k_max'])} at k = {w['k_max']}"
        for w in rt.records(workloads)
        if w["k_max"] is not None
    )
    n_failed = int(by_run["failed"].sum())
    summary = [
        f"{len(workloads)} workload(s) of Table 2, each run on k = {ks} loaded CMPs with {jpc} job(s) per CMP "
        f"and {int(runs['rep'].nunique())} rep(s); the paper stacked k = {values['k_values']['value']} CMPs "
        f"with {values['jobs_per_cmp']['value']} jobs each.",
    ]
    if at_k:
        summary.append(f"Normalized runtime T_k-c / T_1-c, reps pooled: {at_k}.")
    summary.append(
        f"{n_failed} of {len(by_run)} run(s) failed (a job with an exit code other than 0 or a self-check "
        "other than ok, no job, or a status other than ok): a claim on them says failed."
    )
    notes = [
        "Normalized runtime follows paper eq. (1): T_k-c / T_1-c. The figure and normalized_runtime.csv pool "
        "the reps (T_1-c the mean runtime of the workload's valid k=1 jobs over all reps, T_k-c that of its "
        "valid jobs at k; 95% t-interval over per-rep ratios with T_1-c held fixed). The claims read the "
        "ratio paired by rep (growth.csv): each run at k over the k = 1 run of the same workload and rep; "
        "the engine's estimate is the geometric mean of those ratios.",
        f"The degraded column and the figure's dashed line use the tolerance cmp_stacking.tol_pct "
        f"({fmt_num(tol_pct)} %); the claims declare their own null and margin in claims.yaml.",
        f"{int(table['n_failed'].sum())} job(s) failed (exit code not 0, or a self-check other than 'ok') and "
        "are left out of the pooled means; the n_failed column counts them per workload and k.",
    ]
    for w in rt.records(workloads):
        parts = [
            f"runs {w['binary']}" if w["binary"] else None,
            f"stands in for {w['stands_in_for']}" if w["stands_in_for"] else None,
            w["scale_note"] or None,
        ]
        parts = [p for p in parts if p]
        if parts:
            notes.append(f"Workload {_name(w)} " + "; ".join(parts) + ".")
    notes.extend(
        rt.throttle_note(
            rt.throttle_values(runs), " (an emulated slower device): the absolute slowdown depends on the cap."
        )
    )
    notes.append("Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().astype(str).unique())) + ".")
    notes.append(rt.device_note(inputs.metadata_paths))
    notes.extend(run_checks(inputs.jobs, runs))
    return summary, notes


def analyse(inputs: Inputs) -> Result:
    jobs_csv = str(inputs.runs_csv.with_name("jobs.csv"))
    jobs = m.check_jobs(inputs.jobs, jobs_csv)
    runs = m.check_runs(inputs.runs, str(inputs.runs_csv))
    rt.one_variant(runs, inputs.runs_csv)
    tol_pct = float(rt.config_section(inputs.config, NAME, FOLDER / "config.schema.json")["tol_pct"])
    table = m.normalized_table(jobs, tol_pct)
    workloads = m.workload_summary(table, jobs)
    by_run = m.per_run(jobs, runs)
    growth = m.growth(by_run)
    summary, notes = summary_and_notes(table, workloads, by_run, inputs, tol_pct)
    ks = ", ".join(str(k) for k in sorted(table["k"].unique()))
    figures = [
        Figure(
            FIG_NAME,
            f"Normalized runtime T_k-c / T_1-c of each workload as k CMPs are loaded (k = {ks}, log2 axis), "
            f"reps pooled; error bars: 95% t-interval across reps; dashed line: 1 + tolerance "
            f"({fmt_num(tol_pct)} %). Compare paper Fig. 1 (k = {inputs.claims.values['k_values']['value']}).",
            lambda out: plot_fig1(table, out, tol_pct),
        )
    ]
    return Result(
        summary=summary,
        evidence={"runs": by_run, "growth": growth},
        levels=levels(runs),
        outputs={
            "normalized_runtime.csv": table,
            "workloads.csv": workloads,
            "runs_table.csv": by_run,
            "growth.csv": growth,
            "setup.csv": setup_table(table, inputs.claims.values),
        },
        tables=[
            {"title": "Normalized runtime per workload and k, reps pooled", "csv": "normalized_runtime.csv"},
            {
                "title": "Workloads: programs, scale-down, the normalized runtime at the largest k",
                "csv": "workloads.csv",
            },
            {"title": "Runs: mean runtime of the valid jobs, failed", "csv": "runs_table.csv"},
            {"title": "Normalized runtime per rep: each run at k over the k = 1 run of its rep", "csv": "growth.csv"},
            {"title": "Setup: paper vs this run (design parameters, no verdict)", "csv": "setup.csv"},
        ],
        figures=figures,
        notes=notes,
    )

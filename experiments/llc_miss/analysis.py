"""Inter-socket cache-coherency cost of the LLC-miss kernel (paper 000, Sec. 2.3.2, Figs. 2-3).

Groups of identical LLC-miss kernels (kernels/llc_miss.c, the paper's Fig. 3), one group per nops
value (fewer nops between copies: denser LLC misses), are stacked on k = 1..K CMPs. The paper
plots each group's runtime degradation (the CC cost) against its LLC miss rate and finds the
largest far below the slowdown from I/O contention (Fig. 1, the cmp_stacking experiment).

Metrics (experiments/llc_miss/metrics.py has the definitions): per run the mean kernel time; per
group, k and rep the CC cost against the same rep's k = 1 run; per k = 1 run the kernel's access
rate and, where perf counts them, its LLC misses per cycle; per rep and cmp_stacking workload the
CC cost against half the I/O degradation. Evidence tables for the claims (claims.yaml):
`cc_cost`, `k1` and `cc_vs_io`; analysis.verdicts judges them.

Run by the workflow: python -m experiments analyze llc_miss (inputs: jobs.csv, runs.csv and, when
cmp_stacking runs too, its analysis/normalized_runtime.csv).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import runtables as rt
from analysis.common import fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from experiments.llc_miss import figures
from experiments.llc_miss import metrics as m

JOB_TEXT = ["workload", "result_check"]
RUN_TEXT = ["workload", "variant", "device"]
FIG_NAME = "fig2_cc_cost.png"


def setup_table(inputs: Inputs, by_run: pd.DataFrame, stacking: pd.DataFrame | None, k_io: int | None):
    """The paper's setup beside ours, no verdict: k values, nops groups, the I/O degradation."""
    vals = inputs.claims.values
    nops_groups = {"value": None, "unit": "nops between copies", "source": "Sec. 2.3.2, Fig. 3 (values not given)"}
    rows = [
        ("k values (loaded CMPs)", vals["k_values"], ", ".join(str(k) for k in sorted(by_run["k"].unique()))),
        ("nops groups", nops_groups, ", ".join(str(n) for n in sorted(by_run["nops"].unique()))),
        (
            "I/O degradation in CMP stacking (cmp_stacking's workloads)",
            vals["io_degradation_x"],
            m.io_range(stacking, k_io) or "cmp_stacking not analysed in this configuration",
        ),
    ]
    return setup_frame(rows)


def paper_k(inputs: Inputs) -> set[int]:
    """Fig. 2's k values (claims.yaml values): points a claim may name where fewer CMPs ran."""
    return {int(k) for k in str(inputs.claims.values["k_values"]["value"]).split(",")}


def summary_lines(by_run: pd.DataFrame, cost: pd.DataFrame, k1: pd.DataFrame, log: rt.MissingLog) -> list[str]:
    out = []
    K = int(cost["k"].max()) if len(cost) else None
    groups = ", ".join(str(n) for n in sorted(by_run["nops"].unique()))
    ks = ", ".join(str(k) for k in sorted(by_run["k"].unique()))
    out.append(
        f"{by_run['nops'].nunique()} LLC-miss kernel group(s) (nops {groups}) on k = {ks} loaded CMPs, "
        f"{by_run['rep'].nunique()} rep(s); {int(by_run['failed'].sum())} run(s) failed."
    )
    if K is not None:
        at_k = cost[(cost["k"] == K) & ~cost["failed"]].groupby("nops")["cc_cost_pct"].mean()
        out.append(f"Mean CC cost at k = {K}: " + "; ".join(f"nops {n}: {fmt_num(v)} %" for n, v in at_k.items()) + ".")
    if len(k1) and k1[m.MISS].notna().all():
        out.append("LLC misses per cycle per CMP counted by perf on every k = 1 run.")
    else:
        reasons = sorted({r["reason"] for r in log.records() if r["metric"] == m.MISS})
        out.append(
            "LLC misses not counted (" + ("; ".join(reasons) or "no k = 1 run") + "): the figure's x axis is "
            "the kernel's own access rate per CMP, as the trend claim's always is."
        )
    return out


def analyse(inputs: Inputs) -> Result:
    log = rt.MissingLog()
    by_run = m.per_run(inputs.jobs, inputs.runs, inputs.run_dirs, inputs.metas, log)
    k1 = m.k1_table(by_run)
    cost = m.cost_table(by_run)
    stacking = (
        m.read_stacking(Path(inputs.files["stacking"]).parent / "normalized_runtime.csv")
        if inputs.files.get("stacking")
        else None
    )
    vs_io = m.io_table(cost, stacking)
    k_io = int(vs_io["k"].max()) if len(vs_io) else None
    pts = m.points(cost, k1)
    notes = [
        "CC cost = 100 x (T_k / T_1 - 1), T the mean of the kernel's timed passes (result_elapsed_s) over a "
        "run's jobs, T_k and T_1 from the same rep; a run with a job that failed (exit code, self-check, no "
        "time) is failed, never averaged over the jobs that remain.",
        "Access rate per CMP = sum of result_accesses_per_s over one CMP's jobs at k = 1; one access is one row "
        "copy b[i][0] = a[i][0], a read miss and a write miss when the arrays exceed the LLC.",
        "LLC misses per cycle per CMP = (LLC-load-misses + LLC-store-misses) per second over cycles per second "
        "per busy CPU, from system-wide perf counts of the k = 1 runs, totals over the intervals inside the run.",
        f"Far below = under {fmt_num(m.FAR_BELOW)} x the I/O degradation of every cmp_stacking workload at 8 "
        "CMPs, the paper's 8-C (cc_vs_io.csv has every k > 1 both experiments measured); cmp_stacking's values "
        "are point values (normalized_runtime.csv).",
        "Scheduler variant: " + ", ".join(sorted(inputs.runs["variant"].dropna().astype(str).unique())) + ".",
        *run_checks(inputs.jobs, inputs.runs),
    ]
    if stacking is None:
        notes.append("cmp_stacking did not run in this configuration: the comparison with I/O has nothing to read.")
    xlabel, _ = figures.axis_label(figures.axis_of(pts))
    K = int(cost["k"].max()) if len(cost) else 1
    return Result(
        summary=summary_lines(by_run, cost, k1, log),
        evidence={"cc_cost": cost, "k1": k1, "cc_vs_io": vs_io},
        levels={"k": set(by_run["k"]) | paper_k(inputs), "nops": set(by_run["nops"])},
        outputs={
            "cc_cost.csv": cost,
            "points.csv": pts,
            "miss_rate.csv": k1,
            "cc_vs_io.csv": vs_io,
            "runs_table.csv": by_run,
            "setup.csv": setup_table(inputs, by_run, stacking, k_io).to_csv(index=False, lineterminator="\n"),
        },
        tables=[
            {"title": "CC cost per group and k: mean over reps, 95 % t-interval", "csv": "points.csv"},
            {"title": "CC cost per group, k and rep (paired with the rep's k = 1 run)", "csv": "cc_cost.csv"},
            {"title": "LLC miss rate and access rate of the k = 1 runs", "csv": "miss_rate.csv"},
            {"title": "CC cost against half the I/O degradation of cmp_stacking's workloads", "csv": "cc_vs_io.csv"},
            {"title": "Runs", "csv": "runs_table.csv"},
            {"title": "Setup: paper vs this run (no verdict)", "csv": "setup.csv"},
        ],
        figures=[
            Figure(
                FIG_NAME,
                f"CC cost of each nops group at k = 2..{K} against {xlabel}; error bars: 95 % "
                "t-interval over reps. Compare paper Fig. 2 (x = LLC misses per cycle per CMP).",
                lambda out: figures.plot_fig2(pts, out),
            ),
        ],
        notes=notes,
        log=log,
    )

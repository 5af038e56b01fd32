"""Memory utilization against I/O contention for implicit-I/O jobs (paper 000, Sec. 2.4.2.2,
Fig. 8).

Graph BFS jobs (kernels/graph_bfs.c) keep their edge list and CSR graph in shared file mappings;
once the jobs' memory demand approaches the memory available (a cap shared by a run's jobs, or the
machine's), paging turns into I/O. Each level (scale s, edge factor e, k loaded CMPs) runs with a
number of reps; the paper plots the share of its sampling period with I/O contention against
memory utilization. experiments/implicit_io/metrics.py defines every metric; the claims
(claims.yaml) read the evidence table `runs`, one row per run, and analysis.verdicts judges them.

Run by the workflow: python -m experiments analyze implicit_io (inputs: jobs.csv, runs.csv and,
when its runs use an emulated rotating disk and the report calibrates it, the calibration).
"""

from __future__ import annotations

from pathlib import Path

import pandas as pd

from analysis import rotating_disk
from analysis import runtables as rt
from analysis.common import fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from experiments.implicit_io import figures
from experiments.implicit_io import metrics as m

JOB_TEXT = ["workload", "result_check"]
RUN_TEXT = ["workload", "variant", "device"]
FIG_NAME = "fig8_memory_contention.png"


def criterion_of(inputs: Inputs) -> m.Criterion:
    section = (inputs.config or {}).get("implicit_io") or {}
    return m.parse_criterion(section.get("criterion", m.DEFAULT_CRITERION))


def setup_table(inputs: Inputs, levels: pd.DataFrame) -> pd.DataFrame:
    """The paper's setup beside ours, no verdict."""
    vals = inputs.claims.values
    jobs, runs = inputs.jobs, inputs.runs
    util = levels["mem_util_pct"].dropna()
    per_level = jobs.groupby([*m.LEVEL, "run_id"]).size().groupby(level=[0, 1, 2]).mean() if len(jobs) else []
    durations = runs.groupby(m.LEVEL)["duration_s"].sum() if len(runs) else pd.Series(dtype=float)
    rows = [
        ("lowest memory utilization", vals["mem_util_min_pct"], fmt_num(float(util.min())) if len(util) else None),
        ("highest memory utilization", vals["mem_util_max_pct"], fmt_num(float(util.max())) if len(util) else None),
        ("onset of swapping (the claims' boundary)", vals["onset_mem_util_pct"], fmt_num(onset_of(inputs))),
        ("workloads (levels)", vals["n_workloads"], len(levels)),
        (
            "jobs per workload (per run)",
            vals["jobs_per_workload"],
            ", ".join(fmt_num(v) for v in sorted(set(per_level))),
        ),
        (
            "sampling period per workload (sum of run durations)",
            vals["sampling_period_s"],
            ", ".join(fmt_num(v) for v in sorted(durations.dropna().unique())),
        ),
    ]
    return setup_frame(rows)


def onset_of(inputs: Inputs) -> float:
    """The paper's onset of swapping, % of memory (claims.yaml values), the boundary of the claims."""
    return float(inputs.claims.values["onset_mem_util_pct"]["value"])


def disk_calibration(inputs: Inputs) -> dict | None:
    """The device section's calibration, None where it did not run (no calibration.json: the
    analysis command names the file whether or not the section runs, as mark_disk_failures reads it)."""
    path = inputs.files.get("device_calibration")
    return rotating_disk.read_calibration(path) if path and Path(path).is_file() else None


def analyse(inputs: Inputs) -> Result:
    crit = criterion_of(inputs)
    onset = onset_of(inputs)
    log = rt.MissingLog()
    cal = disk_calibration(inputs)
    disk_failed = rotating_disk.failed_runs(cal, inputs.metas)
    by_run, pooled = m.per_run(inputs.jobs, inputs.runs, inputs.run_dirs, crit, onset, disk_failed, log)
    levels = m.per_level(inputs.jobs, by_run, pooled, crit)
    bases = by_run.groupby("memory_basis")["run_id"].count()
    summary = [
        f"{len(levels)} graph level(s), {len(by_run)} run(s), {int(by_run['failed'].sum())} failed: "
        + "; ".join(
            f"{r['level']} (k = {r['k']}): {fmt_num(r['mem_util_pct'])} % memory, share "
            f"{fmt_num(r['contention_share'])}"
            for r in rt.records(levels)
        )
        + ".",
        f"Contention: a sampling interval with {crit.text}.",
        "Memory utilization basis: " + ", ".join(f"{n} run(s) {b}" for b, n in bases.items()) + ".",
    ]
    short = levels[levels["below_half"] & ~levels["resolves_rare"]]
    if len(short):
        summary.append(
            f"{len(short)} level(s) below {fmt_num(onset)} % ({', '.join(short['level'])}) have "
            + ", ".join(str(n) for n in short["n_intervals"])
            + f" intervals, fewer than {m.RARE_TRIALS}: too few to tell a share under {fmt_num(m.RARE)} from none seen."
        )
    if disk_failed:
        summary.append(f"{len(disk_failed)} run(s) on an emulated disk that failed its calibration: marked failed.")
    notes = [
        "Memory utilization per run: mean over the run's memory.csv intervals of cg_used_pct (the run's memory "
        "cgroup over its limit) with a memory cap, else of mem_used_pct (system-wide); with a cap the paper's "
        f"{fmt_num(onset)} % of system memory is read as {fmt_num(onset)} % of the cap.",
        f"Contention share: the fraction of the run's sampling intervals (0 < t_s <= duration_s) meeting "
        f"{crit.text}; an interval without a value (await or wait without I/O) counts as not contended.",
        "A run with a failed graph job is failed: a job killed under the cap frees its memory and stops paging.",
        f"'Rare' is judged only on levels whose runs have {m.RARE_TRIALS} intervals or more together: with fewer, "
        f"a share of {fmt_num(m.RARE)} would show no contended interval more often than 1 time in 20.",
        "Scheduler variant: " + ", ".join(sorted(inputs.runs["variant"].dropna().astype(str).unique())) + ".",
        *run_checks(inputs.jobs, inputs.runs),
    ]
    dropped = inputs.runs["caches_dropped"] if "caches_dropped" in inputs.runs.columns else pd.Series(dtype=str)
    if dropped.astype(str).str.lower().isin(["true", "1"]).any():
        notes.append("The page cache was dropped before each run with caches_dropped set.")
    if cal is not None and cal.get("skipped"):
        notes.append(f"The emulated disk was not calibrated: {cal['skipped']}.")
    notes.extend(
        rt.throttle_note(
            rt.throttle_values(inputs.runs),
            ": paging I/O waits in the cgroup before the device queue, which PSI io sees and iostat does not.",
        )
    )
    return Result(
        summary=summary,
        evidence={"runs": by_run},
        levels={"level": set(by_run["level"])},
        outputs={
            "implicit_io.csv": levels,
            "implicit_io_runs.csv": by_run,
            "setup.csv": setup_table(inputs, levels).to_csv(index=False, lineterminator="\n"),
        },
        tables=[
            {"title": "Memory utilization and contention per level (reps pooled)", "csv": "implicit_io.csv"},
            {"title": "Memory utilization and contention per run", "csv": "implicit_io_runs.csv"},
            {"title": "Setup: paper vs this run (no verdict)", "csv": "setup.csv"},
        ],
        figures=[
            Figure(
                FIG_NAME,
                f"Share of sampling intervals with I/O contention ({crit.text}) against memory "
                "utilization; grey: runs (hollow red: failed), red: levels labelled s<scale>/e<edge factor>; "
                f"dashed: {fmt_num(onset)} % utilization. Compare paper Fig. 8.",
                lambda out: figures.plot_fig8(levels, by_run, crit.text, onset, out),
            ),
        ],
        notes=notes,
        log=log,
    )

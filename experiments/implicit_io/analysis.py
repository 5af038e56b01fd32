"""Memory utilization against I/O contention for implicit-I/O jobs (paper 000, Sec. 2.4.2.2,
Fig. 8).

Graph BFS jobs (kernels/graph_bfs.c) keep their edge list and CSR graph in shared file mappings;
once the jobs' memory demand approaches the memory available, paging turns into I/O. Each level
(scale s, edge factor e, k loaded CMPs) is run with a number of reps; the paper plots the share
of its sampling period with I/O contention against memory utilization.

Definitions (per run; intervals of the run are monitor rows with 0 < t_s <= duration_s)
  memory utilization  the mean over the run's memory.csv intervals of cg_used_pct (usage of the
                      run's memory cgroup over its limit) when the run had a memory cap
                      (runs.csv memory_limit_bytes set), else of mem_used_pct (system-wide,
                      100 x (MemTotal - MemAvailable) / MemTotal). `memory_basis` says which;
                      mem_util_peak_pct is the largest interval value.
  contention share    the fraction of the run's sampling intervals that meet the criterion
                      (--criterion METRIC>=NUMBER, default psi_io_some_pct>=10):
                        psi_io_some_pct / psi_io_full_pct  PSI io rows (share of the interval in
                                                           which some / all tasks stalled on I/O)
                        iostat_util_pct, iostat_await_ms, iostat_wait_ms  iostat rows of the
                                                           run's device (await/wait: derived, NaN
                                                           in an interval without I/O)
                      An interval whose value is NaN does not meet it but counts in the
                      denominator (await and wait are NaN when the device did no I/O).
  major faults/s      mean of cg_pgmajfault_per_s with a cap, else of pgmajfault_per_s.
  per level           reps pooled: memory utilization and major faults/s are means over all the
                      level's intervals, the contention share is sum(contended) / sum(intervals),
                      the peak is the largest interval value; runtime is the mean over valid jobs,
                      TEPS the harmonic mean of the valid jobs' result_harmonic_mean_teps (the
                      Graph500 convention), storage the mean result_storage_bytes per job and the
                      sum over a run's jobs (storage_pct_of_memory: that sum over the cap, or
                      over MemTotal without one).
  valid job           exit_code 0, result_check 'ok', finite positive runtime_s.

Verdict rules (`compare_with_paper`)
  "contention share rises with memory utilization": Spearman rank correlation between the runs'
    memory utilization and contention share (every run is one point), one-sided permutation test
    as in experiments.sensitivity_ranking.analysis: rho > 0 and p < 0.05 -> reproduced in direction, else not
    reproduced; "not measurable here" when fewer than 2 levels have both values, when the values
    do not vary, or when even a perfect ranking could not reach p < 0.05.
  "below ~50 % utilization contention is rare, at the highest utilization it is frequent":
    reproduced in direction when every level below 50 % has a share < 0.01 and the level with
    the highest utilization has a share > 0.5; "not measurable here" when no level is below 50 %
    or none reaches 50 % (the paper's boundary is outside the measured range) or fewer than 2
    levels; not reproduced otherwise. With a memory cap, 50 % is of the cap.
  Absolute values (26.9 % to 68.6 %, 1/250 at 48.4 %, nearly 3/4 at 68.6 %) depend on the
  machine's memory, the cap and the device: "differs (machine-specific)" when measured.
  Setup parameters (levels, jobs per level, sampling period) are in setup.csv without verdict.

CLI: python -m experiments.implicit_io.analysis --jobs J --runs R [--criterion psi_io_some_pct>=10]
     --out-dir D
  writes D/implicit_io.csv (per level), D/implicit_io_runs.csv, D/setup.csv,
  D/fig8_memory_contention.png and D/section.json. A malformed --criterion is a one-line error
  with exit status 2.
"""

from __future__ import annotations

import math
import os
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import runtables as rt  # noqa: E402
from analysis.common import (  # noqa: E402
    VERDICT_DIRECTION,
    VERDICT_MACHINE,
    VERDICT_NOT,
    VERDICT_UNMEASURABLE,
    AnalysisInputError,
    base_parser,
    cli,
    direction_row,
    fmt_num,
    paper_note,
    ratio_note,
    resolve_run_paths,
    run_checks,
    setup_frame,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402
from analysis.stats import rank_trend  # noqa: E402

EXPERIMENT = "implicit_io"
PAPER_ID = "000"
FIG_NAME = "fig8_memory_contention.png"
SOURCE = "experiments.implicit_io.analysis"
DEFAULT_CRITERION = "psi_io_some_pct>=10"
HALF_PCT = 50.0  # the paper's "50% of the whole system memory"
RARE = 0.01  # "contention is rare": below 1 % of intervals
FREQUENT = 0.5  # "contention is frequent": above half of the intervals

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

JOB_COLUMNS = [
    "run_id",
    "scale",
    "edgefactor",
    "k",
    "rep",
    "cmp",
    "job_id",
    "runtime_s",
    "exit_code",
    "jobs_per_cmp",
    "result_harmonic_mean_teps",
    "result_storage_bytes",
    "result_check",
]
JOB_INTS = {
    "scale": 1,
    "edgefactor": 1,
    "k": 1,
    "rep": 0,
    "cmp": 0,
    "exit_code": None,
    "jobs_per_cmp": 1,
}
RUN_COLUMNS = [
    "run_id",
    "scale",
    "edgefactor",
    "k",
    "rep",
    "variant",
    "throttle_read_bps",
    "device",
    "memory_limit_bytes",
    "duration_s",
    "metadata_path",
    "run_dir",
]
LEVEL = ["scale", "edgefactor", "k"]
RUN_TABLE_COLUMNS = [
    "run_id",
    *LEVEL,
    "rep",
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
    "reason",
]
TABLE_COLUMNS = [
    *LEVEL,
    "label",
    "n_runs",
    "n_jobs",
    "n_failed",
    "memory_basis",
    "mem_util_pct",
    "mem_util_peak_pct",
    "criterion",
    "n_intervals",
    "n_contended",
    "contention_share",
    "mean_runtime_s",
    "teps_harmonic_mean",
    "storage_bytes_per_job",
    "storage_bytes_run",
    "storage_pct_of_memory",
    "majfault_per_s",
    "reason",
]


# ----------------------------------------------------------------------------- criterion


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


def parse_criterion(text: str) -> Criterion:
    """'metric>=number' -> Criterion; anything else is a one-line error naming --criterion."""
    match = CRITERION_RE.match(text or "")
    metric = match.group(1) if match else None
    expected = f"METRIC>=NUMBER with METRIC one of {', '.join(CRITERIA)}"
    if match is None or metric not in CRITERIA:
        raise AnalysisInputError(f"--criterion: {text!r} (expected {expected})")
    threshold = float(match.group(2))
    if not math.isfinite(threshold):
        raise AnalysisInputError(f"--criterion: {text!r} (expected a finite number)")
    table, column, resource = CRITERIA[metric]
    return Criterion(metric, threshold, table, column, resource)


# ----------------------------------------------------------------------------- input


def read_jobs(path: str | os.PathLike) -> pd.DataFrame:
    return rt.read_table(
        path,
        required=JOB_COLUMNS,
        ints=JOB_INTS,
        floats=["runtime_s", "result_harmonic_mean_teps", "result_storage_bytes"],
        texts=["job_id", "result_check"],
        experiments=(EXPERIMENT,),
    )


def read_runs(path: str | os.PathLike) -> pd.DataFrame:
    df = rt.read_table(
        path,
        required=RUN_COLUMNS,
        ints={"scale": 1, "edgefactor": 1, "k": 1, "rep": 0},
        floats=["throttle_read_bps", "memory_limit_bytes", "duration_s"],
        texts=["variant", "device", "metadata_path", "run_dir"],
        experiments=(EXPERIMENT,),
        what="one row per run",
    )
    return df


# ----------------------------------------------------------------------------- per run


def _label(scale: int, edgefactor: int) -> str:
    return f"s{scale}/e{edgefactor}"


def memory_values(run: dict, run_dir: Path, log: rt.MissingLog) -> dict:
    """The run's memory utilization intervals and major faults, or why they are missing."""
    cap = rt.number_or_none(run.get("memory_limit_bytes"))
    capped = cap is not None and cap > 0
    basis = "cgroup cap (cg_used_pct)" if capped else "system (mem_used_pct)"
    out = {"basis": basis, "util": pd.Series(dtype=float), "majflt": pd.Series(dtype=float)}
    out.update(mem_total_bytes=math.nan, reason="")
    df, why = rt.load_tidy(run_dir, "memory")
    if df is not None:
        df = rt.in_run(df, rt.number_or_none(run.get("duration_s")))
        column = "cg_used_pct" if capped else "mem_used_pct"
        fault = "cg_pgmajfault_per_s" if capped else "pgmajfault_per_s"
        if column not in df.columns or df.empty:
            why = (
                "no memory interval inside the run"
                if df.empty
                else f"tidy/memory.csv has no {column} column (memory cgroup not recorded)"
            )
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


def contention_values(run: dict, run_dir: Path, criterion: Criterion, log: rt.MissingLog) -> tuple[int, int, str]:
    """(intervals, intervals meeting the criterion, reason) of one run."""
    metric = f"contention share ({criterion.text})"
    df, why = rt.load_tidy(run_dir, criterion.table)
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
    log.add(metric, why, SOURCE, str(run["run_id"]))
    return 0, 0, why


def analyse(
    jobs: pd.DataFrame,
    runs: pd.DataFrame,
    dirs: dict[str, Path],
    criterion: Criterion,
    log: rt.MissingLog,
) -> dict:
    """{'runs': per-run table, 'table': per-level table, 'trend': rank test over runs}."""
    valid = rt.valid_jobs_mask(jobs, check_required=True)
    run_rows, pooled = [], {}
    for run in rt.records(runs):
        run_id = str(run["run_id"])
        mem = memory_values(run, dirs[run_id], log)
        n, hit, why = contention_values(run, dirs[run_id], criterion, log)
        storage = jobs.loc[jobs["run_id"] == run_id, "result_storage_bytes"]
        storage_run = float(storage.sum()) if storage.notna().any() else math.nan
        cap = rt.number_or_none(run.get("memory_limit_bytes"))
        memory_bytes = cap if cap else mem["mem_total_bytes"]
        key = tuple(int(run[c]) for c in LEVEL)
        b = pooled.setdefault(key, {"util": [], "majflt": [], "n": 0, "hit": 0, "basis": set()})
        b["util"].append(mem["util"])
        b["majflt"].append(mem["majflt"])
        b["n"] += n
        b["hit"] += hit
        b["basis"].add(mem["basis"])
        run_rows.append(
            {
                "run_id": run_id,
                **{c: int(run[c]) for c in LEVEL},
                "rep": int(run["rep"]),
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
                "reason": "; ".join(r for r in (mem["reason"], why) if r),
            }
        )
    per_run = pd.DataFrame(run_rows, columns=RUN_TABLE_COLUMNS)
    per_run = per_run.sort_values([*LEVEL, "rep", "run_id"], kind="stable").reset_index(drop=True)

    rows = []
    for key, b in sorted(pooled.items()):
        scale, edgefactor, k = key
        level = (jobs["scale"] == scale) & (jobs["edgefactor"] == edgefactor) & (jobs["k"] == k)
        lj, lv = jobs[level], jobs[level & valid]
        sub = per_run[(per_run["scale"] == scale) & (per_run["edgefactor"] == edgefactor) & (per_run["k"] == k)]
        util = pd.concat([u for u in b["util"] if len(u)] or [pd.Series(dtype=float)])
        majflt = pd.concat([m for m in b["majflt"] if len(m)] or [pd.Series(dtype=float)])
        teps = lv["result_harmonic_mean_teps"]
        teps = teps[teps > 0]
        reasons = sorted(set(r for r in sub["reason"] if r))
        rows.append(
            {
                "scale": scale,
                "edgefactor": edgefactor,
                "k": k,
                "label": _label(scale, edgefactor),
                "n_runs": len(sub),
                "n_jobs": len(lv),
                "n_failed": len(lj) - len(lv),
                "memory_basis": " + ".join(sorted(b["basis"])),
                "mem_util_pct": float(util.mean()) if len(util) else math.nan,
                "mem_util_peak_pct": float(util.max()) if len(util) else math.nan,
                "criterion": criterion.text,
                "n_intervals": b["n"],
                "n_contended": b["hit"],
                "contention_share": b["hit"] / b["n"] if b["n"] else math.nan,
                "mean_runtime_s": float(lv["runtime_s"].mean()) if len(lv) else math.nan,
                "teps_harmonic_mean": (float(len(teps) / (1.0 / teps).sum()) if len(teps) else math.nan),
                "storage_bytes_per_job": float(lj["result_storage_bytes"].mean()),
                "storage_bytes_run": float(sub["storage_bytes_run"].mean()),
                "storage_pct_of_memory": float(sub["storage_pct_of_memory"].mean()),
                "majfault_per_s": float(majflt.mean()) if len(majflt) else math.nan,
                "reason": "; ".join(reasons),
            }
        )
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    if table["k"].nunique() > 1:  # levels differ in k too: say so in their labels
        table["label"] = table["label"] + ", k=" + table["k"].astype(str)
    points = per_run[per_run["mem_util_pct"].notna() & per_run["contention_share"].notna()]
    levels = table[table["mem_util_pct"].notna() & table["contention_share"].notna()]
    if len(levels) >= 2:
        trend = rank_trend(points["mem_util_pct"].tolist(), points["contention_share"].tolist(), "greater")
    else:
        trend = rank_trend([], [], "greater")
        trend["n"] = len(points)
    trend["n_levels"] = len(levels)
    return {"runs": per_run, "table": table, "trend": trend, "criterion": criterion}


# ----------------------------------------------------------------------------- paper comparison


def _share_text(share: float) -> str:
    return f"{fmt_num(share)} ({fmt_num(100 * share)} % of intervals)"


def compare_with_paper(result: dict, paper: dict) -> pd.DataFrame:
    exp = experiment_values(paper, EXPERIMENT)
    vals, claims = exp["values"], exp["claims"]
    table, tr = result["table"], result["trend"]
    levels = table[table["mem_util_pct"].notna() & table["contention_share"].notna()]
    levels = levels.sort_values("mem_util_pct", kind="stable")
    rows = []

    claim = claims["share_rises_with_mem_util"]
    if tr["n_levels"] < 2:
        rows.append(
            {
                "quantity": "Contention share rises with memory utilization",
                "paper_value": claim["statement"],
                "measured_value": None,
                "unit": "",
                "verdict": VERDICT_UNMEASURABLE,
                "note": f"{paper_note(claim)} Why not measurable: {tr['n_levels']} level(s) "
                "with both a memory utilization and a contention share (need 2).",
            }
        )
    else:
        rows.append(
            direction_row(
                "Contention share rises with memory utilization",
                claim,
                tr,
                +1,
                "contention share against memory utilization, one point per run",
                items="runs",
            )
        )

    claim = claims["rare_below_half_frequent_at_top"]
    row = {
        "quantity": f"Contention rare (< {fmt_num(RARE)}) below {fmt_num(HALF_PCT)} % "
        f"utilization, frequent (> {fmt_num(FREQUENT)}) at the highest",
        "paper_value": claim["statement"],
        "unit": "",
    }
    rule = (
        f"Rule: every level below {fmt_num(HALF_PCT)} % memory utilization has a share < "
        f"{fmt_num(RARE)} and the level with the highest utilization a share > "
        f"{fmt_num(FREQUENT)}."
    )
    below = levels[levels["mem_util_pct"] < HALF_PCT]
    top = levels.iloc[-1] if len(levels) else None
    if len(levels) < 2 or below.empty or top["mem_util_pct"] < HALF_PCT:
        why = (
            f"{len(levels)} level(s) measured"
            if len(levels) < 2
            else (
                f"no level below {fmt_num(HALF_PCT)} %"
                if below.empty
                else f"no level reached {fmt_num(HALF_PCT)} % (highest "
                f"{fmt_num(top['mem_util_pct'])} %): the paper's boundary lies outside the range"
            )
        )
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: {why}. {rule}",
        )
    else:
        measured = (
            "below 50 %: "
            + ", ".join(
                f"{r['label']} at {fmt_num(r['mem_util_pct'])} %: {fmt_num(r['contention_share'])}"
                for r in rt.records(below)
            )
            + f"; highest {top['label']} at {fmt_num(top['mem_util_pct'])} %: "
            f"{fmt_num(top['contention_share'])}"
        )
        ok = (below["contention_share"] < RARE).all() and top["contention_share"] > FREQUENT
        row.update(
            measured_value=measured,
            verdict=VERDICT_DIRECTION if ok else VERDICT_NOT,
            note=f"{paper_note(claim)} {rule}",
        )
    rows.append(row)

    item = vals["share_at_68_6"]
    row = {
        "quantity": "Contention share at the highest memory utilization",
        "paper_value": item["value"],
        "unit": item["unit"],
    }
    if top is None:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} Why not measurable: no level has both values.",
        )
    else:
        row.update(
            measured_value=float(top["contention_share"]),
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(item)} Ours at {fmt_num(top['mem_util_pct'])} % ({top['label']}; "
            f"paper: {fmt_num(vals['mem_util_max_pct']['value'])} %); "
            f"{ratio_note(float(top['contention_share']), item['value'])}.",
        )
    rows.append(row)

    item = vals["share_at_48_4"]
    row = {
        "quantity": f"Contention share at the highest utilization below {fmt_num(HALF_PCT)} %",
        "paper_value": item["value"],
        "unit": item["unit"],
    }
    if below.empty:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} Why not measurable: no level below {fmt_num(HALF_PCT)} %.",
        )
    else:
        b = below.iloc[-1]
        row.update(
            measured_value=float(b["contention_share"]),
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(item)} Ours at {fmt_num(b['mem_util_pct'])} % ({b['label']}; paper: 48.4 %).",
        )
    rows.append(row)
    columns = ["quantity", "paper_value", "measured_value", "unit", "verdict", "note"]
    return pd.DataFrame(rows, columns=columns)


def setup_table(result: dict, paper: dict, runs: pd.DataFrame, jobs: pd.DataFrame):
    vals = experiment_values(paper, EXPERIMENT)["values"]
    table = result["table"]
    util = table["mem_util_pct"].dropna()
    per_level = jobs.groupby([*LEVEL, "run_id"]).size().groupby(level=[0, 1, 2]).mean()
    durations = runs.groupby(LEVEL)["duration_s"].sum()
    rows = [
        (
            "lowest memory utilization",
            vals["mem_util_min_pct"],
            round(float(util.min()), 6) if len(util) else None,
        ),
        (
            "highest memory utilization",
            vals["mem_util_max_pct"],
            round(float(util.max()), 6) if len(util) else None,
        ),
        ("workloads (levels)", vals["n_workloads"], len(table)),
        (
            "jobs per workload (per run)",
            vals["jobs_per_workload"],
            ", ".join(fmt_num(v) for v in sorted(per_level.unique())),
        ),
        (
            "sampling period per workload (sum of run durations)",
            vals["sampling_period_s"],
            ", ".join(fmt_num(v) for v in sorted(durations.dropna().unique())),
        ),
    ]
    return setup_frame(rows)


# ----------------------------------------------------------------------------- figure


def plot_fig8(result: dict, path: str | os.PathLike) -> None:
    """Fig. 8 style: contention share (% of intervals) against memory utilization (%)."""
    table, per_run, criterion = result["table"], result["runs"], result["criterion"]
    fig, ax = plt.subplots(figsize=(8.0, 5.0), dpi=110)
    pts = per_run[per_run["mem_util_pct"].notna() & per_run["contention_share"].notna()]
    ax.scatter(
        pts["mem_util_pct"],
        100 * pts["contention_share"],
        s=14,
        color="grey",
        alpha=0.6,
        label="one run",
    )
    lv = table[table["mem_util_pct"].notna() & table["contention_share"].notna()]
    lv = lv.sort_values("mem_util_pct")
    if len(lv):
        ax.plot(
            lv["mem_util_pct"],
            100 * lv["contention_share"],
            marker="o",
            ms=7,
            color="tab:red",
            lw=1.2,
            label="level (reps pooled)",
        )
        for x, y, label in zip(lv["mem_util_pct"], 100 * lv["contention_share"], lv["label"]):
            ax.annotate(label, (x, y), textcoords="offset points", xytext=(5, 6), fontsize=8)
    else:
        rt.no_data(ax, "no run with both a memory utilization and a contention share")
    ax.axvline(HALF_PCT, color="grey", ls="--", lw=1, label=f"{fmt_num(HALF_PCT)} % utilization")
    bases = sorted(set(per_run["memory_basis"]))
    basis = bases[0] if len(bases) == 1 else "mixed: " + ", ".join(bases)
    ax.set_xlabel(f"memory utilization, % (mean over the run; basis: {basis})", fontsize=9)
    ax.set_ylabel("intervals with I/O contention (% of the run's intervals)")
    ax.set_title(f"Memory utilization against I/O contention; contention: {criterion.text}", fontsize=10)
    ax.set_xlim(0, max(100.0, float(pts["mem_util_pct"].max()) + 5 if len(pts) else 100.0))
    ax.set_ylim(-3, 103)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    rt.save_png(fig, path)


# ----------------------------------------------------------------------------- section


def build_section(
    result: dict,
    paper: dict,
    comparison: pd.DataFrame,
    runs: pd.DataFrame,
    metadata_paths: list[Path],
    log: rt.MissingLog,
    extra_notes: list[str],
) -> dict:
    table, per_run, criterion = result["table"], result["runs"], result["criterion"]
    per_level = "; ".join(
        f"{r['label']} (k = {r['k']}): {fmt_num(r['mem_util_pct'])} % memory, share {fmt_num(r['contention_share'])}"
        for r in rt.records(table)
    )
    bases = per_run.groupby("memory_basis")["run_id"].count()
    basis_text = ", ".join(f"{n} run(s) {b}" for b, n in bases.items())
    summary = [
        f"{len(table)} graph level(s), {len(per_run)} run(s): {per_level}.",
        f"Contention: a sampling interval with {criterion.text}.",
        f"Memory utilization basis: {basis_text}.",
    ]
    notes = [
        "Memory utilization per run: mean over the run's memory.csv intervals of cg_used_pct "
        "(usage of the run's memory cgroup over its limit) when the run had a memory cap, else "
        "of mem_used_pct (system-wide, 100 x (MemTotal - MemAvailable) / MemTotal); the runs "
        "table names the basis per run; with a cap the paper's 50 % of system memory is read "
        "as 50 % of the cap.",
        f"Contention share: fraction of the run's sampling intervals (0 < t_s <= duration_s) "
        f"meeting {criterion.text}; an interval without a value (await/wait without I/O) "
        "counts as not contended. Levels pool their reps' intervals.",
        "The direction test uses every run as one point (memory utilization, contention share).",
        f"{int(table['n_failed'].sum())} job(s) failed and were left out of runtime and TEPS.",
    ]
    dropped = runs["caches_dropped"] if "caches_dropped" in runs.columns else pd.Series([])
    if dropped.astype(str).str.lower().isin(["true", "1"]).any():
        notes.append("The page cache was dropped before each run with caches_dropped set.")
    caps = rt.throttle_values(runs)
    if caps:
        notes.append(
            "Runs throttled to a read cap of "
            + ", ".join(f"{fmt_num(c / 1e6)} MB/s" for c in caps)
            + ": paging I/O waits in the cgroup before the device queue, which PSI io sees "
            "and iostat does not."
        )
    notes.append("Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().unique())) + ".")
    notes.extend(n.strip() for n in paper.get("notes", []))
    notes.extend(extra_notes)
    return rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=[
            {
                "path": FIG_NAME,
                "caption": f"Share of sampling intervals with I/O contention ({criterion.text}) "
                "against memory utilization; grey: runs, red: levels labelled s<scale>/e<edge "
                "factor>; dashed: 50 % utilization. Compare paper Fig. 8 (26.9 % to 68.6 % of "
                "256 GB).",
            }
        ],
        comparison=comparison,
        tables=[
            {"title": "Memory utilization and contention per level", "csv": "implicit_io.csv"},
            {"title": "Memory utilization and contention per run", "csv": "implicit_io_runs.csv"},
            {"title": "Setup: paper vs this run (no verdict)", "csv": "setup.csv"},
        ],
        metadata_paths=metadata_paths,
        log=log,
        notes=notes,
    )


def run(
    jobs_csv: str,
    runs_csv: str,
    out_dir: str,
    criterion: str = DEFAULT_CRITERION,
    paper_id: str = PAPER_ID,
) -> dict:
    crit = parse_criterion(criterion)
    jobs, runs = read_jobs(jobs_csv), read_runs(runs_csv)
    rt.one_variant(runs, runs_csv)
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    dirs = rt.run_dirs(runs, runs_csv)
    paper = load_paper_values(paper_id)
    log = rt.MissingLog()
    result = analyse(jobs, runs, dirs, crit, log)
    comparison = compare_with_paper(result, paper)
    section = build_section(result, paper, comparison, runs, metadata_paths, log, run_checks(jobs, runs))
    rt.write_outputs(
        out_dir,
        section,
        {
            "implicit_io.csv": result["table"],
            "implicit_io_runs.csv": result["runs"],
            "setup.csv": setup_table(result, paper, runs, jobs).to_csv(index=False, lineterminator="\n"),
        },
        [lambda out: plot_fig8(result, out / FIG_NAME)],
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "experiments.implicit_io.analysis",
        "Memory utilization against I/O contention (paper 000, Fig. 8) for the implicit-I/O graph runs.",
    )
    parser.add_argument(
        "--criterion",
        default=DEFAULT_CRITERION,
        metavar="METRIC>=NUMBER",
        help="a sampling interval has I/O contention when METRIC >= NUMBER; METRIC one of "
        f"{', '.join(CRITERIA)} (default: {DEFAULT_CRITERION})",
    )
    return cli(
        parser,
        argv,
        PAPER_ID,
        lambda a: run(a.jobs, a.runs, a.out_dir, a.criterion, a.paper_id),
    )


if __name__ == "__main__":
    sys.exit(main())

"""Inter-socket cache-coherency cost of the LLC-miss kernel (paper 000, Sec. 2.3.2, Fig. 2-3).

Groups of identical LLC-miss kernels (kernels/llc_miss.c, the paper's Fig. 3), one group per
--nops value (fewer nops between copies: denser LLC misses), are stacked on k = 1..K CMPs. The
paper plots each group's runtime degradation against its LLC miss rate and finds the largest
coherency (CC) cost far below the slowdown from I/O contention (Fig. 1).

Definitions
  time             the kernel's timed passes, result_elapsed_s (default, --time elapsed: leaves
                   out start-up and the first touch of the arrays), or the job's wall time,
                   runtime_s (--time runtime).
  degradation_pct  100 * (T_k / T_1 - 1), T_1 the mean time of the group's valid k=1 jobs, T_k
                   that of its valid jobs at k, all reps pooled (paper eq. 1 as a percentage).
                   95% CI: t-interval over the per-rep values, T_1 held fixed.
  degraded         CI lower bound > tol (one rep: the point estimate).
  LLC miss rate    llc_misses_per_cycle_per_cmp = (LLC-load-misses + LLC-store-misses) per
                   second divided by cycles per second per busy CPU, i.e. the misses of one
                   loaded CMP per cycle of one of its cores, measured on the k = 1 runs (one CMP
                   loaded with jobs_per_cmp busy CPUs; perf counts system-wide, and idle CPUs
                   add few cycles): totals over the run's perf intervals (0 < t_s <= duration_s)
                   in which all three events were counted, so the rate is
                   sum(misses) / sum(cycles) * jobs_per_cmp. Per group: mean over the k = 1 reps.
  access rate      accesses_per_s_per_cmp: the sum of result_accesses_per_s over one CMP's jobs
                   at k = 1 (each access is one row copy: a read miss and a write miss in the
                   paper's kernel), mean over CMPs and reps; a CMP with failed jobs counts as
                   its valid jobs' mean times jobs_per_cmp.
  x-axis           the LLC miss rate when perf counted it for every group; otherwise (this is the
                   case in VMs without PMU counters: perf reports <not supported>) the miss rate
                   is recorded missing with perf's reason and the figure falls back to the access
                   rate, saying so in its axis label and title.
  valid job        exit_code 0, result_check 'ok', finite positive time.

Verdict rules (`compare_with_paper`)
  "CC cost rises with the LLC miss rate": Spearman rank correlation between the groups' x-axis
    value and their degradation at K, one-sided permutation test as in experiments.sensitivity_ranking.analysis
    (rho > 0 and p < 0.05 -> reproduced in direction; not measurable when K < 2, fewer than 2
    groups, or when even a perfect ranking could not reach p < 0.05, e.g. with 3 groups). With
    the fallback axis the row says it tests the access rate.
  "largest CC cost far below the I/O degradation": with --stacking-degradation (cmp_stacking's
    normalized_runtime.csv), reproduced in direction when the largest degradation of any group
    at any k > 1 is below half the largest I/O degradation, 100 * (normalized_runtime - 1), of
    any workload at any k; not reproduced otherwise; not measurable here without that file.
  Absolute values (33.7 % at 8 CMPs, 6.90 misses per cycle per CMP) depend on the machine: the
    largest degradation and the highest miss rate are "differs (machine-specific)" when
    measured; the miss rate is "not measurable here" when perf could not count it.

CLI: python -m experiments.llc_miss.analysis --jobs J --runs R [--time elapsed|runtime] [--tol-pct 5]
     [--stacking-degradation normalized_runtime.csv] --out-dir D
  writes D/degradation.csv, D/miss_rate.csv, D/setup.csv, D/fig2_cc_cost.png, D/section.json.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import runmeta  # noqa: E402
from analysis import runtables as rt  # noqa: E402
from analysis.common import (  # noqa: E402
    VERDICT_DIRECTION,
    VERDICT_MACHINE,
    VERDICT_NOT,
    VERDICT_UNMEASURABLE,
    AnalysisInputError,
    add_tol_pct,
    base_parser,
    cli,
    direction_row,
    fmt_num,
    paper_note,
    ratio_note,
    read_csv,
    resolve_run_paths,
    run_checks,
    setup_frame,
    tol_pct_arg,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402
from analysis.stats import rank_trend  # noqa: E402
from corun.monitors.perf import derive_perf_rates  # noqa: E402

EXPERIMENT = "llc_miss"
PAPER_ID = "000"
FIG_NAME = "fig2_cc_cost.png"
SOURCE = "experiments.llc_miss.analysis"
MISS_METRIC = "llc_misses_per_cycle_per_cmp"
PERF_EVENTS = ("LLC-load-misses", "LLC-store-misses", "cycles")
TIME_COLUMNS = {"elapsed": "result_elapsed_s", "runtime": "runtime_s"}
FAR_BELOW = 0.5  # "far below": less than half the largest I/O degradation

JOB_COLUMNS = [
    "run_id",
    "nops",
    "k",
    "rep",
    "cmp",
    "job_id",
    "runtime_s",
    "exit_code",
    "jobs_per_cmp",
    "result_accesses_per_s",
    "result_elapsed_s",
    "result_check",
]
JOB_INTS = {"nops": 0, "k": 1, "rep": 0, "cmp": 0, "exit_code": None, "jobs_per_cmp": 1}
RUN_COLUMNS = [
    "run_id",
    "nops",
    "k",
    "rep",
    "variant",
    "throttle_read_bps",
    "duration_s",
    "metadata_path",
    "run_dir",
]
TABLE_COLUMNS = [
    "nops",
    "k",
    "jobs_per_cmp",
    "n_reps",
    "n_jobs",
    "n_failed",
    "mean_time_s",
    "t1_s",
    "degradation_pct",
    "ci95_low_pct",
    "ci95_high_pct",
    "degraded",
    MISS_METRIC,
    "accesses_per_s_per_cmp",
    "reason",
]
MISS_COLUMNS = [
    "run_id",
    "nops",
    "rep",
    "jobs_per_cmp",
    "n_intervals",
    "llc_misses_per_s",
    "cycles_per_s",
    MISS_METRIC,
    "accesses_per_s_per_cmp",
    "reason",
]


# ----------------------------------------------------------------------------- input


def read_jobs(path: str | os.PathLike) -> pd.DataFrame:
    return rt.read_table(
        path,
        required=JOB_COLUMNS,
        ints=JOB_INTS,
        floats=["runtime_s", "result_accesses_per_s", "result_elapsed_s"],
        texts=["job_id", "result_check"],
        experiments=(EXPERIMENT,),
    )


def read_runs(path: str | os.PathLike) -> pd.DataFrame:
    return rt.read_table(
        path,
        required=RUN_COLUMNS,
        ints={"nops": 0, "k": 1, "rep": 0},
        floats=["throttle_read_bps", "duration_s"],
        texts=["variant", "metadata_path", "run_dir"],
        experiments=(EXPERIMENT,),
        what="one row per run",
    )


def read_stacking(path: str | os.PathLike) -> pd.DataFrame:
    """cmp_stacking's normalized_runtime.csv (or any table with k and degradation_pct)."""
    df = read_csv(path, ["workload"])
    if "degradation_pct" not in df.columns:
        if "normalized_runtime" not in df.columns:
            raise AnalysisInputError(
                f"--stacking-degradation: {path}: columns: normalized_runtime absent "
                "(expected cmp_stacking's normalized_runtime.csv)"
            )
        df["degradation_pct"] = 100.0 * (pd.to_numeric(df["normalized_runtime"], errors="coerce") - 1.0)
    if "k" not in df.columns:
        raise AnalysisInputError(
            f"--stacking-degradation: {path}: columns: k absent (expected cmp_stacking's normalized_runtime.csv)"
        )
    df["degradation_pct"] = pd.to_numeric(df["degradation_pct"], errors="coerce")
    return df


# ----------------------------------------------------------------------------- metrics


def _perf_reason(metadata_path: Path | None) -> str | None:
    """perf's own reason for a missing LLC/cycles event, from the run's metadata.json."""
    if metadata_path is None:
        return None
    by_reason: dict[str, list[str]] = {}
    for entry in runmeta.load_metadata(metadata_path).get("missing") or []:
        if isinstance(entry, dict) and entry.get("metric") in PERF_EVENTS:
            by_reason.setdefault(str(entry.get("reason")), []).append(str(entry["metric"]))
    if not by_reason:
        return None
    return "; ".join(f"{', '.join(events)}: {reason}" for reason, events in by_reason.items())


def run_miss_rate(run: dict, run_dir: Path, metadata_path: Path | None, jpc: int) -> dict:
    """One run's LLC misses per cycle per CMP (see the module doc), or why it is missing."""
    out = {"n_intervals": 0, "llc_misses_per_s": math.nan, "cycles_per_s": math.nan}
    out.update({MISS_METRIC: math.nan, "reason": ""})
    df, why = rt.load_tidy(run_dir, "perf")
    perf_why = _perf_reason(metadata_path)
    if df is None:
        out["reason"] = perf_why or why
        return out
    df = rt.in_run(df, rt.number_or_none(run.get("duration_s")))
    rates = derive_perf_rates(df)
    ok = rates[rates["llc_misses_per_s"].notna() & (rates["cycles_per_s"] > 0)]
    ok = ok[ok["interval_s"] > 0]
    if ok.empty:
        out["reason"] = perf_why or (
            "perf counted LLC-load-misses, LLC-store-misses and cycles in no interval of the run"
        )
        return out
    seconds = ok["interval_s"].sum()
    misses = float((ok["llc_misses_per_s"] * ok["interval_s"]).sum() / seconds)
    cycles = float((ok["cycles_per_s"] * ok["interval_s"]).sum() / seconds)
    out.update(n_intervals=len(ok), llc_misses_per_s=misses, cycles_per_s=cycles)
    out[MISS_METRIC] = misses / (cycles / jpc)
    return out


def access_rate(k1_valid: pd.DataFrame, jpc: int) -> float:
    per_cmp = k1_valid.groupby(["rep", "cmp"])["result_accesses_per_s"].mean() * jpc
    per_rep = per_cmp.groupby(level="rep").mean()
    return float(per_rep.mean()) if per_rep.notna().any() else math.nan


def analyse(
    jobs: pd.DataFrame,
    runs: pd.DataFrame,
    dirs: dict[str, Path],
    metadata: dict[str, Path],
    tol_pct: float,
    time: str,
    log: rt.MissingLog,
) -> dict:
    """{'table', 'miss_runs', 'axis', 'K', ...}: degradation per (nops, k) and the x-axis."""
    time_col = TIME_COLUMNS[time]
    valid = rt.valid_jobs_mask(jobs, check_required=True)
    ratios = rt.ratio_table(jobs, valid, "nops", time_col)
    jpc_of = {
        nops: int(rt.one_value(g["jobs_per_cmp"], "jobs_per_cmp", f"nops {nops}")) for nops, g in jobs.groupby("nops")
    }

    miss_rows = []
    for run in rt.records(runs[runs["k"] == 1]):
        run_id, nops = str(run["run_id"]), int(run["nops"])
        jpc = jpc_of.get(nops)
        if jpc is None:
            continue
        rate = run_miss_rate(run, dirs[run_id], metadata.get(run_id), jpc)
        if rate["reason"]:
            log.add(MISS_METRIC, rate["reason"], SOURCE, run_id)
        k1 = jobs[(jobs["run_id"] == run_id) & valid]
        miss_rows.append(
            {
                "run_id": run_id,
                "nops": nops,
                "rep": int(run["rep"]),
                "jobs_per_cmp": jpc,
                **rate,
                "accesses_per_s_per_cmp": access_rate(k1, jpc) if len(k1) else math.nan,
            }
        )
    miss_runs = pd.DataFrame(miss_rows, columns=MISS_COLUMNS).sort_values(["nops", "rep", "run_id"], kind="stable")

    rows = []
    for r in ratios.to_dict(orient="records"):
        nops = int(r["nops"])
        rate = miss_runs.loc[miss_runs["nops"] == nops, MISS_METRIC]
        k1 = jobs[(jobs["nops"] == nops) & (jobs["k"] == 1) & valid]
        ratio, low, high = r["ratio"], r["ci95_low"], r["ci95_high"]
        rows.append(
            {
                "nops": nops,
                "k": r["k"],
                "jobs_per_cmp": jpc_of[nops],
                "n_reps": r["n_reps"],
                "n_jobs": r["n_jobs"],
                "n_failed": r["n_failed"],
                "mean_time_s": r["mean_time_s"],
                "t1_s": r["t1_s"],
                "degradation_pct": 100.0 * (ratio - 1.0),
                "ci95_low_pct": 100.0 * (low - 1.0),
                "ci95_high_pct": 100.0 * (high - 1.0),
                "degraded": rt.exceeds(ratio, low, r["n_reps"], 1.0 + tol_pct / 100.0),
                MISS_METRIC: float(rate.mean()) if len(rate) and rate.notna().all() else math.nan,
                "accesses_per_s_per_cmp": access_rate(k1, jpc_of[nops]) if len(k1) else math.nan,
                "reason": r["reason"],
            }
        )
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    table["degraded"] = table["degraded"].astype("boolean")
    groups = table.drop_duplicates("nops")
    groups = groups[groups["t1_s"].notna()]
    use_llc = len(groups) > 0 and groups[MISS_METRIC].notna().all()
    axis = MISS_METRIC if use_llc else "accesses_per_s_per_cmp"
    reasons = sorted(set(miss_runs["reason"]) - {""})
    K = int(table["k"].max())
    at_k = table[(table["k"] == K) & table["degradation_pct"].notna() & table[axis].notna()]
    trend = rank_trend(at_k[axis].tolist(), at_k["degradation_pct"].tolist(), "greater")
    trend["k"] = K
    return {
        "table": table,
        "miss_runs": miss_runs.reset_index(drop=True),
        "axis": axis,
        "fallback": not use_llc,
        "miss_reasons": reasons,
        "K": K,
        "k_values": sorted(int(k) for k in table["k"].unique()),
        "trend": trend,
        "tol_pct": tol_pct,
        "time": time,
    }


# ----------------------------------------------------------------------------- paper comparison


def _axis_words(result: dict) -> str:
    if result["fallback"]:
        return "the kernel's access rate per CMP (fallback: LLC misses not counted)"
    return "the LLC miss rate per CMP"


def compare_with_paper(result: dict, paper: dict, stacking: pd.DataFrame | None = None) -> pd.DataFrame:
    exp = experiment_values(paper, EXPERIMENT)
    vals, claims = exp["values"], exp["claims"]
    table, K = result["table"], result["K"]
    rows = []
    what = f"degradation % at k = {K} against " + (
        "access rate, accesses/s per CMP" if result["fallback"] else "LLC misses per cycle"
    )
    row = direction_row(
        f"Degradation at k = K ({K}) rises with {_axis_words(result)}",
        claims["cc_cost_rises_with_miss_rate"],
        result["trend"],
        +1,
        what,
        items="nops groups",
    )
    if result["fallback"]:
        row["note"] += (
            " Tested against the kernel's own access rate because perf could not count LLC "
            "misses: " + "; ".join(result["miss_reasons"] or ["no perf table"]) + "."
        )
    rows.append(row)

    later = table[(table["k"] > 1) & table["degradation_pct"].notna()]
    cc_max = float(later["degradation_pct"].max()) if len(later) else None
    where = ""
    if cc_max is not None:
        top = later.loc[later["degradation_pct"].idxmax()]
        where = f" (nops {int(top['nops'])}, k = {int(top['k'])})"

    claim = claims["cc_cost_far_below_io"]
    row = {
        "quantity": "Largest CC cost far below the I/O degradation of CMP stacking",
        "paper_value": claim["statement"],
        "unit": "",
    }
    rule = (
        f"Rule: the largest degradation of any nops group at k > 1 is below {fmt_num(FAR_BELOW)}"
        " x the largest I/O degradation, 100 x (T_k-c / T_1-c - 1), of any cmp_stacking "
        "workload."
    )
    io = None
    if stacking is not None:
        io_rows = stacking[stacking["degradation_pct"].notna() & (stacking["k"] > 1)]
        io = float(io_rows["degradation_pct"].max()) if len(io_rows) else None
    if cc_max is None or io is None:
        why = (
            "no degradation at k > 1 of the LLC-miss kernel"
            if cc_max is None
            else (
                "no cmp_stacking degradation given (--stacking-degradation)"
                if stacking is None
                else "the cmp_stacking table has no degradation at k > 1"
            )
        )
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: {why}. {rule}",
        )
    else:
        ok = cc_max < FAR_BELOW * io
        row.update(
            measured_value=f"largest CC cost {fmt_num(cc_max)} %{where}; largest I/O degradation {fmt_num(io)} %",
            verdict=VERDICT_DIRECTION if ok else VERDICT_NOT,
            note=f"{paper_note(claim)} {rule}",
        )
    rows.append(row)

    item = vals["max_cc_cost_pct"]
    row = {"quantity": "Largest CC cost", "paper_value": item["value"], "unit": item["unit"]}
    if cc_max is None:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} Why not measurable: no degradation at k > 1.",
        )
    else:
        row.update(
            measured_value=cc_max,
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(item)} Ours{where}, at most k = {K} (paper: 8 CMPs); "
            f"{ratio_note(cc_max, item['value'])}.",
        )
    rows.append(row)

    item = vals["max_llc_misses_per_cycle_per_cmp"]
    row = {
        "quantity": "Highest LLC miss rate per CMP",
        "paper_value": item["value"],
        "unit": item["unit"],
    }
    rates = table.drop_duplicates("nops")[MISS_METRIC].dropna()
    if result["fallback"] or rates.empty:
        why = "; ".join(result["miss_reasons"]) or "no k = 1 run with perf counts"
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} Why not measurable: {why}.",
        )
    else:
        value = float(rates.max())
        row.update(
            measured_value=value,
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(item)} Ours = (LLC-load-misses + LLC-store-misses) / cycles x "
            f"jobs_per_cmp on the k = 1 runs; {ratio_note(value, item['value'])}.",
        )
    rows.append(row)
    columns = ["quantity", "paper_value", "measured_value", "unit", "verdict", "note"]
    return pd.DataFrame(rows, columns=columns)


def setup_table(result: dict, paper: dict) -> pd.DataFrame:
    vals = experiment_values(paper, EXPERIMENT)["values"]
    nops_groups = {
        "value": None,
        "unit": "nops between copies",
        "source": "Sec. 2.3.2, Fig. 3 (values not given)",
    }
    rows = [
        ("k values (loaded CMPs)", vals["k_values"], ", ".join(map(str, result["k_values"]))),
        (
            "nops groups",
            nops_groups,
            ", ".join(str(n) for n in sorted(result["table"]["nops"].unique())),
        ),
    ]
    return setup_frame(rows)


# ----------------------------------------------------------------------------- figure


def _axis_label(result: dict) -> tuple[str, str]:
    if result["fallback"]:
        return (
            "kernel access rate at k = 1, accesses/s per CMP (FALLBACK: perf could not count LLC misses)",
            "CC cost against the LLC-miss kernel's access rate per CMP\n"
            "(fallback axis: LLC miss rate not measurable on this machine)",
        )
    return (
        "LLC misses per cycle per CMP at k = 1, (load + store misses) / (cycles / busy CPUs)",
        "CC cost against the LLC miss rate per CMP",
    )


def plot_fig2(result: dict, path: str | os.PathLike) -> None:
    """Fig. 2 style: degradation % against the x-axis value, one curve per k > 1; PNG."""
    table, axis = result["table"], result["axis"]
    xlabel, title = _axis_label(result)
    fig, ax = plt.subplots(figsize=(8.5, 5.0), dpi=110)
    ks = [k for k in result["k_values"] if k > 1]
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, max(len(ks), 1)))
    xs = []
    for color, k in zip(colors, ks):
        g = table[(table["k"] == k) & table["degradation_pct"].notna() & table[axis].notna()]
        g = g.sort_values(axis)
        if g.empty:
            continue
        y = g["degradation_pct"].to_numpy()
        low = np.clip(y - g["ci95_low_pct"].to_numpy(), 0, None)
        high = np.clip(g["ci95_high_pct"].to_numpy() - y, 0, None)
        ax.errorbar(
            g[axis],
            y,
            yerr=np.nan_to_num(np.vstack([low, high])),
            color=color,
            marker="o",
            ms=4,
            capsize=3,
            lw=1.5,
            label=f"k = {k}",
        )
        for x, v, nops in zip(g[axis], y, g["nops"]):
            ax.annotate(f"nops {nops}", (x, v), textcoords="offset points", xytext=(4, 4), fontsize=7)
        xs.extend(g[axis].tolist())
    if not xs:
        rt.no_data(ax, "no degradation with a known x value")
    elif min(xs) > 0 and max(xs) / min(xs) > 20:
        ax.set_xscale("log")
    ax.axhline(0, color="black", lw=0.6)
    ax.axhline(
        result["tol_pct"],
        color="grey",
        ls="--",
        lw=1,
        label=f"tolerance ({fmt_num(result['tol_pct'])} %)",
    )
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel("degradation, 100 x (T_k / T_1 - 1) (%)")
    ax.set_title(title, fontsize=10)
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
    exp = experiment_values(paper, EXPERIMENT)
    table, K = result["table"], result["K"]
    at_k = table[table["k"] == K]
    ks = ", ".join(map(str, result["k_values"]))
    per_group = "; ".join(f"nops {int(r['nops'])}: {fmt_num(r['degradation_pct'])} %" for r in rt.records(at_k))
    summary = [
        f"{table['nops'].nunique()} LLC-miss kernel group(s) (nops "
        f"{', '.join(str(n) for n in sorted(table['nops'].unique()))}) run on k = {ks} loaded "
        f"CMPs; degradation at k = {K}: {per_group}."
    ]
    if result["fallback"]:
        summary.append(
            "The LLC miss rate is missing ("
            + ("; ".join(result["miss_reasons"]) or "no perf table")
            + "), so the figure's x-axis falls back to the kernel's own access rate per CMP "
            "at k = 1."
        )
    else:
        summary.append(
            "x-axis: LLC misses per cycle per CMP, (LLC-load-misses + LLC-store-misses) per "
            "second over cycles per second per busy CPU, on the k = 1 runs."
        )
    time_words = {
        "elapsed": "the kernel's timed passes (result_elapsed_s)",
        "runtime": "the job's wall time (runtime_s)",
    }[result["time"]]
    notes = [
        f"Degradation = 100 x (T_k / T_1 - 1) with T the mean of {time_words} over the group's "
        "valid jobs (exit code 0, self-check 'ok'), reps pooled; 95% CI: t-interval over "
        "per-rep values with T_1 held fixed.",
        "LLC miss rate per CMP = (LLC-load-misses + LLC-store-misses) per second divided by "
        "cycles per second per busy CPU (cycles / jobs_per_cmp), from system-wide perf counts "
        "of the k = 1 runs (one CMP loaded), totals over the intervals inside the run.",
        "Access rate per CMP = sum of result_accesses_per_s over one CMP's jobs at k = 1; one "
        "access is one row copy b[i][0] = a[i][0], a read miss and a write miss when the arrays "
        "exceed the LLC.",
        f"{int(table['n_failed'].sum())} job(s) failed and were left out (n_failed column).",
        "Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().unique())) + ".",
        *(n.strip() for n in paper.get("notes", [])),
        *extra_notes,
    ]
    xlabel, _ = _axis_label(result)
    return rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=[
            {
                "path": FIG_NAME,
                "caption": f"Degradation of each nops group at k = 2..{K} against {xlabel}; "
                "error bars: 95% t-interval across reps; dashed line: tolerance "
                f"{fmt_num(result['tol_pct'])} %. Compare paper Fig. 2 "
                f"(k = {exp['values']['k_values']['value']}, x = LLC misses per cycle per CMP).",
            }
        ],
        comparison=comparison,
        tables=[
            {"title": "Degradation per nops group and k", "csv": "degradation.csv"},
            {"title": "LLC miss rate and access rate of the k = 1 runs", "csv": "miss_rate.csv"},
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
    tol_pct: float = 5.0,
    time: str = "elapsed",
    stacking_csv: str | None = None,
    paper_id: str = PAPER_ID,
) -> dict:
    jobs, runs = read_jobs(jobs_csv), read_runs(runs_csv)
    rt.one_variant(runs, runs_csv)
    stacking = read_stacking(stacking_csv) if stacking_csv else None
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    metadata = dict(zip(runs["run_id"].astype(str), metadata_paths))
    dirs = rt.run_dirs(runs, runs_csv)
    paper = load_paper_values(paper_id)
    log = rt.MissingLog()
    result = analyse(jobs, runs, dirs, metadata, tol_pct, time, log)
    comparison = compare_with_paper(result, paper, stacking)
    section = build_section(result, paper, comparison, runs, metadata_paths, log, run_checks(jobs, runs))
    rt.write_outputs(
        out_dir,
        section,
        {
            "degradation.csv": result["table"],
            "miss_rate.csv": result["miss_runs"],
            "setup.csv": setup_table(result, paper).to_csv(index=False, lineterminator="\n"),
        },
        [lambda out: plot_fig2(result, out / FIG_NAME)],
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "experiments.llc_miss.analysis",
        "Inter-socket CC cost of the LLC-miss kernel (paper 000, Fig. 2): degradation per nops "
        "group and k against the LLC miss rate per CMP.",
    )
    parser.add_argument(
        "--time",
        choices=sorted(TIME_COLUMNS),
        default="elapsed",
        help="elapsed: the kernel's timed passes (result_elapsed_s); runtime: the job's wall "
        "time (runtime_s) (default: elapsed)",
    )
    add_tol_pct(parser, "degradation tolerance in percent (default: 5)")
    parser.add_argument(
        "--stacking-degradation",
        metavar="CSV",
        help="cmp_stacking's normalized_runtime.csv, for the CC-cost vs I/O comparison "
        "(default: none; that row is then not measurable)",
    )
    return cli(
        parser,
        argv,
        PAPER_ID,
        lambda a: run(
            a.jobs,
            a.runs,
            a.out_dir,
            tol_pct_arg(a.tol_pct),
            a.time,
            a.stacking_degradation,
            a.paper_id,
        ),
    )


if __name__ == "__main__":
    sys.exit(main())

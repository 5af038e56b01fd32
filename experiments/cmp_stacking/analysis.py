"""CMP stacking (paper 000, Sec. 2.1 and 2.3.1, eq. 1, Table 2, Fig. 1).

Duplicated copies of one benchmark (a workload of Table 2) fully load k = 1..K CMPs, the same
number of jobs on each; the paper's normalized runtime shows how much a job slows down when
other CMPs run the same workload. Locally the workloads are scaled down (label `scale_note`)
and run by stand-in programs (labels `binary`, `stands_in_for`).

Definitions (paper eq. 1: normalized_runtime = T_k-c / T_1-c)
  T_1-c               mean runtime_s of the workload's valid k=1 jobs, all reps pooled.
  normalized_runtime  T_k-c / T_1-c, T_k-c the mean runtime_s of the workload's valid jobs at
                      k, all reps pooled (mean_runtime_s in the table: the mean runtime per k).
  95% CI              t-interval over the per-rep normalized runtimes (each rep's mean runtime /
                      T_1-c), T_1-c held fixed; NaN with fewer than 2 reps.
  degraded            CI lower bound > 1 + tol; with fewer than 2 reps, the point estimate.
  onset_k             the smallest k at which the workload is degraded.
  valid job           exit_code 0, a finite runtime_s > 0, and result_check 'ok' when the program
                      reports a self-check (x264 prints none: an empty result_check is accepted,
                      any other value is a failure). Other jobs are counted in n_failed.

Verdict rules (`compare_with_paper`)
  "runtime grows with k", one row per workload, from its trend (workloads.csv):
    "reproduced in direction" when the workload is degraded at its largest measured k (K) and
    no step between consecutive measured k lowers the normalized runtime by more than tol;
    "not reproduced" when a step does, or when the CI upper bound at K is <= 1 + tol (one rep:
    the point estimate); "not measurable here" when the CI at K contains 1 + tol (more reps
    needed), when T_1-c is undefined or only k = 1 was run, and for the graph workloads (#3,
    #4), which the paper reports stable below 4 loaded CMPs, when K < 4 and they are not
    degraded.
  "all workloads degrade with stacking": reproduced when every workload row is; not reproduced
    when any is not; otherwise not measurable here.
  "graph workloads stable below 4 CMPs, then sudden degradation": the onset k of #3/#4 is an
    absolute value: "differs (machine-specific)" when one of them degrades within K; "not
    measurable here" when none degrades and K < 4 (the paper's onset lies beyond the k values
    this machine allows); "not reproduced" when none degrades although K >= 4.
  Absolute values (x264 simlarge: 7 s at 1 CMP, 122 s and about 16x at 8 CMPs) depend on the
  machine, the device and the local scale-down: "differs (machine-specific)" when measured at
  the same k, "not measurable here" when that k was not run (K may be 2 here).
  Setup parameters (k values, jobs per CMP, workloads) are listed in setup.csv without verdict.

CLI: python -m experiments.cmp_stacking.analysis --jobs J --runs R [--tol-pct 5] --out-dir D
  writes D/normalized_runtime.csv, D/workloads.csv, D/setup.csv, D/fig1_normalized_runtime.png
  and D/section.json (analysis/schemas/section.schema.json).
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

from analysis import runtables as rt  # noqa: E402
from analysis.common import (  # noqa: E402
    VERDICT_DIRECTION,
    VERDICT_MACHINE,
    VERDICT_NOT,
    VERDICT_UNMEASURABLE,
    add_tol_pct,
    base_parser,
    cli,
    fmt_num,
    paper_note,
    ratio_note,
    resolve_run_paths,
    run_checks,
    setup_frame,
    tol_pct_arg,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402

EXPERIMENT = "cmp_stacking"
PAPER_ID = "000"
FIG_NAME = "fig1_normalized_runtime.png"
GRAPH_IDS = (3, 4)  # Table 2: #3 graph -s 22 -e 16, #4 graph -s 22 -e 18
X264_SIMLARGE_ID = 1

JOB_COLUMNS = [
    "run_id",
    "workload",
    "k",
    "rep",
    "cmp",
    "job_id",
    "runtime_s",
    "exit_code",
    "jobs_per_cmp",
]
JOB_INTS = {"k": 1, "rep": 0, "cmp": 0, "exit_code": None, "jobs_per_cmp": 1}
JOB_TEXTS = [
    "workload",
    "job_id",
    "binary",
    "stands_in_for",
    "scale_note",
    "result_check",
    "workload_id",
]
RUN_COLUMNS = ["run_id", "workload", "k", "rep", "variant", "throttle_read_bps", "metadata_path"]
TABLE_COLUMNS = [
    "workload_id",
    "workload",
    "k",
    "jobs_per_cmp",
    "n_jobs_co_running",
    "n_reps",
    "n_jobs",
    "n_failed",
    "mean_runtime_s",
    "t1c_s",
    "normalized_runtime",
    "ci95_low",
    "ci95_high",
    "degraded",
    "reason",
]
WORKLOAD_COLUMNS = [
    "workload_id",
    "workload",
    "binary",
    "stands_in_for",
    "scale_note",
    "jobs_per_cmp",
    "k_values",
    "t1c_s",
    "k_max",
    "normalized_at_k_max",
    "ci95_low_at_k_max",
    "ci95_high_at_k_max",
    "onset_k",
    "largest_drop",
    "trend",
]


# ----------------------------------------------------------------------------- input


def read_jobs(path: str | os.PathLike) -> pd.DataFrame:
    """The collected per-job CSV of the cmp_stacking runs, columns checked and typed.

    workload_id (the paper's Table 2 number) is empty for a workload that is not in Table 2.
    """
    df = rt.read_table(
        path,
        required=JOB_COLUMNS,
        ints=JOB_INTS,
        floats=["runtime_s"],
        texts=JOB_TEXTS,
        experiments=(EXPERIMENT,),
    )
    return rt.optional_ints(df, {"workload_id": 1}, str(path))


def read_runs(path: str | os.PathLike) -> pd.DataFrame:
    """runs.csv of the cmp_stacking runs, columns checked and typed."""
    df = rt.read_table(
        path,
        required=RUN_COLUMNS,
        ints={"k": 1, "rep": 0},
        floats=["throttle_read_bps", "duration_s"],
        texts=["workload", "variant", "metadata_path", "run_dir", "device"],
        experiments=(EXPERIMENT,),
        what="one row per run",
    )
    return df


# ----------------------------------------------------------------------------- metrics


def normalized_table(jobs: pd.DataFrame, tol_pct: float) -> pd.DataFrame:
    """One row per (workload, k): runtimes, normalized runtime with 95% CI, degraded."""
    valid = rt.valid_jobs_mask(jobs, check_required=False)
    ratios = rt.ratio_table(jobs, valid, "workload", "runtime_s")
    rows = []
    for workload, g in jobs.groupby("workload", sort=True):
        wid = rt.one_value(g["workload_id"], "workload_id", f"workload {workload}")
        jpc = rt.one_value(g["jobs_per_cmp"], "jobs_per_cmp", f"workload {workload}")
        for r in ratios[ratios["workload"] == workload].to_dict(orient="records"):
            rows.append(
                {
                    "workload_id": wid,
                    "workload": workload,
                    "k": r["k"],
                    "jobs_per_cmp": int(jpc),
                    "n_jobs_co_running": int(r["k"] * jpc),
                    "n_reps": r["n_reps"],
                    "n_jobs": r["n_jobs"],
                    "n_failed": r["n_failed"],
                    "mean_runtime_s": r["mean_time_s"],
                    "t1c_s": r["t1_s"],
                    "normalized_runtime": r["ratio"],
                    "ci95_low": r["ci95_low"],
                    "ci95_high": r["ci95_high"],
                    "degraded": rt.exceeds(r["ratio"], r["ci95_low"], r["n_reps"], 1.0 + tol_pct / 100.0),
                    "reason": r["reason"],
                }
            )
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    table["degraded"] = table["degraded"].astype("boolean")
    table["workload_id"] = table["workload_id"].astype("Int64")
    return table.sort_values(["workload_id", "workload", "k"], kind="stable").reset_index(drop=True)


def _label(jobs: pd.DataFrame, workload: str, column: str) -> str | None:
    if column not in jobs.columns:
        return None
    value = rt.one_value(jobs.loc[jobs["workload"] == workload, column], column, workload)
    return None if value is None else str(value)


def workload_summary(table: pd.DataFrame, jobs: pd.DataFrame, tol_pct: float) -> pd.DataFrame:
    """One row per workload: labels, T_1-c, normalized runtime at its largest k, onset, trend.

    trend (at k_max, the workload's largest k with a normalized runtime; largest_drop is the
    largest decrease of the normalized runtime between consecutive measured k):
      grows          degraded at k_max (CI lower bound > 1 + tol) and largest_drop <= tol;
      does not grow  largest_drop > tol, or the CI upper bound at k_max <= 1 + tol (with one
                     rep: the point estimate);
      undecided      otherwise: the CI at k_max contains 1 + tol;
      only k = 1     no k > 1 has a normalized runtime (or T_1-c is undefined).
    """
    tol = tol_pct / 100.0
    rows = []
    for workload, g in table.groupby("workload", sort=False):
        wid = g["workload_id"].iloc[0]
        known = g[g["normalized_runtime"].notna()].sort_values("k")
        row = {
            "workload_id": None if pd.isna(wid) else int(wid),
            "workload": workload,
            "binary": _label(jobs, workload, "binary"),
            "stands_in_for": _label(jobs, workload, "stands_in_for"),
            "scale_note": _label(jobs, workload, "scale_note"),
            "jobs_per_cmp": int(g["jobs_per_cmp"].iloc[0]),
            "k_values": " ".join(str(k) for k in sorted(g["k"])),
            "t1c_s": float(g["t1c_s"].iloc[0]),
            "k_max": None,
            "normalized_at_k_max": math.nan,
            "ci95_low_at_k_max": math.nan,
            "ci95_high_at_k_max": math.nan,
            "onset_k": None,
            "largest_drop": math.nan,
            "trend": "only k = 1",
        }
        hits = known.loc[known["degraded"].fillna(False).astype(bool), "k"]
        row["onset_k"] = int(hits.min()) if len(hits) else None
        if len(known) and known["k"].max() > 1:
            top = known.iloc[-1]
            drops = -np.diff(known["normalized_runtime"].to_numpy())
            row["k_max"] = int(top["k"])
            row["normalized_at_k_max"] = float(top["normalized_runtime"])
            row["ci95_low_at_k_max"] = float(top["ci95_low"])
            row["ci95_high_at_k_max"] = float(top["ci95_high"])
            row["largest_drop"] = float(max(drops.max(), 0.0)) if len(drops) else 0.0
            high = top["ci95_high"] if top["n_reps"] >= 2 else top["normalized_runtime"]
            if row["largest_drop"] > tol or high <= 1.0 + tol:
                row["trend"] = "does not grow"
            elif bool(top["degraded"]):
                row["trend"] = "grows"
            else:
                row["trend"] = "undecided"
        rows.append(row)
    out = pd.DataFrame(rows, columns=WORKLOAD_COLUMNS)
    for col in ("workload_id", "k_max", "onset_k"):
        out[col] = out[col].astype("Int64")
    return out


def analyse(jobs: pd.DataFrame, tol_pct: float) -> dict:
    """{'table', 'workloads', 'tol_pct', 'K', 'k_values'}."""
    table = normalized_table(jobs, tol_pct)
    return {
        "table": table,
        "workloads": workload_summary(table, jobs, tol_pct),
        "tol_pct": tol_pct,
        "K": int(table["k"].max()),
        "k_values": sorted(int(k) for k in table["k"].unique()),
    }


# ----------------------------------------------------------------------------- paper comparison


def _name(w: dict) -> str:
    return f"#{w['workload_id']} {w['workload']}" if w["workload_id"] else str(w["workload"])


def _grows_row(w: dict, claim: dict, graph_onset: int, tol_pct: float) -> dict:
    row = {
        "quantity": f"Runtime of workload {_name(w)} grows with k",
        "paper_value": claim["statement"],
        "unit": "",
    }
    limit = fmt_num(1 + tol_pct / 100)
    rule = (
        f"Rule: reproduced when the 95% CI lower bound of T_k-c / T_1-c at the largest k "
        f"exceeds {limit} and no step between consecutive k is lower by more than "
        f"{fmt_num(tol_pct / 100)}; not reproduced when a step is, or the CI upper bound is "
        f"at most {limit}; otherwise undecided."
    )
    if w["trend"] == "only k = 1":
        why = "T_1-c undefined (no valid k=1 job)" if w["t1c_s"] is None else ""
        why = why or "only k = 1 has a normalized runtime"
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: {why}. {rule}",
        )
        return row
    measured = (
        f"{fmt_num(w['normalized_at_k_max'])} at k = {w['k_max']} (95% CI "
        f"{fmt_num(w['ci95_low_at_k_max'])} to {fmt_num(w['ci95_high_at_k_max'])})"
        + (f"; degraded from k = {w['onset_k']}" if w["onset_k"] is not None else "")
        + f"; largest drop between steps {fmt_num(w['largest_drop'])}"
    )
    why = ""
    if w["trend"] == "grows":
        verdict = VERDICT_DIRECTION
    elif w["workload_id"] in GRAPH_IDS and w["k_max"] < graph_onset and w["onset_k"] is None:
        verdict = VERDICT_UNMEASURABLE
        why = (
            f" Why not measurable: the paper reports the graph workloads stable below "
            f"{graph_onset} loaded CMPs, and this machine ran k <= {w['k_max']}."
        )
    elif w["trend"] == "undecided":
        verdict = VERDICT_UNMEASURABLE
        why = f" Why not measurable: the 95% CI at k = {w['k_max']} contains {limit}; more reps."
    else:
        verdict = VERDICT_NOT
    row.update(measured_value=measured, verdict=verdict, note=f"{paper_note(claim)}{why} {rule}")
    return row


def _at_k_row(quantity: str, item: dict, value: float | None, k_paper: int, K: int, note: str):
    row = {"quantity": quantity, "paper_value": item["value"], "unit": item["unit"]}
    if value is None or not math.isfinite(value):
        why = (
            f"this machine ran k <= {K}; the paper's value is at k = {k_paper}"
            if k_paper > K
            else f"no valid value at k = {k_paper}"
        )
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} Why not measurable: {why}.{note}",
        )
    else:
        row.update(
            measured_value=value,
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(item)} {ratio_note(value, item['value'])}.{note}",
        )
    return row


def compare_with_paper(result: dict, paper: dict) -> pd.DataFrame:
    """Paper-vs-measured rows: quantity, paper_value, measured_value, unit, verdict, note."""
    exp = experiment_values(paper, EXPERIMENT)
    vals, claims = exp["values"], exp["claims"]
    table, workloads, K = result["table"], result["workloads"], result["K"]
    graph_onset = int(vals["graph_onset_k"]["value"])
    rows = []
    per_workload = [
        _grows_row(w, claims["runtime_grows_with_k"], graph_onset, result["tol_pct"]) for w in rt.records(workloads)
    ]
    rows.extend(per_workload)

    verdicts = [r["verdict"] for r in per_workload]
    if verdicts and all(v == VERDICT_DIRECTION for v in verdicts):
        verdict = VERDICT_DIRECTION
    elif VERDICT_NOT in verdicts:
        verdict = VERDICT_NOT
    else:
        verdict = VERDICT_UNMEASURABLE
    rows.append(
        {
            "quantity": "All workloads degrade with CMP stacking",
            "paper_value": claims["runtime_grows_with_k"]["statement"],
            "measured_value": f"{verdicts.count(VERDICT_DIRECTION)} of {len(verdicts)} "
            "workloads reproduced in direction",
            "unit": "",
            "verdict": verdict,
            "note": f"{paper_note(claims['runtime_grows_with_k'])} Rule: reproduced when every "
            "workload's row is; not reproduced when any is not; otherwise not measurable here.",
        }
    )

    claim = claims["graph_stable_then_sudden"]
    graphs = rt.records(workloads[workloads["workload_id"].fillna(0).isin(GRAPH_IDS)])
    row = {
        "quantity": "Onset k of the graph workloads (#3, #4)",
        "paper_value": graph_onset,
        "unit": "CMPs",
    }
    onsets = [w["onset_k"] for w in graphs if w["onset_k"] is not None]
    measured = "; ".join(
        f"{_name(w)}: " + (f"k = {w['onset_k']}" if w["onset_k"] is not None else f"none up to k = {K}") for w in graphs
    )
    if not graphs:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: no graph workload (#3, #4) was run.",
        )
    elif onsets:
        row.update(
            measured_value=measured,
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(claim)} The onset depends on the jobs' memory demand relative to "
            "the machine's memory and on the local scale-down.",
        )
    elif K < graph_onset:
        row.update(
            measured_value=measured,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: stable up to k = {K} as in the paper; "
            f"the paper's onset at k = {graph_onset} lies beyond the k values this machine "
            "allows.",
        )
    else:
        row.update(measured_value=measured, verdict=VERDICT_NOT, note=paper_note(claim))
    rows.append(row)

    x264 = table[table["workload_id"].fillna(0) == X264_SIMLARGE_ID]
    labels = workloads[workloads["workload_id"].fillna(0) == X264_SIMLARGE_ID]
    scale = ""
    if len(labels) and labels["scale_note"].iloc[0]:
        scale = f" This run: {labels['scale_note'].iloc[0]}."

    def at(k: int, col: str) -> float | None:
        hit = x264.loc[x264["k"] == k, col]
        return float(hit.iloc[0]) if len(hit) and pd.notna(hit.iloc[0]) else None

    rows.append(
        _at_k_row(
            "T_1-c of workload #1 (x264 simlarge)",
            vals["x264_simlarge_t1c_s"],
            at(1, "t1c_s"),
            1,
            K,
            scale,
        )
    )
    top = f" Ours at k = {K}: {fmt_num(at(K, 'mean_runtime_s'))} s." if K < 8 else ""
    rows.append(
        _at_k_row(
            "Mean runtime of workload #1 (x264 simlarge) at k = 8",
            vals["x264_simlarge_runtime_8c_s"],
            at(8, "mean_runtime_s"),
            8,
            K,
            top + scale,
        )
    )
    top = f" Ours at k = {K}: {fmt_num(at(K, 'normalized_runtime'))}." if K < 8 else ""
    rows.append(
        _at_k_row(
            "Normalized runtime of workload #1 (x264 simlarge) at k = 8",
            vals["x264_simlarge_normalized_8c"],
            at(8, "normalized_runtime"),
            8,
            K,
            top + scale,
        )
    )
    columns = ["quantity", "paper_value", "measured_value", "unit", "verdict", "note"]
    return pd.DataFrame(rows, columns=columns)


def setup_table(result: dict, paper: dict) -> pd.DataFrame:
    """Design parameters beside the paper's: not results, so no verdict."""
    vals = experiment_values(paper, EXPERIMENT)["values"]
    table = result["table"]
    jpc = sorted(int(j) for j in table["jobs_per_cmp"].unique())
    rows = [
        ("k values (loaded CMPs)", vals["k_values"], ", ".join(map(str, result["k_values"]))),
        ("jobs per CMP", vals["jobs_per_cmp"], ", ".join(map(str, jpc))),
        ("workloads", vals["n_workloads"], int(table["workload"].nunique())),
    ]
    return setup_frame(rows)


# ----------------------------------------------------------------------------- figure and files


def plot_fig1(table: pd.DataFrame, path: str | os.PathLike, tol_pct: float | None = None) -> None:
    """Fig. 1 style: normalized runtime against k (log2 axis), one curve per workload; PNG."""
    fig, ax = plt.subplots(figsize=(8.5, 5.0), dpi=110)
    names = table[["workload_id", "workload"]].drop_duplicates().to_records(index=False)
    colors = plt.cm.tab10(np.arange(max(len(names), 1)) % 10)
    dodge = np.linspace(-0.04, 0.04, len(names)) if len(names) > 1 else np.zeros(1)
    for color, dx, (wid, workload) in zip(colors, dodge, names):
        g = table[(table["workload"] == workload) & table["normalized_runtime"].notna()]
        g = g.sort_values("k")
        if g.empty:
            continue
        y = g["normalized_runtime"].to_numpy()
        low = np.clip(y - g["ci95_low"].to_numpy(), 0, None)
        high = np.clip(g["ci95_high"].to_numpy() - y, 0, None)
        ax.errorbar(
            g["k"].to_numpy() * 2.0**dx,
            y,
            yerr=np.nan_to_num(np.vstack([low, high])),
            color=color,
            marker="o",
            ms=4,
            capsize=3,
            lw=1.5,
            label=f"#{wid} {workload}" if pd.notna(wid) else workload,
        )
    ax.axhline(1.0, color="black", lw=0.6)
    if tol_pct is not None:
        ax.axhline(
            1 + tol_pct / 100,
            color="grey",
            ls="--",
            lw=1,
            label=f"1 + tolerance ({fmt_num(tol_pct)} %)",
        )
    ks = sorted(int(k) for k in table["k"].unique())
    rt.log2_k_axis(ax, ks)
    ax.set_xlabel("k, number of loaded CMPs (log2 scale)")
    ax.set_ylabel("normalized runtime, T_k-c / T_1-c")
    ax.set_title(f"Normalized runtime while stacking CMPs, k = {', '.join(map(str, ks))}")
    ax.grid(alpha=0.3)
    ax.legend(title="workload (Table 2)", loc="upper left", fontsize=8, title_fontsize=8)
    fig.tight_layout()
    rt.save_png(fig, path)


def build_section(
    result: dict,
    paper: dict,
    comparison: pd.DataFrame,
    runs: pd.DataFrame,
    metadata_paths: list[Path],
    extra_notes: list[str],
) -> dict:
    """The report section (analysis/schemas/section.schema.json) for this experiment."""
    exp = experiment_values(paper, EXPERIMENT)
    table, workloads, K, tol = result["table"], result["workloads"], result["K"], result["tol_pct"]
    n_reps = int(runs["rep"].nunique())
    jpc = ", ".join(str(j) for j in sorted(table["jobs_per_cmp"].unique()))
    ks = ", ".join(map(str, result["k_values"]))
    at_k = "; ".join(
        f"{_name(w)} {fmt_num(w['normalized_at_k_max'])} at k = {w['k_max']}"
        for w in rt.records(workloads)
        if w["k_max"] is not None and not pd.isna(w["k_max"])
    )
    summary = [
        f"{len(workloads)} workload(s) of Table 2, each run on k = {ks} loaded CMPs with {jpc} "
        f"jobs per CMP and {n_reps} rep(s); the paper stacked k = "
        f"{exp['values']['k_values']['value']} CMPs with {exp['values']['jobs_per_cmp']['value']} "
        f"jobs each, this machine allows K = {K}."
    ]
    if at_k:
        summary.append(f"Normalized runtime T_k-c / T_1-c: {at_k}.")
    summary.append(f"Degraded means the 95% CI lower bound of the normalized runtime exceeds {fmt_num(1 + tol / 100)}.")
    notes = [
        "Normalized runtime follows paper eq. (1): T_k-c / T_1-c, T_1-c the mean runtime of the "
        "workload's valid k=1 jobs over all reps, T_k-c the mean runtime of its valid jobs at k.",
        "The 95% CI is a t-interval over per-rep normalized runtimes with T_1-c held fixed.",
        f"{int(table['n_failed'].sum())} job(s) failed (exit code not 0, or a self-check other "
        "than 'ok') and were left out; the n_failed column counts them per workload and k.",
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
    caps = rt.throttle_values(runs)
    if caps:
        notes.append(
            "Runs throttled to a read cap of "
            + ", ".join(f"{fmt_num(c / 1e6)} MB/s" for c in caps)
            + " (an emulated slower device): the absolute slowdown depends on the cap."
        )
    notes.append("Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().unique())) + ".")
    notes.append(rt.device_note(metadata_paths))
    notes.extend(n.strip() for n in paper.get("notes", []))
    notes.extend(extra_notes)
    return rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=[
            {
                "path": FIG_NAME,
                "caption": (
                    f"Normalized runtime T_k-c / T_1-c of each workload as k CMPs are loaded "
                    f"(k = {ks}, log2 axis); error bars: 95% t-interval across reps; dashed "
                    f"line: 1 + tolerance ({fmt_num(tol)} %). Compare paper Fig. 1 "
                    f"(k = {exp['values']['k_values']['value']})."
                ),
            }
        ],
        comparison=comparison,
        tables=[
            {"title": "Normalized runtime per workload and k", "csv": "normalized_runtime.csv"},
            {"title": "Workloads: programs, scale-down and trend", "csv": "workloads.csv"},
            {
                "title": "Setup: paper vs this run (design parameters, no verdict)",
                "csv": "setup.csv",
            },
        ],
        metadata_paths=metadata_paths,
        log=rt.MissingLog(),
        notes=notes,
    )


def run(jobs_csv: str, runs_csv: str, tol_pct: float, out_dir: str, paper_id: str = PAPER_ID) -> dict:
    """Read the inputs, analyse, and write the output files into out_dir."""
    jobs, runs = read_jobs(jobs_csv), read_runs(runs_csv)
    rt.one_variant(runs, runs_csv)
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    paper = load_paper_values(paper_id)
    result = analyse(jobs, tol_pct)
    comparison = compare_with_paper(result, paper)
    section = build_section(result, paper, comparison, runs, metadata_paths, run_checks(jobs, runs))
    rt.write_outputs(
        out_dir,
        section,
        {
            "normalized_runtime.csv": result["table"],
            "workloads.csv": result["workloads"],
            "setup.csv": setup_table(result, paper).to_csv(index=False, lineterminator="\n"),
        },
        [lambda out: plot_fig1(result["table"], out / FIG_NAME, tol_pct)],
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "experiments.cmp_stacking.analysis",
        "CMP stacking (paper 000, Fig. 1): normalized runtime T_k-c / T_1-c per workload and number of loaded CMPs k.",
    )
    add_tol_pct(
        parser,
        "slowdown tolerance in percent: degraded means T_k-c / T_1-c above 1 + PCT/100 (default: 5)",
    )
    return cli(
        parser,
        argv,
        PAPER_ID,
        lambda a: run(a.jobs, a.runs, tol_pct_arg(a.tol_pct), a.out_dir, a.paper_id),
    )


if __name__ == "__main__":
    sys.exit(main())

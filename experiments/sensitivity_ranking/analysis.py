"""Sensitivity_RANKING (paper 000, Sec. 3.3.2 and 3.4.2, Fig. 13-14).

Groups of identical file-reading kernels, each group with its own per-CMP I/O demand, are run
on k = 1..K loaded CMPs. For every group and k we recompute the paper's average runtime
degradation, find the per-CMP demand below which no degradation appears, and derive the
IO_BOUND_INTERVAL the dynamic scheduler would use on this machine.

Definitions (paper Sec. 2.1, eq. 1: normalized_runtime = T_k-c / T_1-c)
  T_1-c            mean runtime_s of the group's valid k=1 jobs, all reps pooled.
  degradation_pct  100 * (T_k-c / T_1-c - 1), T_k-c the mean runtime_s of the group's valid jobs
                   at k, all reps pooled.
  95% CI           t-interval over the per-rep degradations (one per rep: its jobs' mean runtime
                   / T_1-c - 1); T_1-c is held fixed, so the interval shows rep-to-rep spread of
                   the k-CMP runs only. NaN with fewer than 2 reps.
  degraded         CI lower bound > tol_pct; with fewer than 2 reps, degradation_pct > tol_pct.
  demand           the group's x-value in Fig. 14: at k=1, the sum of result_bw_mb_s over the jobs
                   of one CMP (MB = 10^6 B), averaged over reps. A CMP with failed jobs counts as
                   its valid jobs' mean times jobs_per_cmp.
  valid job        exit_code == 0, result_check == 'ok' and a finite runtime_s > 0. Other jobs are
                   left out of every mean and counted in n_failed.

Compute-only control (optional)
  control group    the group whose demand_target_mb_s is 0 (its kernels read one block, then only
                   run nops); at most one, several are an input error. Stacking such jobs shows
                   what k loaded CMPs cost without any I/O (shared cores, frequency, caches): the
                   paper assumes this is nothing. The control is left out of the threshold, the
                   trend tests and the lowest-demand rule, and drawn as a dashed black curve.
  control_degradation_pct  the control's degradation_pct at the same k (NaN without a control).
  excess_degradation_pct   degradation_pct - control_degradation_pct: the degradation beyond what
                   compute-only jobs suffer from stacking (NaN on the control's own rows).
  excess 95% CI    reps are interleaved in time, so per rep r: excess_r = deg_r(group) -
                   deg_r(control) (the per-rep degradations above), t-interval over r; the reps
                   pair when group and control have valid jobs in the same reps ("paired by
                   rep"). Otherwise a Welch interval of the difference of the two per-rep means
                   ("unpaired (Welch)"). excess_ci_method names the method; NaN with fewer than
                   2 reps on either side ("fewer than 2 reps").
  degraded_excess  excess CI lower bound > tol_pct; with no CI, excess_degradation_pct > tol_pct.
  basis            with a control, "excess over control": the threshold, onset k, suggested
                   IO_BOUND_INTERVAL, trends and verdicts below read degraded_excess and
                   excess_degradation_pct in place of degraded and degradation_pct (which stay in
                   the table); without one, "raw degradation". A group whose excess is undefined
                   at some k where its degradation is defined is left out of the threshold.

Threshold (`threshold`; "degraded" and "degradation" are read on the basis above)
  no_degradation_demand_mb_s   the highest measured demand such that every group with a demand
                               at or below it is not degraded at any k; None when the
                               lowest-demand group degrades. When no group degrades it is the
                               highest demand measured and only a lower bound.
  suggested_io_bound_interval_mb_s = no_degradation_demand_mb_s * K: the aggregate read
                               bandwidth the machine sustained, over all K CMPs, without
                               degradation (paper Sec. 3.4.2 derives IO_BOUND_INTERVAL from
                               this experiment but does not give a formula).
  expected_threshold_from_cap_mb_s = cap / K when the runs throttle the device to `cap` MB/s:
                               the per-CMP share of an emulated device, shown beside ours.

Verdict rules (`compare_with_paper`)
  Direction claims (the paper's qualitative statements):
    "degradation rises with demand": Spearman rank correlation between demand and degradation
      at k = K over the reps: one point per group and rep (its per-rep degradation above, on
      the excess basis minus the control's in the same rep, or the control's mean when that rep
      has none), one-sided permutation test (exact up to 8 points, otherwise 40320 seeded
      resamples). rho > 0 and p < 0.05 -> "reproduced in direction"; otherwise "not reproduced".
      Per rep rather than per group mean: with 5 groups the test hangs on the order of the
      low-demand groups, whose degradations differ by noise alone (three fresh local runs gave
      p = 0.04, 0.12 and 0.008 on group means); the reps give it the points to see a trend
      through that noise. Without per-rep values (a table alone) the group means are used.
      "not measurable here" when K < 2 or fewer than 2 groups have a degradation, or when even
      a perfect ranking of these points could not reach p < 0.05 (e.g. 3 points: p = 1/6).
    "degradation starts at fewer CMPs as demand rises": the same test on the onset k (a group
      that never degrades counts as K+1), expecting rho < 0; "not measurable here" when all
      groups share one onset, or when the attainable p is >= 0.05.
    "low-demand groups show no degradation": "reproduced in direction" when the lowest-demand
      group is not degraded at any k and some higher-demand group is; "not measurable here" when
      no group degrades (no boundary inside the measured range); "not reproduced" when the
      lowest-demand group degrades.
  Absolute values that depend on the device, its bandwidth and the number of CMPs (the
  threshold demand, IO_BOUND_INTERVAL, the onset k of the highest-demand group) are
  "differs (machine-specific)" whenever we measured them, even when the number happens to
  agree; the note gives the ratio to the paper's value and, under a throttle, cap / K.
  They are "not measurable here" when our data do not define them (reason in the note), and
  the highest-demand group's onset is "not reproduced" when that group never degrades.
  Setup parameters (number of groups, demand range, K) are not results: setup.csv lists them
  beside the paper's, without a verdict.
  With a control every rule uses the excess basis, and each note says so. The control's own
  degradation at k = K is stated in the summary and the notes: when its CI lower bound exceeds
  tol_pct, stacking CMPs costs time without any I/O here and the paper's assumption that
  co-running jobs only contend for I/O does not hold on this machine.

CLI: python -m experiments.sensitivity_ranking.analysis --jobs J --runs R --tol-pct 5 --out-dir D
  writes D/degradation.csv, D/setup.csv, D/threshold.json, D/fig14_degradation.png and
  D/section.json (see analysis/schemas/section.schema.json).
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
from scipy import stats  # noqa: E402

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
    check_columns,
    check_ints,
    cli,
    direction_row,
    dumps_json,
    fmt_num,
    paper_note,
    ratio_note,
    read_csv,
    resolve_run_paths,
    run_checks,
    setup_frame,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402
from analysis.stats import CONFIDENCE, rank_trend, t_interval  # noqa: E402

EXPERIMENT = "sensitivity_ranking"
PAPER_ID = "000"
FIG_NAME = "fig14_degradation.png"
CONTROL_LABEL = "control (compute only)"
BASIS_EXCESS = "excess over control"
BASIS_RAW = "raw degradation"
EXCESS_PAIRED = "paired by rep"
EXCESS_WELCH = "unpaired (Welch)"
EXCESS_FEW_REPS = "fewer than 2 reps"
EXCESS_CONTROL = "control group"

JOB_INT_COLUMNS = {"group": 0, "k": 1, "rep": 0, "cmp": 0, "exit_code": None, "jobs_per_cmp": 1}
JOB_COLUMNS = [
    "run_id",
    "group",
    "k",
    "rep",
    "cmp",
    "job_id",
    "runtime_s",
    "exit_code",
    "demand_target_mb_s",
    "jobs_per_cmp",
    "result_bw_mb_s",
    "result_bytes_read",
    "result_check",
]
RUN_COLUMNS = ["run_id", "group", "k", "rep", "variant", "throttle_read_bps", "metadata_path"]
TABLE_COLUMNS = [
    "group",
    "k",
    "demand_per_cmp_mb_s",
    "demand_target_mb_s",
    "jobs_per_cmp",
    "n_reps",
    "n_jobs",
    "n_failed",
    "mean_runtime_s",
    "t1c_s",
    "degradation_pct",
    "ci95_low_pct",
    "ci95_high_pct",
    "degraded",
    "control_degradation_pct",
    "excess_degradation_pct",
    "excess_ci95_low_pct",
    "excess_ci95_high_pct",
    "excess_ci_method",
    "degraded_excess",
    "reason",
]


# ----------------------------------------------------------------------------- input


def read_jobs(path: str | os.PathLike) -> pd.DataFrame:
    """The collected per-job CSV, columns checked and typed; one-line errors name file and row."""
    df = read_csv(path, ["run_id", "job_id", "result_check"])
    check_columns(df, JOB_COLUMNS, str(path))
    if df.empty:
        raise AnalysisInputError(f"{path}: no rows (expected one row per job)")
    df = check_ints(df, JOB_INT_COLUMNS, str(path))
    for col in ("runtime_s", "demand_target_mb_s", "result_bw_mb_s", "result_bytes_read"):
        df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    control_group(df, str(path))
    return df


def read_runs(path: str | os.PathLike) -> pd.DataFrame:
    """runs.csv (one row per run), columns checked and typed."""
    df = read_csv(path, ["run_id", "variant", "metadata_path"])
    check_columns(df, RUN_COLUMNS, str(path))
    df = check_ints(df, {"group": 0, "k": 1, "rep": 0}, str(path))
    df["throttle_read_bps"] = pd.to_numeric(df["throttle_read_bps"], errors="coerce")
    return df


def resolve_metadata_paths(runs: pd.DataFrame, runs_csv: str | os.PathLike) -> list[Path]:
    """Each run's metadata.json: absolute as given; relative to the runs.csv folder, else to cwd."""
    return resolve_run_paths(runs, runs_csv, "metadata_path")


def valid_jobs_mask(jobs: pd.DataFrame) -> pd.Series:
    """True for jobs that count: exit code 0, self-check 'ok', finite positive runtime."""
    runtime = jobs["runtime_s"]
    return (jobs["exit_code"] == 0) & (jobs["result_check"].fillna("") == "ok") & np.isfinite(runtime) & (runtime > 0)


def control_group(frame: pd.DataFrame, source: str = "jobs") -> int | None:
    """The compute-only control: the one group with demand_target_mb_s == 0, else None."""
    if "demand_target_mb_s" not in frame.columns:
        return None
    groups = sorted(int(g) for g in frame.loc[frame["demand_target_mb_s"] == 0, "group"].unique())
    if len(groups) > 1:
        raise AnalysisInputError(
            f"{source}: demand_target_mb_s: 0 in groups {', '.join(map(str, groups))} "
            "(expected at most one compute-only control group)"
        )
    return groups[0] if groups else None


# ----------------------------------------------------------------------------- metrics


def _one_value(series: pd.Series, what: str, group: int) -> float:
    values = series.dropna().unique()
    if len(values) > 1:
        raise AnalysisInputError(
            f"jobs: group {group}: {what}: {sorted(values.tolist())} (expected one value per group)"
        )
    return float(values[0]) if len(values) else math.nan


def _group_demand(k1_valid: pd.DataFrame, jobs_per_cmp: float) -> float:
    per_cmp = k1_valid.groupby(["rep", "cmp"])["result_bw_mb_s"].mean() * jobs_per_cmp
    per_rep = per_cmp.groupby(level="rep").mean()
    return float(per_rep.mean()) if per_rep.notna().any() else math.nan


def welch_interval(a, b, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(low, high) of the Welch t-interval of mean(a) - mean(b); NaN with fewer than 2 in either."""
    a, b = np.asarray(a, float), np.asarray(b, float)
    if len(a) < 2 or len(b) < 2:
        return math.nan, math.nan
    diff = float(a.mean() - b.mean())
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    if va + vb == 0:
        return diff, diff
    df = (va + vb) ** 2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(va + vb))
    return diff - half, diff + half


def excess_interval(group_reps: pd.Series, control_reps: pd.Series) -> tuple[float, float, str]:
    """95% CI of the excess degradation from per-rep degradations (indexed by rep) and its
    method: paired by rep when both have the same reps, else Welch (see the module doc)."""
    if len(group_reps) >= 2 and set(group_reps.index) == set(control_reps.index):
        diffs = group_reps - control_reps.reindex(group_reps.index)
        return (*t_interval(diffs.to_numpy()), EXCESS_PAIRED)
    if len(group_reps) >= 2 and len(control_reps) >= 2:
        return (*welch_interval(group_reps.to_numpy(), control_reps.to_numpy()), EXCESS_WELCH)
    return math.nan, math.nan, EXCESS_FEW_REPS


def _add_excess(rows: list[dict], per_rep: dict, control: int, tol_pct: float) -> None:
    """Fill the control and excess columns of every row (module doc: compute-only control)."""
    at_k = {r["k"]: r for r in rows if r["group"] == control}
    for row in rows:
        k = row["k"]
        ctrl = at_k.get(k)
        row["control_degradation_pct"] = ctrl["degradation_pct"] if ctrl else math.nan
        if row["group"] == control:
            row["excess_ci_method"] = EXCESS_CONTROL
            continue
        if math.isnan(row["degradation_pct"]):
            continue
        if math.isnan(row["control_degradation_pct"]):
            row["reason"] = f"control group {control} has no degradation at k={k}: excess undefined"
            continue
        excess = row["degradation_pct"] - row["control_degradation_pct"]
        low, high, method = excess_interval(per_rep[(row["group"], k)], per_rep[(control, k)])
        row.update(
            excess_degradation_pct=excess,
            excess_ci95_low_pct=low,
            excess_ci95_high_pct=high,
            excess_ci_method=method,
            degraded_excess=bool(low > tol_pct if math.isfinite(low) else excess > tol_pct),
        )


def degradation_table(jobs: pd.DataFrame, tol_pct: float) -> pd.DataFrame:
    """One row per (group, k): measured demand, runtimes, degradation % with 95% CI, degraded;
    with a compute-only control, also the excess over it with its CI and degraded_excess."""
    return _degradations(jobs, tol_pct)[0]


def _degradations(jobs: pd.DataFrame, tol_pct: float) -> tuple[pd.DataFrame, dict]:
    """degradation_table and the per-rep degradations {(group, k): Series indexed by rep}."""
    control = control_group(jobs)
    valid = valid_jobs_mask(jobs)
    rows, per_rep = [], {}
    for group, g in jobs.groupby("group", sort=True):
        gv = g[valid.loc[g.index]]
        target = _one_value(g["demand_target_mb_s"], "demand_target_mb_s", group)
        jpc = _one_value(g["jobs_per_cmp"], "jobs_per_cmp", group)
        k1 = gv[gv["k"] == 1]
        if k1.empty:
            t1c, demand = math.nan, math.nan
            group_reason = "no valid k=1 job: T_1-c undefined"
        else:
            t1c, demand = float(k1["runtime_s"].mean()), _group_demand(k1, jpc)
            group_reason = ""
        for k, gk in g.groupby("k", sort=True):
            vk = gv[gv["k"] == k]
            row = {
                "group": int(group),
                "k": int(k),
                "demand_per_cmp_mb_s": demand,
                "demand_target_mb_s": target,
                "jobs_per_cmp": int(jpc),
                "n_reps": int(vk["rep"].nunique()),
                "n_jobs": len(vk),
                "n_failed": len(gk) - len(vk),
                "mean_runtime_s": float(vk["runtime_s"].mean()) if len(vk) else math.nan,
                "t1c_s": t1c,
                "degradation_pct": math.nan,
                "ci95_low_pct": math.nan,
                "ci95_high_pct": math.nan,
                "degraded": pd.NA,
                "control_degradation_pct": math.nan,
                "excess_degradation_pct": math.nan,
                "excess_ci95_low_pct": math.nan,
                "excess_ci95_high_pct": math.nan,
                "excess_ci_method": "",
                "degraded_excess": pd.NA,
                "reason": group_reason,
            }
            if not group_reason and vk.empty:
                row["reason"] = f"no valid job at k={k}"
            elif not group_reason:
                row["degradation_pct"] = 100.0 * (row["mean_runtime_s"] / t1c - 1.0)
                reps = 100.0 * (vk.groupby("rep")["runtime_s"].mean() / t1c - 1.0)
                per_rep[(int(group), int(k))] = reps
                low, high = t_interval(reps.to_numpy())
                row["ci95_low_pct"], row["ci95_high_pct"] = low, high
                row["degraded"] = bool(low > tol_pct if len(reps) >= 2 else row["degradation_pct"] > tol_pct)
            rows.append(row)
    if control is not None:
        _add_excess(rows, per_rep, control, tol_pct)
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    table["degraded"] = table["degraded"].astype("boolean")
    table["degraded_excess"] = table["degraded_excess"].astype("boolean")
    return table, per_rep


def _number(value: object) -> float | None:
    return None if value is None or pd.isna(value) else float(value)


def _control_summary(table: pd.DataFrame, control: int | None) -> dict | None:
    """The control's demand and raw degradation per k, for threshold.json and the report."""
    if control is None:
        return None
    c = table[table["group"] == control].sort_values("k")
    hits = c.loc[c["degraded"].fillna(False).astype(bool), "k"]
    return {
        "group": control,
        "label": CONTROL_LABEL,
        "demand_per_cmp_mb_s": _number(c["demand_per_cmp_mb_s"].iloc[0]),
        "degraded_at_any_k": bool(len(hits)),
        "onset_k": int(hits.min()) if len(hits) else None,
        "by_k": [
            {
                "k": int(r["k"]),
                "degradation_pct": _number(r["degradation_pct"]),
                "ci95_low_pct": _number(r["ci95_low_pct"]),
                "ci95_high_pct": _number(r["ci95_high_pct"]),
                "degraded": None if pd.isna(r["degraded"]) else bool(r["degraded"]),
                "reason": str(r["reason"]) if isinstance(r["reason"], str) else "",
            }
            for _, r in c.iterrows()
        ],
    }


def control_at(thr: dict, k: int) -> dict | None:
    """The control's entry at k from threshold()['control'], or None."""
    ctrl = thr.get("control")
    hits = [r for r in ctrl["by_k"] if r["k"] == k] if ctrl else []
    return hits[0] if hits else None


def threshold(table: pd.DataFrame, tol_pct: float, throttle_read_bps: float | None = None) -> dict:
    """Demand threshold, onset k per group and the suggested IO_BOUND_INTERVAL (see module doc);
    on the excess basis when the table has a compute-only control."""
    K = int(table["k"].max())
    control = control_group(table)
    flag = "degraded" if control is None else "degraded_excess"
    groups, onset, excluded = [], {}, []
    for group, g in table.groupby("group", sort=True):
        if group == control:
            continue
        hits = g.loc[g[flag].fillna(False).astype(bool), "k"]
        onset[int(group)] = int(hits.min()) if len(hits) else None
        demand = g["demand_per_cmp_mb_s"].iloc[0]
        if pd.isna(demand):
            why = str(g["reason"].iloc[0]) or "no result_bw_mb_s at k=1: demand undefined"
            excluded.append({"group": int(group), "reason": why})
            continue
        if control is not None:
            undefined = g.loc[g["degradation_pct"].notna() & g["excess_degradation_pct"].isna()]
            if len(undefined):
                ks = ", ".join(str(int(k)) for k in undefined["k"])
                excluded.append(
                    {
                        "group": int(group),
                        "reason": f"excess over the control undefined at k = {ks} "
                        f"(the control group {control} has no degradation there)",
                    }
                )
                continue
        groups.append(
            {
                "group": int(group),
                "demand_per_cmp_mb_s": float(demand),
                "degraded_at_any_k": onset[int(group)] is not None,
                "onset_k": onset[int(group)],
            }
        )
    groups.sort(key=lambda r: (r["demand_per_cmp_mb_s"], r["group"]))
    degrading = [r["demand_per_cmp_mb_s"] for r in groups if r["degraded_at_any_k"]]
    first = min(degrading) if degrading else None
    below = [r["demand_per_cmp_mb_s"] for r in groups if first is None or r["demand_per_cmp_mb_s"] < first]
    no_deg = max(below) if below else None
    cap = None
    if throttle_read_bps is not None and math.isfinite(throttle_read_bps):
        cap = throttle_read_bps / 1e6
    return {
        "tol_pct": tol_pct,
        "K": K,
        "basis": BASIS_RAW if control is None else BASIS_EXCESS,
        "control_group": control,
        "control": _control_summary(table, control),
        "n_groups": len(groups),
        "groups": groups,
        "excluded_groups": excluded,
        "onset_k": onset,
        "no_degradation_demand_mb_s": no_deg,
        "no_degradation_is_lower_bound": bool(groups) and first is None,
        "first_degrading_demand_mb_s": first,
        "suggested_io_bound_interval_mb_s": None if no_deg is None else no_deg * K,
        "suggested_io_bound_interval_formula": "no_degradation_demand_mb_s * K",
        "throttle_read_bps": throttle_read_bps if cap is not None else None,
        "throttle_cap_mb_s": cap,
        "expected_threshold_from_cap_mb_s": None if cap is None else cap / K,
    }


def _at_k(table: pd.DataFrame, thr: dict) -> tuple[pd.DataFrame, str]:
    """The demand groups' rows at k = K with a degradation on the threshold's basis, and that
    basis' column."""
    at_k = table[(table["k"] == thr["K"]) & table["demand_per_cmp_mb_s"].notna()]
    col = "degradation_pct"
    if thr["basis"] == BASIS_EXCESS:
        col = "excess_degradation_pct"
        at_k = at_k[at_k["group"].isin([r["group"] for r in thr["groups"]])]
    return at_k[at_k[col].notna()], col


def rep_points(table: pd.DataFrame, thr: dict, per_rep: dict) -> tuple[list[float], list[float]]:
    """(demand, degradation at k = K) per group and rep, on the threshold's basis: the points of
    the demand trend (module doc)."""
    K, control = thr["K"], thr["control_group"]
    at_k, col = _at_k(table, thr)
    ctrl = per_rep.get((control, K)) if control is not None else None
    ctrl_mean = (
        float(table.loc[(table["group"] == control) & (table["k"] == K), "degradation_pct"].mean())
        if (control is not None)
        else math.nan
    )
    xs, ys = [], []
    for _, r in at_k.iterrows():
        for rep, value in per_rep.get((int(r["group"]), K), pd.Series(dtype=float)).items():
            if control is not None:
                value -= ctrl[rep] if ctrl is not None and rep in ctrl.index else ctrl_mean
            if math.isfinite(value):
                xs.append(float(r["demand_per_cmp_mb_s"]))
                ys.append(float(value))
    return xs, ys


def trends(table: pd.DataFrame, thr: dict, per_rep: dict | None = None) -> dict:
    """Rank trends behind the paper's direction claims (see the module doc); the demand trend
    over the per-rep points when `per_rep` is given, over the group means otherwise."""
    K = thr["K"]
    at_k, col = _at_k(table, thr)
    if per_rep is not None:
        xs, ys = rep_points(table, thr, per_rep)
        demand_trend = rank_trend(xs, ys, "greater")
        demand_trend["points"] = "group x rep"
    else:
        demand_trend = rank_trend(at_k["demand_per_cmp_mb_s"].tolist(), at_k[col].tolist(), "greater")
        demand_trend["points"] = "group"
    demand_trend["groups"] = int(at_k["group"].nunique())
    demand_trend["k"] = K
    never = K + 1
    onset_trend = rank_trend(
        [r["demand_per_cmp_mb_s"] for r in thr["groups"]],
        [never if r["onset_k"] is None else r["onset_k"] for r in thr["groups"]],
        "less",
    )
    onset_trend["never_degraded_as_k"] = never
    return {"degradation_vs_demand": demand_trend, "onset_vs_demand": onset_trend}


def analyse(jobs: pd.DataFrame, tol_pct: float, throttle_read_bps: float | None = None) -> dict:
    """The whole analysis as one result: {'table', 'threshold', 'trends'}."""
    table, per_rep = _degradations(jobs, tol_pct)
    thr = threshold(table, tol_pct, throttle_read_bps)
    return {"table": table, "threshold": thr, "trends": trends(table, thr, per_rep)}


# ----------------------------------------------------------------------------- paper comparison


def basis_note(thr: dict) -> str:
    """' Basis: ...' for notes judged on the excess over the control; '' on the raw basis."""
    if thr["basis"] != BASIS_EXCESS:
        return ""
    at = control_at(thr, thr["K"])
    pct = None if at is None else at["degradation_pct"]
    how_much = "" if pct is None else f", {fmt_num(pct)} % at k = {thr['K']}"
    return (
        f" Basis: excess over control, each group's degradation minus that of the compute-only "
        f"control (group {thr['control_group']}{how_much}), which stacking CMPs costs without "
        f"any I/O."
    )


def compare_with_paper(result: dict, paper: dict) -> pd.DataFrame:
    """Paper-vs-measured rows: quantity, paper_value, measured_value, unit, verdict, note;
    with a control, judged on the excess over it and each note says so."""
    exp = experiment_values(paper, EXPERIMENT)
    vals, claims = exp["values"], exp["claims"]
    thr, tr = result["threshold"], result["trends"]
    K, groups = thr["K"], thr["groups"]
    excess = thr["basis"] == BASIS_EXCESS
    beyond = " beyond the control" if excess else ""
    rows = []

    demand_trend = tr["degradation_vs_demand"]
    per_rep = demand_trend.get("points") == "group x rep"
    rows.append(
        direction_row(
            f"Degradation at k = K ({K}) rises with per-CMP demand",
            claims["degradation_rises_with_demand"],
            demand_trend,
            +1,
            f"{'excess ' if excess else ''}degradation % at k = {K}"
            + (f", one point per rep of {demand_trend.get('groups')} groups" if per_rep else ""),
            items="runs" if per_rep else "groups",
        )
    )
    rows.append(
        direction_row(
            "Degradation starts at fewer loaded CMPs as per-CMP demand rises",
            claims["onset_falls_with_demand"],
            tr["onset_vs_demand"],
            -1,
            f"onset k, never degraded counted as {K + 1}",
        )
    )

    claim = claims["low_demand_not_degraded"]
    row = {
        "quantity": "Low-demand groups show no degradation at any k",
        "paper_value": claim["statement"],
        "unit": "",
    }
    rule = "Rule: reproduced when the lowest-demand group is not degraded at any k and some higher-demand group is."
    if not groups:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: no group has a valid k=1 run. {rule}",
        )
    else:
        low = groups[0]
        n_ok = sum(not r["degraded_at_any_k"] for r in groups)
        measured = (
            f"lowest group ({fmt_num(low['demand_per_cmp_mb_s'])} MB/s per CMP) "
            f"{'degraded' if low['degraded_at_any_k'] else 'not degraded'}{beyond}; "
            f"{n_ok} of {len(groups)} groups not degraded{beyond} at any k"
        )
        if low["degraded_at_any_k"]:
            verdict, why = VERDICT_NOT, ""
        elif n_ok == len(groups):
            verdict = VERDICT_UNMEASURABLE
            why = (
                " Why not measurable: no group degraded, so no boundary lies inside the "
                "measured demand range; raise the demand or lower the device's bandwidth."
            )
        else:
            verdict, why = VERDICT_DIRECTION, ""
        row.update(measured_value=measured, verdict=verdict, note=f"{paper_note(claim)}{why} {rule}")
    rows.append(row)

    item = vals["no_degradation_below_mb_s"]
    measured = thr["no_degradation_demand_mb_s"]
    row = {
        "quantity": "Per-CMP demand below which no group degrades",
        "paper_value": item["value"],
        "unit": item["unit"],
    }
    cap_note = ""
    if thr["expected_threshold_from_cap_mb_s"] is not None:
        cap_note = (
            f" Expected from the emulated device: cap {fmt_num(thr['throttle_cap_mb_s'])} "
            f"MB/s / K = {fmt_num(thr['expected_threshold_from_cap_mb_s'])} MB/s per CMP."
        )
    if measured is None or thr["no_degradation_is_lower_bound"]:
        why = (
            "the lowest-demand group already degrades"
            if measured is None and groups
            else (
                "no group has a valid k=1 run"
                if measured is None
                else f"no group degraded; the threshold lies above the highest demand measured, "
                f"{fmt_num(measured)} MB/s per CMP"
            )
        )
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} Why not measurable: {why}.{cap_note}",
        )
    else:
        row.update(
            measured_value=measured,
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(item)} Depends on the device's bandwidth and on K; "
            f"first degrading group at {fmt_num(thr['first_degrading_demand_mb_s'])} "
            f"MB/s per CMP; {ratio_note(measured, item['value'])}.{cap_note}",
        )
    rows.append(row)

    item = vals["highest_group_onset_k"]
    row = {
        "quantity": "Onset k of the highest-demand group",
        "paper_value": item["value"],
        "unit": item["unit"],
    }
    if not groups or K < 2:
        why = "no group has a valid k=1 run" if not groups else f"only k = {K} was run"
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} Why not measurable: {why}.",
        )
    else:
        top = groups[-1]
        where = (
            f"our highest group: {fmt_num(top['demand_per_cmp_mb_s'])} MB/s per CMP, "
            f"paper's: {fmt_num(vals['demand_max_mb_s']['value'])} MB/s per CMP"
        )
        if top["onset_k"] is None:
            row.update(
                measured_value=None,
                verdict=VERDICT_NOT,
                note=f"{paper_note(item)} Our highest-demand group did not degrade at any k <= {K} ({where}).",
            )
        else:
            row.update(
                measured_value=top["onset_k"],
                verdict=VERDICT_MACHINE,
                note=f"{paper_note(item)} The onset depends on the group's demand relative to the device ({where}).",
            )
    rows.append(row)

    item = vals["io_bound_interval_mb_s"]
    suggested = thr["suggested_io_bound_interval_mb_s"]
    row = {
        "quantity": "IO_BOUND_INTERVAL (aggregate I/O sustained without degradation)",
        "paper_value": item["value"],
        "unit": item["unit"],
    }
    paper_product = vals["no_degradation_below_mb_s"]["value"] * vals["k_max"]["value"]
    formula = (
        f"Ours = no-degradation demand per CMP x K ({K}); the paper chose its value "
        f"without a formula (its threshold x K = {fmt_num(paper_product)} MB/s)."
    )
    if suggested is None or thr["no_degradation_is_lower_bound"]:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(item)} {formula} Why not measurable: the no-degradation "
            f"demand is undefined or only a lower bound here.",
        )
    else:
        row.update(
            measured_value=suggested,
            verdict=VERDICT_MACHINE,
            note=f"{paper_note(item)} {formula} {ratio_note(suggested, item['value'])}.",
        )
    rows.append(row)
    for row in rows:
        row["note"] += basis_note(thr)
    columns = ["quantity", "paper_value", "measured_value", "unit", "verdict", "note"]
    return pd.DataFrame(rows, columns=columns)


def setup_table(result: dict, paper: dict) -> pd.DataFrame:
    """Design parameters beside the paper's: not results, so no verdict."""
    vals = experiment_values(paper, EXPERIMENT)["values"]
    thr = result["threshold"]
    demands = [r["demand_per_cmp_mb_s"] for r in thr["groups"]]
    counted = "groups with a valid k=1 run"
    if thr["control_group"] is not None:
        counted = "demand groups with a valid k=1 run (control excluded)"
    rows = [
        (counted, vals["n_groups"], thr["n_groups"]),
        ("lowest per-CMP demand", vals["demand_min_mb_s"], min(demands) if demands else None),
        ("highest per-CMP demand", vals["demand_max_mb_s"], max(demands) if demands else None),
        ("K, most CMPs loaded at once", vals["k_max"], thr["K"]),
    ]
    return setup_frame(rows)


# ----------------------------------------------------------------------------- figure and files


def plot_fig14(table: pd.DataFrame, path: str | os.PathLike, tol_pct: float | None = None) -> None:
    """Fig. 14 style: degradation % against k, one curve per group, 95% CI error bars; PNG.
    A compute-only control is a dashed black curve labelled CONTROL_LABEL."""
    control = control_group(table)
    known = table[table["demand_per_cmp_mb_s"].notna()]
    order = known.groupby("group")["demand_per_cmp_mb_s"].first().sort_values(kind="stable")
    fig, ax = plt.subplots(figsize=(8.5, 5.0), dpi=110)
    n_colored = len(order) - int(control in order.index)
    colors = iter(plt.cm.viridis(np.linspace(0.0, 0.9, max(n_colored, 1))))
    # a small sideways offset per group keeps overlapping error bars apart
    dodge = np.linspace(-0.12, 0.12, len(order)) if len(order) > 1 else np.zeros(1)
    for dx, (group, demand) in zip(dodge, order.items()):
        g = known[known["group"] == group].sort_values("k")
        g = g[g["degradation_pct"].notna()]
        y = g["degradation_pct"].to_numpy()
        low = np.clip(y - g["ci95_low_pct"].to_numpy(), 0, None)
        high = np.clip(g["ci95_high_pct"].to_numpy() - y, 0, None)
        yerr = np.nan_to_num(np.vstack([low, high]))
        if group == control:
            style = {"color": "black", "ls": "--", "zorder": 3, "label": CONTROL_LABEL}
        else:
            style = {"color": next(colors), "label": f"{fmt_num(demand)}"}
        ax.errorbar(g["k"] + dx, y, yerr=yerr, marker="o", ms=4, capsize=3, lw=1.5, **style)
    if tol_pct is not None:
        ax.axhline(tol_pct, color="grey", ls="--", lw=1, label=f"tolerance {fmt_num(tol_pct)} %")
    ax.axhline(0, color="black", lw=0.6)
    ks = sorted(table["k"].unique())
    ax.set_xticks(ks)
    ax.set_xlabel("k, number of loaded CMPs")
    ax.set_ylabel("average runtime degradation, T_k-c / T_1-c - 1 (%)")
    ax.set_title(f"Average runtime degradation in k-CMP configuration, k = {ks[0]}..{ks[-1]}")
    ax.grid(alpha=0.3)
    ax.legend(
        title="demand (MB/s per CMP)",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        title_fontsize=8,
    )
    fig.tight_layout()
    rt.save_png(fig, path)


def _json_ready(thr: dict) -> dict:
    out = dict(thr)
    out["onset_k"] = {str(g): k for g, k in thr["onset_k"].items()}
    return out


def _throttle(runs: pd.DataFrame) -> tuple[float | None, str | None]:
    values = runs["throttle_read_bps"]
    distinct = sorted(values.dropna().unique().tolist())
    if not distinct:
        return None, None
    if len(distinct) == 1 and values.notna().all():
        return float(distinct[0]), None
    return None, (
        f"runs differ in throttle_read_bps ({', '.join(f'{v:g}' for v in distinct)}"
        f"{' and none' if values.isna().any() else ''}): no expected threshold from the cap"
    )


def control_note(thr: dict) -> str | None:
    """The compute-only control's degradation at k = K in one sentence; None without control."""
    if thr["control_group"] is None:
        return None
    K, tol, group = thr["K"], thr["tol_pct"], thr["control_group"]
    at = control_at(thr, K)
    if at is None or at["degradation_pct"] is None:
        why = (at or {}).get("reason") or f"no run at k = {K}"
        return (
            f"The compute-only control (group {group}) has no degradation at k = {K} ({why}), so "
            f"the excess over it is undefined there."
        )
    ci = ""
    if at["ci95_low_pct"] is not None:
        ci = f" (95% CI {fmt_num(at['ci95_low_pct'])} to {fmt_num(at['ci95_high_pct'])} %)"
    if at["degraded"]:
        return (
            f"Compute-only control (group {group}) degrades {fmt_num(at['degradation_pct'])} %"
            f"{ci} at k = {K}: stacking CMPs on this machine costs that much without any I/O "
            f"(the paper's confinement assumption, that co-running jobs slow each other only "
            f"through I/O, does not hold here)."
        )
    return (
        f"Compute-only control (group {group}) degrades {fmt_num(at['degradation_pct'])} %{ci} "
        f"at k = {K}, not above the {fmt_num(tol)} % tolerance: stacking CMPs without I/O "
        f"costs no measurable time here."
    )


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
    table, thr = result["table"], result["threshold"]
    tol, K = thr["tol_pct"], thr["K"]
    n_reps = int(runs["rep"].nunique())
    demands = [r["demand_per_cmp_mb_s"] for r in thr["groups"]]
    excess = thr["basis"] == BASIS_EXCESS
    beyond = " beyond the control" if excess else ""
    judged = (
        "excess degradation (the group's degradation minus the compute-only control's at the same k)"
        if excess
        else "average runtime degradation"
    )
    plus_control = f" plus a compute-only control (group {thr['control_group']})" if excess else ""
    if demands:
        summary = [
            f"{thr['n_groups']} demand groups with a valid k=1 run{plus_control}, measured "
            f"per-CMP demand {fmt_num(min(demands))} to {fmt_num(max(demands))} MB/s, run on "
            f"k = 1..{K} loaded CMPs with {n_reps} rep(s); degraded means the 95% CI lower bound "
            f"of the {judged} exceeds {fmt_num(tol)} %."
        ]
    else:
        summary = [
            "No demand group has a valid k=1 run, so T_1-c and every degradation are "
            "undefined; see the reason column of the degradation table."
        ]
    if excess:
        summary.append(
            f"{control_note(thr)} Degradation is therefore judged on the excess over the "
            f"control (basis: {BASIS_EXCESS}); the raw degradation stays in the table."
        )
    if thr["first_degrading_demand_mb_s"] is None and demands:
        summary.append(
            f"No group degraded{beyond}; the no-degradation demand is at least "
            f"{fmt_num(thr['no_degradation_demand_mb_s'])} MB/s per CMP."
        )
    elif demands:
        first = thr["first_degrading_demand_mb_s"]
        summary.append(f"The lowest demand that degrades{beyond} is {fmt_num(first)} MB/s per CMP.")
        if thr["no_degradation_demand_mb_s"] is None:
            summary.append(f"The lowest-demand group already degrades{beyond}, so no threshold is found.")
        else:
            summary.append(
                f"No group at or below {fmt_num(thr['no_degradation_demand_mb_s'])} MB/s per CMP "
                f"degraded{beyond} at any k; suggested IO_BOUND_INTERVAL = that demand x K = "
                f"{fmt_num(thr['no_degradation_demand_mb_s'])} x {K} = "
                f"{fmt_num(thr['suggested_io_bound_interval_mb_s'])} MB/s, the aggregate read "
                f"bandwidth sustained without degradation{beyond}."
            )
    if thr["expected_threshold_from_cap_mb_s"] is not None:
        summary.append(
            f"The device was throttled to {fmt_num(thr['throttle_cap_mb_s'])} MB/s, so "
            f"cap / K = {fmt_num(thr['expected_threshold_from_cap_mb_s'])} MB/s per CMP "
            f"is the threshold expected from the cap."
        )
    n_failed = int(table["n_failed"].sum())
    notes = [
        "Degradation follows paper eq. (1): T_k-c / T_1-c - 1, where T_1-c is the mean runtime of "
        "the group's valid k=1 jobs over all reps and T_k-c the mean runtime of its valid jobs "
        "at k.",
        "The 95% CI is a t-interval over per-rep degradations with T_1-c held fixed; at k = 1 it "
        "shows the rep-to-rep noise of the baseline itself.",
        f"{n_failed} job(s) failed (exit code not 0 or self-check not 'ok') and were left out; "
        "the n_failed column counts them per group and k.",
        "Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().unique())) + ".",
        rt.device_note(metadata_paths),
        *(n.strip() for n in paper.get("notes", [])),
        *extra_notes,
    ]
    if thr["control_group"] is not None:
        ctrl = thr["control"]
        notes += [
            f"Group {ctrl['group']} has demand_target_mb_s = 0: the compute-only control "
            f"(measured demand {fmt_num(ctrl['demand_per_cmp_mb_s'])} MB/s per CMP). It is left "
            f"out of the threshold, the trend tests and the lowest-demand rule; a group's "
            f"excess degradation is its degradation minus the control's at the same k "
            f"(columns control_degradation_pct, excess_degradation_pct).",
            "The excess CI is a t-interval over per-rep differences, group minus control, "
            "paired by rep number (reps are interleaved in time, so pairing removes drift); "
            "when the two do not have valid jobs in the same reps it is a Welch interval of "
            "the difference of their per-rep means. The excess_ci_method column says which; "
            "degraded_excess is its lower bound > tolerance.",
            control_note(thr),
        ]
    for excluded in thr["excluded_groups"]:
        notes.append(f"Group {excluded['group']} left out of the threshold: {excluded['reason']}.")
    return {
        "experiment": EXPERIMENT,
        "title": f"{exp['title']} (paper {exp['figure']})",
        "paper": paper["citation"].strip(),
        "summary": " ".join(summary),
        "figures": [
            {
                "path": FIG_NAME,
                "caption": (
                    f"Average runtime degradation of each demand group as k CMPs are loaded "
                    f"(k = 1..{K}); legend: measured demand in MB/s per CMP; error bars: 95% "
                    f"t-interval across reps; dashed line: tolerance {fmt_num(tol)} %. "
                    + (
                        f"Dashed black curve: {CONTROL_LABEL}, group {thr['control_group']}; "
                        f"a group's excess degradation, on which it is judged, is its height "
                        f"above that curve. "
                        if excess
                        else ""
                    )
                    + f"Compare paper Fig. 14 (k = 1..{exp['values']['k_max']['value']})."
                ),
            }
        ],
        "comparison": [
            {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}
            for row in comparison.to_dict(orient="records")
        ],
        "tables": [
            {"title": "Degradation per demand group and k", "csv": "degradation.csv"},
            {
                "title": "Setup: paper vs this run (design parameters, no verdict)",
                "csv": "setup.csv",
            },
        ],
        "missing": runmeta.collect_missing(metadata_paths),
        "runs": [runmeta.summarize_metadata(p) for p in metadata_paths],
        "notes": notes,
    }


def run(jobs_csv: str, runs_csv: str, tol_pct: float, out_dir: str, paper_id: str = PAPER_ID) -> dict:
    """Read the inputs, analyse, and write the five output files into out_dir."""
    jobs, runs = read_jobs(jobs_csv), read_runs(runs_csv)
    rt.one_variant(runs, runs_csv)
    metadata_paths = resolve_metadata_paths(runs, runs_csv)
    paper = load_paper_values(paper_id)
    cap_bps, cap_note = _throttle(runs)
    result = analyse(jobs, tol_pct, cap_bps)
    comparison = compare_with_paper(result, paper)
    notes = run_checks(jobs, runs) + ([cap_note] if cap_note else [])
    section = build_section(result, paper, comparison, runs, metadata_paths, notes)
    rt.write_outputs(
        out_dir,
        section,
        {
            "degradation.csv": result["table"],
            "setup.csv": setup_table(result, paper).to_csv(index=False, lineterminator="\n"),
            "threshold.json": dumps_json({**_json_ready(result["threshold"]), "trends": result["trends"]}),
        },
        [lambda out: plot_fig14(result["table"], out / FIG_NAME, tol_pct)],
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "experiments.sensitivity_ranking.analysis",
        "Sensitivity_RANKING (paper 000, Fig. 13-14): degradation vs per-CMP demand.",
        runs_help="per-run table (runs.csv); relative metadata paths are read from its folder, "
        "else from the current directory",
    )
    add_tol_pct(parser, "degradation tolerance in percent (default: 5)")

    def run_args(args) -> None:
        if not math.isfinite(args.tol_pct) or args.tol_pct < 0:
            parser.error(f"--tol-pct: {args.tol_pct!r} (expected a number >= 0)")
        run(args.jobs, args.runs, args.tol_pct, args.out_dir, args.paper_id)

    return cli(parser, argv, PAPER_ID, run_args)


if __name__ == "__main__":
    sys.exit(main())

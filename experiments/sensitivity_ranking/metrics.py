"""The metrics of Sensitivity_RANKING (paper 000, Sec. 3.3.2 and 3.4.2, Figs. 13-14).

Definitions (paper Sec. 2.1, eq. 1: normalized_runtime = T_k-c / T_1-c)
  valid job        exit_code == 0, result_check == 'ok' and a finite runtime_s > 0. Other jobs are
                   left out of every mean and counted in n_failed.
  failed run       a run with a job that is not valid, with no job, or whose status is not ok
                   (analysis.runtables.run_status): a claim on it says failed.
  demand           the group's x-value in Fig. 14: at k=1, the sum of result_bw_mb_s over the jobs
                   of one CMP (MB = 10^6 B), averaged over reps. A CMP with failed jobs counts as
                   its valid jobs' mean times jobs_per_cmp.

  Pooled, for the figure and degradation.csv (descriptive):
  T_1-c            mean runtime_s of the group's valid k=1 jobs, all reps pooled.
  degradation_pct  100 * (T_k-c / T_1-c - 1), T_k-c the mean runtime_s of the group's valid jobs
                   at k, all reps pooled.
  95% CI           t-interval over the per-rep degradations (one per rep: its jobs' mean runtime
                   / T_1-c - 1); T_1-c is held fixed. NaN with fewer than 2 reps.
  degraded         CI lower bound > tol_pct; with fewer than 2 reps, degradation_pct > tol_pct.

Compute-only control (optional)
  control group    the group whose demand_target_mb_s is 0 (its kernels read one block, then only
                   run nops); at most one, several are an input error. Stacking such jobs shows
                   what k loaded CMPs cost without any I/O (shared cores, frequency, caches): the
                   paper assumes this is nothing.
  control_degradation_pct, excess_degradation_pct (= degradation_pct - control's at the same k),
                   its 95% CI paired by rep (a t-interval of the per-rep differences) when group
                   and control have valid jobs in the same reps, else a Welch interval
                   (excess_ci_method), and degraded_excess (its lower bound > tol_pct).
  basis            with a control, "excess over control": the threshold and the onset below read
                   degraded_excess in place of degraded; without one, "raw degradation".

Threshold (`threshold`, descriptive: the claims are judged by analysis.verdicts)
  no_degradation_demand_mb_s   the highest measured demand such that every group with a demand
                               at or below it is not degraded at any k; None when the
                               lowest-demand group degrades; only a lower bound when none does.
  suggested_io_bound_interval_mb_s = no_degradation_demand_mb_s * K: the aggregate read
                               bandwidth the machine sustained, over all K CMPs, without
                               degradation (paper Sec. 3.4.2 derives IO_BOUND_INTERVAL from this
                               experiment but gives no formula).
  expected_threshold_from_cap_mb_s = cap / K when the runs throttle the device to `cap` MB/s.

The claims' evidence (table slowdown, one row per run of a demand group at k > 1)
  slowdown_ratio          the run's mean runtime over that of the group's k = 1 run of the same
                          rep (eq. 1 paired by rep).
  control_slowdown_ratio  the same of the control at the same k and rep.
  io_slowdown_ratio       slowdown_ratio / control_slowdown_ratio with a control (what stacking
                          costs beyond the compute-only jobs), else slowdown_ratio.
  below_paper_threshold   the group's demand lies below the paper's no-degradation demand
                          (descriptive: a property of the paper's disk, no claim selects by it).

The premise's evidence (table control, one row per run of the compute-only control at k > 1)
  slowdown_ratio          the control run's mean runtime over that of its k = 1 run of the same
                          rep: what stacking costs jobs without I/O, which the paper's
                          confinement makes nothing. Empty without a control group.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
from scipy import stats

from analysis import runtables as rt
from analysis.common import AnalysisInputError
from analysis.stats import CONFIDENCE, t_interval

EXPERIMENT = "sensitivity_ranking"
CONTROL_LABEL = "control (compute only)"
BASIS_EXCESS = "excess over control"
BASIS_RAW = "raw degradation"
EXCESS_PAIRED = "paired by rep"
EXCESS_WELCH = "unpaired (Welch)"
EXCESS_FEW_REPS = "fewer than 2 reps"
EXCESS_CONTROL = "control group"
JOB_TEXT = ["job_id", "result_check"]
RUN_TEXT = ["status", "metadata_path", "run_dir", "device"]
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
# degradation.csv's columns of the excess over the control group, empty without one
EXCESS_COLUMNS = [
    "control_degradation_pct",
    "excess_degradation_pct",
    "excess_ci95_low_pct",
    "excess_ci95_high_pct",
    "excess_ci_method",
    "degraded_excess",
]
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
    *EXCESS_COLUMNS,
    "reason",
]
SLOWDOWN_COLUMNS = [
    "run_id",
    "group",
    "k",
    "rep",
    "demand_target_mb_s",
    "demand_per_cmp_mb_s",
    "below_paper_threshold",
    "slowdown_ratio",
    "control_slowdown_ratio",
    "io_slowdown_ratio",
    "failed",
    "failed_reason",
    "reason",
]
CONTROL_COLUMNS = ["run_id", "group", "k", "rep", "slowdown_ratio", "failed", "failed_reason", "reason"]


# ----------------------------------------------------------------------------- input


def check_jobs(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The collected per-job table, columns checked and typed; one-line errors name file and row."""
    df = rt.check_table(
        df,
        source,
        required=JOB_COLUMNS,
        ints=JOB_INT_COLUMNS,
        floats=["runtime_s", "demand_target_mb_s", "result_bw_mb_s", "result_bytes_read"],
    )
    control_group(df, source)
    return df


def check_runs(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """runs.csv (one row per run), columns checked and typed."""
    return rt.check_table(
        df,
        source,
        required=RUN_COLUMNS,
        ints={"group": 0, "k": 1, "rep": 0},
        floats=["throttle_read_bps", "duration_s"],
        what="one row per run",
    )


def valid_jobs_mask(jobs: pd.DataFrame) -> pd.Series:
    """True for jobs that count: exit code 0, self-check 'ok', finite positive runtime."""
    return rt.valid_jobs_mask(jobs, check_required=True)


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


# ----------------------------------------------------------------------------- the claims' evidence


def per_run(jobs: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: group, k, rep, the mean runtime of its valid jobs, whether it failed."""
    means = rt.run_means(jobs, runs, valid_jobs_mask(jobs))
    target = jobs.groupby("group")["demand_target_mb_s"].first()
    rows = []
    for _, r in runs.iterrows():
        rid, group = str(r["run_id"]), int(r["group"])
        labels = {"group": group, "k": int(r["k"]), "rep": int(r["rep"])}
        rows.append({"run_id": rid, **labels, "demand_target_mb_s": float(target.get(group, math.nan)), **means[rid]})
    out = pd.DataFrame(rows)
    return out.sort_values(["group", "k", "rep"], kind="stable").reset_index(drop=True)


def slowdown(by_run: pd.DataFrame, table: pd.DataFrame, paper_threshold_mb_s: float) -> pd.DataFrame:
    """Per run of a demand group at k > 1: its slowdown over the k = 1 run of its rep and, with a
    compute-only control, over the control's slowdown at the same k and rep (module doc)."""
    ratios = rt.ratio_to_k1(by_run, ["group"], {"mean_runtime_s": "slowdown_ratio"})
    control = control_group(table)
    demand = table.groupby("group")["demand_per_cmp_mb_s"].first()
    target = by_run.groupby("group")["demand_target_mb_s"].first()
    ctrl = ratios[ratios["group"] == control].set_index(["k", "rep"]) if control is not None else None
    rows = []
    for _, r in ratios[ratios["group"] != control].iterrows():
        row = {c: r[c] for c in ("run_id", "group", "k", "rep", "slowdown_ratio", "failed_reason", "reason")}
        failed = [r["failed_reason"]] if r["failed"] else []
        reasons = [r["reason"]] if r["reason"] else []
        d = float(demand.get(r["group"], math.nan))
        row.update(demand_target_mb_s=float(target.get(r["group"], math.nan)), demand_per_cmp_mb_s=d)
        row["below_paper_threshold"] = bool(d < paper_threshold_mb_s) if math.isfinite(d) else False
        row["control_slowdown_ratio"] = math.nan
        row["io_slowdown_ratio"] = r["slowdown_ratio"]
        if ctrl is not None:
            c = ctrl.loc[(r["k"], r["rep"])] if (r["k"], r["rep"]) in ctrl.index else None
            if c is None:
                row["io_slowdown_ratio"] = math.nan
                reasons.append(f"no control run at k = {r['k']} in rep {r['rep']}")
            else:
                row["control_slowdown_ratio"] = c["slowdown_ratio"]
                row["io_slowdown_ratio"] = r["slowdown_ratio"] / c["slowdown_ratio"]
                if c["failed"]:
                    failed.append(f"the control's run {c['run_id']}: {c['failed_reason']}")
                if c["reason"]:
                    reasons.append(f"control: {c['reason']}")
        row["failed"] = bool(failed)
        row["failed_reason"] = "; ".join(failed)
        row["reason"] = "; ".join(reasons)
        rows.append(row)
    out = pd.DataFrame(rows, columns=SLOWDOWN_COLUMNS)
    out["failed"] = out["failed"].astype(bool)
    out["below_paper_threshold"] = out["below_paper_threshold"].astype(bool)
    return out


def control_slowdown(by_run: pd.DataFrame, table: pd.DataFrame) -> pd.DataFrame:
    """Per run of the compute-only control at k > 1: its slowdown over the k = 1 run of its rep
    (module doc: the premise's evidence); empty without a control group."""
    control = control_group(table)
    if control is None or by_run.empty:
        return pd.DataFrame(columns=CONTROL_COLUMNS).astype({"failed": bool})
    ratios = rt.ratio_to_k1(by_run[by_run["group"] == control], ["group"], {"mean_runtime_s": "slowdown_ratio"})
    out = ratios.reindex(columns=CONTROL_COLUMNS)
    out["failed"] = out["failed"].astype(bool)
    return out.reset_index(drop=True)

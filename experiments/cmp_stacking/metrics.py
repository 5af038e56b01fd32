"""The metrics of CMP stacking (paper 000, Sec. 2.1 and 2.3.1, eq. 1, Table 2, Fig. 1).

Definitions (paper eq. 1: normalized_runtime = T_k-c / T_1-c)
  valid job           exit_code 0, a finite runtime_s > 0, and result_check 'ok' when the program
                      reports a self-check (x264 prints none: an empty result_check is accepted,
                      any other value is a failure).
  failed run          a run with a job that is not valid, with no job, or whose status is not ok
                      (analysis.runtables.run_status): its mean over the valid jobs would favour
                      the point whose slow jobs failed, so a claim on it says failed.

  Pooled, for the figure and normalized_runtime.csv (llc_miss reads it):
  T_1-c               mean runtime_s of the workload's valid k=1 jobs, all reps pooled.
  normalized_runtime  T_k-c / T_1-c, T_k-c the mean runtime_s of the workload's valid jobs at
                      k, all reps pooled (mean_runtime_s in the table: the mean runtime per k).
  95% CI              t-interval over the per-rep normalized runtimes (each rep's mean runtime /
                      T_1-c), T_1-c held fixed; NaN with fewer than 2 reps.
  degraded            CI lower bound > 1 + tol_pct / 100; with fewer than 2 reps, the point
                      estimate (descriptive: the claims are judged by analysis.verdicts).

  Per run and per rep, the evidence of the claims:
  runs                one row per run: mean_runtime_s over its valid jobs, failed, failed_reason.
  growth              one row per run at k > 1: normalized_runtime = its mean runtime over that
                      of the same workload's k = 1 run of the same rep (eq. 1 paired by rep).
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd

from analysis import runtables as rt

EXPERIMENT = "cmp_stacking"
JOB_TEXT = ["workload", "job_id", "binary", "stands_in_for", "scale_note", "result_check", "workload_id"]
RUN_TEXT = ["workload", "device", "status", "metadata_path", "run_dir"]
JOB_COLUMNS = ["run_id", "workload", "k", "rep", "cmp", "job_id", "runtime_s", "exit_code", "jobs_per_cmp"]
JOB_INTS = {"k": 1, "rep": 0, "cmp": 0, "exit_code": None, "jobs_per_cmp": 1}
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
    "degraded_from_k",
    "largest_drop",
]
RUN_TABLE_COLUMNS = [
    "run_id",
    "workload_id",
    "workload",
    "k",
    "rep",
    "n_jobs",
    "n_failed",
    "mean_runtime_s",
    "failed",
    "failed_reason",
]


# ----------------------------------------------------------------------------- input


def check_jobs(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """The collected per-job table of the cmp_stacking runs, columns checked and typed.

    workload_id (the paper's Table 2 number) is empty for a workload that is not in Table 2.
    """
    df = rt.check_table(
        df, source, required=JOB_COLUMNS, ints=JOB_INTS, floats=["runtime_s"], experiments=(EXPERIMENT,)
    )
    return rt.optional_ints(df, {"workload_id": 1}, source)


def check_runs(df: pd.DataFrame, source: str) -> pd.DataFrame:
    """runs.csv of the cmp_stacking runs, columns checked and typed."""
    return rt.check_table(
        df,
        source,
        required=RUN_COLUMNS,
        ints={"k": 1, "rep": 0},
        floats=["throttle_read_bps", "duration_s"],
        experiments=(EXPERIMENT,),
        what="one row per run",
    )


# ----------------------------------------------------------------------------- pooled (eq. 1)


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


def workload_summary(table: pd.DataFrame, jobs: pd.DataFrame) -> pd.DataFrame:
    """One row per workload: labels, T_1-c, the normalized runtime at its largest k with a value
    (k_max), the first k marked degraded, and the largest decrease between consecutive k.
    Descriptive: no verdict."""
    rows = []
    for workload, g in table.groupby("workload", sort=False):
        wid = g["workload_id"].iloc[0]
        known = g[g["normalized_runtime"].notna()].sort_values("k")
        hits = known.loc[known["degraded"].fillna(False).astype(bool), "k"]
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
            "degraded_from_k": int(hits.min()) if len(hits) else None,
            "largest_drop": math.nan,
        }
        if len(known) and known["k"].max() > 1:
            top = known.iloc[-1]
            drops = -np.diff(known["normalized_runtime"].to_numpy())
            row["k_max"] = int(top["k"])
            row["normalized_at_k_max"] = float(top["normalized_runtime"])
            row["ci95_low_at_k_max"] = float(top["ci95_low"])
            row["ci95_high_at_k_max"] = float(top["ci95_high"])
            row["largest_drop"] = float(max(drops.max(), 0.0)) if len(drops) else 0.0
        rows.append(row)
    out = pd.DataFrame(rows, columns=WORKLOAD_COLUMNS)
    for col in ("workload_id", "k_max", "degraded_from_k"):
        out[col] = out[col].astype("Int64")
    return out


# ----------------------------------------------------------------------------- the claims' evidence


def per_run(jobs: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """One row per run: its labels, the mean runtime of its valid jobs, whether it failed."""
    means = rt.run_means(jobs, runs, rt.valid_jobs_mask(jobs, check_required=False))
    wid = jobs.groupby(jobs["run_id"].astype(str))["workload_id"].first()
    rows = []
    for _, r in runs.iterrows():
        rid = str(r["run_id"])
        labels = {"workload_id": wid.get(rid, pd.NA), "workload": r["workload"], "k": int(r["k"]), "rep": int(r["rep"])}
        rows.append({"run_id": rid, **labels, **means[rid]})
    out = pd.DataFrame(rows, columns=RUN_TABLE_COLUMNS)
    out["workload_id"] = out["workload_id"].astype("Int64")
    out["failed"] = out["failed"].astype(bool)
    return out.sort_values(["workload_id", "workload", "k", "rep"], kind="stable").reset_index(drop=True)


def growth(by_run: pd.DataFrame) -> pd.DataFrame:
    """Per run at k > 1: its mean runtime over the same workload's k = 1 run of the same rep."""
    out = rt.ratio_to_k1(by_run, ["workload"], {"mean_runtime_s": "normalized_runtime"})
    wid = by_run.drop_duplicates("workload").set_index("workload")["workload_id"]
    out.insert(1, "workload_id", out["workload"].map(wid).astype("Int64"))
    return out

"""The dynamic_io campaign's metrics: per run, per job and over reps (no verdicts; see analysis.py).

Metrics of one run (one workload under one variant, one rep); N jobs, all submitted at t = 0:
  t_workload_s           the last job's end (s from the run start): the batch's makespan.
  throughput_jobs_per_s  eq. 3: N / T_workload. Higher is better.
  slowdown_sum           eq. 4 exactly as the paper defines it: sum over jobs of T_alone / T_k-c,
                         T_alone the job type's mean runtime alone (the alone runs), T_k-c the
                         job's runtime in the run. Between 0 and N, N when nothing slows down:
                         HIGHER is better.
  mean_slowdown          the conventional slowdown: mean over jobs of T_k-c / T_alone. Lower is better.
  avg_runtime_s          eq. 5: mean of the jobs' T_k-c. Lower is better.
  jain_fairness          Jain's index of the per-job slowdowns x_j = T_k-c / T_alone:
                         (sum x)^2 / (N sum x^2), 1 when every job is slowed alike.
  wait_ms, svc_ms        request-weighted means over the run's iostat intervals with I/O, as
                         experiments.io_latency_split.analysis derives them (svc = 10 x %util /
                         IOPS, wait = await - svc); wait_iv_ms, svc_iv_ms: unweighted means over
                         those intervals (Sec. 4.3.2: "from all sampled intervals"), read by the
                         claims; wait_over_svc = wait_iv_ms / svc_iv_ms.
  daemon_cpu_pct         the scheduler daemon's CPU time (user + system) over its wall time, from
                         its sched/state/summary.json (shown; the overhead claim reads the
                         makespans of the overhead runs, experiments.dynamic_io.evidence).

A run fails when the runner did not finish it (`status` other than ok), when it has no job, or
when a job failed (exit code other than 0, no positive runtime, a self-check other than ok): its
row says so (`failed`, `failed_reason`) and a claim that reads it says *failed*, never a mean over
the jobs that survived. The slowdown metrics need T_alone of every job type of the run: without
it (every alone run of the type failed) the run's slowdown row fails too, naming those runs.
Alone runs run under the baseline variant but are not baseline runs: they enter T_alone only.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.common import AnalysisInputError, check_columns, check_ints
from analysis.stats import paired_ratio_t, t_interval
from experiments.dynamic_io.plan import DYNAMIC_FAMILY

SOURCE = "experiments.dynamic_io.metrics"
# metric -> (higher is better, label for people)
METRICS = {
    "throughput_jobs_per_s": (True, "throughput (eq. 3), jobs/s"),
    "slowdown_sum": (True, "slowdown (eq. 4), sum of T_alone / T_k-c"),
    "avg_runtime_s": (False, "average runtime (eq. 5), s"),
    "mean_slowdown": (False, "mean of T_k-c / T_alone"),
    "jain_fairness": (True, "Jain's fairness of the slowdowns"),
    "t_workload_s": (False, "T_workload, s"),
    "wait_ms": (False, "I/O waiting time, ms"),
    "svc_ms": (False, "I/O serving time, ms"),
    "wait_iv_ms": (False, "I/O waiting time, mean over the sampled intervals, ms"),
    "svc_iv_ms": (False, "I/O serving time, mean over the sampled intervals, ms"),
    "wait_over_svc": (False, "I/O waiting over serving time"),
    "daemon_cpu_pct": (False, "the scheduler daemon's CPU time, % of its wall time"),
}
SLOWDOWN_METRICS = ("slowdown_sum", "mean_slowdown", "jain_fairness")
SCHED_COLUMNS = [
    "quanta",
    "suspends",
    "resumes",
    "forced_resumes",
    "throttles",
    "max_suspended_jobs",
    "mean_suspended_jobs",
    "daemon_cpu_pct",
]
KEYS = ["run_id", "workload", "wtype", "variant", "paper_role", "rep", "order"]
RUN_TABLE = [
    *KEYS,
    "failed",
    "failed_reason",
    "n_jobs",
    "n_valid",
    "t_workload_s",
    "throughput_jobs_per_s",
    "avg_runtime_s",
    *SLOWDOWN_METRICS,
    "wait_ms",
    "svc_ms",
    "wait_iv_ms",
    "svc_iv_ms",
    "wait_over_svc",
    "n_io_intervals",
    *SCHED_COLUMNS,
]
JOB_COLUMNS = ["run_id", "job_id", "runtime_s", "exit_code", "end_s", "app", "job_index"]
RUN_COLUMNS = ["run_id", "run_kind", "workload", "variant", "rep", "duration_s", "metadata_path", "run_dir"]
ROLES = ("dynamic", "linux", "other")


# ----------------------------------------------------------------------------- input


def checked_tables(jobs: pd.DataFrame, runs: pd.DataFrame, jobs_src: str, runs_src: str):
    """The collected tables with their columns checked and typed; one-line errors."""
    check_columns(jobs, JOB_COLUMNS, jobs_src)
    check_columns(runs, RUN_COLUMNS, runs_src)
    if runs.empty:
        raise AnalysisInputError(f"{runs_src}: no rows (expected one row per run)")
    jobs = check_ints(jobs, {"exit_code": None, "job_index": 0}, jobs_src)
    runs = check_ints(runs, {"rep": 0}, runs_src)
    for df, cols in ((jobs, ("runtime_s", "end_s", "start_s")), (runs, ("duration_s", "throttle_read_bps"))):
        for col in cols:
            if col in df.columns:
                df[col] = pd.to_numeric(df[col], errors="coerce").astype("float64")
    bad = ~runs["run_kind"].isin(["campaign", "alone", "overhead"])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise AnalysisInputError(
            f"{runs_src}: row {row + 2}: run_kind: {runs['run_kind'].iloc[row]!r} "
            "(expected 'campaign', 'alone' or 'overhead')"
        )
    return jobs, runs


# ----------------------------------------------------------------------------- statistics


def jain(values) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2); NaN for no values or all zeros."""
    x = np.asarray(values, float)
    if len(x) == 0 or not np.all(np.isfinite(x)) or (x**2).sum() == 0:
        return math.nan
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


def improvement_pct(ratio: float, higher: bool) -> float:
    """The paper's improvement from the ratio new / old: (new - old) / old when higher is better,
    (old - new) / old when lower is (its own numbers fix the forms: analysis.py)."""
    if not math.isfinite(ratio):
        return math.nan
    return (ratio - 1.0) * 100.0 if higher else (1.0 - ratio) * 100.0


def paired_ratio(variant: dict[int, float], base: dict[int, float]) -> dict:
    """Geometric mean of the per-rep ratios over the reps both have, with the 95% t-interval of
    their logs, exponentiated (analysis.stats.paired_ratio_t), so the estimate is the interval's
    centre; where a per-rep value is <= 0 (a derived waiting time can be), the mean of the per-rep
    ratios with their t-interval instead; a base <= 0 has no ratio (NaN). Descriptive: the claims
    are judged by the verdict engine on the per-rep tables."""
    reps = sorted(r for r in set(variant) & set(base) if math.isfinite(variant[r]) and math.isfinite(base[r]))
    out = {"n_pairs": len(reps), "ratio": math.nan, "ci95_low": math.nan, "ci95_high": math.nan}
    if not reps:
        return out
    v = np.array([variant[r] for r in reps])
    b = np.array([base[r] for r in reps])
    if not (b > 0).all():
        return out
    if (v > 0).all():
        out["ratio"], out["ci95_low"], out["ci95_high"] = paired_ratio_t(b, v)
    else:
        out["ratio"] = float(np.mean(v / b))
        if len(reps) >= 2:
            out["ci95_low"], out["ci95_high"] = t_interval(v / b)
    return out


# ----------------------------------------------------------------------------- T_alone


def t_alone_table(jobs: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """T_alone per job type: mean runtime of its valid jobs in the alone runs, with a t-interval,
    and the alone runs that failed."""
    alone = runs[runs["run_kind"] == "alone"]
    sub = jobs[jobs["run_id"].astype(str).isin(set(alone["run_id"].astype(str)))]
    valid = rt.valid_jobs_mask(sub, check_required=False)
    rows = []
    for app, g in sub.groupby("app", sort=True):
        gv = g[valid.loc[g.index]]
        lo, hi = t_interval(gv["runtime_s"])
        bad = sorted(set(g.loc[~valid.loc[g.index], "run_id"].astype(str)))
        rows.append(
            {
                "app": app,
                "n_runs": int(g["run_id"].nunique()),
                "n_valid": len(gv),
                "t_alone_s": float(gv["runtime_s"].mean()) if len(gv) else math.nan,
                "ci95_low": lo,
                "ci95_high": hi,
                "failed_runs": " ".join(bad),
                "reason": "" if len(gv) else "no alone run of this job type succeeded",
            }
        )
    cols = ["app", "n_runs", "n_valid", "t_alone_s", "ci95_low", "ci95_high", "failed_runs", "reason"]
    return pd.DataFrame(rows, columns=cols)


# ----------------------------------------------------------------------------- per run


def job_metrics(g: pd.DataFrame, t_alone: dict[str, float]) -> tuple[dict, str, str]:
    """Eq. 3-5 and Jain for one run's jobs: (metrics, why the run failed, why its slowdown is missing)."""
    n = len(g)
    out = dict.fromkeys(("t_workload_s", "throughput_jobs_per_s", "avg_runtime_s", *SLOWDOWN_METRICS), math.nan)
    valid = rt.valid_jobs_mask(g, check_required=False)
    out["n_jobs"], out["n_valid"] = n, int(valid.sum())
    if n == 0:
        return out, "no job", ""
    if not valid.all():
        return out, f"{n - int(valid.sum())} of {n} job(s) failed or lack a runtime", ""
    t_wl = float(g["end_s"].max())
    out["t_workload_s"] = t_wl
    out["throughput_jobs_per_s"] = n / t_wl if t_wl > 0 else math.nan
    out["avg_runtime_s"] = float(g["runtime_s"].mean())
    alone = g["app"].map(lambda a: t_alone.get(a, math.nan)).astype(float)
    if not np.all(np.isfinite(alone)):
        absent = sorted(set(g.loc[~np.isfinite(alone), "app"].astype(str)))
        return out, "", "no T_alone for job type(s) " + ", ".join(absent)
    x = g["runtime_s"].to_numpy(float) / alone.to_numpy()
    out["slowdown_sum"] = float((1.0 / x).sum())
    out["mean_slowdown"] = float(x.mean())
    out["jain_fairness"] = jain(x)
    return out, "", ""


def weighted(values: pd.Series, weights: pd.Series) -> float:
    ok = values.notna() & weights.notna() & (weights > 0)
    return float((values[ok] * weights[ok]).sum() / weights[ok].sum()) if ok.any() else math.nan


def iostat_series(run: dict, run_dir: Path, log: rt.MissingLog) -> pd.DataFrame:
    """The run's iostat intervals on its device: t_s, req, await_ms, svc_ms, wait_ms."""
    cols = ["t_s", "req", "await_ms", "svc_ms", "wait_ms"]
    df, why = rt.load_tidy(run_dir, "iostat")
    if df is None:
        log.add("iostat waiting and serving time", why, SOURCE, run["run_id"])
        return pd.DataFrame(columns=cols)
    rows, _, why = rt.device_rows(df, run.get("device"))
    if rows is None:
        log.add("iostat waiting and serving time", why, SOURCE, run["run_id"])
        return pd.DataFrame(columns=cols)
    rows = rt.in_run(rows, rt.number_or_none(run.get("duration_s")))
    req = sum(
        pd.to_numeric(rows[c], errors="coerce").fillna(0.0)
        for c in ("r_per_s", "w_per_s", "d_per_s", "f_per_s")
        if c in rows.columns
    )
    out = pd.DataFrame(
        {
            "t_s": pd.to_numeric(rows["t_s"], errors="coerce"),
            "req": req,
            **{c: pd.to_numeric(rows[c], errors="coerce") for c in cols[2:]},
        }
    )
    return out.reset_index(drop=True)


def read_decisions(run_dir: Path) -> tuple[pd.DataFrame | None, str]:
    """decisions.jsonl as a table (q, t_s, overall_mbps, bound_mbps, running, suspended, ...), one
    row per quantum; lines without `q` are the daemon's notes and are skipped; t_s may be null
    (a quantum before the first job started)."""
    path = Path(run_dir) / "sched" / "state" / "decisions.jsonl"
    if not path.is_file():
        return None, "sched/state/decisions.jsonl absent (the variant wrote no decision log)"
    rows = []
    keys = ("q", "t_s", "dt_s", "overall_mbps", "bound_mbps", "running", "suspended", "throttled", "psi_some")
    for i, line in enumerate(path.read_text(encoding="utf-8", errors="replace").splitlines()):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError:
            raise AnalysisInputError(f"{path}: line {i + 1}: not JSON (expected one decision per line)") from None
        if not isinstance(obj, dict):
            raise AnalysisInputError(f"{path}: line {i + 1}: {type(obj).__name__} (expected a JSON object)")
        if "q" not in obj:
            continue  # a note of the daemon (a refused job, its exit), not a quantum
        rows.append({**{k: obj.get(k) for k in keys}, "n_actions": len(obj.get("actions") or [])})
    if not rows:
        return None, "sched/state/decisions.jsonl has no decision"
    return pd.DataFrame(rows).apply(pd.to_numeric, errors="coerce").astype(float), ""


def read_summary(run_dir: Path) -> tuple[dict | None, str]:
    path = Path(run_dir) / "sched" / "state" / "summary.json"
    if not path.is_file():
        return None, "sched/state/summary.json absent (the daemon wrote no summary at exit)"
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except ValueError as exc:
        raise AnalysisInputError(f"{path}: not readable JSON ({exc})") from None
    if not isinstance(data, dict):
        raise AnalysisInputError(f"{path}: (top level): {type(data).__name__} (expected an object)")
    return data, ""


def _num(d: dict, key: str) -> float:
    v = d.get(key)
    return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) else math.nan


def scheduler_metrics(run: dict, run_dir: Path, log: rt.MissingLog) -> tuple[dict, pd.DataFrame | None]:
    """Quanta, suspensions and the daemon's CPU share of a run whose variant wrote a decision log
    and a summary. Absent files are missing (logged) for the paper's own variants, which always
    write them; a variant of another kind simply has none."""
    out = dict.fromkeys(SCHED_COLUMNS, math.nan)
    expected = run["variant"] in DYNAMIC_FAMILY
    dec, why = read_decisions(run_dir)
    if dec is None and expected:
        log.add("scheduler decisions (suspended jobs over time)", why, SOURCE, run["run_id"])
    elif dec is not None:
        out["max_suspended_jobs"] = float(dec["suspended"].max())
        out["mean_suspended_jobs"] = float(dec["suspended"].mean())
    summ, why = read_summary(run_dir)
    if summ is None and expected:
        log.add("scheduler summary (suspends, daemon CPU time)", why, SOURCE, run["run_id"])
    elif summ is not None:
        for k in ("quanta", "suspends", "resumes", "forced_resumes", "throttles"):
            out[k] = _num(summ, k)
        cpu = _num(summ, "cpu_user_s") + _num(summ, "cpu_sys_s")
        wall = _num(summ, "wall_s")
        out["daemon_cpu_pct"] = 100.0 * cpu / wall if wall > 0 else math.nan
    return out, dec


def role_of(variant: str, paper_variant: str | None, baseline: str) -> str:
    """The variant's part in the claims: the paper's scheduler (dynamic), its Linux (linux), other."""
    return "dynamic" if variant == paper_variant else "linux" if variant == baseline else "other"


def per_run(
    jobs: pd.DataFrame,
    runs: pd.DataFrame,
    dirs: dict[str, Path],
    log: rt.MissingLog,
    paper_variant: str | None,
    baseline: str,
) -> dict:
    """The campaign runs' table (RUN_TABLE), its slowdown table (failed also where T_alone is
    missing), T_alone, and each run's iostat series and decision log."""
    t_alone = t_alone_table(jobs, runs)
    alone_map = dict(zip(t_alone["app"], t_alone["t_alone_s"]))
    alone_failed = dict(zip(t_alone["app"], t_alone["failed_runs"]))
    camp = runs[runs["run_kind"] == "campaign"]
    rows, slow_why, series, decisions = [], [], {}, {}
    for run in rt.records(camp):
        rid = str(run["run_id"])
        g = jobs[jobs["run_id"].astype(str) == rid]
        m, failed, no_slowdown = job_metrics(g, alone_map)
        status = str(run.get("status") or "ok")
        if status != "ok":
            failed = f"run status {status}" + (f"; {failed}" if failed else "")
        if failed:
            log.add("run metrics", failed, SOURCE, rid)
        if no_slowdown:
            log.add("slowdown (eq. 4) and fairness", no_slowdown, SOURCE, rid)
            apps = sorted(a for a in set(g["app"].astype(str)) if not math.isfinite(alone_map.get(a, math.nan)))
            runs_named = " ".join(x for a in apps for x in alone_failed.get(a, "").split())
            no_slowdown += f": its alone run(s) {runs_named} failed" if runs_named else ": no alone run"
        io = iostat_series(run, dirs[rid], log)
        has = io[(io["req"] > 0) & io[["await_ms", "svc_ms", "wait_ms"]].notna().all(axis=1)]
        if len(io) and has.empty:
            log.add("iostat waiting and serving time", "no iostat interval with I/O during the run", SOURCE, rid)
        sched, dec = scheduler_metrics(run, dirs[rid], log)
        wait, svc = (float(has[c].mean()) if len(has) else math.nan for c in ("wait_ms", "svc_ms"))
        series[rid] = io
        if dec is not None:
            decisions[rid] = dec
        wtype = g["wtype"].dropna().astype(str) if "wtype" in g.columns else pd.Series(dtype=str)
        rows.append(
            {
                "run_id": rid,
                "workload": run["workload"],
                "wtype": str(run.get("wtype") or (wtype.iloc[0] if len(wtype) else "")),
                "variant": run["variant"],
                "paper_role": role_of(str(run["variant"]), paper_variant, baseline),
                "rep": int(run["rep"]),
                "order": run.get("order"),
                "failed": bool(failed),
                "failed_reason": failed,
                **m,
                "wait_ms": weighted(has["wait_ms"], has["req"]),
                "svc_ms": weighted(has["svc_ms"], has["req"]),
                "wait_iv_ms": wait,
                "svc_iv_ms": svc,
                "wait_over_svc": wait / svc if svc > 0 else math.nan,
                "n_io_intervals": len(has),
                **sched,
            }
        )
        slow_why.append(failed or no_slowdown)
    table = pd.DataFrame(rows, columns=RUN_TABLE)
    slowdown = table[[*KEYS, *SLOWDOWN_METRICS]].copy()
    slowdown["failed"] = [bool(w) for w in slow_why]
    slowdown["failed_reason"] = slow_why
    order = ["workload", "variant", "rep"]
    return {
        "t_alone": t_alone,
        "runs": table.sort_values(order, kind="stable").reset_index(drop=True),
        "slowdown": slowdown.sort_values(order, kind="stable").reset_index(drop=True),
        "series": series,
        "decisions": decisions,
    }


# ----------------------------------------------------------------------------- per job


def per_job(jobs: pd.DataFrame, by_run: pd.DataFrame) -> pd.DataFrame:
    """One row per job of a campaign run (Figs. 23-24, paired by rep and job index): its runtime,
    failed when the job or its run failed (the co-runners of a failed run are not the paper's)."""
    cols = ["run_id", "workload", "variant", "paper_role", "rep", "job_index", "app", "runtime_s", "failed",
            "failed_reason"]  # fmt: skip
    runs = by_run.set_index("run_id")
    sub = jobs[jobs["run_id"].astype(str).isin(set(runs.index))].copy()
    if sub.empty:
        return pd.DataFrame(columns=cols)
    valid = rt.valid_jobs_mask(sub, check_required=False)
    rid = sub["run_id"].astype(str)
    run_failed = rid.map(runs["failed"]).astype(bool)
    reason = np.where(
        ~valid, "the job failed or lacks a runtime", np.where(run_failed, rid.map(runs["failed_reason"]), "")
    )
    out = pd.DataFrame(
        {
            "run_id": rid,
            "workload": rid.map(runs["workload"]),
            "variant": rid.map(runs["variant"]),
            "paper_role": rid.map(runs["paper_role"]),
            "rep": rid.map(runs["rep"]).astype(int),
            "job_index": sub["job_index"].astype(int),
            "app": sub["app"].astype(str),
            "runtime_s": sub["runtime_s"].where(valid),
            "failed": ~valid | run_failed,
            "failed_reason": reason,
        }
    )
    return out.sort_values(["workload", "variant", "rep", "job_index"], kind="stable").reset_index(drop=True)[cols]


def per_job_means(pj: pd.DataFrame) -> pd.DataFrame:
    """Per workload, variant and job index: mean runtime over the reps whose job succeeded."""
    ok = pj[~pj["failed"]]
    if ok.empty:
        return pd.DataFrame(columns=["workload", "variant", "job_index", "app", "n_reps", "runtime_s"])
    return (
        ok.groupby(["workload", "variant", "job_index"], sort=True)
        .agg(app=("app", "first"), n_reps=("runtime_s", "size"), runtime_s=("runtime_s", "mean"))
        .reset_index()
    )


# ----------------------------------------------------------------------------- over reps


def summary_table(by_run: pd.DataFrame) -> pd.DataFrame:
    """Per workload and variant: mean and 95% t-interval over the reps that did not fail."""
    rows = []
    for (w, v), g in by_run.groupby(["workload", "variant"], sort=True):
        ok = g[~g["failed"]]
        row = {"workload": w, "variant": v, "n_reps": int(g["rep"].nunique()), "n_failed": int(g["failed"].sum())}
        for metric in METRICS:
            vals = ok[metric].dropna().to_numpy(float)
            lo, hi = t_interval(vals)
            row.update(
                {
                    metric: float(vals.mean()) if len(vals) else math.nan,
                    f"{metric}_ci95_low": lo,
                    f"{metric}_ci95_high": hi,
                }
            )
        for k in ("suspends", "max_suspended_jobs", "quanta"):
            row[k] = float(ok[k].mean()) if ok[k].notna().any() else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


IMPROVEMENT_COLUMNS = ["workload", "variant", "metric", "higher_is_better", "n_pairs", "baseline_mean",
                       "variant_mean", "ratio", "ratio_ci95_low", "ratio_ci95_high", "improvement_pct",
                       "improvement_ci95_low", "improvement_ci95_high", "reason"]  # fmt: skip


def improvement_table(by_run: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per workload, non-baseline variant and metric: ratio to the baseline over the reps both
    measured without failing (paired t-interval) and the paper's improvement. Descriptive, for
    the figure and for every variant; the claims are judged on the per-rep tables."""
    rows = []
    ok_runs = by_run[~by_run["failed"]]
    for w, gw in ok_runs.groupby("workload", sort=True):
        base = gw[gw["variant"] == baseline]
        for v, gv in gw.groupby("variant", sort=True):
            if v == baseline:
                continue
            for metric, (higher, _) in METRICS.items():
                if metric == "daemon_cpu_pct":
                    continue
                b = dict(zip(base["rep"], base[metric]))
                x = dict(zip(gv["rep"], gv[metric]))
                r = paired_ratio(x, b)
                reason = ""
                if base.empty:
                    reason = f"no {baseline} run of this workload"
                elif r["n_pairs"] == 0:
                    reason = "no rep with both runs measured"
                elif r["n_pairs"] < 2:
                    reason = "one paired rep: no interval"
                paired = sorted(set(b) & set(x))
                bv = [b[k] for k in paired if math.isfinite(b[k])]
                xv = [x[k] for k in paired if math.isfinite(x[k])]
                rows.append(
                    {
                        "workload": w,
                        "variant": v,
                        "metric": metric,
                        "higher_is_better": higher,
                        "n_pairs": r["n_pairs"],
                        "baseline_mean": float(np.mean(bv)) if bv else math.nan,
                        "variant_mean": float(np.mean(xv)) if xv else math.nan,
                        "ratio": r["ratio"],
                        "ratio_ci95_low": r["ci95_low"],
                        "ratio_ci95_high": r["ci95_high"],
                        "improvement_pct": improvement_pct(r["ratio"], higher),
                        "improvement_ci95_low": improvement_pct(
                            r["ci95_high"] if not higher else r["ci95_low"], higher
                        ),
                        "improvement_ci95_high": improvement_pct(
                            r["ci95_low"] if not higher else r["ci95_high"], higher
                        ),
                        "reason": reason,
                    }
                )
    return pd.DataFrame(rows, columns=IMPROVEMENT_COLUMNS)


# ----------------------------------------------------------------------------- the runs' order


def order_check(runs: pd.DataFrame, metas: dict[str, dict]) -> dict:
    """Whether the runs were measured in campaign order (label `order` against start times): a
    check of corun's campaign, not a paper claim."""
    name = "the runs were measured in the campaign's interleaved order"
    if "order" not in runs.columns:
        return {"check": name, "expected": None, "measured": None, "tolerance": "", "passed": None,
                "note": "not checked: the runs carry no campaign order label"}  # fmt: skip
    t = pd.DataFrame(
        {
            "run_id": runs["run_id"].astype(str),
            "order": pd.to_numeric(runs["order"], errors="coerce"),
            "start": pd.to_numeric(
                pd.Series([(metas.get(str(r)) or {}).get("start_epoch_s") for r in runs["run_id"]], dtype=object),
                errors="coerce",
            ),
        }
    ).dropna()
    t = t.sort_values("start", kind="stable")
    prev_max, late = -1.0, []
    for rid, order in zip(t["run_id"], t["order"]):
        if order < prev_max:
            late.append(rid)
        prev_max = max(prev_max, order)
    return {
        "check": name,
        "expected": "every run started after the runs before it in the order",
        "measured": f"{len(late)} of {len(t)} runs out of order",
        "tolerance": "none",
        "passed": not late,
        "note": "start times (metadata.json) against the order label"
        + (f"; measured after a later run: {', '.join(late[:5])}{' ...' if len(late) > 5 else ''}" if late else ""),
    }


def quanta_check(by_run: pd.DataFrame, least: int = 20) -> dict:
    """Whether every run of a variant with a decision log spanned at least `least` TIMESLICEs, so
    the scheduler decided often enough to matter (the local profile is sized for it)."""
    name = f"every run of a scheduler daemon spans at least {least} TIMESLICEs"
    q = by_run.loc[by_run["quanta"].notna() & ~by_run["failed"], ["run_id", "quanta"]]
    if q.empty:
        return {"check": name, "expected": None, "measured": None, "tolerance": "", "passed": None,
                "note": "not checked: no run has a daemon summary (quanta)"}  # fmt: skip
    short = q[q["quanta"] < least]
    return {
        "check": name,
        "expected": f">= {least} quanta",
        "measured": f"{int(q['quanta'].min())} to {int(q['quanta'].max())} quanta over {len(q)} runs",
        "tolerance": "none",
        "passed": short.empty,
        "note": "quanta from the daemon's summary.json"
        + (f"; below: {', '.join(short['run_id'].astype(str)[:5])}" if len(short) else ""),
    }


def apps_table(jobs: pd.DataFrame) -> pd.DataFrame:
    """What ran each application here: binary, what it stands in for, how it was scaled."""
    cols = ["app", "threads", "binary", "stands_in_for", "scale_note"]
    have = [c for c in cols if c in jobs.columns]
    out = jobs[have].drop_duplicates().sort_values("app", kind="stable")
    for c in cols:
        if c not in out.columns:
            out[c] = "not recorded"
    return out[cols].reset_index(drop=True)

"""The dynamic I/O-aware scheduler against Linux (paper 000, section 4, Table 3, Figs. 16-24).

Reads the dynamic_io campaign (jobs.csv and runs.csv of analysis.collect), each run's tidy iostat
table and, for the dynamic variants, the daemon's sched/state/decisions.jsonl and summary.json.

Metrics of one run (one workload under one variant, one rep); N jobs, all submitted at t = 0:
  T_workload       the last job's end (s from the run start): the batch's makespan.
  throughput       eq. 3: N / T_workload, jobs per second. Higher is better.
  slowdown_sum     eq. 4 exactly as the paper defines it: sum over jobs of T_alone / T_k-c,
                   T_alone the job type's mean runtime alone (the alone runs), T_k-c the job's
                   runtime in the run. Between 0 and N, N when nothing slows down: HIGHER is better.
  mean_slowdown    the conventional slowdown: mean over jobs of T_k-c / T_alone. Lower is better.
  avg_runtime_s    eq. 5: mean of the jobs' T_k-c. Lower is better.
  jain_fairness    Jain's index of the per-job slowdowns x_j = T_k-c / T_alone:
                   (sum x)^2 / (N sum x^2), 1 when every job is slowed alike.
  wait_ms, svc_ms  request-weighted means over the run's iostat intervals with I/O, as
                   experiments.io_latency_split.analysis derives them (svc = 10 x %util / IOPS, wait = await - svc).
  Only runs whose jobs all succeeded count (a failed job leaves the run's metrics missing).

Over reps (per workload and variant): the mean and a 95% t-interval. Against the baseline
(--baseline, Linux) the ratio variant / baseline of the means over the reps both have, with a
95% t-interval of the per-rep log ratios, exponentiated (rep i of each variant paired; the
per-rep ratios themselves where a value is <= 0). A percentile bootstrap of 4 pairs spans
little more than the 4 per-rep ratios: one fresh run read #1's serving time +3.7 % [0.2, 7.1]
"reproduced", the run before +0.1 % [-2.4, 4.1]; the t-interval of the first is [-3.5, 10.5].

Improvement in the paper's form, derived from its own numbers (Sec. 4.2.2 and 4.3.2: waiting
696 -> 286 ms "improved by 59%", serving 4.95 -> 3.9 ms "21%", 243.6 -> 98 ms "60%",
3.05 -> 2.91 ms "4.6%" are all (old - new) / old; throughput "+431%" and slowdown "433%" exceed
100%, so for those higher-is-better metrics it is (new - old) / old):
  higher is better (throughput, slowdown_sum, jain_fairness):  (new - old) / old = ratio - 1
  lower is better (avg_runtime_s, mean_slowdown, T_workload, wait_ms, svc_ms):
                                                               (old - new) / old = 1 - ratio
A positive improvement is always better; its interval is the ratio's, transformed.

Verdicts against --paper-variant (the paper's "Dynamic"): a claimed improvement is "reproduced
in direction" when the 95% interval of the improvement lies above 0, else "not
reproduced"; a claimed "no obvious change" when the interval contains 0 or the improvement is
within --tol-pct; "not measurable here" when the workload, the variant, the baseline or the
T_alone runs are absent, or with fewer than 2 paired reps. Absolute latencies are "differs
(machine-specific)". The other variants are shown beside it, without verdicts.

CLI: python -m experiments.dynamic_io.analysis --jobs J --runs R [--baseline linux]
     [--paper-variant dynamic_io] [--tol-pct 5] --out-dir D
"""

from __future__ import annotations

import json
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
    AnalysisInputError,
    add_tol_pct,
    base_parser,
    cli,
    fmt_num,
    paper_note,
    ratio_note,
    resolve_run_paths,
    setup_frame,
    tol_pct_arg,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402
from analysis.runmeta import load_metadata  # noqa: E402
from analysis.stats import paired_ratio_t, t_interval  # noqa: E402

EXPERIMENT = "dynamic_io"
PAPER_ID = "000"
SOURCE = "experiments.dynamic_io.analysis"
DYNAMIC_FAMILY = ("dynamic_io", "dynamic_io_psi", "dynamic_io_fair", "cgroup_io_throttle")
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
}
PAPER_METRICS = ("throughput_jobs_per_s", "slowdown_sum", "avg_runtime_s")
GROUPS = {  # Table 3 rows the paper reports together, with their paper value keys
    "explicit": (
        ("w01", "w02", "w03", "w04", "w05", "w06"),
        "D-TYPE explicit I/O (#1-#6, Fig. 16)",
        {
            "throughput_jobs_per_s": "d_explicit_throughput_pct",
            "slowdown_sum": "d_explicit_slowdown_pct",
            "avg_runtime_s": "d_explicit_runtime_pct",
        },
    ),
    "graph": (
        ("w07", "w08", "w09"),
        "D-TYPE graph (#7-#9, Fig. 17)",
        {
            "throughput_jobs_per_s": "d_graph_throughput_pct",
            "slowdown_sum": "d_graph_slowdown_pct",
            "avg_runtime_s": "d_graph_runtime_pct",
        },
    ),
    "mixed": (
        ("w10", "w11", "w12", "w13", "w14", "w15"),
        "M-TYPE (#10-#15, Fig. 20)",
        {
            "throughput_jobs_per_s": "m_throughput_pct",
            "slowdown_sum": "m_slowdown_pct",
            "avg_runtime_s": "m_runtime_pct",
        },
    ),
}
NO_CHANGE = {("w03", "throughput_jobs_per_s"), ("w06", "throughput_jobs_per_s"), ("w10", "throughput_jobs_per_s")}
FIG_IMPROVEMENT = "fig16_17_20_improvement.png"
FIG_SUSPENDED = "suspended_jobs.png"

JOB_COLUMNS = ["run_id", "job_id", "runtime_s", "exit_code", "end_s", "app", "job_index"]
RUN_COLUMNS = ["run_id", "run_kind", "workload", "variant", "rep", "duration_s", "metadata_path", "run_dir"]
RUN_TABLE = [
    "run_id",
    "workload",
    "variant",
    "rep",
    "order",
    "n_jobs",
    "n_valid",
    "t_workload_s",
    "throughput_jobs_per_s",
    "slowdown_sum",
    "mean_slowdown",
    "avg_runtime_s",
    "jain_fairness",
    "wait_ms",
    "svc_ms",
    "n_io_intervals",
    "quanta",
    "suspends",
    "resumes",
    "forced_resumes",
    "throttles",
    "max_suspended_jobs",
    "mean_suspended_jobs",
    "daemon_cpu_pct",
    "reason",
]


# ----------------------------------------------------------------------------- input


def read_jobs(path: str | os.PathLike) -> pd.DataFrame:
    df = rt.read_table(
        path,
        required=JOB_COLUMNS,
        ints={"exit_code": None, "job_index": 0},
        floats=["runtime_s", "end_s", "start_s"],
        texts=["job_id", "app", "workload", "variant", "result_check"],
        experiments=(EXPERIMENT,),
    )
    return df


def read_runs(path: str | os.PathLike) -> pd.DataFrame:
    df = rt.read_table(
        path,
        required=RUN_COLUMNS,
        ints={"rep": 0},
        floats=["duration_s", "throttle_read_bps"],
        texts=["run_kind", "workload", "variant", "device", "metadata_path", "run_dir", "job_type"],
        experiments=(EXPERIMENT,),
        what="one row per run",
    )
    bad = ~df["run_kind"].isin(["campaign", "alone"])
    if bad.any():
        row = int(np.flatnonzero(bad.to_numpy())[0])
        raise AnalysisInputError(
            f"{path}: row {row + 2}: run_kind: {df['run_kind'].iloc[row]!r} (expected 'campaign' or 'alone')"
        )
    return df


# ----------------------------------------------------------------------------- statistics


def jain(values) -> float:
    """Jain's fairness index (sum x)^2 / (n sum x^2); NaN for no values or all zeros."""
    x = np.asarray(values, float)
    if len(x) == 0 or not np.all(np.isfinite(x)) or (x**2).sum() == 0:
        return math.nan
    return float(x.sum() ** 2 / (len(x) * (x**2).sum()))


def improvement_pct(ratio: float, higher: bool) -> float:
    """The paper's improvement from the ratio new / old (see the module doc)."""
    if not math.isfinite(ratio):
        return math.nan
    return (ratio - 1.0) * 100.0 if higher else (1.0 - ratio) * 100.0


def paired_ratio(variant: dict[int, float], base: dict[int, float]) -> dict:
    """Ratio of the means over the reps both have, with the 95% t-interval of the per-rep log
    ratios, exponentiated (analysis.stats.paired_ratio_t); where a per-rep value is <= 0 (a
    derived waiting time can be), the t-interval of the per-rep ratios instead."""
    reps = sorted(r for r in set(variant) & set(base) if math.isfinite(variant[r]) and math.isfinite(base[r]))
    out = {"n_pairs": len(reps), "ratio": math.nan, "ci95_low": math.nan, "ci95_high": math.nan}
    if not reps:
        return out
    v = np.array([variant[r] for r in reps])
    b = np.array([base[r] for r in reps])
    if b.mean() <= 0:
        return out
    out["ratio"] = float(v.mean() / b.mean())
    if len(reps) < 2:
        return out
    if (v > 0).all() and (b > 0).all():
        _, out["ci95_low"], out["ci95_high"] = paired_ratio_t(b, v)
    elif (b > 0).all():
        out["ci95_low"], out["ci95_high"] = t_interval(v / b)
    return out


# ----------------------------------------------------------------------------- per run


def t_alone_table(jobs: pd.DataFrame, runs: pd.DataFrame) -> pd.DataFrame:
    """T_alone per job type: mean runtime of its valid jobs in the alone runs, with a t-interval."""
    alone_ids = set(runs.loc[runs["run_kind"] == "alone", "run_id"].astype(str))
    sub = jobs[jobs["run_id"].astype(str).isin(alone_ids)]
    valid = rt.valid_jobs_mask(sub, check_required=False)
    rows = []
    for app, g in sub.groupby("app", sort=True):
        gv = g[valid.loc[g.index]]
        lo, hi = t_interval(gv["runtime_s"])
        rows.append(
            {
                "app": app,
                "n_runs": int(g["run_id"].nunique()),
                "n_valid": len(gv),
                "t_alone_s": float(gv["runtime_s"].mean()) if len(gv) else math.nan,
                "ci95_low": lo,
                "ci95_high": hi,
                "reason": "" if len(gv) else "no alone run of this job type succeeded",
            }
        )
    return pd.DataFrame(rows, columns=["app", "n_runs", "n_valid", "t_alone_s", "ci95_low", "ci95_high", "reason"])


def job_metrics(g: pd.DataFrame, t_alone: dict[str, float]) -> tuple[dict, str]:
    """Eq. 3-5 and Jain for one run's jobs; (metrics, reason when some are missing)."""
    n = len(g)
    out = {
        k: math.nan
        for k in (
            "t_workload_s",
            "throughput_jobs_per_s",
            "slowdown_sum",
            "mean_slowdown",
            "avg_runtime_s",
            "jain_fairness",
        )
    }
    valid = rt.valid_jobs_mask(g, check_required=False)
    out["n_jobs"], out["n_valid"] = n, int(valid.sum())
    if n == 0 or not valid.all():
        return out, f"{n - int(valid.sum())} of {n} job(s) failed or lack a runtime"
    t_wl = float(g["end_s"].max())
    out["t_workload_s"] = t_wl
    out["throughput_jobs_per_s"] = n / t_wl if t_wl > 0 else math.nan
    out["avg_runtime_s"] = float(g["runtime_s"].mean())
    alone = g["app"].map(lambda a: t_alone.get(a, math.nan)).astype(float)
    if not np.all(np.isfinite(alone)):
        absent = sorted(set(g.loc[~np.isfinite(alone), "app"].astype(str)))
        return out, "no T_alone for job type(s) " + ", ".join(absent)
    x = g["runtime_s"].to_numpy(float) / alone.to_numpy()
    out["slowdown_sum"] = float((1.0 / x).sum())
    out["mean_slowdown"] = float(x.mean())
    out["jain_fairness"] = jain(x)
    return out, ""


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


def _weighted(values: pd.Series, weights: pd.Series) -> float:
    ok = values.notna() & weights.notna() & (weights > 0)
    return float((values[ok] * weights[ok]).sum() / weights[ok].sum()) if ok.any() else math.nan


def read_decisions(run_dir: Path) -> tuple[pd.DataFrame | None, str]:
    """decisions.jsonl as a table (q, t_s, overall_mbps, bound_mbps, running, suspended, ...), one
    row per quantum; lines without `q` are the daemon's notes and are skipped; t_s may be null
    (a quantum before the first job started)."""
    path = Path(run_dir) / "sched" / "state" / "decisions.jsonl"
    if not path.is_file():
        return None, "sched/state/decisions.jsonl absent (the variant wrote no decision log)"
    rows = []
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
        actions = obj.get("actions") or []
        rows.append(
            {
                k: obj.get(k)
                for k in (
                    "q",
                    "t_s",
                    "dt_s",
                    "overall_mbps",
                    "bound_mbps",
                    "running",
                    "suspended",
                    "throttled",
                    "psi_some",
                    "collect_us",
                    "decide_us",
                )
            }
            | {"n_actions": len(actions)}
        )
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
    out = {
        k: math.nan
        for k in (
            "quanta",
            "suspends",
            "resumes",
            "forced_resumes",
            "throttles",
            "max_suspended_jobs",
            "mean_suspended_jobs",
            "daemon_cpu_pct",
        )
    }
    if run["variant"] not in DYNAMIC_FAMILY:
        return out, None
    dec, why = read_decisions(run_dir)
    if dec is None:
        log.add("scheduler decisions (suspended jobs over time)", why, SOURCE, run["run_id"])
    else:
        susp = dec["suspended"]
        out["max_suspended_jobs"] = float(susp.max())
        out["mean_suspended_jobs"] = float(susp.mean())
    summ, why = read_summary(run_dir)
    if summ is None:
        log.add("scheduler summary (suspends, daemon CPU time)", why, SOURCE, run["run_id"])
    else:
        for k in ("quanta", "suspends", "resumes", "forced_resumes", "throttles"):
            out[k] = _num(summ, k)
        cpu = _num(summ, "cpu_user_s") + _num(summ, "cpu_sys_s")
        wall = _num(summ, "wall_s")
        out["daemon_cpu_pct"] = 100.0 * cpu / wall if wall > 0 else math.nan
    return out, dec


# ----------------------------------------------------------------------------- analysis


def analyse(jobs: pd.DataFrame, runs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog, baseline: str) -> dict:
    t_alone = t_alone_table(jobs, runs)
    alone_map = dict(zip(t_alone["app"], t_alone["t_alone_s"]))
    camp = runs[runs["run_kind"] == "campaign"]
    rows, series, decisions = [], {}, {}
    for run in rt.records(camp):
        rid = str(run["run_id"])
        g = jobs[jobs["run_id"].astype(str) == rid]
        m, why = job_metrics(g, alone_map)
        if why:
            log.add("slowdown (eq. 4) and fairness" if "T_alone" in why else "run metrics", why, SOURCE, rid)
        io = iostat_series(run, dirs[rid], log)
        has = io[(io["req"] > 0) & io[["await_ms", "svc_ms", "wait_ms"]].notna().all(axis=1)]
        if len(io) and has.empty:
            log.add("iostat waiting and serving time", "no iostat interval with I/O during the run", SOURCE, rid)
        sched, dec = scheduler_metrics(run, dirs[rid], log)
        series[rid] = io
        if dec is not None:
            decisions[rid] = dec
        rows.append(
            {
                "run_id": rid,
                "workload": run["workload"],
                "variant": run["variant"],
                "rep": int(run["rep"]),
                "order": run.get("order"),
                **m,
                "wait_ms": _weighted(has["wait_ms"], has["req"]),
                "svc_ms": _weighted(has["svc_ms"], has["req"]),
                "n_io_intervals": len(has),
                **sched,
                "reason": why,
            }
        )
    per_run = pd.DataFrame(rows, columns=RUN_TABLE).sort_values(["workload", "variant", "rep"], kind="stable")
    per_run = per_run.reset_index(drop=True)
    return {
        "t_alone": t_alone,
        "runs": per_run,
        "summary": summary_table(per_run),
        "improvement": improvement_table(per_run, baseline),
        "per_job": per_job_table(jobs, camp),
        "series": series,
        "decisions": decisions,
    }


def summary_table(per_run: pd.DataFrame) -> pd.DataFrame:
    """Per workload and variant: mean and 95% t-interval over reps of every metric."""
    rows = []
    for (w, v), g in per_run.groupby(["workload", "variant"], sort=True):
        row = {"workload": w, "variant": v, "n_reps": int(g["rep"].nunique())}
        for metric in METRICS:
            vals = g[metric].dropna().to_numpy(float)
            lo, hi = t_interval(vals)
            row.update(
                {
                    metric: float(vals.mean()) if len(vals) else math.nan,
                    f"{metric}_ci95_low": lo,
                    f"{metric}_ci95_high": hi,
                }
            )
        for k in ("suspends", "max_suspended_jobs", "daemon_cpu_pct"):
            row[k] = float(g[k].mean()) if g[k].notna().any() else math.nan
        rows.append(row)
    return pd.DataFrame(rows)


def improvement_table(per_run: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per workload, non-baseline variant and metric: ratio to the baseline (paired t-interval) and
    the paper's improvement."""
    cols = [
        "workload",
        "variant",
        "metric",
        "higher_is_better",
        "n_pairs",
        "baseline_mean",
        "variant_mean",
        "ratio",
        "ratio_ci95_low",
        "ratio_ci95_high",
        "improvement_pct",
        "improvement_ci95_low",
        "improvement_ci95_high",
        "reason",
    ]
    rows = []
    for w, gw in per_run.groupby("workload", sort=True):
        base = gw[gw["variant"] == baseline]
        for v, gv in gw.groupby("variant", sort=True):
            if v == baseline:
                continue
            for metric, (higher, _) in METRICS.items():
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
                imp = improvement_pct(r["ratio"], higher)
                lo = improvement_pct(r["ci95_high"] if not higher else r["ci95_low"], higher)
                hi = improvement_pct(r["ci95_low"] if not higher else r["ci95_high"], higher)
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
                        "improvement_pct": imp,
                        "improvement_ci95_low": lo,
                        "improvement_ci95_high": hi,
                        "reason": reason,
                    }
                )
    return pd.DataFrame(rows, columns=cols)


def per_job_table(jobs: pd.DataFrame, camp: pd.DataFrame) -> pd.DataFrame:
    """Per workload, variant and job index: mean runtime over reps (Figs. 23-24)."""
    sub = jobs[jobs["run_id"].astype(str).isin(set(camp["run_id"].astype(str)))].copy()
    sub = sub[rt.valid_jobs_mask(sub, check_required=False)]
    if sub.empty:
        return pd.DataFrame(columns=["workload", "variant", "job_index", "app", "n_reps", "runtime_s"])
    out = (
        sub.groupby(["workload", "variant", "job_index"], sort=True)
        .agg(app=("app", "first"), n_reps=("runtime_s", "size"), runtime_s=("runtime_s", "mean"))
        .reset_index()
    )
    return out


# ----------------------------------------------------------------------------- paper comparison


def _imp_text(r: dict) -> str:
    if not math.isfinite(r["improvement_pct"]):
        return "missing"
    ci = (
        f" [{fmt_num(r['improvement_ci95_low'])}, {fmt_num(r['improvement_ci95_high'])}]"
        if math.isfinite(r["improvement_ci95_low"])
        else ""
    )
    return f"{r['improvement_pct']:+.3g}%{ci} ({r['n_pairs']} paired reps)"


def _direction(r: dict | None, expect: str, tol: float, rule_what: str, note: str) -> dict:
    """measured_value, verdict, note for one improvement against an expectation
    ('better', 'worse', 'none')."""
    rules = {
        "better": "Rule: the 95% interval of the improvement lies above 0.",
        "worse": "Rule: the 95% interval of the improvement lies below 0.",
        "none": f"Rule: the interval contains 0 or the improvement is within {fmt_num(tol)}%.",
    }
    if r is None:
        return {
            "measured_value": None,
            "verdict": VERDICT_UNMEASURABLE,
            "note": f"{note} Why not measurable: {rule_what}. {rules[expect]}",
        }
    if r["n_pairs"] < 2 or not math.isfinite(r["improvement_ci95_low"]):
        why = r["reason"] or "fewer than 2 paired reps"
        return {
            "measured_value": _imp_text(r),
            "verdict": VERDICT_UNMEASURABLE,
            "note": f"{note} Why not measurable: {why}. {rules[expect]}",
        }
    lo, hi, imp = r["improvement_ci95_low"], r["improvement_ci95_high"], r["improvement_pct"]
    ok = {"better": lo > 0, "worse": hi < 0, "none": (lo <= 0 <= hi) or abs(imp) <= tol}[expect]
    return {
        "measured_value": _imp_text(r),
        "verdict": VERDICT_DIRECTION if ok else VERDICT_NOT,
        "note": f"{note} {rules[expect]}",
    }


def _imp_row(result: dict, workload: str, variant: str, metric: str) -> dict | None:
    t = result["improvement"]
    hit = t[(t["workload"] == workload) & (t["variant"] == variant) & (t["metric"] == metric)]
    return None if hit.empty else hit.iloc[0].to_dict()


def compare_with_paper(
    result: dict, paper: dict, baseline: str, variant: str, tol: float, workloads: list[str]
) -> pd.DataFrame:
    exp = experiment_values(paper, EXPERIMENT)
    vals, claims = exp["values"], exp["claims"]
    rows = []
    have_variant = variant in set(result["runs"]["variant"])
    have_base = baseline in set(result["runs"]["variant"])

    def missing_why(w: str) -> str:
        if w not in workloads:
            return f"workload #{int(w[1:])} is not in this campaign (dynamic_io.workloads)"
        if not have_variant:
            return f"variant {variant} was not run"
        if not have_base:
            return f"baseline {baseline} was not run"
        return "no paired runs"

    metric_claim = {
        "throughput_jobs_per_s": "improves_throughput",
        "slowdown_sum": "improves_slowdown",
        "avg_runtime_s": "improves_runtime",
    }
    for _key, (members, title, value_keys) in GROUPS.items():
        present = [w for w in members if w in workloads]
        for metric in PAPER_METRICS:
            label = METRICS[metric][1].split(",")[0]
            item = vals[value_keys[metric]]
            if not present:
                rows.append(
                    {
                        "quantity": f"{title}: {label} improves",
                        "paper_value": item["value"],
                        "unit": item["unit"],
                        **_direction(
                            None,
                            "better",
                            tol,
                            "none of "
                            + ", ".join(f"#{int(w[1:])}" for w in members)
                            + " is in this campaign (dynamic_io.workloads)",
                            paper_note(item),
                        ),
                    }
                )
                continue
            for w in present:
                expect, item_w, claim = "better", item, claims[metric_claim[metric]]
                if (w, metric) in NO_CHANGE:
                    expect, claim = "none", claims["no_throughput_change"]
                if w == "w02" and metric == "slowdown_sum":
                    expect, item_w, claim = "worse", vals["w02_slowdown_pct"], claims["w02_slowdown_degrades"]
                if w == "w08" and metric == "throughput_jobs_per_s":
                    item_w = vals["w08_throughput_pct"]
                r = _imp_row(result, w, variant, metric)
                note = f"{paper_note(item_w)} {paper_note(claim)}"
                rows.append(
                    {
                        "quantity": f"#{int(w[1:])} {label}: improvement of {variant} over {baseline}",
                        "paper_value": item_w["value"],
                        "unit": item_w["unit"],
                        **_direction(r, expect, tol, missing_why(w), note),
                    }
                )

    for w, fig_w, fig_s in (("w01", "Fig. 18", "Fig. 19"), ("w11", "Fig. 21", "Fig. 22")):
        for metric, name, fig in (("wait_ms", "wait", fig_w), ("svc_ms", "svc", fig_s)):
            word = "waiting" if name == "wait" else "serving"
            r = _imp_row(result, w, variant, metric)
            item = vals[f"{w}_{name}_pct"]
            claim = claims["wait_improves" if name == "wait" else "svc_improves"]
            rows.append(
                {
                    "quantity": f"#{int(w[1:])} I/O {word} time improves ({fig})",
                    "paper_value": item["value"],
                    "unit": item["unit"],
                    **_direction(r, "better", tol, missing_why(w), f"{paper_note(item)} {paper_note(claim)}"),
                }
            )
            for who, vkey in ((baseline, "linux"), (variant, "dynamic")):
                item = vals[f"{w}_{name}_{vkey}_ms"]
                s = result["summary"]
                hit = s[(s["workload"] == w) & (s["variant"] == who)]
                value = float(hit[metric].iloc[0]) if len(hit) and pd.notna(hit[metric].iloc[0]) else None
                row = {
                    "quantity": f"#{int(w[1:])} mean I/O {word} time under {who}",
                    "paper_value": item["value"],
                    "unit": item["unit"],
                }
                if value is None:
                    why = missing_why(w) if r is None else "no iostat interval with I/O"
                    row.update(
                        measured_value=None,
                        verdict=VERDICT_UNMEASURABLE,
                        note=f"{paper_note(item)} Why not measurable: {why}.",
                    )
                else:
                    row.update(
                        measured_value=value,
                        verdict=VERDICT_MACHINE,
                        note=f"{paper_note(item)} {ratio_note(value, item['value'])}; depends on the device, "
                        "its queue and the throttle (a throttled request waits in the cgroup, which iostat "
                        "does not see).",
                    )
                rows.append(row)

    rows.append(_per_job_row(result, "w08", baseline, variant, tol, claims["w08_all_jobs_improve"], "all", missing_why))
    rows.append(_per_job_row(result, "w15", baseline, variant, tol, claims["w15_narrow_gap"], "narrow", missing_why))
    rows.append(_overhead_row(result, variant, vals["overhead_max_pct"], claims["overhead_below_1pct"]))
    rows.append(_fairness_row(result, variant, baseline, claims["hurts_fairness"]))
    columns = ["quantity", "paper_value", "measured_value", "unit", "verdict", "note"]
    return pd.DataFrame(rows, columns=columns)


def _per_job_change(result: dict, w: str, baseline: str, variant: str) -> pd.Series:
    pj = result["per_job"]
    a = pj[(pj["workload"] == w) & (pj["variant"] == baseline)].set_index("job_index")["runtime_s"]
    b = pj[(pj["workload"] == w) & (pj["variant"] == variant)].set_index("job_index")["runtime_s"]
    both = a.index.intersection(b.index)
    return ((a[both] - b[both]) / a[both] * 100.0).sort_index()


def _per_job_row(result, w, baseline, variant, tol, claim, kind, missing_why) -> dict:
    fig = "Fig. 23" if kind == "all" else "Fig. 24"
    row = {"quantity": f"#{int(w[1:])} per-job runtimes ({fig})", "paper_value": claim["statement"], "unit": ""}
    change = _per_job_change(result, w, baseline, variant)
    if change.empty:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: {missing_why(w)}.",
        )
        return row
    if kind == "all":
        n_ok = int((change > tol).sum())
        ok = n_ok == len(change)
        text = f"{n_ok} of {len(change)} jobs faster by more than {fmt_num(tol)}% (mean over reps)"
        rule = f"Rule: every job's mean runtime is lower by more than {fmt_num(tol)}%."
    else:
        med = float(change.abs().median())
        ok = med <= tol
        text = f"median |change| {fmt_num(med)}% over {len(change)} jobs"
        rule = f"Rule: the median absolute per-job change is within {fmt_num(tol)}%."
    row.update(
        measured_value=text, verdict=VERDICT_DIRECTION if ok else VERDICT_NOT, note=f"{paper_note(claim)} {rule}"
    )
    return row


def _overhead_row(result: dict, variant: str, item: dict, claim: dict) -> dict:
    row = {
        "quantity": f"CPU time of the {variant} daemon, share of its wall time",
        "paper_value": item["value"],
        "unit": item["unit"],
    }
    r = result["runs"]
    cpu = r.loc[r["variant"] == variant, "daemon_cpu_pct"].dropna()
    rule = f"Rule: the largest share over the runs is below {fmt_num(item['value'])}%."
    if cpu.empty:
        why = (
            f"variant {variant} was not run"
            if variant not in set(r["variant"])
            else "no run has the daemon's summary.json (cpu_user_s, cpu_sys_s, wall_s)"
        )
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: {why}. {rule}",
        )
        return row
    top = float(cpu.max())
    row.update(
        measured_value=f"mean {fmt_num(float(cpu.mean()))}%, max {fmt_num(top)}% over {len(cpu)} runs",
        verdict=VERDICT_DIRECTION if top < item["value"] else VERDICT_NOT,
        note=f"{paper_note(claim)} {rule}",
    )
    return row


def _fairness_row(result: dict, variant: str, baseline: str, claim: dict) -> dict:
    row = {
        "quantity": f"Jain's fairness of {variant} against {baseline}",
        "paper_value": claim["statement"],
        "unit": "",
    }
    t = result["improvement"]
    t = t[(t["variant"] == variant) & (t["metric"] == "jain_fairness") & t["improvement_ci95_low"].notna()]
    rule = (
        "Rule: in at least one workload the interval of the change of Jain's index lies below 0, and in none above 0."
    )
    if t.empty:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: no workload with 2 paired reps and T_alone. {rule}",
        )
        return row
    worse = int((t["improvement_ci95_high"] < 0).sum())
    better = int((t["improvement_ci95_low"] > 0).sum())
    row.update(
        measured_value=f"lower in {worse}, higher in {better}, no clear change in {len(t) - worse - better} "
        f"of {len(t)} workloads",
        verdict=VERDICT_DIRECTION if worse and not better else VERDICT_NOT,
        note=f"{paper_note(claim)} {rule}",
    )
    return row


# ----------------------------------------------------------------------------- figures


def _colors(variants: list[str]) -> dict[str, str]:
    cmap = plt.get_cmap("tab10")
    return {v: cmap(i % 10) for i, v in enumerate(variants)}


def plot_improvement(result: dict, baseline: str, variants: list[str], path: Path) -> None:
    """Figs. 16, 17, 20: improvement over the baseline per workload, one bar per variant."""
    metrics = ["throughput_jobs_per_s", "slowdown_sum", "avg_runtime_s", "jain_fairness"]
    t = result["improvement"]
    others = [v for v in variants if v != baseline]
    wls = sorted(t["workload"].unique()) if len(t) else []
    colors = _colors(variants)
    fig, axes = plt.subplots(2, 2, figsize=(11.0, 7.5), dpi=110)
    for ax, metric in zip(axes.flat, metrics):
        if not wls or not others:
            rt.no_data(ax, f"no paired runs of a variant and {baseline}")
        width = 0.8 / max(1, len(others))
        for i, v in enumerate(others):
            sub = t[(t["variant"] == v) & (t["metric"] == metric)].set_index("workload").reindex(wls)
            x = np.arange(len(wls)) + (i - (len(others) - 1) / 2) * width
            y = sub["improvement_pct"].to_numpy(float)
            err = np.vstack(
                [y - sub["improvement_ci95_low"].to_numpy(float), sub["improvement_ci95_high"].to_numpy(float) - y]
            )
            err = np.where(np.isfinite(err), err, 0.0)
            ax.bar(x, np.nan_to_num(y), width, yerr=err, color=colors[v], label=v, capsize=2)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(np.arange(len(wls)))
        ax.set_xticklabels([f"#{int(w[1:])}" for w in wls])
        ax.set_ylabel("improvement over " + baseline + " (%)")
        ax.set_title(METRICS[metric][1], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    if others and wls:
        axes.flat[0].legend(fontsize=7)
    fig.suptitle(
        "Improvement over " + baseline + " (paper form; 95% paired t-intervals). Compare Figs. 16, 17, 20",
        fontsize=10,
    )
    fig.tight_layout()
    rt.save_png(fig, path)


def _first_rep_pair(result: dict, w: str, baseline: str, variant: str) -> tuple[str | None, str | None]:
    r = result["runs"]
    for rep in sorted(r.loc[r["workload"] == w, "rep"].unique()):
        a = r[(r["workload"] == w) & (r["variant"] == baseline) & (r["rep"] == rep)]
        b = r[(r["workload"] == w) & (r["variant"] == variant) & (r["rep"] == rep)]
        if len(a) and len(b):
            return str(a["run_id"].iloc[0]), str(b["run_id"].iloc[0])
    return None, None


def plot_latency(result: dict, w: str, baseline: str, variant: str, path: Path, figs: str) -> None:
    """Figs. 18-19 / 21-22: waiting and serving time over the run, baseline and variant (first rep
    with both)."""
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2), dpi=110)
    ids = _first_rep_pair(result, w, baseline, variant)
    for ax, col, title in (
        (axes[0], "wait_ms", "waiting time (derived: await - svc)"),
        (axes[1], "svc_ms", "serving time (derived: 10 x %util / IOPS)"),
    ):
        drawn = False
        for rid, who, color in zip(ids, (baseline, variant), ("tab:red", "tab:blue")):
            if rid is None:
                continue
            s = result["series"].get(rid)
            if s is None or s.empty:
                continue
            s = s[s["req"] > 0]
            mean = _weighted(s[col], s["req"])
            ax.plot(s["t_s"], s[col], marker=".", lw=1.2, color=color, label=f"{who} (mean {fmt_num(mean)} ms)")
            drawn = True
        if not drawn:
            rt.no_data(ax, "no paired runs with iostat intervals")
        else:
            ax.legend(fontsize=8)
        ax.set_xlabel("time since the run start (s)")
        ax.set_ylabel("ms per request")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"I/O latency over time, workload #{int(w[1:])} (first rep with both runs). Compare {figs}", fontsize=10
    )
    fig.tight_layout()
    rt.save_png(fig, path)


def plot_per_job(result: dict, w: str, baseline: str, variant: str, path: Path, fig_name: str) -> None:
    """Figs. 23-24: each job's runtime (mean over reps) under the baseline and the variant."""
    pj = result["per_job"]
    fig, ax = plt.subplots(figsize=(9.0, 4.2), dpi=110)
    drawn = False
    for who, color, marker in ((baseline, "tab:red", "o"), (variant, "tab:blue", "s")):
        g = pj[(pj["workload"] == w) & (pj["variant"] == who)]
        if len(g):
            ax.plot(g["job_index"], g["runtime_s"], marker=marker, ls="", color=color, label=who, ms=4)
            drawn = True
    if drawn:
        ax.legend(fontsize=8)
    else:
        rt.no_data(ax, "no runs of this workload")
    ax.set_xlabel("job (submit order)")
    ax.set_ylabel("runtime T_k-c (s), mean over reps")
    ax.set_title(f"Per-job runtimes, workload #{int(w[1:])}. Compare {fig_name}", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    rt.save_png(fig, path)


def plot_suspended(result: dict, variants: list[str], path: Path) -> None:
    """Suspended (and throttled) jobs over time from decisions.jsonl, first rep of each workload."""
    r = result["runs"]
    wls = sorted(r["workload"].unique())
    dyn = [v for v in variants if v in DYNAMIC_FAMILY]
    colors = _colors(variants)
    n = max(1, len(wls))
    fig, axes = plt.subplots(n, 1, figsize=(9.0, 2.6 * n), dpi=110, squeeze=False)
    for ax, w in zip(axes[:, 0], wls or [None]):
        drawn = False
        for v in dyn:
            sub = r[(r["workload"] == w) & (r["variant"] == v)].sort_values("rep")
            for rid in sub["run_id"]:
                dec = result["decisions"].get(str(rid))
                if dec is None:
                    continue
                y = dec["suspended"].fillna(0) + dec["throttled"].fillna(0) if "throttled" in dec else dec["suspended"]
                ax.step(dec["t_s"], y, where="post", color=colors[v], label=v)
                drawn = True
                break
        if drawn:
            ax.legend(fontsize=7)
        else:
            rt.no_data(ax, "no decision log (sched/state/decisions.jsonl) of a dynamic variant")
        ax.set_ylim(bottom=0, top=max(1.0, ax.get_ylim()[1]))
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_ylabel("jobs suspended\nor throttled")
        ax.set_title(f"workload #{int(w[1:])}" if w else "no workload", fontsize=9)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time since the run start (s)")
    fig.tight_layout()
    rt.save_png(fig, path)


# ----------------------------------------------------------------------------- section


def pick(workloads: list[str], preferred: str, wtype: str, types: dict[str, str]) -> str | None:
    """The paper's workload for a figure if measured, else the first measured one of its type."""
    if preferred in workloads:
        return preferred
    return next((w for w in workloads if types.get(w) == wtype), None)


def run(
    jobs_csv: str,
    runs_csv: str,
    out_dir: str,
    baseline: str = "linux",
    variant: str = "dynamic_io",
    tol_pct: float = 5.0,
    paper_id: str = PAPER_ID,
) -> dict:
    jobs, runs = read_jobs(jobs_csv), read_runs(runs_csv)
    variants = sorted(
        runs.loc[runs["run_kind"] == "campaign", "variant"].dropna().unique(),
        key=lambda v: (v != baseline, v != variant, v),
    )
    if baseline not in variants:
        raise AnalysisInputError(f"--baseline: {baseline!r} (expected one of {', '.join(sorted(variants))})")
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    dirs = rt.run_dirs(runs, runs_csv)
    paper = load_paper_values(paper_id)
    log = rt.MissingLog()
    result = analyse(jobs, runs, dirs, log, baseline)
    camp = runs[runs["run_kind"] == "campaign"]
    workloads = sorted(camp["workload"].dropna().unique())
    types = dict(zip(jobs["workload"], jobs["wtype"])) if "wtype" in jobs.columns else {}
    comparison = compare_with_paper(result, paper, baseline, variant, tol_pct, workloads)
    out = Path(out_dir)
    figures, plots = [], []
    figures.append(
        {
            "path": FIG_IMPROVEMENT,
            "caption": f"Improvement of every variant over {baseline} per workload "
            "in the paper's form ((new - old) / old for throughput, slowdown of eq. 4 and fairness; "
            "(old - new) / old for the average runtime), 95% t-intervals of the per-rep log ratios. "
            "Compare paper Figs. 16, 17 and 20.",
        }
    )
    plots.append(lambda o: plot_improvement(result, baseline, variants, o / FIG_IMPROVEMENT))
    captions = {
        "latency": lambda w: (
            f"I/O waiting and serving time over time of workload #{int(w[1:])} under {baseline} "
            f"and {variant} (first rep with both; iostat, derived)."
        ),
        "per_job": lambda w: (
            f"Runtime of each job of workload #{int(w[1:])} (mean over reps) under {baseline} and {variant}."
        ),
    }
    plotters = {"latency": plot_latency, "per_job": plot_per_job}
    for pref, wtype, figs, kind in (
        ("w01", "D", "Figs. 18-19", "latency"),
        ("w11", "M", "Figs. 21-22", "latency"),
        ("w08", "D", "Fig. 23", "per_job"),
        ("w15", "M", "Fig. 24", "per_job"),
    ):
        w = pick(workloads, pref, wtype, types)
        if w is None:
            continue
        name = f"{kind}_{w}.png"
        figures.append(
            {
                "path": name,
                "caption": f"{captions[kind](w)} Compare paper {figs}"
                + ("" if w == pref else f" (the paper shows #{int(pref[1:])}, not in this campaign)."),
            }
        )
        plots.append(
            lambda o, w=w, name=name, figs=figs, fn=plotters[kind]: fn(result, w, baseline, variant, o / name, figs)
        )
    figures.append(
        {
            "path": FIG_SUSPENDED,
            "caption": "Jobs suspended (or throttled) by each dynamic variant over "
            "the first rep of each workload, from the daemon's decisions.jsonl.",
        }
    )
    plots.append(lambda o: plot_suspended(result, variants, o / FIG_SUSPENDED))
    section = build_section(
        result, paper, comparison, runs, metadata_paths, log, baseline, variant, variants, workloads, figures
    )
    rt.write_outputs(
        out,
        section,
        {
            "runs_metrics.csv": result["runs"],
            "summary.csv": result["summary"],
            "improvement.csv": result["improvement"],
            "per_job.csv": result["per_job"],
            "t_alone.csv": result["t_alone"],
            "apps.csv": apps_table(jobs),
            "setup.csv": setup_table(runs, paper).to_csv(index=False, lineterminator="\n"),
        },
        plots,
    )
    return result


def setup_table(runs: pd.DataFrame, paper: dict) -> pd.DataFrame:
    vals = experiment_values(paper, EXPERIMENT)["values"]
    camp = runs[runs["run_kind"] == "campaign"]

    def distinct(col: str) -> str:
        if col not in camp.columns:
            return "not recorded"
        v = sorted({str(x) for x in camp[col].dropna()})
        return ", ".join(v) if v else "not recorded"

    return setup_frame(
        [
            ("TIMESLICE", vals["timeslice_s"], distinct("timeslice_s")),
            ("IO_BOUND_INTERVAL", vals["io_bound_mb_s"], distinct("io_bound_mbps")),
            ("machine", vals["cores"], distinct("host")),
        ]
    )


def apps_table(jobs: pd.DataFrame) -> pd.DataFrame:
    """What ran each application here: binary, what it stands in for, how it was scaled."""
    cols = ["app", "threads", "binary", "stands_in_for", "scale_note"]
    have = [c for c in cols if c in jobs.columns]
    out = jobs[have].drop_duplicates().sort_values("app", kind="stable")
    for c in cols:
        if c not in out.columns:
            out[c] = "not recorded"
    return out[cols].reset_index(drop=True)


def order_note(runs: pd.DataFrame, metadata_paths: list[Path]) -> str:
    """Whether the runs were measured in campaign order (label `order` against start times)."""
    if "order" not in runs.columns:
        return "The runs carry no campaign order label: the measuring order is not checked."
    starts = [load_metadata(p).get("start_epoch_s") for p in metadata_paths]
    t = pd.DataFrame(
        {
            "run_id": runs["run_id"].astype(str),
            "order": pd.to_numeric(runs["order"], errors="coerce"),
            "start": pd.to_numeric(pd.Series(starts, dtype=object), errors="coerce"),
        }
    ).dropna()
    t = t.sort_values("start", kind="stable")
    prev_max, late = -1.0, []
    for rid, order in zip(t["run_id"], t["order"]):
        if order < prev_max:
            late.append(rid)
        prev_max = max(prev_max, order)
    if not late:
        return f"All {len(t)} runs were measured in campaign order (start times against the order label)."
    return (
        f"{len(late)} of {len(t)} runs were measured after a run that comes later in the campaign "
        f"order: {', '.join(late[:5])}{' ...' if len(late) > 5 else ''}."
    )


def build_section(
    result, paper, comparison, runs, metadata_paths, log, baseline, variant, variants, workloads, figures
) -> dict:
    reps = int(result["runs"]["rep"].nunique()) if len(result["runs"]) else 0
    parts = []
    for w in workloads:
        r = _imp_row(result, w, variant, "avg_runtime_s")
        parts.append(f"#{int(w[1:])}: average runtime {_imp_text(r) if r else 'missing'}")
    summary = [
        f"{len(workloads)} Table 3 workload(s) ({', '.join('#' + str(int(w[1:])) for w in workloads)}) under "
        f"{len(variants)} variant(s) ({', '.join(variants)}), {reps} interleaved rep(s), T_alone from "
        f"{int((runs['run_kind'] == 'alone').sum())} alone run(s).",
        f"Improvement of {variant} over {baseline}: " + "; ".join(parts) + ".",
    ]
    caps = rt.throttle_values(runs)
    notes = [
        "Slowdown is the paper's eq. 4, the SUM over jobs of T_alone / T_k-c: it grows when jobs slow down "
        "less, so higher is better; mean_slowdown (mean of T_k-c / T_alone) is the conventional form.",
        "Improvement: (new - old) / old for higher-is-better metrics (throughput, eq. 4 slowdown, Jain), "
        "(old - new) / old for runtimes and latencies; the paper's own numbers fit these forms (696 -> 286 ms is "
        "its '59%').",
        "Intervals: a 95% t-interval over reps for each mean (summary.csv); a 95% t-interval of the per-rep log "
        "ratios variant / baseline, rep i of each paired (improvement.csv); a percentile bootstrap of 4 pairs "
        "spans little more than the 4 per-rep ratios.",
        "T_workload is the last job's end; every job is submitted at t = 0 and the runner's FCFS queue starts them "
        "as cores free up (single-threaded D-TYPE jobs one per core, the others one per CMP).",
        order_note(runs, metadata_paths),
        rt.device_note(metadata_paths),
        "Waiting and serving time are derived from iostat (sysstat has no svctm): svc = 10 x %util / IOPS, "
        "wait = await - svc, means over requests.",
    ]
    if caps:
        notes.append(
            "The runs share a cgroup read cap of "
            + ", ".join(f"{fmt_num(c / 1e6)} MB/s" for c in caps)
            + ": requests over the cap wait in the cgroup's throttle before the device "
            "queue, where iostat cannot see them."
        )
    notes.extend(n.strip() for n in paper.get("notes", []))
    return rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=figures,
        comparison=comparison,
        tables=[
            {"title": "Improvement over the baseline per workload, variant and metric", "csv": "improvement.csv"},
            {"title": "Means over reps with 95% t-intervals", "csv": "summary.csv"},
            {"title": "Metrics per run", "csv": "runs_metrics.csv"},
            {"title": "T_alone per job type", "csv": "t_alone.csv"},
            {"title": "Applications: what ran each one here and what it stands in for", "csv": "apps.csv"},
            {"title": "Per-job runtimes (mean over reps)", "csv": "per_job.csv"},
            {"title": "Setup: paper vs this run (no verdict)", "csv": "setup.csv"},
        ],
        metadata_paths=metadata_paths,
        log=log,
        notes=notes,
    )


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        SOURCE,
        "The dynamic I/O-aware scheduler against Linux (paper 000, section 4, "
        "Figs. 16-24), from the dynamic_io campaign's runs.",
    )
    parser.add_argument(
        "--baseline", default="linux", help="variant improvements are measured against (default: linux)"
    )
    parser.add_argument(
        "--paper-variant",
        default="dynamic_io",
        help="variant judged against the paper's 'Dynamic' (default: dynamic_io)",
    )
    add_tol_pct(parser, "change in percent below which a difference counts as none (default: 5)")
    return cli(
        parser,
        argv,
        PAPER_ID,
        lambda a: run(a.jobs, a.runs, a.out_dir, a.baseline, a.paper_variant, tol_pct_arg(a.tol_pct), a.paper_id),
    )


if __name__ == "__main__":
    sys.exit(main())

"""I/O waiting and serving time while stacking CMPs (paper 000, Sec. 2.4, eq. 2, Fig. 5-7).

Reads the cmp_stacking runs (their jobs.csv and runs.csv) and each run's tidy iostat and PSI
tables. The paper splits each request's latency (iostat await) into the device's serving time
(iostat svctm) and the waiting time before it (await - svctm), and shows that stacking CMPs
makes the waiting time grow far more than the serving time.

Definitions
  intervals      iostat rows of the run's device (runs.csv `device`) that end inside the run,
                 0 < t_s <= duration_s; an interval "has I/O" when r/s + w/s + d/s + f/s > 0.
  serving time   svc_ms = 10 * %util / (r/s + w/s + d/s + f/s) ms, DERIVED: sysstat removed
                 svctm in 12.1.2, so corun's iostat monitor computes it from %util and the
                 request rates (corun/monitors/iostat.py). It assumes the device serves one
                 request at a time; on devices with internal parallelism (virtio with a deep
                 queue, NVMe) %util saturates, svc_ms underestimates and wait_ms overestimates.
  waiting time   wait_ms = await_ms - svc_ms (DERIVED likewise).
  per k          await_ms, svc_ms and wait_ms are means over all intervals with I/O of the
                 workload's runs at that k (reps pooled), each interval weighted by its request
                 rate r/s + w/s + d/s + f/s, i.e. by its request count since iostat's interval is
                 fixed: the mean over requests, not over seconds.
  ratio_*        the value at k over the value at k = 1 of the same workload (growth factor,
                 Fig. 7); undefined when the k = 1 value is missing or <= 0.
  psi_io_*_pct   PSI io some/full share of time, mean over the run's PSI intervals weighted by
                 their length, reps pooled. A throttled run (throttle_read_bps set) queues
                 requests in the cgroup's blk-throttle BEFORE they reach the device queue:
                 iostat cannot see that wait, PSI io and the runtimes include it.
  io_requests    sum over intervals of the request rate times the iostat interval (the median
                 spacing of the device's rows; missing when the run has fewer than 2 rows).

Verdict rules (`compare_with_paper`), for the chosen workload (--workload) between k = 1 and K,
its largest k with a waiting and serving time:
  "waiting time grows with k"   ratio_wait(K) > 1 + tol -> "reproduced in direction", else
                                "not reproduced".
  "serving time grows with k"   ratio_svc(K) > 1 + tol, likewise.
  "waiting grows more than serving"   ratio_wait(K) > ratio_svc(K), and, with 2 or more reps
                                run at both k = 1 and K, the per-rep quotient of the two growth
                                factors (wait_r(K) / wait_r(1)) / (svc_r(K) / svc_r(1)) above 1
                                by Wilcoxon's signed-rank test on its logs (one-sided, exact,
                                p < 0.05; rep r of each k paired; 5 reps at least can reach
                                it). With one such rep the pooled factors alone decide.
  All three are "not measurable here" when no interval had I/O at k = 1 or at any k > 1, when
  only k = 1 was run, or when the k = 1 value is <= 0 (no ratio).
  Absolute values (4.55 ms at 1 CMP, 590 ms and 128x at 8 CMPs) depend on the device and on
  K: "differs (machine-specific)" when measured at that k, else "not measurable here".

CLI: python -m experiments.io_latency_split.analysis --jobs J --runs R [--workload x264_simlarge] [--tol-pct 5]
     --out-dir D
  writes D/latency.csv (every workload and k), D/latency_runs.csv (per run), D/setup.csv,
  D/fig5_6_wait_serve.png, D/fig7_growth.png and D/section.json.
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
    run_checks,
    setup_frame,
    tol_pct_arg,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402

EXPERIMENT = "io_latency"
SOURCE_EXPERIMENTS = ("cmp_stacking", "io_latency")
PAPER_ID = "000"
DEFAULT_WORKLOAD = "x264_simlarge"
FIG_LATENCY = "fig5_6_wait_serve.png"
FIG_GROWTH = "fig7_growth.png"
SOURCE = "experiments.io_latency_split.analysis"
LATENCY_METRIC = "iostat await_ms, svc_ms, wait_ms"
PSI_METRIC = "psi io some_pct"
KINDS = ("r", "w", "d", "f")

RUN_COLUMNS = [
    "run_id",
    "workload",
    "k",
    "rep",
    "variant",
    "throttle_read_bps",
    "device",
    "duration_s",
    "metadata_path",
    "run_dir",
]
RUN_TABLE_COLUMNS = [
    "run_id",
    "workload",
    "k",
    "rep",
    "device",
    "n_intervals",
    "n_io_intervals",
    "io_requests",
    "await_ms",
    "svc_ms",
    "wait_ms",
    "util_pct",
    "psi_io_some_pct",
    "psi_io_full_pct",
    "throttle_read_bps",
    "reason",
]
TABLE_COLUMNS = [
    "workload_id",
    "workload",
    "k",
    "n_runs",
    "n_runs_with_io",
    "n_io_intervals",
    "io_requests",
    "await_ms",
    "svc_ms",
    "wait_ms",
    "ratio_await",
    "ratio_svc",
    "ratio_wait",
    "psi_io_some_pct",
    "psi_io_full_pct",
    "mean_runtime_s",
    "throttle_read_bps",
    "reason",
]


# ----------------------------------------------------------------------------- input


def read_jobs(path: str | os.PathLike) -> pd.DataFrame:
    """The cmp_stacking per-job CSV (runtimes are shown beside the latencies)."""
    return rt.read_table(
        path,
        required=["run_id", "workload", "k", "rep", "cmp", "job_id", "runtime_s", "exit_code"],
        ints={"k": 1, "rep": 0, "exit_code": None},
        floats=["runtime_s", "workload_id"],
        texts=["workload", "job_id", "result_check"],
        experiments=SOURCE_EXPERIMENTS,
    )


def read_runs(path: str | os.PathLike) -> pd.DataFrame:
    """runs.csv of the cmp_stacking runs, columns checked and typed."""
    return rt.read_table(
        path,
        required=RUN_COLUMNS,
        ints={"k": 1, "rep": 0},
        floats=["throttle_read_bps", "duration_s", "workload_id"],
        texts=["workload", "variant", "device", "metadata_path", "run_dir"],
        experiments=SOURCE_EXPERIMENTS,
        what="one row per run",
    )


# ----------------------------------------------------------------------------- per run


def _requests(df: pd.DataFrame) -> pd.Series:
    """r/s + w/s + d/s + f/s; r and w must be there, d and f count 0 when not reported."""
    total = pd.to_numeric(df["r_per_s"], errors="coerce") + pd.to_numeric(df["w_per_s"], errors="coerce")
    for kind in ("d", "f"):
        col = f"{kind}_per_s"
        if col in df.columns:
            total = total + pd.to_numeric(df[col], errors="coerce").fillna(0.0)
    return total


def iostat_intervals(run: dict, run_dir: Path, log: rt.MissingLog) -> tuple[pd.DataFrame, dict]:
    """(the run's device intervals with I/O: req, await_ms, svc_ms, wait_ms; summary fields)."""
    empty = pd.DataFrame(columns=["req", "await_ms", "svc_ms", "wait_ms"])
    info = {"device": run.get("device"), "n_intervals": 0, "n_io_intervals": 0}
    info.update(io_requests=math.nan, util_pct=math.nan, reason="")
    df, why = rt.load_tidy(run_dir, "iostat")
    if df is None:
        info["reason"] = why
        log.add(LATENCY_METRIC, why, SOURCE, run["run_id"])
        return empty, info
    rows, name, why = rt.device_rows(df, run.get("device"))
    info["device"] = name or info["device"]
    if rows is None:
        info["reason"] = why
        log.add(LATENCY_METRIC, why, SOURCE, run["run_id"])
        return empty, info
    stamps = np.sort(pd.to_numeric(rows["time_epoch_s"], errors="coerce").dropna().unique())
    step = float(np.median(np.diff(stamps))) if len(stamps) >= 2 else math.nan
    rows = rt.in_run(rows, rt.number_or_none(run.get("duration_s")))
    req = _requests(rows)
    out = pd.DataFrame(
        {
            "req": req,
            "await_ms": pd.to_numeric(rows["await_ms"], errors="coerce"),
            "svc_ms": pd.to_numeric(rows["svc_ms"], errors="coerce"),
            "wait_ms": pd.to_numeric(rows["wait_ms"], errors="coerce"),
        }
    )
    info["n_intervals"] = len(rows)
    info["util_pct"] = float(pd.to_numeric(rows["util_pct"], errors="coerce").mean())
    io = out[(out["req"] > 0) & out[["await_ms", "svc_ms", "wait_ms"]].notna().all(axis=1)]
    info["n_io_intervals"] = len(io)
    info["io_requests"] = float(io["req"].sum() * step) if len(io) else 0.0
    if len(rows) == 0:
        info["reason"] = "no iostat interval inside the run"
        log.add(LATENCY_METRIC, info["reason"], SOURCE, run["run_id"])
    elif io.empty:
        info["reason"] = "no iostat interval with I/O on the run's device during the run"
        log.add(LATENCY_METRIC, info["reason"], SOURCE, run["run_id"])
    return io, info


def psi_io(run: dict, run_dir: Path, log: rt.MissingLog) -> tuple[pd.DataFrame, str]:
    """The run's PSI io intervals (some_pct, full_pct, interval_s), or a reason."""
    empty = pd.DataFrame(columns=["some_pct", "full_pct", "interval_s"])
    df, why = rt.load_tidy(run_dir, "psi")
    if df is None:
        log.add(PSI_METRIC, why, SOURCE, run["run_id"])
        return empty, why
    io = rt.in_run(df[df["resource"].astype(str) == "io"], rt.number_or_none(run["duration_s"]))
    io = io[["some_pct", "full_pct", "interval_s"]].apply(pd.to_numeric, errors="coerce")
    io = io[io["some_pct"].notna() & (io["interval_s"] > 0)]
    if io.empty:
        why = "no PSI io interval inside the run"
        log.add(PSI_METRIC, why, SOURCE, run["run_id"])
        return empty, why
    return io, ""


def _weighted(values: pd.Series, weights: pd.Series) -> float:
    ok = values.notna() & weights.notna() & (weights > 0)
    w = weights[ok]
    return float((values[ok] * w).sum() / w.sum()) if w.sum() > 0 else math.nan


def analyse(jobs: pd.DataFrame, runs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog) -> dict:
    """{'runs': per-run table, 'table': per (workload, k) table}."""
    run_rows, pooled = [], {}
    for run in rt.records(runs):
        run_dir = dirs[str(run["run_id"])]
        io, info = iostat_intervals(run, run_dir, log)
        psi, psi_why = psi_io(run, run_dir, log)
        key = (run["workload"], int(run["k"]))
        bucket = pooled.setdefault(key, {"io": [], "psi": [], "runs": 0, "with_io": 0, "why": set()})
        bucket["runs"] += 1
        bucket["with_io"] += int(len(io) > 0)
        bucket["io"].append(io)
        bucket["psi"].append(psi)
        if info["reason"]:
            bucket["why"].add(info["reason"])
        reasons = [r for r in (info["reason"], psi_why and f"PSI: {psi_why}") if r]
        run_rows.append(
            {
                "run_id": run["run_id"],
                "workload": run["workload"],
                "k": int(run["k"]),
                "rep": int(run["rep"]),
                "device": info["device"],
                "n_intervals": info["n_intervals"],
                "n_io_intervals": info["n_io_intervals"],
                "io_requests": info["io_requests"],
                "await_ms": _weighted(io["await_ms"], io["req"]),
                "svc_ms": _weighted(io["svc_ms"], io["req"]),
                "wait_ms": _weighted(io["wait_ms"], io["req"]),
                "util_pct": info["util_pct"],
                "psi_io_some_pct": _weighted(psi["some_pct"], psi["interval_s"]),
                "psi_io_full_pct": _weighted(psi["full_pct"], psi["interval_s"]),
                "throttle_read_bps": run["throttle_read_bps"],
                "reason": "; ".join(reasons),
            }
        )
    per_run = pd.DataFrame(run_rows, columns=RUN_TABLE_COLUMNS)
    per_run = per_run.sort_values(["workload", "k", "rep", "run_id"], kind="stable")

    valid = rt.valid_jobs_mask(jobs, check_required=False)
    runtime = jobs[valid].groupby(["workload", "k"])["runtime_s"].mean()
    ids = {}
    for source in (runs, jobs):  # a run label, else a job label (Table 2 number)
        if not len(ids) and "workload_id" in source.columns:
            ids = source.dropna(subset=["workload_id"]).groupby("workload")["workload_id"].first()
    rows = []
    for (workload, k), b in sorted(pooled.items()):
        io = pd.concat([x for x in b["io"] if len(x)] or [b["io"][0]], ignore_index=True)
        psi = pd.concat([x for x in b["psi"] if len(x)] or [b["psi"][0]], ignore_index=True)
        sub = per_run[(per_run["workload"] == workload) & (per_run["k"] == k)]
        caps = sorted(sub["throttle_read_bps"].dropna().unique())
        reqs = sub["io_requests"]
        rows.append(
            {
                "workload_id": int(ids[workload]) if workload in ids else None,
                "workload": workload,
                "k": k,
                "n_runs": b["runs"],
                "n_runs_with_io": b["with_io"],
                "n_io_intervals": int(sub["n_io_intervals"].sum()),
                "io_requests": float(reqs.sum()) if reqs.notna().all() else math.nan,
                "await_ms": _weighted(io["await_ms"], io["req"]),
                "svc_ms": _weighted(io["svc_ms"], io["req"]),
                "wait_ms": _weighted(io["wait_ms"], io["req"]),
                "ratio_await": math.nan,
                "ratio_svc": math.nan,
                "ratio_wait": math.nan,
                "psi_io_some_pct": _weighted(psi["some_pct"], psi["interval_s"]),
                "psi_io_full_pct": _weighted(psi["full_pct"], psi["interval_s"]),
                "mean_runtime_s": float(runtime.get((workload, k), math.nan)),
                "throttle_read_bps": float(caps[0]) if len(caps) == 1 else math.nan,
                "reason": "" if len(io) else "; ".join(sorted(b["why"])),
            }
        )
    table = pd.DataFrame(rows, columns=TABLE_COLUMNS)
    table["workload_id"] = table["workload_id"].astype("Int64")
    for _workload, g in table.groupby("workload"):
        base = g[g["k"] == 1]
        for metric in ("await", "svc", "wait"):
            b = float(base[f"{metric}_ms"].iloc[0]) if len(base) else math.nan
            if math.isfinite(b) and b > 0:
                table.loc[g.index, f"ratio_{metric}"] = g[f"{metric}_ms"] / b
    table = table.sort_values(["workload_id", "workload", "k"], kind="stable")
    return {"runs": per_run.reset_index(drop=True), "table": table.reset_index(drop=True)}


# ----------------------------------------------------------------------------- paper comparison


def _trend(table: pd.DataFrame, workload: str) -> dict:
    """k = 1 and K values of the chosen workload, or why there are none."""
    g = table[table["workload"] == workload].sort_values("k")
    out = {"K": None, "why": "", "k1": None, "top": None}
    base = g[g["k"] == 1]
    if base.empty:
        out["why"] = "no k = 1 run"
        return out
    out["k1"] = base.iloc[0].to_dict()
    if not math.isfinite(out["k1"]["wait_ms"]):
        out["why"] = "no interval with I/O at k = 1"
        return out
    later = g[(g["k"] > 1) & g["wait_ms"].notna() & g["svc_ms"].notna()]
    if g["k"].max() < 2:
        out["why"] = "only k = 1 was run"
    elif later.empty:
        out["why"] = "no interval with I/O at any k > 1"
    elif out["k1"]["wait_ms"] <= 0 or out["k1"]["svc_ms"] <= 0:
        out["why"] = (
            f"the derived time at k = 1 is <= 0 ms (wait {fmt_num(out['k1']['wait_ms'])} ms, "
            f"svc {fmt_num(out['k1']['svc_ms'])} ms), so it has no growth factor"
        )
    else:
        out["top"] = later.iloc[-1].to_dict()
        out["K"] = int(out["top"]["k"])
    return out


def growth_quotient(runs: pd.DataFrame, workload: str, K: int) -> dict:
    """Per rep run at k = 1 and K: the waiting time's growth factor over the serving time's,
    (wait(K) / wait(1)) / (svc(K) / svc(1)); their median, how many lie above 1, and the
    one-sided p-value of Wilcoxon's signed-rank test on their logs (exact; NaN with fewer
    than 2 reps). A rank test, because a rep whose k = 1 wait is near 0 gives a quotient
    far out (x38 seen here) that a t-interval of the logs would follow."""
    r = runs[runs["workload"] == workload]
    cols = ["rep", "wait_ms", "svc_ms"]
    pair = r.loc[r["k"] == 1, cols].merge(r.loc[r["k"] == K, cols], on="rep", suffixes=("_1", "_K"))
    values = pair[["wait_ms_1", "svc_ms_1", "wait_ms_K", "svc_ms_K"]]
    pair = pair[(values > 0).all(axis=1) & np.isfinite(values).all(axis=1)].sort_values("rep")
    wait = pair["wait_ms_K"] / pair["wait_ms_1"]
    svc = pair["svc_ms_K"] / pair["svc_ms_1"]
    logs = np.log(wait / svc).to_numpy()
    p = math.nan
    if len(logs) >= 2 and np.any(logs != 0):
        p = float(stats.wilcoxon(logs, alternative="greater", method="exact").pvalue)
    return {
        "n": len(pair),
        "median": math.exp(float(np.median(logs))) if len(pair) else math.nan,
        "above": int((logs > 0).sum()),
        "p": p,
        "smallest_p": 0.5 ** len(pair),
        "per_rep": ", ".join(f"x{w:.3g} / x{s:.3g}" for w, s in zip(wait, svc)),
    }


def compare_with_paper(result: dict, paper: dict, workload: str, tol_pct: float) -> pd.DataFrame:
    """Paper-vs-measured rows for the chosen workload (see the module doc)."""
    exp = experiment_values(paper, EXPERIMENT)
    vals, claims = exp["values"], exp["claims"]
    tr = _trend(result["table"], workload)
    rows = []
    limit = 1 + tol_pct / 100

    def growth(quantity: str, claim: dict, metric: str, word: str) -> dict:
        row = {"quantity": quantity, "paper_value": claim["statement"], "unit": ""}
        rule = f"Rule: {word} time at k = K over k = 1 > {fmt_num(limit)}."
        if tr["top"] is None:
            row.update(
                measured_value=None,
                verdict=VERDICT_UNMEASURABLE,
                note=f"{paper_note(claim)} Why not measurable: {tr['why']}. {rule}",
            )
            return row
        ratio = tr["top"][f"ratio_{metric}"]
        row.update(
            measured_value=f"{fmt_num(tr['k1'][f'{metric}_ms'])} ms at k = 1, "
            f"{fmt_num(tr['top'][f'{metric}_ms'])} ms at k = {tr['K']}: x{fmt_num(ratio)}",
            verdict=VERDICT_DIRECTION if ratio > limit else VERDICT_NOT,
            note=f"{paper_note(claim)} {rule}",
        )
        return row

    rows.append(growth("Waiting time grows with k", claims["wait_grows_with_k"], "wait", "waiting"))
    rows.append(growth("Serving time grows with k", claims["serve_grows_with_k"], "svc", "serving"))
    claim = claims["wait_grows_more_than_serve"]
    row = {
        "quantity": "Waiting time grows more than serving time",
        "paper_value": claim["statement"],
        "unit": "",
    }
    rule = (
        "Rule: growth factor of the waiting time at k = K > that of the serving time, and the per-rep "
        "quotient of the two factors above 1 by Wilcoxon's signed-rank test (one-sided, reps paired, p < 0.05)."
    )
    if tr["top"] is None:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{paper_note(claim)} Why not measurable: {tr['why']}. {rule}",
        )
    else:
        rw, rs = tr["top"]["ratio_wait"], tr["top"]["ratio_svc"]
        q = growth_quotient(result["runs"], workload, tr["K"])
        decided = q["p"] < 0.05 if q["n"] >= 2 else True  # one rep: the pooled factors alone
        ci = (
            f"per-rep quotient median x{fmt_num(q['median'])}, above 1 in {q['above']} of {q['n']} paired reps, "
            f"p = {fmt_num(q['p'])} (the smallest {q['n']} reps can give: {fmt_num(q['smallest_p'])}); waiting / "
            f"serving growth per rep: {q['per_rep']}"
            if q["n"] >= 2
            else f"no test: {q['n']} rep(s) run at both k = 1 and k = {tr['K']}"
        )
        row.update(
            measured_value=f"waiting x{fmt_num(rw)}, serving x{fmt_num(rs)} at k = {tr['K']}",
            verdict=VERDICT_DIRECTION if rw > rs and decided else VERDICT_NOT,
            note=f"{paper_note(claim)} {rule} Measured: {ci}.",
        )
    rows.append(row)

    g = result["table"][result["table"]["workload"] == workload]
    K = int(g["k"].max()) if len(g) else 0

    def absolute(quantity: str, item: dict, k: int, column: str, ours_at_k: str) -> dict:
        row = {"quantity": quantity, "paper_value": item["value"], "unit": item["unit"]}
        hit = g.loc[g["k"] == k, column]
        value = float(hit.iloc[0]) if len(hit) and pd.notna(hit.iloc[0]) else None
        if value is None:
            if k > K:
                top = g.loc[g["k"] == K, column]
                ours = (
                    f" Ours at k = {K}: {fmt_num(float(top.iloc[0]))}{ours_at_k}."
                    if len(top) and pd.notna(top.iloc[0])
                    else ""
                )
                why = f"this machine ran k <= {K}; the paper's value is at k = {k}.{ours}"
            else:
                why = f"no interval with I/O at k = {k}, or no k = 1 value to divide by."
            row.update(
                measured_value=None,
                verdict=VERDICT_UNMEASURABLE,
                note=f"{paper_note(item)} Why not measurable: {why}",
            )
        else:
            row.update(
                measured_value=value,
                verdict=VERDICT_MACHINE,
                note=f"{paper_note(item)} {ratio_note(value, item['value'])}; depends on the "
                "device, its queue and any throttle.",
            )
        return row

    rows.append(absolute("Waiting time at k = 1", vals["wait_1c_ms"], 1, "wait_ms", " ms"))
    rows.append(absolute("Waiting time at k = 8", vals["wait_8c_ms"], 8, "wait_ms", " ms"))
    rows.append(absolute("Growth of the waiting time at k = 8", vals["wait_ratio_8c"], 8, "ratio_wait", ""))
    columns = ["quantity", "paper_value", "measured_value", "unit", "verdict", "note"]
    return pd.DataFrame(rows, columns=columns)


def setup_table(result: dict, paper: dict, interval_s: float | None) -> pd.DataFrame:
    vals = experiment_values(paper, EXPERIMENT)["values"]
    ks = sorted(int(k) for k in result["table"]["k"].unique())
    rows = [
        ("k values (loaded CMPs)", vals["k_values"], ", ".join(map(str, ks))),
        ("iostat sampling interval", vals["sampling_interval_s"], interval_s),
    ]
    return setup_frame(rows)


# ----------------------------------------------------------------------------- figures


def plot_latency(table: pd.DataFrame, workload: str, path: str | os.PathLike) -> None:
    """Fig. 5 and 6 style: waiting and serving time against k (log2 axis), one workload."""
    g = table[table["workload"] == workload].sort_values("k")
    ks = sorted(int(k) for k in table["k"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.4), dpi=110)
    for ax, column, title, color in (
        (axes[0], "wait_ms", "Waiting time (derived: await - svc)", "tab:red"),
        (axes[1], "svc_ms", "Serving time (derived: 10 x %util / IOPS)", "tab:blue"),
    ):
        known = g[g[column].notna()]
        if known.empty:
            rt.no_data(ax, "no iostat interval with I/O")
        else:
            ax.plot(known["k"], known[column], marker="o", color=color, lw=1.6)
            for k, v in zip(known["k"], known[column]):
                ax.annotate(
                    f"{fmt_num(v)} ms",
                    (k, v),
                    textcoords="offset points",
                    xytext=(0, 6),
                    ha="center",
                    fontsize=8,
                )
        rt.log2_k_axis(ax, ks)
        ax.set_xlabel("k, number of loaded CMPs (log2 scale)")
        ax.set_ylabel("ms per request (request-weighted mean)")
        ax.set_title(title, fontsize=10)
        top = known[column].max() if len(known) else math.nan
        ax.set_ylim(0, top * 1.15 if math.isfinite(top) and top > 0 else 1.0)
        ax.grid(alpha=0.3)
    fig.suptitle(f"I/O latency parts of workload {workload} in k-CMP configurations", fontsize=11)
    fig.tight_layout()
    rt.save_png(fig, path)


def plot_growth(table: pd.DataFrame, workload: str, path: str | os.PathLike) -> None:
    """Fig. 7 style: growth factors of waiting and serving time against k."""
    g = table[table["workload"] == workload].sort_values("k")
    ks = sorted(int(k) for k in table["k"].unique())
    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    drawn = []
    for column, label, color, style in (
        ("ratio_wait", "waiting time", "tab:red", "-"),
        ("ratio_svc", "serving time", "tab:blue", "-"),
        ("ratio_await", "await (waiting + serving)", "grey", "--"),
    ):
        known = g[g[column].notna()]
        if len(known):
            ax.plot(known["k"], known[column], marker="o", color=color, ls=style, label=label)
            drawn.extend(known[column].tolist())
    if not drawn:
        rt.no_data(ax, "no growth factor: no I/O at k = 1 or at k > 1")
    elif max(drawn) / max(min(drawn), 1e-9) > 20:
        ax.set_yscale("log", base=2)
    ax.axhline(1.0, color="black", lw=0.6)
    rt.log2_k_axis(ax, ks)
    ax.set_xlabel("k, number of loaded CMPs (log2 scale)")
    ax.set_ylabel("growth factor, value at k / value at k = 1")
    ax.set_title(f"Growth of waiting and serving time, workload {workload}", fontsize=11)
    ax.grid(alpha=0.3)
    if drawn:
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
    workload: str,
    extra_notes: list[str],
) -> dict:
    exp = experiment_values(paper, EXPERIMENT)
    table = result["table"]
    g = table[table["workload"] == workload].sort_values("k")
    ks = ", ".join(str(k) for k in sorted(table["k"].unique()))
    per_k = "; ".join(
        f"k = {r['k']}: waiting {fmt_num(r['wait_ms'])} ms, serving {fmt_num(r['svc_ms'])} ms, "
        f"PSI io some {fmt_num(r['psi_io_some_pct'])} %"
        for r in rt.records(g)
    )
    summary = [
        f"iostat on the runs' device during the cmp_stacking runs of {table['workload'].nunique()} "
        f"workload(s), k = {ks}; figures and verdicts for workload {workload}: {per_k}.",
        "Serving time is derived, not measured: sysstat removed svctm in 12.1.2, so svc = "
        "10 x %util / (r/s + w/s + d/s + f/s) ms and waiting = await - svc.",
    ]
    caps = rt.throttle_values(runs)
    if caps:
        summary.append(
            "The runs were throttled: throttled requests wait in the cgroup before the device "
            "queue, which iostat cannot see; PSI io and the runtimes include that wait."
        )
    notes = [
        "Per k, await, serving and waiting time are means over every iostat interval with I/O "
        "(r/s + w/s + d/s + f/s > 0) of the workload's runs, reps pooled, each interval weighted "
        "by its request rate, which for iostat's fixed interval is its request count: means "
        "over requests. Intervals count when they end inside the run (0 < t_s <= duration_s).",
        "Serving time svc = 10 x %util / (r/s + w/s + d/s + f/s) assumes the device serves one "
        "request at a time; with internal parallelism (virtio with a deep queue, NVMe) %util "
        "saturates, so svc underestimates and waiting (await - svc) overestimates the true "
        "split.",
        "PSI io some/full: share of wall time in which some/all non-idle tasks stalled on I/O, "
        "mean over the run's PSI intervals weighted by their length, reps pooled.",
    ]
    if caps:
        notes.append(
            "Runs throttled to a read cap of "
            + ", ".join(f"{fmt_num(c / 1e6)} MB/s" for c in caps)
            + ": a request over the cap waits in the cgroup's blk-throttle queue BEFORE it "
            "reaches the device queue. iostat measures only the device side (await, %util), so "
            "that wait is not in the waiting time above; PSI io and the runtimes include it."
        )
    notes.append("Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().unique())) + ".")
    notes.append(rt.device_note(metadata_paths))
    notes.extend(n.strip() for n in paper.get("notes", []))
    notes.extend(extra_notes)
    k_paper = exp["values"]["k_values"]["value"]
    return rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=[
            {
                "path": FIG_LATENCY,
                "caption": f"Waiting time (left) and serving time (right) per request of workload "
                f"{workload} as k CMPs are loaded (k = {ks}, log2 axis); both derived from "
                f"iostat await and %util. Compare paper Fig. 5 and 6 (k = {k_paper}).",
            },
            {
                "path": FIG_GROWTH,
                "caption": f"Growth factor (value at k / value at k = 1) of the waiting and "
                f"serving time of workload {workload}. Compare paper Fig. 7.",
            },
        ],
        comparison=comparison,
        tables=[
            {"title": "I/O latency per workload and k", "csv": "latency.csv"},
            {"title": "I/O latency per run", "csv": "latency_runs.csv"},
            {"title": "Setup: paper vs this run (no verdict)", "csv": "setup.csv"},
        ],
        metadata_paths=metadata_paths,
        log=log,
        notes=notes,
    )


def _iostat_interval(runs: pd.DataFrame, dirs: dict[str, Path]) -> float | None:
    """iostat's interval from the first run that has one (median spacing of its rows)."""
    for run_id in runs["run_id"].astype(str):
        df, _ = rt.load_tidy(dirs[run_id], "iostat")
        if df is None:
            continue
        for _, rows in df.groupby("device"):
            stamps = np.sort(pd.to_numeric(rows["time_epoch_s"], errors="coerce").dropna())
            if len(stamps) >= 2:
                return float(np.median(np.diff(stamps)))
    return None


def run(
    jobs_csv: str,
    runs_csv: str,
    out_dir: str,
    workload: str = DEFAULT_WORKLOAD,
    tol_pct: float = 5.0,
    paper_id: str = PAPER_ID,
) -> dict:
    jobs, runs = read_jobs(jobs_csv), read_runs(runs_csv)
    rt.one_variant(runs, runs_csv)
    known = sorted(runs["workload"].dropna().unique())
    if workload not in known:
        raise AnalysisInputError(f"--workload: {workload!r} (expected one of {', '.join(known)})")
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    dirs = rt.run_dirs(runs, runs_csv)
    paper = load_paper_values(paper_id)
    log = rt.MissingLog()
    result = analyse(jobs, runs, dirs, log)
    comparison = compare_with_paper(result, paper, workload, tol_pct)
    notes = run_checks(jobs, runs) if "jobs_per_cmp" in jobs.columns else []
    section = build_section(result, paper, comparison, runs, metadata_paths, log, workload, notes)
    rt.write_outputs(
        out_dir,
        section,
        {
            "latency.csv": result["table"],
            "latency_runs.csv": result["runs"],
            "setup.csv": setup_table(result, paper, _iostat_interval(runs, dirs)).to_csv(
                index=False, lineterminator="\n"
            ),
        },
        [
            lambda out: plot_latency(result["table"], workload, out / FIG_LATENCY),
            lambda out: plot_growth(result["table"], workload, out / FIG_GROWTH),
        ],
    )
    return result


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "experiments.io_latency_split.analysis",
        "I/O waiting and serving time while stacking CMPs (paper 000, Fig. 5-7), from the "
        "cmp_stacking runs' iostat and PSI tables.",
        jobs_help="cmp_stacking per-job table",
        runs_help="cmp_stacking runs.csv; relative paths are read from its folder, else from the current directory",
    )
    parser.add_argument(
        "--workload",
        default=DEFAULT_WORKLOAD,
        help=f"workload for the figures and verdicts (default: {DEFAULT_WORKLOAD}); the tables list every workload",
    )
    add_tol_pct(
        parser,
        "growth tolerance in percent: grows means a growth factor above 1 + PCT/100 (default: 5)",
    )
    return cli(
        parser,
        argv,
        PAPER_ID,
        lambda a: run(a.jobs, a.runs, a.out_dir, a.workload, tol_pct_arg(a.tol_pct), a.paper_id),
    )


if __name__ == "__main__":
    sys.exit(main())

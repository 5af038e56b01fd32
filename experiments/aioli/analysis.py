"""aIOLi (paper 002): server-side scheduling policies against FIFO on the striped parallel file
system, per access pattern, request size, clients, operation and applications.

Inputs: the collected jobs.csv / runs.csv of the `aioli` experiment (analysis.collect), each
run's pfs_counters.json (the data servers' counters before and after the run:
corun.testbed.pfs_runs) and the effective workflow configuration.

Metrics
  time_s            a run's execution time: the slowest client's phase time (pfs_read's
                    result_<op>_time_mean_s; the clients start together at a barrier);
  throughput_mib_s  bytes of all clients / time_s;
  speedup_pct       a policy over the baseline (aioli.baseline, the FIFO pass-through) at the
                    same point: 100 x (ratio of mean throughputs - 1), 95% CI a t-interval of
                    the per-rep log ratios (analysis.stats.paired_ratio_t, rep i of each
                    paired); norm_time is the ratio of mean execution times, CI alike; a gain
                    counts as reproduced only when its CI lies above aioli.min_speedup_pct;
  aggregation       from the translator's status file read after the run (its counters are
                    reset when the run's variant starts), summed over the servers: the
                    histograms of aggregation sizes performed and possible, the average
                    aggregation (requests per dispatch), the requests' mean waiting time
                    inside the server, the waits taken; missing, with the
                    reason, when the translator is not in the servers (translator.enabled false)
                    or its status file cannot be read;
  disk              the emulated disks' counters over the run (requests, seeks, busy time).

  python -m experiments.aioli.analysis --jobs JOBS --runs RUNS --config CONFIG --out-dir DIR
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
import yaml  # noqa: E402

from analysis import runtables as rt  # noqa: E402
from analysis.common import (  # noqa: E402
    VERDICT_DIRECTION,
    VERDICT_NOT,
    VERDICT_UNMEASURABLE,
    AnalysisInputError,
    base_parser,
    cli,
    fmt_num,
    read_csv,
    resolve_run_paths,
    run_checks,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402
from analysis.stats import paired_ratio_t, t_interval  # noqa: E402

EXPERIMENT = "aioli"
PAPER_ID = "002"
FIG_NAME = "throughput.png"
HIST_FIG = "aggregation.png"
COUNTERS_FILE = "pfs_counters.json"
TEXT = ["run_id", "job_id", "name", "kind", "policy", "pattern", "op", "disk"]
KEY = ["pattern", "op", "request_size_bytes", "clients", "apps"]
# The translator's status file (docs/schedulers/aioli.md): where each figure sits in it. The
# histograms are lists whose index k counts dispatches of k + 1 requests (the last bucket: 17 or
# more). Each run's variant start resets the counters (pfs_sched apply writes reset=1), so the
# status read after the run holds that run's counts alone.
SCHED = {
    "requests": ("counters", "requests"),  # {"read": n, "write": n}
    "dispatches": ("counters", "dispatches"),
    "performed": ("counters", "agg_performed"),
    "possible": ("counters", "agg_possible"),
    "wait_us": ("counters", "request_wait", "sum_us"),
    "waits": ("counters", "waits", "taken"),
    "waits_useful": ("counters", "waits", "aggregated"),
    "waits_timed_out": ("counters", "waits", "timed_out"),
    "starved": ("counters", "starved"),
}
# the queue's length (requests queued in the translator), sampled at each arrival: per server
# its maximum and its mean over the run (a run's figures: the largest maximum, the mean over
# all servers' samples)
QUEUE = ("counters", "queue")
# waits taken, and their outcome: an aggregation, or the wait timed out; requests sent by the
# starvation bound
WAIT_COUNTS = ("waits", "waits_useful", "waits_timed_out", "starved")
DISK = ["requests", "reads", "writes", "bytes_read", "bytes_written", "seeks", "busy_ms"]
NOT_APPLIED = "the corun/aioli translator is not in the data servers (aioli.translator.enabled: false)"


def read_config(path: str) -> dict:
    try:
        cfg = yaml.safe_load(Path(path).read_text())
        return cfg[EXPERIMENT]
    except (OSError, yaml.YAMLError, KeyError, TypeError) as exc:
        raise AnalysisInputError(
            f"{path}: no aioli section ({type(exc).__name__}) (expected the effective config)"
        ) from None


# ----------------------------------------------------------------------------- counters


def diff(after, before):
    """after - before for numbers, element- or key-wise for lists and objects; None if unmatched."""
    if isinstance(after, bool) or isinstance(before, bool):
        return None
    if isinstance(after, (int, float)) and isinstance(before, (int, float)):
        return after - before
    if isinstance(after, list) and isinstance(before, list):
        before = before + [0] * (len(after) - len(before))
        return [diff(a, b) for a, b in zip(after, before)]
    if isinstance(after, dict) and isinstance(before, dict):
        return {k: diff(v, before.get(k, 0 if isinstance(v, (int, float)) else type(v)())) for k, v in after.items()}
    return None


def field(doc, path: tuple[str, ...]):
    """doc[path[0]][path[1]]...; None where a step is missing."""
    for k in path:
        if not isinstance(doc, dict):
            return None
        doc = doc.get(k)
    return doc


def number(v) -> float | None:
    """A count: a number, or the sum of an object's numbers ({"read": n, "write": m})."""
    if isinstance(v, bool):
        return None
    if isinstance(v, (int, float)):
        return float(v)
    if isinstance(v, dict):
        xs = [x for x in v.values() if isinstance(x, (int, float)) and not isinstance(x, bool)]
        return float(sum(xs)) if xs else None
    return None


def histogram(h) -> dict[int, float]:
    """{size: count} from an object {size: count} or the translator's list (index k: size k + 1)."""
    if isinstance(h, dict):
        items = h.items()
    elif isinstance(h, list):
        items = ((k + 1, v) for k, v in enumerate(h))
    else:
        return {}
    out = {}
    for k, v in items:
        try:
            size = int(k)
        except (TypeError, ValueError):
            continue
        if size >= 1 and isinstance(v, (int, float)) and v:
            out[size] = out.get(size, 0) + float(v)
    return out


def mean_size(h: dict[int, float]) -> float:
    n = sum(h.values())
    return sum(k * v for k, v in h.items()) / n if n else math.nan


def run_counters(run_dir: Path | None, applied: bool) -> tuple[dict, dict, dict, str | None, str | None]:
    """(scheduler figures, performed histogram, possible histogram, scheduler reason, disk
    reason) of one run, and the disks' figures merged into the first."""
    out: dict = {k: math.nan for k in ("avg_aggregation", "avg_possible", "wait_mean_us", *WAIT_COUNTS)}
    out |= {k: math.nan for k in ("queue_max", "queue_mean")}
    out |= {f"sched_{k}": math.nan for k in ("requests", "dispatches")}
    out |= {f"disk_{k}": math.nan for k in DISK}
    path = None if run_dir is None else Path(run_dir) / COUNTERS_FILE
    if path is None or not path.is_file():
        why = f"{COUNTERS_FILE} absent (the servers' counters were not read)"
        return out, {}, {}, (why if applied else NOT_APPLIED), why
    try:
        doc = json.loads(path.read_text())
        before, after = doc["before"]["servers"], doc["after"]["servers"]
    except (OSError, ValueError, KeyError, TypeError):
        why = f"{COUNTERS_FILE} unreadable"
        return out, {}, {}, why, why
    perf, poss = {}, {}
    disk_why = sched_why = None
    totals = {k: 0.0 for k in DISK}
    sched_tot = {k: 0.0 for k in ("requests", "dispatches", "wait_us", *WAIT_COUNTS)}
    sched_seen = {k: False for k in sched_tot}
    queue_max, queue_sum, queue_samples = None, 0.0, 0.0
    for b, a in zip(before, after):
        if a.get("disk") and b.get("disk"):
            d = diff(a["disk"].get("counters") or {}, b["disk"].get("counters") or {}) or {}
            for k in DISK:
                if isinstance(d.get(k), (int, float)):
                    totals[k] += d[k]
        else:
            disk_why = a.get("disk_error") or b.get("disk_error") or "no disk counters"
        if not applied:
            continue
        if not a.get("sched"):
            sched_why = a.get("sched_error") or "no status file"
            continue
        s = a["sched"]  # reset at the run's start: the run's own counts
        for k in sched_tot:
            v = number(field(s, SCHED[k]))
            if v is not None:
                sched_tot[k] += v
                sched_seen[k] = True
        queue = field(s, QUEUE)
        queue = queue if isinstance(queue, dict) else {}
        if number(queue.get("max")) is not None:
            queue_max = max(queue_max or 0.0, number(queue["max"]))
        if number(queue.get("mean")) is not None and number(queue.get("samples")):
            queue_sum += number(queue["mean"]) * number(queue["samples"])
            queue_samples += number(queue["samples"])
        for size, n in histogram(field(s, SCHED["performed"])).items():
            perf[size] = perf.get(size, 0) + n
        for size, n in histogram(field(s, SCHED["possible"])).items():
            poss[size] = poss.get(size, 0) + n
    if disk_why is None:
        out |= {f"disk_{k}": totals[k] for k in DISK}
    if not applied:
        return out, {}, {}, NOT_APPLIED, disk_why
    if sched_why is None:
        if sched_seen["requests"]:
            out["sched_requests"] = sched_tot["requests"]
        if sched_seen["dispatches"]:
            out["sched_dispatches"] = sched_tot["dispatches"]
        avg = mean_size(perf)
        if not np.isfinite(avg) and sched_tot["dispatches"]:
            avg = sched_tot["requests"] / sched_tot["dispatches"]
        out["avg_aggregation"] = avg
        out["avg_possible"] = mean_size(poss)
        if sched_seen["wait_us"] and sched_tot["requests"]:
            out["wait_mean_us"] = sched_tot["wait_us"] / sched_tot["requests"]
        for k in WAIT_COUNTS:
            if sched_seen[k]:
                out[k] = sched_tot[k]
        if queue_max is not None:
            out["queue_max"] = queue_max
        if queue_samples:
            out["queue_mean"] = queue_sum / queue_samples
        if not np.isfinite(out["avg_aggregation"]):
            sched_why = "no dispatch in the status file (counters.agg_performed, counters.dispatches)"
    return out, perf, poss, sched_why, disk_why


# ----------------------------------------------------------------------------- per run


def read_runs(jobs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per run (labels, time, throughput, counters) and the histogram rows."""
    rows, hist = [], []
    for rid, g in jobs.groupby("run_id", sort=True):
        first = g.iloc[0]
        op = str(first["op"])
        tcol, bcol = f"result_{op}_time_mean_s", f"result_{op}_bytes"
        ok = g["exit_code"].eq(0).all() and tcol in g and bcol in g and g[tcol].notna().all()
        applied = str(first.get("policy_applied", "False")).lower() == "true"
        counters, perf, poss, sched_why, disk_why = run_counters(dirs.get(rid), applied)
        if sched_why:
            log.add(
                "aggregation and in-server waiting (translator counters)", sched_why, "experiments.aioli.analysis", rid
            )
        if disk_why:
            log.add("emulated disk counters", disk_why, "experiments.aioli.analysis", rid)
        time_s = float(g[tcol].max()) if ok else math.nan
        nbytes = float(g[bcol].sum()) if ok else math.nan
        rows.append(
            {
                "run_id": rid,
                "policy": first["policy"],
                "policy_applied": applied,
                "pattern": first["pattern"],
                "op": op,
                **{k: int(first[k]) for k in ("request_size_bytes", "clients", "apps", "servers", "rep")},
                "time_s": time_s,
                "bytes": nbytes,
                "throughput_mib_s": nbytes / time_s / 2**20 if ok and time_s > 0 else math.nan,
                "failed_jobs": int((~g["exit_code"].eq(0)).sum()),
                **counters,
            }
        )
        if not ok:
            log.add("throughput", "a client job failed or printed no result", "experiments.aioli.analysis", rid)
        for size in sorted(set(perf) | set(poss)):
            hist.append(
                {"run_id": rid, "size": size, "performed": perf.get(size, 0.0), "possible": poss.get(size, 0.0)}
            )
    return pd.DataFrame(rows), pd.DataFrame(hist, columns=["run_id", "size", "performed", "possible"])


# ----------------------------------------------------------------------------- points


def points(per_run: pd.DataFrame, baseline: str) -> pd.DataFrame:
    """Per (policy, pattern, op, request, clients, apps): throughput and time with 95%
    t-intervals, speed-up and normalised time against the baseline (t-intervals of the per-rep
    log ratios; rep_ratios lists the per-rep throughput ratios), aggregation and waiting means."""
    rows = []
    if per_run.empty:
        return pd.DataFrame()
    for (policy, *key), g in per_run.groupby(["policy", *KEY], sort=True):
        good = g.dropna(subset=["throughput_mib_s"]).sort_values("rep")
        lo, hi = t_interval(good["throughput_mib_s"])
        row = {
            "policy": policy,
            **dict(zip(KEY, key)),
            "policy_applied": bool(g["policy_applied"].all()),
            "n_reps": len(good),
            "throughput_mib_s": good["throughput_mib_s"].mean() if len(good) else math.nan,
            "throughput_ci95_low": lo,
            "throughput_ci95_high": hi,
            "time_s": good["time_s"].mean() if len(good) else math.nan,
            "avg_aggregation": g["avg_aggregation"].mean(),
            "avg_possible": g["avg_possible"].mean(),
            "wait_mean_us": g["wait_mean_us"].mean(),
            "queue_mean": g["queue_mean"].mean(),
            "queue_max": g["queue_max"].max(),
            **{k: g[k].mean() for k in WAIT_COUNTS},
            "disk_seeks": g["disk_seeks"].mean(),
            "disk_busy_ms": g["disk_busy_ms"].mean(),
        }
        base = per_run[
            (per_run["policy"] == baseline) & np.logical_and.reduce([per_run[k] == v for k, v in zip(KEY, key)])
        ].dropna(subset=["throughput_mib_s"])
        pair = base.merge(good, on="rep", suffixes=("_base", ""))
        if policy != baseline and len(pair):
            ratio, low, high = paired_ratio_t(pair["throughput_mib_s_base"], pair["throughput_mib_s"])
            t_ratio, t_low, t_high = paired_ratio_t(pair["time_s_base"], pair["time_s"])
            per_rep = pair["throughput_mib_s"] / pair["throughput_mib_s_base"]
            row.update(
                speedup_pct=100 * (ratio - 1),
                speedup_ci95_low=100 * (low - 1),
                speedup_ci95_high=100 * (high - 1),
                norm_time=t_ratio,
                norm_time_ci95_low=t_low,
                norm_time_ci95_high=t_high,
                n_pairs=len(pair),
                rep_ratios=" ".join(f"{x:.3g}" for x in per_rep),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def histogram_table(per_run: pd.DataFrame, hist: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, op, pattern, ...) and aggregation size: % of the aggregations performed and
    possible of that size (the slides' performed/possible histogram), over the reps."""
    if hist.empty:
        return pd.DataFrame(columns=["policy", *KEY, "size", "performed_pct", "possible_pct"])
    h = hist.merge(per_run[["run_id", "policy", *KEY]], on="run_id")
    rows = []
    for (policy, *key), g in h.groupby(["policy", *KEY], sort=True):
        by = g.groupby("size")[["performed", "possible"]].sum()
        tp, tq = by["performed"].sum(), by["possible"].sum()
        for size, r in by.iterrows():
            rows.append(
                {
                    "policy": policy,
                    **dict(zip(KEY, key)),
                    "size": int(size),
                    "performed_pct": 100 * r["performed"] / tp if tp else math.nan,
                    "possible_pct": 100 * r["possible"] / tq if tq else math.nan,
                }
            )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- comparison


MIN_SPEEDUP_PCT = 1.0  # aioli.min_speedup_pct's default


def compare(pts: pd.DataFrame, paper: dict, baseline: str, min_pct: float = MIN_SPEEDUP_PCT) -> pd.DataFrame:
    v = experiment_values(paper, EXPERIMENT)
    vals, claims = v["values"], v["claims"]
    rows = []
    rule = f"reproduced only when the 95% CI lies above +{fmt_num(min_pct)} % (aioli.min_speedup_pct)"
    applied = bool(len(pts)) and bool(pts["policy_applied"].all())
    why_not = NOT_APPLIED + ": every run is the stock FIFO server, whatever its policy label"

    def agg_of(policy: str, op: str) -> float:
        if pts.empty:
            return math.nan
        sub = pts[(pts["policy"] == policy) & (pts["op"] == op)]
        return float(sub["avg_aggregation"].mean()) if len(sub) else math.nan

    for op in ("write", "read"):
        m = agg_of("aioli", op)
        ok = np.isfinite(m)
        rows.append(
            {
                "quantity": f"average aggregation of aioli, {op}s",
                "paper_value": vals[f"avg_aggregation_{op}_reqs"]["value"],
                "measured_value": round(m, 3) if ok else None,
                "unit": "requests",
                "verdict": (VERDICT_DIRECTION if m > 1 else VERDICT_NOT) if ok else VERDICT_UNMEASURABLE,
                "note": "mean over the aioli points of this operation; reproduced in direction when aioli "
                "aggregates (> 1 request per dispatch)"
                if ok
                else (why_not if not applied else f"no aioli {op} runs with the translator's counters"),
            }
        )
    for op in ("write", "read"):
        a, b = agg_of("app_aware", op), agg_of("aioli", op)
        ok = np.isfinite(a) and np.isfinite(b) and b > 0
        rows.append(
            {
                "quantity": f"average aggregation of app_aware, {op}s",
                "paper_value": vals[f"app_aware_aggregation_{op}_reqs"]["value"],
                "measured_value": round(a, 3) if np.isfinite(a) else None,
                "unit": "requests",
                "verdict": (VERDICT_DIRECTION if a > b else VERDICT_NOT) if ok else VERDICT_UNMEASURABLE,
                "note": f"aioli: {fmt_num(b)}" if ok else (why_not if not applied else "needs app_aware and aioli"),
            }
        )
        rows.append(
            {
                "quantity": f"app_aware over aioli, average aggregation, {op}s",
                "paper_value": vals[f"app_aware_increase_{op}_pct"]["value"],
                "measured_value": round(100 * (a / b - 1), 3) if ok else None,
                "unit": "%",
                "verdict": (VERDICT_DIRECTION if a > b else VERDICT_NOT) if ok else VERDICT_UNMEASURABLE,
                "note": "" if ok else (why_not if not applied else "needs app_aware and aioli runs"),
            }
        )
    ai = pts[pts["policy"] == "aioli"].dropna(subset=["speedup_pct"]) if "speedup_pct" in pts else pd.DataFrame()
    best = ai.loc[ai["speedup_pct"].idxmax()].to_dict() if len(ai) else None
    rows.append(
        {
            "quantity": f"best performance gain of aioli over {baseline}",
            "paper_value": vals["max_gain_pct"]["value"],
            "measured_value": None if best is None else round(best["speedup_pct"], 3),
            "unit": "%",
            "verdict": VERDICT_UNMEASURABLE
            if best is None or not applied
            else VERDICT_DIRECTION
            if best["speedup_pct"] > min_pct and best["speedup_ci95_low"] > min_pct
            else VERDICT_NOT,
            "note": (
                why_not + "; the figure is the A/A noise between identical servers" if best is not None else why_not
            )
            if not applied
            else "no aioli point beside the baseline"
            if best is None
            else f"{best['pattern']} {best['op']}s, {int(best['request_size_bytes']) // 1024} KiB, "
            f"{int(best['clients'])} clients, {int(best['apps'])} app(s); 95% CI "
            f"[{fmt_num(best['speedup_ci95_low'])}, {fmt_num(best['speedup_ci95_high'])}] %, "
            f"per-rep ratios {best['rep_ratios']}; {rule}",
        }
    )
    rows.append(
        {
            "quantity": "claim: " + claims["reorder_and_aggregate_gain"]["statement"],
            "paper_value": "yes",
            "measured_value": None if ai.empty else f"{int((ai['speedup_pct'] > 0).sum())} of {len(ai)} points > 0",
            "unit": "points",
            "verdict": VERDICT_UNMEASURABLE
            if ai.empty or not applied
            else VERDICT_DIRECTION
            if (ai["speedup_ci95_low"] > min_pct).sum() > len(ai) / 2
            else VERDICT_NOT,
            "note": why_not
            if not applied
            else f"reproduced when most points' CI lies above +{fmt_num(min_pct)} % (aioli.min_speedup_pct)",
        }
    )
    sub = pts[pts["policy"] == "aioli"].dropna(subset=["avg_aggregation", "avg_possible"]) if len(pts) else pts
    rows.append(
        {
            "quantity": "claim: " + claims["aggregation_below_possible"]["statement"],
            "paper_value": "yes",
            "measured_value": None
            if sub.empty
            else f"performed {fmt_num(sub['avg_aggregation'].mean())}, possible {fmt_num(sub['avg_possible'].mean())}",
            "unit": "requests",
            "verdict": VERDICT_UNMEASURABLE
            if sub.empty
            else VERDICT_DIRECTION
            if sub["avg_aggregation"].mean() < sub["avg_possible"].mean()
            else VERDICT_NOT,
            "note": (why_not if not applied else "needs both histograms in the status file") if sub.empty else "",
        }
    )
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- figures


def plot(pts: pd.DataFrame, out: Path, baseline: str) -> None:
    fig, ax = plt.subplots(figsize=(8, 3.5))
    if len(pts) and "speedup_pct" in pts:
        sub = pts.dropna(subset=["speedup_pct"])
        labels = [
            f"{r.pattern[:3]} {r.op[0]} {r.request_size_bytes // 1024}K c{r.clients} a{r.apps}"
            for r in sub.itertuples()
        ]
        x = np.arange(len(sub))
        err = np.vstack([sub["speedup_pct"] - sub["speedup_ci95_low"], sub["speedup_ci95_high"] - sub["speedup_pct"]])
        colors = {p: f"C{i}" for i, p in enumerate(sorted(sub["policy"].unique()))}
        # the CI is of the per-rep ratios, the bar the ratio of the means: a bar may lie outside it
        ax.bar(
            x,
            sub["speedup_pct"],
            yerr=np.clip(np.nan_to_num(err), 0, None),
            capsize=2,
            color=[colors[p] for p in sub["policy"]],
        )
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
        for p, c in colors.items():
            ax.bar([], [], color=c, label=p)
        ax.legend(fontsize=7)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylabel(f"throughput gain over {baseline} (%)")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_hist(hist: pd.DataFrame, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(6, 3))
    if len(hist):
        by = hist.groupby("size")[["performed_pct", "possible_pct"]].mean()
        x = np.arange(len(by))
        ax.bar(x - 0.2, by["performed_pct"], 0.4, label="performed")
        ax.bar(x + 0.2, by["possible_pct"], 0.4, label="possible")
        ax.set_xticks(x, [str(s) for s in by.index])
        ax.legend()
    else:
        ax.text(0.5, 0.5, "no translator counters", ha="center", va="center", transform=ax.transAxes)
    ax.set_xlabel("aggregation size (requests)")
    ax.set_ylabel("% of aggregations")
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


# ----------------------------------------------------------------------------- section


def run(jobs_csv: str, runs_csv: str, config: str, out_dir: str, paper_id: str) -> dict:
    sec = read_config(config)
    baseline = sec.get("baseline", "pfs_fifo")
    jobs = read_csv(jobs_csv, TEXT)
    runs = read_csv(runs_csv, ["run_id", "variant"])
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    dirs = rt.run_dirs(runs, runs_csv)
    log = rt.MissingLog()
    per_run, hist_rows = read_runs(jobs, dirs, log)
    pts = points(per_run, baseline)
    hist = histogram_table(per_run, hist_rows)
    paper = load_paper_values(paper_id)
    min_pct = float(sec.get("min_speedup_pct", MIN_SPEEDUP_PCT))
    comparison = compare(pts, paper, baseline, min_pct)
    applied = bool(len(per_run)) and bool(per_run["policy_applied"].all())
    disk = sec.get("disk", {})
    summary = [
        f"{len(per_run)} run(s) at {len(pts)} (policy, pattern, operation, request size, clients, applications) "
        f"point(s) on {sec.get('servers', '?')} data servers; clients: kernels/pfs_read with MPI-IO Test's layouts "
        "(--rank/--ranks, strided = IOR's segmented layout with one request per block), meeting at a barrier "
        "before their first request; bricks: "
        + (
            f"ext4 on an emulated rotating disk each ({disk.get('preset', 'sata_7200_2010')}, stroke "
            f"{disk.get('stroke', '?')})"
            if disk.get("backend", "rotating_disk") == "rotating_disk"
            else f"backend {disk.get('backend')}"
        )
        + (", opened with O_DIRECT (posix o-direct)" if disk.get("o_direct", True) else "")
        + ".",
        "The policies were applied by the corun/aioli translator (pfs_sched variants)."
        if applied
        else "The corun/aioli translator was not in the data servers (aioli.translator.enabled: false): every "
        "run is the stock server, so the policy columns are an A/A comparison that shows the noise level, "
        "and aggregation and in-server waiting are missing.",
    ]
    notes = [
        f"speedup_pct: 100 x (mean throughput of the policy / mean of {baseline} - 1) at the same point; "
        "norm_time: mean execution time over the baseline's; 95% CIs: t-intervals of the per-rep log ratios, "
        "exponentiated (rep i of each policy ran in the same repetition block; analysis.stats.paired_ratio_t).",
        f"A gain is 'reproduced in direction' only when its CI lies above +{fmt_num(min_pct)} % "
        "(aioli.min_speedup_pct). The best gain is the largest over the points, so it is read with its "
        "per-rep ratios: one rep in which FIFO happened to interleave the streams badly gives a large mean "
        "and a wide CI.",
        "Execution time is the slowest client's; throughput is all clients' bytes over it.",
        "Aggregation figures are the translator's counters' differences over each run, summed over the "
        "servers; the average aggregation is the performed histogram's mean size (requests per dispatch "
        "without one).",
        "The translator's own counters per run: queue_max (the most requests queued in one server), "
        "queue_mean (requests queued, sampled at each arrival, over all servers), waits taken and their "
        "outcome (waits_useful: ended by an aggregation; waits_timed_out), starved (requests sent by the "
        "starvation bound); a point's figures are the means over its reps (queue_max: the largest).",
        *(n.strip() for n in paper.get("notes", [])),
        *run_checks(jobs, runs),
    ]
    section = rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=[
            {
                "path": FIG_NAME,
                "caption": f"Throughput gain over {baseline} per point (pattern, operation, request size, clients, "
                "applications); error bars: 95% CI of the per-rep log ratios (t-interval).",
            },
            {
                "path": HIST_FIG,
                "caption": "Aggregation sizes performed and possible (% of aggregations), over all points.",
            },
        ],
        comparison=comparison,
        tables=[
            {"title": f"Throughput, time and aggregation per point, against {baseline}", "csv": "points.csv"},
            {"title": "Aggregation sizes performed and possible", "csv": "aggregation.csv"},
            {"title": "Runs, with the translator's and the disks' counters", "csv": "runs_table.csv"},
        ],
        metadata_paths=metadata_paths,
        log=log,
        notes=notes,
    )
    rt.write_outputs(
        out_dir,
        section,
        {"points.csv": pts, "aggregation.csv": hist, "runs_table.csv": per_run},
        [lambda out: plot(pts, out / FIG_NAME, baseline), lambda out: plot_hist(hist, out / HIST_FIG)],
    )
    return {"points": pts, "histogram": hist, "comparison": comparison, "per_run": per_run}


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "experiments.aioli.analysis", "aIOLi (paper 002): server-side scheduling policies against FIFO."
    )
    parser.add_argument("--config", required=True, metavar="YAML", help="the effective workflow config")
    return cli(parser, argv, PAPER_ID, lambda a: run(a.jobs, a.runs, a.config, a.out_dir, a.paper_id))


if __name__ == "__main__":
    sys.exit(main())

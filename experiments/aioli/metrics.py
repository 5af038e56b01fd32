"""The metrics of paper 002's experiment, from the collected runs and each run's
pfs_counters.json (the data servers' counters before and after the run: corun.testbed.pfs_runs).

Metrics
  time_s            a run's execution time: the slowest client's phase time (pfs_read's
                    result_<op>_time_mean_s; the clients start together at a barrier);
  throughput_mib_s  bytes of all clients / time_s;
  failed            a client that did not exit 0 or printed no result; an app_aware run whose
                    servers had no trace to predict from (it schedules as aioli without waits);
  avg_aggregation   requests per dispatch performed: the mean size of the translator's
                    agg_performed histogram, summed over the servers (its counters are reset
                    when the run's variant starts, so the status read after the run holds that
                    run's counts alone);
  avg_possible      requests per aggregation the arrivals allowed: the mean size of
                    agg_possible_arrivals (contiguous requests of one file and operation, each
                    within app_wait_max_us of the run's latest member, within max_agg_kib;
                    counted whatever the policy decides: docs/schedulers/aioli.md);
  avg_queued        the mean size of agg_possible (the contiguous requests queued around each
                    dispatch, the dispatched ones included: never below avg_aggregation);
  waiting           the requests' mean time inside the server, waits taken and their outcome,
                    requests sent by the starvation bound, the queue's length;
  disk              the emulated disks' counters over the run (requests, seeks, busy time).
  point             (policy, pattern, op, request size, clients, apps): means over the reps, for
                    reading; the claims are judged on the runs, paired by rep.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.stats import CONFIDENCE, paired_ratio_t, t_interval

SOURCE = "experiments.aioli.metrics"
COUNTERS_FILE = "pfs_counters.json"
KEY = ["pattern", "op", "request_size_bytes", "clients", "apps"]
# The translator's status file (docs/schedulers/aioli.md): where each figure sits in it. The
# histograms are lists whose index k counts aggregations of k + 1 requests (the last bucket: 17
# or more).
SCHED = {
    "requests": ("counters", "requests"),  # {"read": n, "write": n}
    "dispatches": ("counters", "dispatches"),
    "performed": ("counters", "agg_performed"),
    "queued": ("counters", "agg_possible"),
    "possible": ("counters", "agg_possible_arrivals"),
    "wait_us": ("counters", "request_wait", "sum_us"),
    "waits": ("counters", "waits", "taken"),
    "waits_useful": ("counters", "waits", "aggregated"),
    "waits_timed_out": ("counters", "waits", "timed_out"),
    "starved": ("counters", "starved"),
}
HISTOGRAMS = ("performed", "possible", "queued")
# the queue's length (requests queued in the translator), sampled at each arrival: per server
# its maximum and its mean over the run (a run's figures: the largest maximum, the mean over
# all servers' samples)
QUEUE = ("counters", "queue")
WAIT_COUNTS = ("waits", "waits_useful", "waits_timed_out", "starved")
DISK = ["requests", "reads", "writes", "bytes_read", "bytes_written", "seeks", "busy_ms"]
NOT_APPLIED = "the corun/aioli translator is not in the data servers (aioli.translator.enabled: false)"
AGG_COLUMNS = ["run_id", "policy", "policy_applied", *KEY, "rep", "measure", "avg_reqs", "failed", "failed_reason"]


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


def field_at(doc, path: tuple[str, ...]):
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


@dataclass
class RunCounters:
    """One run's figures from its servers' counters, its histograms, and why some are missing."""

    figures: dict
    hists: dict = field(default_factory=lambda: {h: {} for h in HISTOGRAMS})
    sched_why: str | None = None
    disk_why: str | None = None
    trace_entries: float | None = None  # the fewest over the servers (app_aware's trace)
    trace_error: str | None = None


def _empty_figures() -> dict:
    out = {k: math.nan for k in ("avg_aggregation", "avg_possible", "avg_queued", "wait_mean_us", *WAIT_COUNTS)}
    out |= {k: math.nan for k in ("queue_max", "queue_mean")}
    out |= {f"sched_{k}": math.nan for k in ("requests", "dispatches")}
    return out | {f"disk_{k}": math.nan for k in DISK}


def run_counters(run_dir: Path | None, applied: bool) -> RunCounters:
    """The scheduler's and the disks' figures of one run, summed over its servers."""
    rc = RunCounters(_empty_figures())
    path = None if run_dir is None else Path(run_dir) / COUNTERS_FILE
    if path is None or not path.is_file():
        why = f"{COUNTERS_FILE} absent (the servers' counters were not read)"
        rc.sched_why, rc.disk_why = (why if applied else NOT_APPLIED), why
        return rc
    try:
        doc = json.loads(path.read_text())
        before, after = doc["before"]["servers"], doc["after"]["servers"]
    except (OSError, ValueError, KeyError, TypeError):
        rc.sched_why = rc.disk_why = f"{COUNTERS_FILE} unreadable"
        return rc
    out = rc.figures
    totals = {k: 0.0 for k in DISK}
    sched_tot = {k: 0.0 for k in ("requests", "dispatches", "wait_us", *WAIT_COUNTS)}
    seen = {k: False for k in sched_tot}
    queue_max, queue_sum, queue_samples = None, 0.0, 0.0
    for b, a in zip(before, after):
        if a.get("disk") and b.get("disk"):
            d = diff(a["disk"].get("counters") or {}, b["disk"].get("counters") or {}) or {}
            for k in DISK:
                if isinstance(d.get(k), (int, float)):
                    totals[k] += d[k]
        else:
            rc.disk_why = a.get("disk_error") or b.get("disk_error") or "no disk counters"
        if not applied:
            continue
        if not a.get("sched"):
            rc.sched_why = a.get("sched_error") or "no status file"
            continue
        s = a["sched"]  # reset at the run's start: the run's own counts
        entries = number(s.get("trace_entries"))
        if entries is not None:
            rc.trace_entries = entries if rc.trace_entries is None else min(rc.trace_entries, entries)
        if s.get("trace_error"):
            rc.trace_error = f"{a.get('name', 'a server')}: {s['trace_error']}"
        for k in sched_tot:
            v = number(field_at(s, SCHED[k]))
            if v is not None:
                sched_tot[k] += v
                seen[k] = True
        queue = field_at(s, QUEUE)
        queue = queue if isinstance(queue, dict) else {}
        if number(queue.get("max")) is not None:
            queue_max = max(queue_max or 0.0, number(queue["max"]))
        if number(queue.get("mean")) is not None and number(queue.get("samples")):
            queue_sum += number(queue["mean"]) * number(queue["samples"])
            queue_samples += number(queue["samples"])
        for h in HISTOGRAMS:
            for size, n in histogram(field_at(s, SCHED[h])).items():
                rc.hists[h][size] = rc.hists[h].get(size, 0) + n
    if rc.disk_why is None:
        out |= {f"disk_{k}": totals[k] for k in DISK}
    if not applied:
        rc.sched_why, rc.hists = NOT_APPLIED, {h: {} for h in HISTOGRAMS}
        return rc
    if rc.sched_why is None:
        for k in ("requests", "dispatches"):
            if seen[k]:
                out[f"sched_{k}"] = sched_tot[k]
        avg = mean_size(rc.hists["performed"])
        if not np.isfinite(avg) and sched_tot["dispatches"]:
            avg = sched_tot["requests"] / sched_tot["dispatches"]
        out["avg_aggregation"] = avg
        out["avg_possible"] = mean_size(rc.hists["possible"])
        out["avg_queued"] = mean_size(rc.hists["queued"])
        if seen["wait_us"] and sched_tot["requests"]:
            out["wait_mean_us"] = sched_tot["wait_us"] / sched_tot["requests"]
        for k in WAIT_COUNTS:
            if seen[k]:
                out[k] = sched_tot[k]
        if queue_max is not None:
            out["queue_max"] = queue_max
        if queue_samples:
            out["queue_mean"] = queue_sum / queue_samples
        if not np.isfinite(out["avg_aggregation"]):
            rc.sched_why = "no dispatch in the status file (counters.agg_performed, counters.dispatches)"
    return rc


def failure(policy: str, g: pd.DataFrame, ok: bool, rc: RunCounters) -> str:
    """Why a run failed, or ""."""
    reasons = []
    if not ok:
        bad = int((~g["exit_code"].eq(0)).sum())
        reasons.append(f"{bad or 'a'} client(s) of {len(g)} failed or printed no result")
    if policy == "app_aware" and rc.trace_error:
        reasons.append(f"app_aware's trace could not be read ({rc.trace_error})")
    elif policy == "app_aware" and rc.trace_entries == 0:
        reasons.append("app_aware ran without a trace (trace_entries 0): it schedules as aioli without waits")
    return "; ".join(reasons)


def read_runs(jobs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog) -> tuple[pd.DataFrame, pd.DataFrame]:
    """One row per run (labels, time, throughput, failed and why, counters) and the histogram rows."""
    rows, hist = [], []
    for rid, g in jobs.groupby("run_id", sort=True):
        first = g.iloc[0]
        op = str(first["op"])
        tcol, bcol = f"result_{op}_time_mean_s", f"result_{op}_bytes"
        ok = bool(g["exit_code"].eq(0).all() and tcol in g and bcol in g and g[tcol].notna().all())
        applied = str(first.get("policy_applied", "False")).lower() == "true"
        rc = run_counters(dirs.get(rid), applied)
        if rc.sched_why:
            log.add("aggregation and in-server waiting (translator counters)", rc.sched_why, SOURCE, rid)
        if rc.disk_why:
            log.add("emulated disk counters", rc.disk_why, SOURCE, rid)
        why = failure(str(first["policy"]), g, ok, rc)
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
                "failed": bool(why),
                "failed_reason": why,
                "trace_entries": rc.trace_entries if rc.trace_entries is not None else math.nan,
                **rc.figures,
            }
        )
        sizes = sorted(set().union(*(rc.hists[h] for h in HISTOGRAMS)))
        hist += [{"run_id": rid, "size": s, **{h: rc.hists[h].get(s, 0.0) for h in HISTOGRAMS}} for s in sizes]
    return pd.DataFrame(rows), pd.DataFrame(hist, columns=["run_id", "size", *HISTOGRAMS])


def aggregation_rows(per_run: pd.DataFrame) -> pd.DataFrame:
    """Two rows per run, the requests per aggregation performed and possible (the arrivals'), for
    a claim that compares them paired within the run's rep."""
    if per_run.empty:
        return pd.DataFrame(columns=AGG_COLUMNS)
    base = per_run[["run_id", "policy", "policy_applied", *KEY, "rep", "failed", "failed_reason"]]
    parts = [base.assign(measure=m, avg_reqs=per_run[col]) for m, col in (("performed", "avg_aggregation"),
                                                                        ("possible", "avg_possible"))]  # fmt: skip
    return pd.concat(parts, ignore_index=True)[AGG_COLUMNS]


def points(per_run: pd.DataFrame, baseline: str, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per (policy, pattern, op, request, clients, apps), over its runs that did not fail:
    throughput and time with t-intervals, the speed-up and normalised time against the baseline
    (t-intervals of the per-rep log ratios), all at `confidence` (the verdicts' level of the
    look), aggregation and waiting means. For reading and the figure: the claims are judged by
    the engine on the runs."""
    rows = []
    if per_run.empty:
        return pd.DataFrame()
    good_runs = per_run[~per_run["failed"]]
    for (policy, *key), g in per_run.groupby(["policy", *KEY], sort=True):
        good = g[~g["failed"]].dropna(subset=["throughput_mib_s"]).sort_values("rep")
        lo, hi = t_interval(good["throughput_mib_s"], confidence)
        row = {
            "policy": policy,
            **dict(zip(KEY, key)),
            "policy_applied": bool(g["policy_applied"].all()),
            "n_reps": len(good),
            "n_failed": int(g["failed"].sum()),
            "throughput_mib_s": good["throughput_mib_s"].mean() if len(good) else math.nan,
            "throughput_ci_low": lo,
            "throughput_ci_high": hi,
            "ci_level": confidence,
            "time_s": good["time_s"].mean() if len(good) else math.nan,
            "avg_aggregation": g["avg_aggregation"].mean(),
            "avg_possible": g["avg_possible"].mean(),
            "avg_queued": g["avg_queued"].mean(),
            "wait_mean_us": g["wait_mean_us"].mean(),
            "queue_mean": g["queue_mean"].mean(),
            "queue_max": g["queue_max"].max(),
            **{k: g[k].mean() for k in WAIT_COUNTS},
            "disk_seeks": g["disk_seeks"].mean(),
            "disk_busy_ms": g["disk_busy_ms"].mean(),
        }
        same = np.logical_and.reduce([good_runs[k] == v for k, v in zip(KEY, key)])
        base = good_runs[(good_runs["policy"] == baseline) & same].dropna(subset=["throughput_mib_s"])
        pair = base.merge(good, on="rep", suffixes=("_base", ""))
        if policy != baseline and len(pair):
            ratio, low, high = paired_ratio_t(pair["throughput_mib_s_base"], pair["throughput_mib_s"], confidence)
            t_ratio, t_low, t_high = paired_ratio_t(pair["time_s_base"], pair["time_s"], confidence)
            per_rep = pair["throughput_mib_s"] / pair["throughput_mib_s_base"]
            row.update(
                speedup_pct=100 * (ratio - 1),
                speedup_ci_low=100 * (low - 1),
                speedup_ci_high=100 * (high - 1),
                norm_time=t_ratio,
                norm_time_ci_low=t_low,
                norm_time_ci_high=t_high,
                n_pairs=len(pair),
                rep_ratios=" ".join(f"{x:.3g}" for x in per_rep),
            )
        rows.append(row)
    return pd.DataFrame(rows)


def histogram_table(per_run: pd.DataFrame, hist: pd.DataFrame) -> pd.DataFrame:
    """Per point and aggregation size: % of the aggregations performed, possible (the arrivals')
    and queued of that size (the slides' performed/possible histogram), over the reps."""
    cols = ["policy", *KEY, "size", "performed_pct", "possible_pct", "queued_pct"]
    if hist.empty:
        return pd.DataFrame(columns=cols)
    h = hist.merge(per_run[["run_id", "policy", *KEY]], on="run_id")
    rows = []
    for (policy, *key), g in h.groupby(["policy", *KEY], sort=True):
        by = g.groupby("size")[list(HISTOGRAMS)].sum()
        tot = {c: by[c].sum() for c in HISTOGRAMS}
        for size, r in by.iterrows():
            rows.append(
                {
                    "policy": policy,
                    **dict(zip(KEY, key)),
                    "size": int(size),
                    **{f"{c}_pct": 100 * r[c] / tot[c] if tot[c] else math.nan for c in HISTOGRAMS},
                }
            )
    return pd.DataFrame(rows, columns=cols)

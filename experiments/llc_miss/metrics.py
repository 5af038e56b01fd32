"""The metrics of the llc_miss section (paper 000, Sec. 2.3.2, Figs. 2-3): per run, per group and
rep, and the comparison with cmp_stacking's I/O degradation. Metrics only; the claims are judged
by analysis.verdicts from the evidence tables built here.

Definitions
  valid job        exit code 0, self-check 'ok', a finite positive result_elapsed_s (the kernel's
                   timed passes: start-up and the first touch of the arrays left out).
  failed run       a run with a job that is not valid, or with no job: its mean would leave out
                   the slow or broken copies, so it is marked failed (failed, failed_reason) and
                   every claim that reads it says so.
  time_s           per run, the mean result_elapsed_s of its jobs.
  cc_cost_pct      per group (nops), k > 1 and rep: 100 x (time_s at k / time_s at k = 1), both
                   runs of the same rep (paper eq. 1 as a percentage: the CC cost of Fig. 2).
  accesses_per_s_per_cmp
                   per k = 1 run: the sum of result_accesses_per_s over one CMP's jobs, mean over
                   its CMPs. Each access is one row copy b[i][0] = a[i][0]: a read miss and a write
                   miss once the arrays exceed the LLC. The kernel counts it itself: no PMU needed.
  llc_misses_per_cycle_per_cmp
                   per k = 1 run: (LLC-load-misses + LLC-store-misses) per second over cycles per
                   second per busy CPU (cycles / jobs_per_cmp): the misses of the one loaded CMP
                   per cycle of one of its cores. perf counts system-wide; totals over the run's
                   intervals (0 < t_s <= duration_s) in which all three events were counted.
                   Missing, with perf's own reason, where perf cannot count them (a VM without a
                   PMU): never filled in. A k = 1 run shorter than MIN_PERF_INTERVALS monitor
                   intervals is failed with that reason (analysis.run_length), never pooled; the
                   plan sizes the k = 1 runs to llc_miss.min_intervals (experiments/llc_miss/
                   experiment.py), their jobs repeated, and only each slot's first copy enters
                   accesses_per_s_per_cmp.
  io_degradation_pct
                   cmp_stacking's 100 x (normalized_runtime - 1) of a workload at k, read from its
                   analysis/normalized_runtime.csv: a point value (its reps are not published).
  cc_minus_half_io_pp
                   per rep and cmp_stacking workload at the same k: cc_cost_pct - FAR_BELOW x
                   io_degradation_pct, percentage points; below 0: the CC cost is below half the
                   I/O degradation ("far below"). The I/O side enters as its point value: only
                   the CC cost's spread over reps makes the interval.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.common import AnalysisInputError, read_csv
from analysis.run_length import short_run_reason
from analysis.stats import t_interval
from corun.monitors.perf import derive_perf_rates

SOURCE = "experiments.llc_miss.metrics"
MISS = "llc_misses_per_cycle_per_cmp"
ACCESS = "accesses_per_s_per_cmp"
PERF_EVENTS = ("LLC-load-misses", "LLC-store-misses", "cycles")
FAR_BELOW = 0.5  # "far below": under half the I/O degradation
TIME = "result_elapsed_s"
# perf intervals a k = 1 run lasts at least for its miss rate (analysis.run_length; the plan sizes
# the k = 1 runs to llc_miss.min_intervals)
MIN_PERF_INTERVALS = 3

# a run's access and LLC miss rates with the perf intervals behind them: in the per-run and the k = 1 tables
RATE_COLUMNS = [ACCESS, "n_perf_intervals", "llc_misses_per_s", "cycles_per_s", MISS]
RUN_COLUMNS = [
    "run_id",
    "nops",
    "k",
    "rep",
    "jobs_per_cmp",
    "n_jobs",
    "n_failed",
    "time_s",
    *RATE_COLUMNS,
    "failed",
    "failed_reason",
    "miss_reason",
]
COST_COLUMNS = ["nops", "k", "rep", "run_id", "t1_s", "tk_s", "cc_cost_pct", ACCESS, MISS, "failed", "failed_reason"]
IO_COLUMNS = [
    "nops",
    "k",
    "rep",
    "workload",
    "run_id",
    "cc_cost_pct",
    "io_degradation_pct",
    "cc_minus_half_io_pp",
    "failed",
    "failed_reason",
]


# ----------------------------------------------------------------------------- per run


def _int(v, default: int = 0) -> int:
    x = rt.number_or_none(v)
    return int(x) if x is not None else default


def _job_problem(jobs: pd.DataFrame) -> pd.Series:
    """Per job: why it is not valid ('' when it is)."""
    code = pd.to_numeric(jobs["exit_code"], errors="coerce")
    check = jobs["result_check"].fillna("").astype(str) if "result_check" in jobs else pd.Series("", jobs.index)
    t = pd.to_numeric(jobs[TIME], errors="coerce") if TIME in jobs else pd.Series(math.nan, jobs.index)
    out = pd.Series("", index=jobs.index, dtype=object)
    out[~(t > 0)] = f"no {TIME}"
    out[check != "ok"] = "self-check " + check[check != "ok"].replace("", "absent")
    out[code != 0] = "exit code " + code[code != 0].astype("Int64").astype(str)
    return out


def _perf_reason(meta: dict) -> str | None:
    """perf's own reason for a missing LLC/cycles event, from the run's metadata."""
    by_reason: dict[str, list[str]] = {}
    for entry in meta.get("missing") or []:
        if isinstance(entry, dict) and entry.get("metric") in PERF_EVENTS:
            by_reason.setdefault(str(entry.get("reason")), []).append(str(entry["metric"]))
    if not by_reason:
        return None
    return "; ".join(f"{', '.join(events)}: {reason}" for reason, events in by_reason.items())


def miss_rate(run_dir: Path | None, duration_s: float | None, meta: dict, jpc: int) -> dict:
    """One k = 1 run's LLC misses per cycle per CMP (see the module doc), or why it is missing."""
    out = {"n_perf_intervals": 0, "llc_misses_per_s": math.nan, "cycles_per_s": math.nan, MISS: math.nan}
    df, why = rt.load_tidy(run_dir, "perf") if run_dir is not None else (None, "no run folder")
    if df is None:
        out["miss_reason"] = _perf_reason(meta) or why
        return out
    rates = derive_perf_rates(rt.in_run(df, duration_s))
    ok = rates[rates["llc_misses_per_s"].notna() & (rates["cycles_per_s"] > 0) & (rates["interval_s"] > 0)]
    if ok.empty:
        out["miss_reason"] = _perf_reason(meta) or (
            "perf counted LLC-load-misses, LLC-store-misses and cycles in no interval of the run"
        )
        return out
    seconds = ok["interval_s"].sum()
    misses = float((ok["llc_misses_per_s"] * ok["interval_s"]).sum() / seconds)
    cycles = float((ok["cycles_per_s"] * ok["interval_s"]).sum() / seconds)
    out.update(n_perf_intervals=len(ok), llc_misses_per_s=misses, cycles_per_s=cycles, miss_reason="")
    out[MISS] = misses / (cycles / jpc)
    return out


def per_run(
    jobs: pd.DataFrame,
    runs: pd.DataFrame,
    run_dirs: dict[str, Path],
    metas: dict[str, dict],
    log: rt.MissingLog,
) -> pd.DataFrame:
    """One row per run: labels, time_s, the k = 1 runs' access and miss rates, failed and why."""
    for col in ("exit_code", TIME):
        if col not in jobs.columns:
            raise AnalysisInputError(f"jobs.csv: columns: {col} absent (expected the llc_miss kernel's jobs)")
    problem = _job_problem(jobs)
    rows = []
    for run in rt.records(runs):
        rid = str(run["run_id"])
        js = jobs[jobs["run_id"].astype(str) == rid]
        bad = problem.loc[js.index]
        bad = bad[bad != ""]
        jpc = _int(js["jobs_per_cmp"].iloc[0] if len(js) and "jobs_per_cmp" in js else run.get("jobs_per_cmp"), 1)
        reason = "no job" if js.empty else ""
        if len(bad):
            reason = f"{len(bad)} of {len(js)} jobs failed ({'; '.join(sorted(set(bad))[:2])})"
        row = {
            "run_id": rid,
            "nops": _int(run["nops"]),
            "k": _int(run["k"], 1),
            "rep": _int(run["rep"]),
            "jobs_per_cmp": jpc,
            "n_jobs": len(js),
            "n_failed": len(bad),
            "time_s": float(pd.to_numeric(js[TIME], errors="coerce").mean()) if len(js) and not reason else math.nan,
            ACCESS: math.nan,
            "failed": bool(reason),
            "failed_reason": reason,
            "miss_reason": "",
        }
        if row["k"] == 1:
            short = short_run_reason(run, MIN_PERF_INTERVALS, "perf")
            if short:  # its miss rate would rest on too few intervals: failed, never pooled
                row.update(failed=True, failed_reason="; ".join(filter(None, [reason, short])))
            if len(js) and not reason:
                # a slot's copies run one after another (corun.run.run_length): the first counts
                first = js[pd.to_numeric(js["repeat"], errors="coerce").fillna(0) == 0] if "repeat" in js else js
                per_cmp = first.groupby("cmp")["result_accesses_per_s"].sum(min_count=1)
                row[ACCESS] = float(per_cmp.mean())
            row.update(miss_rate(run_dirs.get(rid), rt.number_or_none(run.get("duration_s")), metas.get(rid, {}), jpc))
            if row["miss_reason"]:
                log.add(MISS, row["miss_reason"], SOURCE, rid)
        rows.append(row)
    out = pd.DataFrame(rows, columns=RUN_COLUMNS)
    return out.sort_values(["nops", "k", "rep", "run_id"], kind="stable").reset_index(drop=True)


# ----------------------------------------------------------------------------- per group and rep


def k1_table(by_run: pd.DataFrame) -> pd.DataFrame:
    """The k = 1 runs: access rate and LLC miss rate per group and rep (evidence `k1`)."""
    cols = ["nops", "rep", "run_id", "jobs_per_cmp", *RATE_COLUMNS, "failed", "failed_reason"]
    return by_run[by_run["k"] == 1][cols].reset_index(drop=True)


def cost_table(by_run: pd.DataFrame) -> pd.DataFrame:
    """Per group, k > 1 and rep: the CC cost against the same rep's k = 1 run (evidence `cc_cost`)."""
    k1 = {(r["nops"], r["rep"]): r for r in rt.records(by_run[by_run["k"] == 1])}
    rows = []
    for r in rt.records(by_run[by_run["k"] > 1]):
        base = k1.get((r["nops"], r["rep"]))
        why = []
        if base is None:
            why.append(f"no k = 1 run of nops {r['nops']} rep {r['rep']}")
        elif base["failed"]:
            why.append(f"{base['run_id']}: {base['failed_reason']}")
        if r["failed"]:
            why.append(f"{r['run_id']}: {r['failed_reason']}")
        t1 = base["time_s"] if base is not None and base["time_s"] is not None else math.nan
        tk = r["time_s"] if r["time_s"] is not None else math.nan
        rows.append(
            {
                "nops": r["nops"],
                "k": r["k"],
                "rep": r["rep"],
                "run_id": f"{base['run_id']}+{r['run_id']}" if base is not None else r["run_id"],
                "t1_s": t1,
                "tk_s": tk,
                "cc_cost_pct": 100.0 * (tk / t1 - 1.0) if t1 > 0 and not why else math.nan,
                ACCESS: base[ACCESS] if base is not None and base[ACCESS] is not None else math.nan,
                MISS: base[MISS] if base is not None and base[MISS] is not None else math.nan,
                "failed": bool(why),
                "failed_reason": "; ".join(why),
            }
        )
    out = pd.DataFrame(rows, columns=COST_COLUMNS)
    # typed even when empty (no k > 1 run: one CMP): an empty object column used as a mask
    # would select columns, not rows
    out["failed"] = out["failed"].astype(bool)
    return out.sort_values(["nops", "k", "rep"], kind="stable").reset_index(drop=True)


def points(cost: pd.DataFrame, k1: pd.DataFrame) -> pd.DataFrame:
    """Per group and k (k = 1 included, as 0 %): the mean CC cost over reps with its 95 %
    t-interval, and the group's mean access and miss rates at k = 1 (the figure's points)."""
    rows = []
    ok = cost[~cost["failed"]]
    for nops, g1 in k1.groupby("nops", sort=True):
        good = g1[~g1["failed"]]
        rates = {
            ACCESS: float(good[ACCESS].mean()) if len(good) else math.nan,
            MISS: float(good[MISS].mean()) if len(good) and good[MISS].notna().all() else math.nan,
        }
        rows.append(
            {
                "nops": nops,
                "k": 1,
                "n_reps": len(good),
                "cc_cost_pct": 0.0 if len(good) else math.nan,
                "ci95_low_pct": math.nan,
                "ci95_high_pct": math.nan,
                **rates,
            }
        )
        for k, gk in ok[ok["nops"] == nops].groupby("k", sort=True):
            low, high = t_interval(gk["cc_cost_pct"].to_numpy(float))
            rows.append(
                {
                    "nops": nops,
                    "k": int(k),
                    "n_reps": len(gk),
                    "cc_cost_pct": float(gk["cc_cost_pct"].mean()),
                    "ci95_low_pct": low,
                    "ci95_high_pct": high,
                    **rates,
                }
            )
    cols = ["nops", "k", "n_reps", "cc_cost_pct", "ci95_low_pct", "ci95_high_pct", ACCESS, MISS]
    return pd.DataFrame(rows, columns=cols)


# ----------------------------------------------------------------------------- against I/O


def read_stacking(path: str | Path) -> pd.DataFrame:
    """cmp_stacking's normalized_runtime.csv: workload, k, normalized_runtime (and reason)."""
    df = read_csv(path, ["workload", "reason"])
    for col in ("workload", "k", "normalized_runtime"):
        if col not in df.columns:
            raise AnalysisInputError(
                f"{path}: columns: {col} absent (expected cmp_stacking's analysis/normalized_runtime.csv)"
            )
    df["k"] = pd.to_numeric(df["k"], errors="coerce")
    df["io_degradation_pct"] = 100.0 * (pd.to_numeric(df["normalized_runtime"], errors="coerce") - 1.0)
    if "reason" not in df.columns:
        df["reason"] = ""
    return df


def io_table(cost: pd.DataFrame, stacking: pd.DataFrame | None) -> pd.DataFrame:
    """Per group, rep and cmp_stacking workload at every k > 1 both measured (evidence `cc_vs_io`)."""
    if stacking is None or cost.empty:
        return pd.DataFrame(columns=IO_COLUMNS)
    rows = []
    for s in rt.records(stacking[stacking["k"] > 1]):
        for c in rt.records(cost[cost["k"] == s["k"]]):
            io = s["io_degradation_pct"]
            why = [c["failed_reason"]] if c["failed"] else []
            if io is None:
                why.append(
                    f"cmp_stacking measured no degradation of {s['workload']} at k = {int(s['k'])}"
                    + (f" ({s['reason']})" if s.get("reason") else "")
                )
            cc = c["cc_cost_pct"] if c["cc_cost_pct"] is not None else math.nan
            rows.append(
                {
                    "nops": c["nops"],
                    "k": c["k"],
                    "rep": c["rep"],
                    "workload": str(s["workload"]),
                    "run_id": c["run_id"],
                    "cc_cost_pct": cc,
                    "io_degradation_pct": math.nan if io is None else io,
                    "cc_minus_half_io_pp": math.nan if io is None or why else cc - FAR_BELOW * io,
                    "failed": bool(why),
                    "failed_reason": "; ".join(why),
                }
            )
    out = pd.DataFrame(rows, columns=IO_COLUMNS)
    return out.sort_values(["workload", "nops", "k", "rep"], kind="stable").reset_index(drop=True)


def io_range(stacking: pd.DataFrame | None, k: int | None) -> str | None:
    """cmp_stacking's normalized runtimes at k over its workloads, as text ("x1.01 to x2.07")."""
    if stacking is None or k is None:
        return None
    v = pd.to_numeric(stacking.loc[stacking["k"] == k, "normalized_runtime"], errors="coerce").dropna()
    if v.empty:
        return None
    lo, hi = float(v.min()), float(v.max())
    return f"x{lo:.3g} to x{hi:.3g} (k = {k})" if not np.isclose(lo, hi) else f"x{lo:.3g} (k = {k})"

"""SAIs (paper 004): the PMU figures of a run, as the paper forms them, from the perf monitor's
tidy table (<run_dir>/tidy/perf.csv; perf stat -a, one row per event and interval).

  unhalted_cycles         perf's `cycles` (the paper's CPU_CLK_UNHALTED) summed over the run;
  unhalted_cycles_per_s   the same per second the counters ran (sum of the intervals): the paper
                          reads a larger unhalted time as less time halted waiting for I/O, a share
                          of time, so a faster run's fewer seconds do not count against it;
  l2_misses, l2_accesses  the CPU's own L2 events named in sais.l2_events ({misses, accesses};
                          without them l2_misses is the first event whose name starts with l2);
  l2_miss_rate            l2_misses / l2_accesses over the run: Fig. 6-7's "# cache misses /
                          # accesses".

A run whose counters ran for fewer than MIN_PERF_INTERVALS intervals is too short for its PMU
figures: its row in the `pmu` table is failed with that reason (never pooled), so the run is
measured again longer (the plan sizes read runs to sais.min_read_intervals at the link cap;
sais.pm.duration_s sizes the in-memory runs). A machine without the counters has no rows: the
figures are missing, with perf's reason, and the claims that need a PMU are not measurable there
before any run.
"""

from __future__ import annotations

import math
from pathlib import Path

from corun.util import lazy_module

# the specs step asks monitor_events only: pandas and SciPy (analysis.runtables) load when a table
# is read, not with the experiment's registry entry (about 1.6 s in every workflow step)
pd = lazy_module("pandas")
rt = lazy_module("analysis.runtables")

PMU_REASON_DEFAULT = "no perf table for the run (perf monitor disabled)"
MIN_PERF_INTERVALS = 2
FIGURES = ("unhalted_cycles", "unhalted_cycles_per_s", "l2_misses", "l2_accesses", "l2_miss_rate")


def l2_event_names(sec: dict) -> tuple[str | None, str | None]:
    """(misses, accesses): the L2 events sais.l2_events names, or (None, None)."""
    ev = sec.get("l2_events") or {}
    return ev.get("misses"), ev.get("accesses")


def monitor_events(sec: dict) -> list[str]:
    """perf's events for a run: sais.perf_events, then the L2 pair of sais.l2_events not among them."""
    out = list(sec.get("perf_events") or [])
    for e in l2_event_names(sec):
        if e and e not in out:
            out.append(e)
    return out


def totals(run_dir: Path | None, sec: dict) -> tuple[dict, str | None, dict]:
    """The run's PMU figures (NaN each where not counted), why none were counted, and the span the
    counters ran ({"intervals": n, "seconds": s})."""
    out = dict.fromkeys(FIGURES, math.nan)
    span = {"intervals": 0, "seconds": 0.0}
    if run_dir is None:
        return out, PMU_REASON_DEFAULT, span
    df, why = rt.load_tidy(run_dir, "perf")
    if df is None:
        return out, why, span
    ev = df["event"].astype(str)
    value = pd.to_numeric(df["value"], errors="coerce")
    misses, accesses = l2_event_names(sec)

    def summed(mask) -> float:
        v = value[mask].dropna()
        return float(v.sum()) if len(v) else math.nan

    cyc = ev == "cycles"
    out["unhalted_cycles"] = summed(cyc)
    if cyc.any():
        seconds = float(pd.to_numeric(df.loc[cyc, "interval_s"], errors="coerce").sum())
        span = {"intervals": int(df.loc[cyc, "t_s"].nunique()), "seconds": seconds}
        if seconds > 0 and math.isfinite(out["unhalted_cycles"]):
            out["unhalted_cycles_per_s"] = out["unhalted_cycles"] / seconds
    if misses:
        out["l2_misses"] = summed(ev == misses)
    else:
        l2 = [e for e in dict.fromkeys(ev) if e.lower().startswith("l2")]
        out["l2_misses"] = summed(ev == l2[0]) if l2 else math.nan
    if accesses:
        out["l2_accesses"] = summed(ev == accesses)
    if out["l2_accesses"] > 0 and math.isfinite(out["l2_misses"]):
        out["l2_miss_rate"] = out["l2_misses"] / out["l2_accesses"]
    if not span["intervals"]:  # no cycles counted: the intervals of the events that were
        span = {"intervals": int(df["t_s"].nunique()), "seconds": math.nan}
    return out, None, span


def too_short(span: dict, figures: dict, interval_s: float) -> str | None:
    """Why a run's counters ran too briefly for its PMU figures, or None (also None where nothing
    was counted: the figures are missing, not short)."""
    if not any(math.isfinite(figures[k]) for k in FIGURES):
        return None
    if span["intervals"] >= MIN_PERF_INTERVALS:
        return None
    return (
        f"perf counted {span['intervals']} interval(s) over the run: its PMU figures need at least "
        f"{MIN_PERF_INTERVALS} ({MIN_PERF_INTERVALS} x {interval_s:g} s); measure it longer"
    )


def l2_missing_reason(sec: dict) -> str:
    misses, accesses = l2_event_names(sec)
    if misses and accesses:
        return ""
    return (
        "no L2 miss rate: sais.l2_events names no {misses, accesses} pair (the CPU's own events, perf list; "
        "e.g. l2_rqsts.miss and l2_rqsts.references on Intel cores)"
    )


def evidence(per_run: pd.DataFrame, labels: list[str], interval_s: float) -> pd.DataFrame:
    """The `pmu` table: per read run its labels, PMU figures and how long the counters ran; failed
    when the run failed (its reason) or its counters ran too briefly for the figures."""
    cols = [*labels, *FIGURES, "perf_intervals", "failed", "failed_reason"]
    out = []
    for r in per_run.to_dict(orient="records"):
        figures = {k: float(r.get(k, math.nan)) for k in FIGURES}
        n = r.get("perf_intervals")
        short = too_short({"intervals": int(n) if pd.notna(n) else 0}, figures, interval_s)
        failed = bool(r.get("failed"))
        reason = (r.get("failed_reason") or "a read job failed") if failed else (short or "")
        out.append({**{k: r.get(k) for k in labels}, **figures, "perf_intervals": n, "failed": failed or bool(short),
                    "failed_reason": reason})  # fmt: skip
    return pd.DataFrame(out, columns=cols)

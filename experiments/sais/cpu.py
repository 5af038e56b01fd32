"""SAIs (paper 004): the client's CPU utilisation per read run (Figs. 8-9), from cpustat.

  cpu_busy_pct   the mean over the client's CPUs of each CPU's busy share (100 - idle - iowait),
                 averaged over the run's cpustat intervals: the paper's "CPU total utilization".

The `cpu` evidence table holds one row per read run; a run whose cpustat ran fewer than
MIN_INTERVALS intervals on some CPU is too short for the figure: failed with that reason, never
pooled. The plan sizes read runs to last sais.min_read_intervals intervals at the link cap
(experiments.sais.experiment.read_repetitions), so this catches a run that still came out short.
"""

from __future__ import annotations

import math

import pandas as pd

MIN_INTERVALS = 2


def evidence(per_run: pd.DataFrame, cpus: pd.DataFrame, labels: list[str], interval_s: float) -> pd.DataFrame:
    """The `cpu` table: per read run its labels, cpu_busy_pct and the fewest intervals of a CPU."""
    cols = [*labels, "cpu_busy_pct", "cpustat_intervals", "failed", "failed_reason"]
    by = cpus.groupby("run_id") if len(cpus) else None
    out = []
    for r in per_run.to_dict(orient="records"):
        g = by.get_group(r["run_id"]) if by is not None and r["run_id"] in by.groups else None
        busy = float(g["busy_pct"].mean()) if g is not None else math.nan
        n = int(g["intervals"].min()) if g is not None and "intervals" in g else 0
        if r.get("failed"):
            reason = r.get("failed_reason") or "a read job failed"
        elif g is not None and n < MIN_INTERVALS:
            reason = (
                f"cpustat sampled {n} interval(s) over the run: its CPU utilisation needs at least {MIN_INTERVALS} "
                f"({MIN_INTERVALS} x {interval_s:g} s); measure it longer"
            )
        else:
            reason = ""
        out.append({**{k: r.get(k) for k in labels}, "cpu_busy_pct": busy, "cpustat_intervals": n,
                    "failed": bool(reason), "failed_reason": reason})  # fmt: skip
    return pd.DataFrame(out, columns=cols)

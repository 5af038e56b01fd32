"""Nodes compared: a campaign spread over a cluster's nodes (workflows/rules/slurm.smk) measures
each repetition on one node, so a node that runs slower or faster than the others moves all its
runs together. This compares the nodes on one metric of the runs table (collect's runs.csv,
whose `host` is the node a run's metadata recorded) and flags a node that differs, rather than
pooling it silently.

Each run's value is divided by the median of its configuration (the run's labels but the
repetition, and its variant) over every node, so configurations of different sizes compare; a
node's figure is the median of its runs' ratios. A node is flagged when that median is off 1 by
more than TOLERANCE and at least MIN_RUNS of its runs were compared; a table from one node
compares nothing.

    python -m analysis.nodes RESULTS/<exp>/runs.csv [--metric duration_s] [--tolerance 0.05]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import pandas as pd

from analysis.common import AnalysisInputError

# columns of the runs table that are not a configuration's labels
NOT_LABELS = {
    "run_id", "variant_params", "throttle_read_bps", "throttle_write_bps", "elevator", "device",
    "memory_limit_bytes", "caches_dropped", "duration_s", "monitor_interval_s", "steal_pct",
    "foreign_pct", "status", "host", "metadata_path", "run_dir", "host_runs", "rep",
}  # fmt: skip


def compare(runs: pd.DataFrame, metric: str = "duration_s", tolerance: float = 0.05, min_runs: int = 3) -> list[dict]:
    """One row per node: runs compared, the median ratio to the configuration's median, flagged."""
    for col in ("host", metric):
        if col not in runs.columns:
            raise AnalysisInputError(f"nodes: runs table: no column {col!r} (expected collect's runs.csv)")
    ok = runs[(runs.get("status", "ok") == "ok") & runs[metric].notna() & runs["host"].notna()].copy()
    if ok["host"].nunique() < 2:
        return []
    cell = sorted(c for c in ok.columns if c not in NOT_LABELS and c != metric)
    med = ok.groupby(cell, dropna=False)[metric].transform("median") if cell else ok[metric].median()
    ok["ratio"] = ok[metric] / med
    rows = []
    for host, g in ok.groupby("host"):
        r = float(g["ratio"].median())
        flagged = len(g) >= min_runs and abs(r - 1) > tolerance
        rows.append({"node": host, "runs": len(g), "median_ratio": round(r, 4), "flagged": flagged})
    return rows


def lines(rows: list[dict], metric: str, tolerance: float) -> list[str]:
    out = []
    for r in rows:
        off = 100 * (r["median_ratio"] - 1)
        what = f"{r['node']}: {r['runs']} runs, {metric} {off:+.1f} % of its configurations' median"
        out.append(
            what + (f" (differs from the other nodes by more than {100 * tolerance:g} %)" if r["flagged"] else "")
        )
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("runs", type=Path)
    ap.add_argument("--metric", default="duration_s")
    ap.add_argument("--tolerance", type=float, default=0.05)
    ap.add_argument("--min-runs", type=int, default=3)
    a = ap.parse_args(argv)
    try:
        rows = compare(pd.read_csv(a.runs), a.metric, a.tolerance, a.min_runs)
    except (AnalysisInputError, OSError) as exc:
        print(exc, file=sys.stderr)
        return 1
    for line in lines(rows, a.metric, a.tolerance) or ["nodes: one node measured every run: nothing to compare"]:
        print(line)
    return 2 if any(r["flagged"] for r in rows) else 0


if __name__ == "__main__":
    sys.exit(main())

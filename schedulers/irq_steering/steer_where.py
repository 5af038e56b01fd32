"""Where receive processing ran (steer.py snapshot and where; docs/schedulers/irq_steering.md):
per-CPU NET_RX softirqs and softnet_stat read from /proc, and their deltas between two reads."""

from __future__ import annotations

import time
from pathlib import Path


def snapshot(root: str = "/") -> dict:
    """Per-CPU NET_RX softirq counts (/proc/softirqs) and the processed column of
    /proc/net/softnet_stat (one row per online CPU, the CPU in column 13 where present)."""
    r = Path(root)
    net_rx: list[int] = []
    for line in (r / "proc/softirqs").read_text().splitlines():
        if line.split(":")[0].strip() == "NET_RX":
            net_rx = [int(x) for x in line.split(":", 1)[1].split()]
    processed: dict[int, int] = {}
    for i, line in enumerate((r / "proc/net/softnet_stat").read_text().splitlines()):
        cols = [int(x, 16) for x in line.split()]
        cpu = cols[12] if len(cols) > 12 else i
        processed[cpu] = cols[0]
    n = max(len(net_rx), max(processed, default=-1) + 1)
    return {
        "t": time.time(),
        "net_rx": net_rx + [0] * (n - len(net_rx)),
        "softnet_processed": [processed.get(c, 0) for c in range(n)],
    }


def where(before: dict, after: dict) -> dict:
    """Per-CPU deltas of both counters, each CPU's share, and the CPU with most of each."""
    out = {"interval_s": after["t"] - before["t"]}
    for key in ("net_rx", "softnet_processed"):
        delta = [a - b for a, b in zip(after[key], before[key])]
        total = sum(delta)
        out[key] = {
            "per_cpu": delta,
            "total": total,
            "share": [d / total if total else 0.0 for d in delta],
            "top_cpu": max(range(len(delta)), key=lambda c: delta[c]) if total else None,
        }
    return out

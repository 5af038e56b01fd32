#!/usr/bin/env python3
"""What the aIOLi scheduling core costs per request with 1, 32 and 1,024 requests queued.

Runs schedulers/aioli/build/aioli_bench (built by `make -C schedulers/aioli`): the core of the
corun/aioli translator (src/policy.c) alone, in a loop that keeps N requests queued, each
iteration one request submitted, one decision taken and one dispatch completed (random 64 KiB
aligned offsets over --files files, so aggregations are rare; a decision scans the queues until
it finds a run whose quantum already covers it). Waits are off (a wait would idle the loop).
Prints ns per request (median of --reps runs, with min and max) per policy and queue length,
and writes them to --out. No root needed;
the figure is the time of the core only, without GlusterFS's own cost per fop.

  .venv/bin/python bench/aioli_cost.py [--reps 5] [--requests 200000] [--files 4]
      [--out results/bench/aioli_cost.json]
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BENCH = ROOT / "schedulers" / "aioli" / "build" / "aioli_bench"
QUEUED = [1, 32, 1024]
# (policy, quantum step in KiB): the default 32 KiB, and 1 KiB, where a new 64 KiB request needs
# 64 steps, so decisions scan further before they find a run whose quantum covers it.
POINTS = [("aioli", 32), ("aioli", 1), ("aioli_no_agg", 32), ("time_order_agg", 32), ("app_aware", 32)]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5, help="runs per point, median reported (default 5)")
    ap.add_argument("--requests", type=int, default=200_000, help="iterations per run (default 200000)")
    ap.add_argument("--files", type=int, default=4, help="files the requests are spread over (default 4)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "aioli_cost.json"))
    a = ap.parse_args()
    if a.reps < 1 or a.requests < 1 or a.files < 1:
        sys.exit("aioli_cost: --reps, --requests and --files must be >= 1")
    subprocess.run(["make", "-s", "-C", str(ROOT / "schedulers" / "aioli"), "build/aioli_bench"], check=True)
    rows = []
    for policy, step in POINTS:
        for q in QUEUED:
            ns = []
            for _ in range(a.reps):
                out = subprocess.run(
                    [str(BENCH), "--policy", policy, "--queued", str(q), "--files", str(a.files),
                     "--requests", str(a.requests), "--quantum-step-kib", str(step)],
                    capture_output=True, text=True, check=True,
                )  # fmt: skip
                ns.append(json.loads(out.stdout)["ns_per_request"])
            rows.append(
                {
                    "policy": policy,
                    "quantum_step_kib": step,
                    "queued": q,
                    "files": a.files,
                    "ns_per_request_median": statistics.median(ns),
                    "ns_per_request_min": min(ns),
                    "ns_per_request_max": max(ns),
                    "reps": a.reps,
                    "requests": a.requests,
                }
            )
    print(f"{'policy':16s} {'step KiB':>8s} {'queued':>7s} {'ns/request':>11s} {'min':>8s} {'max':>8s}")
    for r in rows:
        print(
            f"{r['policy']:16s} {r['quantum_step_kib']:8d} {r['queued']:7d} {r['ns_per_request_median']:11.1f} "
            f"{r['ns_per_request_min']:8.1f} {r['ns_per_request_max']:8.1f}"
        )
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"host": platform.node(), "kernel_release": platform.release(), "cpu": platform.processor()}
    out.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    print(f"written {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

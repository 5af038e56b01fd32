#!/usr/bin/env python3
"""Instrument overhead: the same kernel bare and under `corun run` with every monitor.

Pairs are interleaved (bare, corun, bare, corun, ... in a random order per pair) so
drift of the machine hits both sides alike. Reported: the median ratio of the
kernel's own elapsed time under corun to bare (target <= 1.01), and the same for
the wall time from spawn to exit. Prints figures; it is not a pass/fail test.

  .venv/bin/python bench/overhead.py [--pairs 10] [--nops 20000000] [--mib 32] [--monitors iostat,pidstat,psi,perf]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.config import validate  # noqa: E402
from corun.run.runner import Runner  # noqa: E402

KERNEL = ROOT / "kernels" / "build" / "sensitivity_ranking"


def bare(cmd: list[str]) -> tuple[float, float]:
    t = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.monotonic() - t
    return json.loads(res.stdout)["elapsed_s"], wall


def under_corun(cmd: list[str], work: Path, i: int, monitors: list[str]) -> tuple[float, float]:
    spec = validate(
        {
            "name": f"overhead-{i}",
            "jobs": [{"name": "k", "cmd": cmd, "result": "json"}],
            "device": {"path": str(work)},
            "monitors": {"enabled": monitors},
        },
        "run_spec",
        "bench",
    )
    out = Runner(spec, work / f"run{i}", source="bench", progress=False).run()
    import csv

    row = next(csv.DictReader(open(out / "jobs.csv")))
    return float(row["result_elapsed_s"]), float(row["runtime_s"])


def bootstrap_ci(values: list[float], rng: random.Random, n: int = 5000) -> tuple[float, float]:
    """95% percentile bootstrap interval of the median."""
    meds = sorted(statistics.median(rng.choices(values, k=len(values))) for _ in range(n))
    return meds[int(0.025 * n)], meds[int(0.975 * n) - 1]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10, help="interleaved pairs (default 10)")
    ap.add_argument(
        "--nops", type=int, default=20000000, help="nops between reads (default 20000000: a job of a few seconds)"
    )
    ap.add_argument("--mib", type=int, default=32, help="file size in MiB (default 32)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument(
        "--monitors",
        default="iostat,pidstat,psi,perf",
        help="monitors under corun, comma-separated ('' for none; default all four)",
    )
    a = ap.parse_args()
    if not os.access(KERNEL, os.X_OK):
        print("bench: build the kernels first (make -C kernels)", file=sys.stderr)
        return 1
    rng = random.Random(a.seed)
    base = ROOT / "results" / "bench"
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        work = Path(tmp)
        f = work / "data.bin"
        with open(f, "wb") as fh:
            fh.write(os.urandom(a.mib << 20))
            os.fsync(fh.fileno())
        cmd = [str(KERNEL), "--file", str(f), "--block-size", "65536", "--nops", str(a.nops)]
        bare(cmd)  # warm-up, discarded
        monitors = [m for m in a.monitors.split(",") if m]
        under_corun(cmd, work, 999, monitors)
        ratios_k, ratios_w, rows = [], [], []
        for i in range(a.pairs):
            order = ["bare", "corun"]
            rng.shuffle(order)
            got = {}
            for side in order:
                got[side] = bare(cmd) if side == "bare" else under_corun(cmd, work, i, monitors)
            ratios_k.append(got["corun"][0] / got["bare"][0])
            ratios_w.append(got["corun"][1] / got["bare"][1])
            rows.append((i, order[0], got["bare"][0], got["corun"][0], got["bare"][1], got["corun"][1]))
    print(
        f"{'pair':>4} {'first':>6} {'bare_kernel_s':>14} {'corun_kernel_s':>15} "
        f"{'bare_wall_s':>12} {'corun_wall_s':>13}"
    )
    for r in rows:
        print(f"{r[0]:>4} {r[1]:>6} {r[2]:>14.4f} {r[3]:>15.4f} {r[4]:>12.4f} {r[5]:>13.4f}")
    mk, mw = statistics.median(ratios_k), statistics.median(ratios_w)
    lo_k, hi_k = bootstrap_ci(ratios_k, rng)
    lo_w, hi_w = bootstrap_ci(ratios_w, rng)
    print(
        f"median ratio corun/bare, kernel elapsed: {mk:.4f} (95% bootstrap CI {lo_k:.4f} to {hi_k:.4f}; target <= 1.01)"
    )
    print(f"median ratio corun/bare, wall spawn-to-exit: {mw:.4f} (95% bootstrap CI {lo_w:.4f} to {hi_w:.4f})")
    spread = statistics.pstdev([r[2] for r in rows]) / statistics.mean([r[2] for r in rows])
    print(f"run-to-run spread of the bare runs (coefficient of variation): {spread:.1%}")
    print(f"monitors: {', '.join(monitors) or 'none'} at 1 s; pairs: {a.pairs}; seed: {a.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Instrument overhead: the same kernel bare and under `corun run` with every monitor.

Pairs are interleaved (bare, corun, bare, corun, ... in a random order per pair) so
drift of the machine hits both sides alike. Reported: the median ratio of the
kernel's own elapsed time under corun to bare (target <= 1.01), and the same for
the wall time from spawn to exit. Prints figures; it is not a pass/fail test.

  .venv/bin/python bench/overhead.py [--pairs 10] [--nops 20000000] [--mib 32]
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

from corun.runner import Runner  # noqa: E402
from corun.config import validate  # noqa: E402

KERNEL = ROOT / "kernels" / "build" / "sensitivity_ranking"


def bare(cmd: list[str]) -> tuple[float, float]:
    t = time.monotonic()
    res = subprocess.run(cmd, capture_output=True, text=True, check=True)
    wall = time.monotonic() - t
    return json.loads(res.stdout)["elapsed_s"], wall


def under_corun(cmd: list[str], work: Path, i: int) -> tuple[float, float]:
    spec = validate({"name": f"overhead-{i}", "jobs": [{"name": "k", "cmd": cmd, "result": "json"}],
                     "device": {"path": str(work)}}, "run_spec", "bench")
    out = Runner(spec, work / f"run{i}", source="bench", progress=False).run()
    import csv
    row = next(csv.DictReader(open(out / "jobs.csv")))
    return float(row["result_elapsed_s"]), float(row["runtime_s"])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--pairs", type=int, default=10, help="interleaved pairs (default 10)")
    ap.add_argument("--nops", type=int, default=20000000,
                    help="nops between reads (default 20000000: a job of a few seconds)")
    ap.add_argument("--mib", type=int, default=32, help="file size in MiB (default 32)")
    ap.add_argument("--seed", type=int, default=1)
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
        under_corun(cmd, work, 999)
        ratios_k, ratios_w, rows = [], [], []
        for i in range(a.pairs):
            order = ["bare", "corun"]
            rng.shuffle(order)
            got = {}
            for side in order:
                got[side] = bare(cmd) if side == "bare" else under_corun(cmd, work, i)
            ratios_k.append(got["corun"][0] / got["bare"][0])
            ratios_w.append(got["corun"][1] / got["bare"][1])
            rows.append((i, order[0], got["bare"][0], got["corun"][0], got["bare"][1], got["corun"][1]))
    print(f"{'pair':>4} {'first':>6} {'bare_kernel_s':>14} {'corun_kernel_s':>15} {'bare_wall_s':>12} {'corun_wall_s':>13}")
    for r in rows:
        print(f"{r[0]:>4} {r[1]:>6} {r[2]:>14.4f} {r[3]:>15.4f} {r[4]:>12.4f} {r[5]:>13.4f}")
    mk, mw = statistics.median(ratios_k), statistics.median(ratios_w)
    print(f"median ratio corun/bare, kernel elapsed: {mk:.4f} (target <= 1.01)")
    print(f"median ratio corun/bare, wall spawn-to-exit: {mw:.4f}")
    print(f"monitors: iostat, pidstat, psi, perf at 1 s; pairs: {a.pairs}; seed: {a.seed}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

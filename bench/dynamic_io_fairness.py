#!/usr/bin/env python3
"""Starvation under Procedure 4, and what dynamic_io_fair does about it.

Three jobs on one CMP read 12 MiB each (O_DIRECT) through an emulated disk of 8 MB/s, with
IO_BOUND_INTERVAL 3 MB/s: below the bound Procedure 4 resumes the suspended job with the highest
rate, which is often the one just suspended while it ran alone at the full cap, so the others
wait. A campaign of linux, dynamic_io and dynamic_io_fair (max_suspend_s 1), interleaved reps,
then `corun compare`; printed: the longest suspension of each run, the forced resumptions, and
the comparison of makespan, runtime and unfairness (slowest / fastest job).

  .venv/bin/python bench/dynamic_io_fairness.py [--reps 5] [--out results/bench/fairness]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
CORUN = [sys.executable, "-m", "corun"]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="runs per variant (default 5)")
    ap.add_argument(
        "--out",
        type=Path,
        default=ROOT / "results" / "bench" / "fairness",
        help="folder for inputs, campaign and comparison (on the disk under test)",
    )
    ap.add_argument("--seed", type=int, default=11, help="order seed (default 11)")
    a = ap.parse_args()
    if a.reps < 2:
        ap.error(f"--reps: {a.reps} (expected an integer >= 2)")
    out = a.out.resolve()
    shutil.rmtree(out / "campaign", ignore_errors=True)
    shutil.rmtree(out / "compare", ignore_errors=True)
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for i in range(3):
        f = out / f"in{i}.bin"
        if not f.exists() or f.stat().st_size != 12 << 20:
            f.write_bytes(os.urandom(12 << 20))
        files.append(f)
    os.sync()
    spec = {
        "name": "fairness",
        "placement": {"cmp": {"grouping": "cores", "cores_per_cmp": os.cpu_count()}, "slots_per_core": 3},
        "jobs": [
            {"name": f"r{i}", "cmd": ["dd", f"if={f}", "of=/dev/null", "bs=64k", "iflag=direct"]}
            for i, f in enumerate(files)
        ],
        "device": {"path": str(out), "throttle": {"read_bps": 8_000_000}},
        "scheduler": {"name": "dynamic_io", "params": {"timeslice_s": 0.25, "io_bound_mbps": 3, "max_suspend_s": 1.0}},
        "monitors": {"enabled": ["psi"]},
    }
    (out / "spec.yaml").write_text(yaml.safe_dump(spec))
    subprocess.run(
        [
            *CORUN,
            "campaign",
            "run",
            str(out / "spec.yaml"),
            "--variants",
            "linux,dynamic_io,dynamic_io_fair",
            "--reps",
            str(a.reps),
            "--warmup",
            "0",
            "--seed",
            str(a.seed),
            "--out",
            str(out / "campaign"),
            "--quiet",
        ],
        check=True,
        cwd=ROOT,
    )
    for v in ("dynamic_io", "dynamic_io_fair"):
        longest, forced = [], []
        for d in sorted((out / "campaign" / "runs").glob(f"*-{v}-r*")):
            s = json.loads((d / "sched" / "state" / "summary.json").read_text())
            longest.append(round(max(j["max_suspended_s"] for j in s["jobs"].values()), 2))
            forced.append(s["forced_resumes"])
        print(f"{v}: longest suspension per run {longest} s; forced resumptions {forced}")
    res = subprocess.run(
        [
            *CORUN,
            "compare",
            str(out / "campaign"),
            "--by",
            "variant",
            "--baseline",
            "linux",
            "--metrics",
            "makespan_s,runtime_s,unfairness_ratio",
            "--out",
            str(out / "compare"),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    print("\n".join(line for line in res.stdout.splitlines() if line.startswith("| dynamic_io")))
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""aioli against FIFO on strided reads: throughput ratio with a paired CI, and average aggregation.

Runs the `aioli` experiment's own pieces (experiments.aioli.experiment specs, corun.testbed.pfs_runs)
outside the workflow: --servers data servers on their own netns cluster, each brick on an
emulated rotating disk with O_DIRECT, --clients clients of one application reading the shared
file in MPI-IO Test's strided layout, the two policies --reps times in a seeded, interleaved
order, each run a real `corun run`. With --translator the corun/aioli translator is in the
servers and each run's policy its pfs_sched variant; without it (the default until it is
installed) both policies are the stock server and the ratio is the A/A noise level, which is
said. Prints the mean throughput per policy, the ratio aioli / fifo with its 95% CI (the
t-interval of the per-rep log ratios, analysis.stats.paired_ratio_t, as in the analysis) and
aioli's average aggregation (from the translator's counters, or why it is missing), and writes
them to --out. Everything it starts is taken down at the end. Root only; the client and the
servers share this machine's CPUs.

  .venv/bin/python bench/aioli_strided.py [--servers 2] [--clients 8] [--request-size 65536]
      [--client-mib 4] [--reps 5] [--translator] [--option KEY=VALUE ...]
      [--prefix aiolib] [--subnet 10.80.5.0/24] [--out results/bench/aioli_strided.json]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pandas as pd

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.stats import paired_ratio_t  # noqa: E402
from bench import _common  # noqa: E402
from experiments.aioli import experiment as aioli  # noqa: E402
from experiments.aioli.metrics import run_counters  # noqa: E402
from experiments.config import profile_config, validate_config  # noqa: E402

BASE, HEAD = "pfs_fifo", "aioli"
PREFIX = "aiolib"
SUBNET = "10.80.5.0/24"
PORT = 24041


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=2, help="data servers (default 2)")
    ap.add_argument("--clients", type=int, default=8, help="clients of the application (default 8)")
    ap.add_argument("--request-size", type=int, default=65536, help="bytes per request (default 65536)")
    ap.add_argument("--client-mib", type=int, default=4, help="MiB each client reads per run (default 4)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per policy, >= 2 (default 5)")
    ap.add_argument("--translator", action="store_true", help="the corun/aioli translator in the servers")
    ap.add_argument("--option", action="append", default=[], metavar="KEY=VALUE", help="a translator option")
    ap.add_argument("--prefix", default=PREFIX, help=f"netns cluster's name prefix (default {PREFIX})")
    ap.add_argument("--subnet", default=SUBNET, help=f"netns cluster's subnet (default {SUBNET})")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "aioli_strided.json"))
    a = ap.parse_args()
    if a.reps < 2:
        sys.exit(f"aioli_strided: --reps: {a.reps} (expected >= 2)")
    opts = dict(o.split("=", 1) for o in a.option if "=" in o)
    raw = profile_config(ROOT / "workflows" / "config" / "smoke.yaml")
    raw["aioli"] = {
        "policies": [BASE, HEAD],
        "servers": a.servers,
        "clients": [a.clients],
        "patterns": ["strided"],
        "operations": ["read"],
        "request_sizes_bytes": [a.request_size],
        "apps": [1],
        "client_mib": a.client_mib,
        "reps": a.reps,
        "translator": {"enabled": a.translator, "options": opts},
        "cluster": {"prefix": a.prefix, "subnet": a.subnet, "port": PORT},
    }
    cfg = validate_config(raw, "bench/aioli_strided.py")
    t0 = time.monotonic()
    rows = []
    with tempfile.TemporaryDirectory(prefix="aioli-bench-") as tmp:
        work = Path(tmp)
        aioli.EXPERIMENT.specs(cfg, {}, work / "data", work / "specs")
        argv = [sys.executable, "-m", "corun.testbed.pfs_runs", "--groups", str(work / "specs" / "groups.json")]
        argv += ["--group", aioli.group_name(cfg["aioli"]), "--specs", str(work / "specs")]
        argv += ["--runs", str(work / "runs"), "--work", str(work / "work")]
        res = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"aioli_strided: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
        for d in sorted((work / "runs").iterdir()):
            jobs = pd.read_csv(d / "jobs.csv")
            meta = json.loads((d / "metadata.json").read_text())
            rc = run_counters(d, a.translator)
            counters, why = rc.figures, rc.sched_why
            t = float(jobs["result_read_time_mean_s"].max())
            rows.append(
                {
                    "policy": meta["labels"]["policy"],
                    "rep": meta["labels"]["rep"],
                    "throughput_mib_s": float(jobs["result_read_bytes"].sum()) / t / 2**20,
                    "avg_aggregation": counters["avg_aggregation"],
                    "disk_seeks": counters["disk_seeks"],
                    "why": why,
                }
            )
    df = pd.DataFrame(rows).sort_values(["policy", "rep"])
    by = {p: df[df["policy"] == p].set_index("rep") for p in (BASE, HEAD)}
    b, h = by[BASE]["throughput_mib_s"].align(by[HEAD]["throughput_mib_s"], join="inner")
    ratio, lo, hi = paired_ratio_t(b.values, h.values)
    agg = by[HEAD]["avg_aggregation"].mean()
    why = None if math.isfinite(agg) else next((w for w in by[HEAD]["why"] if w), "no counters")
    out = {
        "bench": "aioli_strided",
        "servers": a.servers,
        "clients": a.clients,
        "request_size_bytes": a.request_size,
        "client_mib": a.client_mib,
        "reps": a.reps,
        "translator": a.translator,
        "duration_s": time.monotonic() - t0,
        "policies": {
            p: {
                "throughput_mib_s": by[p]["throughput_mib_s"].tolist(),
                "mean_throughput_mib_s": statistics.fmean(by[p]["throughput_mib_s"]),
                "mean_disk_seeks": float(by[p]["disk_seeks"].mean()),
            }
            for p in (BASE, HEAD)
        },
        "ratio": {"ratio": ratio, "ci95_low": lo, "ci95_high": hi, "pairs": len(b)},
        "avg_aggregation": None if why else agg,
        "avg_aggregation_missing": why,
    }
    print(
        f"{a.servers} servers, {a.clients} clients, strided reads of {a.request_size // 1024} KiB, "
        f"{a.client_mib} MiB per client, {a.reps} reps"
        + ("" if a.translator else " (no translator: both policies are the stock server, an A/A comparison)")
    )
    for p in (BASE, HEAD):
        q = out["policies"][p]
        print(f"  {p:>9}: {q['mean_throughput_mib_s']:.1f} MiB/s, {q['mean_disk_seeks']:.0f} disk seeks per run")
    print(f"  {HEAD} / {BASE}: {ratio:.4f} (95% CI {lo:.4f}-{hi:.4f}, {len(b)} paired reps)")
    print(f"  average aggregation of {HEAD}: " + (f"{agg:.2f} requests" if not why else f"missing ({why})"))
    path = _common.write_figures(a.out, out)
    print(f"written: {path} ({out['duration_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

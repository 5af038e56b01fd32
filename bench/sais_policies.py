#!/usr/bin/env python3
"""source_aware (and sais_mark) against spread and irqbalance: read bandwidth ratio with a paired CI.

Runs the `sais` experiment's own pieces (experiments.sais.experiment specs, corun.testbed.pfs_runs)
outside the workflow: one group at --servers data servers behind --links x 1 GbE on its own
netns cluster, the --policies (irqbalance, spread, source_aware by default; sais_mark is the
faithful SAIs variant) --reps times in a seeded, interleaved order, each run a real `corun run`
of kernels/pfs_read under the policy's irq_policy variant. Prints the mean bandwidth per policy
and the ratio of each source-aware policy to irqbalance and spread with its 95% CI (the t-interval
of the per-rep log ratios, analysis.stats.paired_ratio_t, as in the analysis), and writes them to
--out. Everything it starts
is taken down at the end. Root only; the client and the servers share this machine's CPUs.

  .venv/bin/python bench/sais_policies.py [--servers 4] [--links 1] [--rate-mbit 1000] [--reps 5]
      [--policies irqbalance,spread,source_aware,sais_mark]
      [--mib 128] [--transfer-size 1048576] [--clients 1] [--compute-passes 1]
      [--out results/bench/sais_policies.json]
"""

from __future__ import annotations

import argparse
import json
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
from experiments.config import profile_config, validate_config  # noqa: E402
from experiments.sais import experiment as sais  # noqa: E402

POLICIES = ["irqbalance", "spread", "source_aware"]
KNOWN = ["irqbalance", "spread", "dedicated", "source_aware", "sais_mark"]
HEADS = ["source_aware", "sais_mark"]
BASES = ["irqbalance", "spread"]
PREFIX = "saisb"
SUBNET = "10.78.5.0/24"
PORT = 24039


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=4, help="data servers (default 4, the largest local count)")
    ap.add_argument("--links", type=int, default=1, help="client links of 1 GbE (default 1)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per policy, >= 2 (default 5)")
    ap.add_argument("--mib", type=int, default=128, help="file size in MiB, read once per run (default 128)")
    ap.add_argument("--transfer-size", type=int, default=1 << 20, help="bytes per request (default 1048576)")
    ap.add_argument("--clients", type=int, default=1, help="reading processes (default 1)")
    ap.add_argument("--compute-passes", type=int, default=1, help="compute passes per request (default 1)")
    ap.add_argument("--rate-mbit", type=int, default=1000, help="rate of one link, Mbit/s (default 1000: 1 GbE)")
    ap.add_argument(
        "--policies",
        default=",".join(POLICIES),
        help="comma-separated irq_policy variants, irqbalance among them (default irqbalance,spread,source_aware)",
    )
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "sais_policies.json"))
    a = ap.parse_args()
    if a.reps < 2:
        sys.exit(f"sais_policies: --reps: {a.reps} (expected >= 2)")
    policies = [p.strip() for p in a.policies.split(",") if p.strip()]
    if not policies or any(p not in KNOWN for p in policies) or "irqbalance" not in policies:
        sys.exit(
            f"sais_policies: --policies: {a.policies!r} (expected some of {','.join(KNOWN)}, irqbalance among them)"
        )
    raw = profile_config(ROOT / "workflows" / "config" / "smoke.yaml")
    raw["sais"] = {
        "policies": policies,
        "servers": [a.servers],
        "client_links": [a.links],
        "transfer_sizes_bytes": [a.transfer_size],
        "clients": [a.clients],
        "file_mib": a.mib,
        "reps": a.reps,
        "compute_passes": a.compute_passes,
        "link_rate_mbit": a.rate_mbit,
        "monitors": ["cpustat"],
        "cluster": {"prefix": PREFIX, "subnet": SUBNET, "port": PORT},
    }
    cfg = validate_config(raw, "bench/sais_policies.py")
    t0 = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="sais-bench-") as tmp:
        work = Path(tmp)
        sais.EXPERIMENT.specs(cfg, {}, work / "data", work / "specs")
        group = sais.group_name(a.servers, a.links)
        argv = [sys.executable, "-m", "corun.testbed.pfs_runs", "--groups", str(work / "specs" / "groups.json")]
        argv += ["--group", group, "--specs", str(work / "specs"), "--runs", str(work / "runs")]
        argv += ["--work", str(work / "work")]
        res = subprocess.run(argv, cwd=ROOT, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"sais_policies: {(res.stderr.strip().splitlines() or ['?'])[-1]}")
        rows = []
        for d in sorted((work / "runs").iterdir()):
            jobs = pd.read_csv(d / "jobs.csv")
            meta = json.loads((d / "metadata.json").read_text())
            rows.append(
                {
                    "policy": meta["labels"]["policy"],
                    "rep": meta["labels"]["rep"],
                    "bw_mib_s": float(jobs["result_read_bw_mean_mib_s"].sum()),
                    "verified": bool(meta["scheduler"].get("verified")),
                }
            )
    df = pd.DataFrame(rows).sort_values(["policy", "rep"])
    by = {p: df[df["policy"] == p].set_index("rep")["bw_mib_s"] for p in policies}
    out = {
        "bench": "sais_policies",
        "servers": a.servers,
        "client_links": a.links,
        "link_rate_mbit": a.rate_mbit,
        "file_mib": a.mib,
        "transfer_size_bytes": a.transfer_size,
        "clients": a.clients,
        "compute_passes": a.compute_passes,
        "reps": a.reps,
        "duration_s": time.monotonic() - t0,
        "policies": {p: {"bw_mib_s": by[p].tolist(), "mean_bw_mib_s": statistics.fmean(by[p])} for p in policies},
        "all_verified": bool(df["verified"].all()),
        "ratios": {},
    }
    print(f"{a.servers} servers, {a.links} x {a.rate_mbit} Mbit/s, {a.transfer_size // 1024} KiB, {a.reps} reps")
    for p in policies:
        print(f"  {p:>13}: {out['policies'][p]['mean_bw_mib_s']:.1f} MiB/s")
    for head in (p for p in HEADS if p in by):
        for base in (p for p in BASES if p in by):
            b, h = by[base].align(by[head], join="inner")
            ratio, lo, hi = paired_ratio_t(b.values, h.values)
            out["ratios"][f"{head}/{base}"] = {"ratio": ratio, "ci95_low": lo, "ci95_high": hi, "pairs": len(b)}
            print(f"  {head} / {base}: {ratio:.4f} (95% CI {lo:.4f}-{hi:.4f}, {len(b)} paired reps)")
    path = _common.write_figures(a.out, out)
    print(f"written: {path} ({out['duration_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""CC-B against SB and HYBRID on WL6 under heavy load, on a local 2-host netns cluster (paper 001).

The paper's headline (Fig. 7a): CC-B cuts the average job response time by up to 36.6% against
SB and 24.7% against HYBRID. Here: the mpl_sweep experiment's local configuration
(workflows/config/local.yaml: WL6 jobs of 2 ranks, heavy load, the mpi_stencil stand-in unless
NPB is provisioned) at one MPL, the three schemes in a shuffled order within each of --reps
repetitions, every repetition with its own seeded job stream, the same for the three schemes.
One netns cluster (2 hosts, one CPU each) serves all runs and is removed at the end, whatever
happens. Printed: each run's mean response time, then the ratios CC-B/SB and CC-B/HYBRID of the
mean response time with 95% CIs over repetitions (the t-interval of the per-rep log ratios,
analysis.stats.paired_ratio_t, as in the analysis), and the mean BCR and MD per scheme. Needs
root. Figures, not a test; about 15 s per run on 2 vCPUs.

  .venv/bin/python bench/mpl_sweep_ccb.py [--reps 8] [--mpl 3] [--jobs 8] [--json OUT] [--keep]
"""

from __future__ import annotations

import argparse
import copy
import csv
import json
import random
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from analysis.stats import paired_ratio_t  # noqa: E402
from bench import _common  # noqa: E402
from experiments.config import profile_config, validate_config  # noqa: E402
from experiments.mpl_sweep import analysis as am  # noqa: E402
from experiments.mpl_sweep import experiment as ms  # noqa: E402

SCHEMES = ["sb", "hybrid", "cc_b"]
PREFIX, SUBNET = "cormplb", "10.77.10.0/24"


cluster = _common.netns_cluster


def config(reps: int, mpl: int, jobs: int, inventory: Path) -> dict:
    raw = profile_config(ROOT / "workflows" / "config" / "local.yaml")
    sec = copy.deepcopy(raw["mpl_sweep"])
    sec.update({"schemes": SCHEMES, "mpl_levels": [mpl], "reps": reps, "use_loads": ["heavy"]})
    sec["workloads"]["wl6"]["jobs"] = jobs
    sec["cluster"] = {"inventory": str(inventory), "netns": {"hosts": 0}}
    raw["mpl_sweep"] = sec
    raw["experiments"] = ["mpl_sweep"]
    return validate_config(raw, "bench")


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=8, help="repetitions (default 8)")
    ap.add_argument("--mpl", type=int, default=3, help="multi-programming level (default 3)")
    ap.add_argument("--jobs", type=int, default=8, help="jobs per run (default 8)")
    ap.add_argument("--seed", type=int, default=11, help="seed of the run order (default 11)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the run folders (printed at the end)")
    a = ap.parse_args(argv)
    tmp = Path(tempfile.mkdtemp(prefix="mpl-ccb-"))
    state = tmp / "netns"
    up = cluster(state, "up", "2", "--prefix", PREFIX, "--subnet", SUBNET, "--cpus-per-host", "1",
                 "--inventory", str(state / "inventory.yml"))  # fmt: skip
    try:
        if up.returncode != 0:
            print(f"mpl_sweep_ccb: netns-cluster up failed: {up.stderr.strip()}", file=sys.stderr)
            return up.returncode
        cfg = config(a.reps, a.mpl, a.jobs, state / "inventory.yml")
        rng = random.Random(a.seed)
        runs = []
        for rep in range(a.reps):
            order = list(SCHEMES)
            rng.shuffle(order)
            for scheme in order:
                p = {"workload": "wl6", "load": "heavy", "scheme": scheme, "mpl": a.mpl, "rep": rep}
                argv, out = _common.corun_run_command(tmp, ms.run_name(p), ms.make_spec(cfg, p))
                res = _common.run(argv, timeout=None)
                if res.returncode != 0:
                    print(f"mpl_sweep_ccb: {ms.run_name(p)} failed: {res.stderr.strip()[-500:]}", file=sys.stderr)
                    return 1
                jobs = [r for r in _csv(out / "jobs.csv") if r["exit_code"] == "0"]
                meta = json.loads((out / "metadata.json").read_text())
                m, _ = am.daemon_measures(meta)
                row = {**p, "response_s": sum(float(r["response_s"]) for r in jobs) / len(jobs), **m}
                runs.append(row)
                print(f"rep {rep} {scheme:7s} mean response {row['response_s']:.3f} s", flush=True)
    finally:
        _common.finish_cluster("mpl_sweep_ccb", state, tmp, a.keep)
    by = {s: [r for r in sorted(runs, key=lambda r: r["rep"]) if r["scheme"] == s] for s in SCHEMES}
    out = {"reps": a.reps, "mpl": a.mpl, "jobs": a.jobs, "runs": runs, "ratios": {}}
    for base in ("sb", "hybrid"):
        r, lo, hi = paired_ratio_t([x["response_s"] for x in by[base]], [x["response_s"] for x in by["cc_b"]])
        out["ratios"][f"cc_b/{base}"] = {"ratio": r, "ci95": [lo, hi]}
        print(
            f"CC-B/{base.upper()} mean response time: {r:.3f} [{lo:.3f}, {hi:.3f}] (95% t-interval, per-rep log ratios)"
        )
    for s in SCHEMES:
        bcr = [x["bcr"] for x in by[s] if x.get("bcr") is not None]
        md = [x["md_us"] for x in by[s] if x.get("md_us") is not None]
        print(f"{s:7s} BCR {sum(bcr) / max(1, len(bcr)):.4f}  MD {sum(md) / max(1, len(md)):.1f} us")
    if a.json:
        a.json.write_text(json.dumps(out, indent=2) + "\n")
    return 0


def _csv(path: Path) -> list[dict]:
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


if __name__ == "__main__":
    sys.exit(main())

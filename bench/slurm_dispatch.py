#!/usr/bin/env python3
"""Dispatch through Slurm: runs per hour and Slurm's submit-to-start latency per run.

A toy workflow of RUNS runs of a fixed length (each `sleep SECONDS`, so the figure is the
harness's dispatch, not an experiment: emulated nodes share this machine's CPUs) goes through
Snakemake's Slurm executor as the testbed-slurm profile sends measuring runs: each run its own
exclusive one-node job (`--exclusive --nodelist` by repetition, corun.testbed.slurm_placement;
the profile's first status check, slurm-init-seconds-before-status-checks), on the first 1, 2,
... NODES nodes of the partition (sinfo's order). Per node count it prints the campaign's wall time,
runs per hour, the ideal (NODES x 3600 / SECONDS) and its share, and from
sacct each job's submit-to-start latency (median and max). Needs a Slurm cluster whose nodes see
this folder at the same path (roles/slurm; on one machine, its own disk). Not a pass/fail test.

  .venv/bin/python bench/slurm_dispatch.py [--runs 12] [--seconds 10] [--nodes 1,2,3]
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
PROFILE = ROOT / "workflows" / "profiles" / "testbed-slurm" / "config.yaml"
SNAKEMAKE = Path(sys.executable).with_name("snakemake")

TOY = """
import sys
sys.path.insert(0, {root!r})
from corun.testbed.slurm_placement import slurm_extra
NODES = {nodes!r}
RUNS = [f"run-r{{i}}" for i in range({runs})]

localrules: all


rule all:
    input:
        expand("out/{{run}}.txt", run=RUNS),


rule measure:
    output:
        "out/{{run}}.txt",
    resources:
        nodes=1,
        slurm_extra=lambda wildcards: slurm_extra(wildcards.run, NODES),
    shell:
        "sleep {seconds}; hostname > {{output}}; echo $SLURM_JOB_ID >> {{output}}"
"""


def partition_nodes() -> list[str]:
    out = subprocess.run(["sinfo", "--noheader", "--Node", "--format=%N %t"], capture_output=True, text=True)
    if out.returncode != 0:
        sys.exit(f"slurm_dispatch: sinfo failed: {out.stderr.strip()} (expected a Slurm cluster: roles/slurm)")
    return sorted({line.split()[0] for line in out.stdout.splitlines() if line.split()[1].startswith("idle")})


def sacct_times(job_ids: list[str]) -> list[tuple[datetime, datetime]]:
    out = subprocess.run(
        ["sacct", "-X", "-n", "-P", "-j", ",".join(job_ids), "-o", "JobID,Submit,Start"],
        capture_output=True,
        text=True,
    ).stdout
    rows = [line.split("|") for line in out.splitlines() if line]
    return [(datetime.fromisoformat(s), datetime.fromisoformat(t)) for _, s, t in rows if t not in ("Unknown", "None")]


def first_status_check_s() -> int:
    """The testbed-slurm profile's first status check, so the toy is dispatched as its runs are."""
    return int(yaml.safe_load(PROFILE.read_text())["slurm-init-seconds-before-status-checks"])


def campaign(nodes: list[str], runs: int, seconds: float) -> dict:
    with tempfile.TemporaryDirectory(dir=ROOT / ".corun" if (ROOT / ".corun").is_dir() else None) as d:
        wd = Path(d)
        (wd / "Snakefile").write_text(
            TOY.format(
                root=str(ROOT),
                nodes=nodes,
                runs=runs,
                seconds=seconds,
            )
        )
        argv = [str(SNAKEMAKE), "--executor", "slurm", "--jobs", str(2 * len(nodes)), "--latency-wait", "5"]
        argv += ["--default-resources", "slurm_partition=corun", "runtime=10", "--quiet", "all"]
        argv += ["--slurm-init-seconds-before-status-checks", str(first_status_check_s())]
        t0 = time.monotonic()
        res = subprocess.run(argv, cwd=wd, capture_output=True, text=True)
        wall = time.monotonic() - t0
        if res.returncode != 0:
            sys.exit(f"slurm_dispatch: the toy campaign failed: {(res.stderr or res.stdout).strip().splitlines()[-1]}")
        done = [(wd / "out" / f"run-r{i}.txt").read_text().split() for i in range(runs)]
    latency = [(t - s).total_seconds() for s, t in sacct_times([job for _, job in done])]
    return {
        "nodes": len(nodes),
        "runs": runs,
        "run_s": seconds,
        "wall_s": round(wall, 1),
        "runs_per_hour": round(runs * 3600 / wall, 1),
        "ideal_runs_per_hour": round(len(nodes) * 3600 / seconds, 1),
        "share_of_ideal": round(runs * seconds / (wall * len(nodes)), 3),
        "hosts_used": sorted({host for host, _ in done}),
        "submit_to_start_s": {
            "median": statistics.median(latency) if latency else None,
            "max": max(latency) if latency else None,
            "jobs": len(latency),
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=12)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--nodes", default="1,2,3", help="node counts, comma-separated (default 1,2,3)")
    a = ap.parse_args()
    counts = [int(c) for c in re.split(r"\s*,\s*", a.nodes) if c]
    have = partition_nodes()
    for n in counts:
        if n > len(have):
            print(json.dumps({"nodes": n, "skipped": f"the partition has {len(have)} idle nodes"}))
            continue
        print(json.dumps(campaign(have[:n], a.runs, a.seconds)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

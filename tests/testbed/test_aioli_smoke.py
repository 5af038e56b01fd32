"""A short aioli run end to end on its own netns cluster: the smoke configuration's runs (fifo
and aioli on strided reads of 4 clients, 2 reps), each data server's brick on an emulated
rotating disk and the corun/aioli translator in its graph, each run's policy applied and
verified through the servers' control and status files, through corun.testbed.pfs_runs,
analysis.collect and analysis.aioli; then nothing is left: no namespace, server, emulator, loop
device, mount or journal."""

from __future__ import annotations

import json
import subprocess
import sys
import time

import pandas as pd
import pytest
import yaml

from corun.experiments import aioli
from corun.experiments.workflow_config import validate_config
from corun.util import repo_root

PREFIX = "aiolit"
SUBNET = "10.80.9.0/24"

pytestmark = pytest.mark.root


def leftovers(tmp_path) -> list[str]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left = [line for line in ns.splitlines() if line.startswith(f"{PREFIX}-")]
    procs = subprocess.run(["pgrep", "-af", "glusterfs|corun-rotating-disk"], capture_output=True, text=True).stdout
    left += [line for line in procs.splitlines() if str(tmp_path) in line]
    loops = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    left += [line for line in loops.splitlines() if str(tmp_path) in line]
    left += [line for line in open("/proc/mounts").read().splitlines() if str(tmp_path) in line]
    left += [str(p) for p in (tmp_path / "work").glob("*/pfs/journal.json")]
    return left


def run(argv, timeout=300):
    return subprocess.run(argv, capture_output=True, text=True, cwd=repo_root(), timeout=timeout)


def test_smoke_run_end_to_end(tmp_path):
    raw = yaml.safe_load((repo_root() / "workflows" / "config" / "smoke.yaml").read_text())
    raw["aioli"]["cluster"] = {"prefix": PREFIX, "subnet": SUBNET, "port": 24031}
    cfg = validate_config(raw, "smoke.yaml")
    (tmp_path / "config.yaml").write_text(yaml.safe_dump(cfg))
    specs = tmp_path / "specs"
    n = aioli.EXPERIMENT.specs(cfg, {}, tmp_path / "data", specs)
    t0 = time.monotonic()
    res = run(
        [sys.executable, "-m", "corun.testbed.pfs_runs", "--groups", str(specs / "groups.json"), "--group", "s2"]
        + ["--specs", str(specs), "--runs", str(tmp_path / "runs"), "--work", str(tmp_path / "work")]
        + ["--done", str(tmp_path / "done.json")]
    )
    wall = time.monotonic() - t0
    try:
        assert res.returncode == 0, res.stderr + res.stdout[-2000:]
        assert json.loads((tmp_path / "done.json").read_text())["runs"] == aioli.EXPERIMENT.run_names(cfg)
        dirs = sorted((tmp_path / "runs").iterdir())
        assert len(dirs) == n == 4
        counters = json.loads((dirs[0] / "pfs_counters.json").read_text())
        after = counters["after"]["servers"]
        assert len(after) == 2 and all(s["disk"]["timed"] for s in after)
        # the clients' reads reached the emulated disks (O_DIRECT bricks, no page cache between)
        read = sum(s["disk"]["counters"]["bytes_read"] for s in after)
        read -= sum(s["disk"]["counters"]["bytes_read"] for s in counters["before"]["servers"])
        assert read >= 4 << 20
        col = run(
            [sys.executable, "-m", "analysis.collect", "--out-jobs", str(tmp_path / "jobs.csv")]
            + ["--out-runs", str(tmp_path / "runs.csv"), *map(str, dirs)]
        )
        assert col.returncode == 0, col.stderr
        an = run(
            [sys.executable, "-m", "analysis.aioli", "--jobs", str(tmp_path / "jobs.csv")]
            + ["--runs", str(tmp_path / "runs.csv"), "--config", str(tmp_path / "config.yaml")]
            + ["--out-dir", str(tmp_path / "analysis")]
        )
        assert an.returncode == 0, an.stderr
        # the policy was in effect from the run's start to its end, and the translator counted
        one = next(d for d in dirs if "_aioli_" in d.name)
        meta = json.loads((one / "metadata.json").read_text())
        assert meta["scheduler"]["verified"] and meta["scheduler"]["verified_at_end"], meta["scheduler"]
        sched = [s["sched"] for s in json.loads((one / "pfs_counters.json").read_text())["after"]["servers"]]
        # (read after the variant's stop restored fifo, which keeps the counters; under fifo
        # requests pass through and no dispatch is counted)
        assert all(s["counters"]["dispatches"] > 0 for s in sched), [s["counters"] for s in sched]
        section = json.loads((tmp_path / "analysis" / "section.json").read_text())
        assert not any("translator" in m["reason"] for m in section["missing"]), section["missing"]
        pts = pd.read_csv(tmp_path / "analysis" / "points.csv")
        row = pts[(pts["policy"] == "aioli") & (pts["pattern"] == "strided")].iloc[0]
        assert row["avg_aggregation"] >= 1 and "speedup_pct" in pts.columns
    finally:
        assert leftovers(tmp_path) == []
    assert wall < 90, f"the smoke group took {wall:.0f} s"

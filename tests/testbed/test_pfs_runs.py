"""corun.testbed.pfs_runs on its own netns cluster: a failing run and SIGTERM leave no cluster,
server or journal behind, and the attempt after a SIGKILL takes down what it left (a group that
succeeds is the smoke run's, tests/test_workflow.py)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest
import yaml

from corun.experiments import sais
from corun.experiments.workflow_config import validate_config
from corun.util import repo_root

PREFIX = "saist"
SUBNET = "10.78.9.0/24"

pytestmark = pytest.mark.root


def make_group(tmp_path, policies=("irqbalance", "source_aware")):
    raw = yaml.safe_load((repo_root() / "workflows" / "config" / "smoke.yaml").read_text())
    raw["sais"] = {
        "policies": list(policies),
        "servers": [2],
        "transfer_sizes_bytes": [1048576],
        "file_mib": 8,
        "reps": 1,
        "monitors": ["cpustat"],
        "cluster": {"prefix": PREFIX, "subnet": SUBNET, "port": 24029},
    }
    cfg = validate_config(raw, "test.yaml")
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    return tmp_path / "specs" / "groups.json"


def runner(tmp_path, groups):
    argv = [sys.executable, "-m", "corun.testbed.pfs_runs", "--groups", str(groups), "--group", "s2_l1"]
    argv += ["--specs", str(groups.parent), "--runs", str(tmp_path / "runs"), "--work", str(tmp_path / "work")]
    return argv + ["--done", str(tmp_path / "done.json")]


def leftovers(tmp_path) -> list[str]:
    ns = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    left = [line for line in ns.splitlines() if line.startswith(f"{PREFIX}-")]
    procs = subprocess.run(["pgrep", "-af", "glusterfs"], capture_output=True, text=True).stdout
    left += [line for line in procs.splitlines() if str(tmp_path) in line]
    left += [str(p) for p in (tmp_path / "work").glob("*/pfs/journal.json")]
    return left


def start_until_up(tmp_path, groups) -> subprocess.Popen:
    proc = subprocess.Popen(runner(tmp_path, groups), cwd=repo_root(), stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    for line in proc.stdout:
        if "file system up" in line or time.monotonic() > deadline:
            break
    return proc


def test_after_sigkill_the_next_attempt_cleans_up_and_a_failing_run_tears_down(tmp_path):
    groups = make_group(tmp_path)
    proc = start_until_up(tmp_path, groups)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait(timeout=60)
    assert leftovers(tmp_path)  # the cluster and the servers outlive a SIGKILL
    (groups.parent / "s2_l1_irqbalance_t1024k_c1_r0.yaml").write_text("name: broken\njobs: []\n")
    (groups.parent / "s2_l1_source_aware_t1024k_c1_r0.yaml").write_text("name: broken\njobs: []\n")
    res = subprocess.run(runner(tmp_path, groups), capture_output=True, text=True, cwd=repo_root(), timeout=600)
    assert res.returncode != 0
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("corun: ")
    assert leftovers(tmp_path) == []
    assert not (tmp_path / "done.json").exists()


def test_sigterm_tears_down(tmp_path):
    groups = make_group(tmp_path)
    proc = start_until_up(tmp_path, groups)
    os.kill(proc.pid, signal.SIGTERM)
    assert proc.wait(timeout=120) != 0
    assert leftovers(tmp_path) == []

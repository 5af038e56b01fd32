"""corun.testbed.pfs_runs on its own netns cluster: a failing run and SIGTERM leave no cluster,
server or journal behind, and the attempt after a SIGKILL takes down what it left (a group that
succeeds is the smoke run's, tests/test_workflow.py)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time

import pytest

from analysis import collect
from corun.util import repo_root
from experiments.config import profile_config, validate_config
from experiments.sais import analysis as an
from experiments.sais import experiment as sais

PREFIX = "saist"
SUBNET = "10.78.9.0/24"

pytestmark = pytest.mark.root


def make_group(tmp_path, policies=("irqbalance", "source_aware")):
    raw = profile_config(repo_root() / "workflows" / "config" / "smoke.yaml")
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
    left += [str(p) for p in (tmp_path / "work").glob("*/pfs/pfs.journal.json")]
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


def test_client_hosts_of_an_inventory_each_run_their_own_run(tmp_path):
    """A netns cluster used as an inventory (ssh to each host, as on a testbed): with two client
    hosts every run is two `corun run`s, one per client host, each applying the policy to its
    own eth0; the second host's run lands in the first's folder and is collected with it."""
    state, inv = tmp_path / "cluster", tmp_path / "inventory.yml"
    cluster = [sys.executable, str(repo_root() / "scripts" / "netns-cluster"), "--state-dir", str(state)]
    up = subprocess.run(
        [*cluster, "up", "3", "--prefix", "saisi", "--subnet", "10.78.10.0/24", "--inventory", str(inv)],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    try:
        assert up.returncode == 0, up.stderr
        raw = profile_config(repo_root() / "workflows" / "config" / "smoke.yaml")
        raw["sais"] = {
            # not source_aware: rps_sock_flow_entries exists in the initial namespace only, and
            # a namespace reached over ssh is this test's stand-in for a host
            "policies": ["irqbalance", "spread"],
            "servers": [1],
            "client_hosts": [2],
            "transfer_sizes_bytes": [1048576],
            "file_mib": 8,
            "reps": 1,
            "monitors": ["cpustat"],
            "cluster": {
                "kind": "inventory",
                "inventory": str(inv),
                "pfs_root": str(tmp_path / "pfs"),
                "interfaces": "eth0",
                "port": 24039,
            },
        }
        cfg = validate_config(raw, "test.yaml")
        sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
        groups = tmp_path / "specs" / "groups.json"
        argv = runner(tmp_path, groups)
        argv[argv.index("s2_l1")] = "s1_l1_h2"
        res = subprocess.run(argv, capture_output=True, text=True, cwd=repo_root(), timeout=600)
        assert res.returncode == 0, res.stderr[-2000:]
        runs = sorted(p.name for p in (tmp_path / "runs").iterdir())
        assert runs == ["s1_l1_h2_irqbalance_t1024k_c1_r0", "s1_l1_h2_spread_t1024k_c1_r0"]
        for name in runs:
            meta = json.loads((tmp_path / "runs" / name / "metadata.json").read_text())
            other = json.loads((tmp_path / "runs" / name / "hosts" / f"{name}.h1" / "metadata.json").read_text())
            assert meta["host"]["hostname"] == "saisi-n1" and other["host"]["hostname"] == "saisi-n2"
            assert meta["scheduler"]["verified"] and other["scheduler"]["verified"]
        jobs, _ = collect.collect([tmp_path / "runs" / n for n in runs])
        assert sorted(jobs["client_host"]) == [0, 0, 1, 1] and jobs["result_read_bw_mean_mib_s"].gt(0).all()
        for _, g in jobs.groupby("run_id"):
            # one machine's runs wait for each other (one run at a time on a machine): here the
            # two hosts' reads do not overlap, and the analysis will not sum them
            assert an.host_runs_overlap(g) < an.MIN_HOST_OVERLAP
        assert leftovers(tmp_path) == []  # no server, no journal
    finally:
        down = subprocess.run([*cluster, "down"], capture_output=True, text=True, timeout=300)
        assert down.returncode == 0, down.stderr
    assert "saisi-" not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout

"""`corun recover` after a SIGKILL of a file-system group mid-way (an aioli group: a netns
cluster, data servers on emulated rotating disks, a run under way) leaves no network namespace,
mount, loop device or daemon of it: checked with `ip netns`, `findmnt`, `losetup -a` and the
process table."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import pytest

from corun.util import repo_root
from experiments.aioli import experiment as aioli
from experiments.config import profile_config, validate_config

PREFIX = "aiort"
SUBNET = "10.78.13.0/24"

pytestmark = pytest.mark.root


def make_group(tmp_path):
    raw = profile_config(repo_root() / "workflows" / "config" / "smoke.yaml")
    raw["aioli"] = {
        "policies": ["pfs_fifo", "aioli"],
        "servers": 2,
        "clients": [2],
        "patterns": ["strided"],
        "operations": ["read"],
        "request_sizes_bytes": [65536],
        "client_mib": 1,
        "reps": 3,
        "translator": {"enabled": True},
        "monitors": [],
        "cluster": {"prefix": PREFIX, "subnet": SUBNET, "port": 24031},
    }
    cfg = validate_config(raw, "test.yaml")
    aioli.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    return tmp_path / "specs" / "groups.json", aioli.group_name(cfg["aioli"])


def out(*argv: str) -> str:
    return subprocess.run(argv, capture_output=True, text=True).stdout


def leftovers(tmp_path) -> list[str]:
    left = [f"netns {n}" for n in out("ip", "netns", "list").splitlines() if n.startswith(f"{PREFIX}-")]
    left += [f"mount {m}" for m in out("findmnt", "-rn", "-o", "TARGET").splitlines() if str(tmp_path) in m]
    left += [f"loop {x}" for x in out("losetup", "-a").splitlines() if str(tmp_path) in x]
    for d in os.listdir("/proc"):
        if not d.isdigit() or int(d) == os.getpid():
            continue
        try:
            cmd = open(f"/proc/{d}/cmdline", "rb").read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if str(tmp_path) in cmd or f"{PREFIX}-n" in cmd:
            left.append(f"process {d}: {cmd[:160]}")
    return left


def test_recover_after_sigkill_of_a_file_system_group(tmp_path):
    groups, group = make_group(tmp_path)
    env = {**os.environ, "CORUN_STATE_DIR": str(tmp_path / "state")}
    argv = [sys.executable, "-m", "corun.testbed.pfs_runs", "--groups", str(groups), "--group", group]
    argv += ["--specs", str(groups.parent), "--runs", str(tmp_path / "runs"), "--work", str(tmp_path / "work")]
    proc = subprocess.Popen(argv, cwd=repo_root(), stdout=subprocess.PIPE, text=True, env=env, start_new_session=True)
    deadline = time.monotonic() + 240
    seen = []
    for line in proc.stdout:  # killed once the first run is done and the second under way
        seen.append(line)
        if ": " in line and line.rstrip().endswith(" s") or time.monotonic() > deadline:
            break
    time.sleep(1.0)
    os.killpg(proc.pid, signal.SIGKILL)  # the whole group, as a killed `make run`
    proc.wait(timeout=60)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # until the killed group's last process is gone
        try:
            os.killpg(proc.pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    assert any("file system up" in x for x in seen), seen
    before = leftovers(tmp_path)
    assert any(x.startswith("netns") for x in before) and any(x.startswith("loop") for x in before), before
    res = subprocess.run(
        [sys.executable, "-m", "corun", "recover"], cwd=repo_root(), env=env, capture_output=True, text=True
    )
    assert res.returncode == 0, res.stderr
    assert "error" not in res.stdout, res.stdout
    deadline = time.monotonic() + 10
    while leftovers(tmp_path) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert leftovers(tmp_path) == [], (res.stdout, res.stderr)
    assert list((tmp_path / "state").glob("*.journal.json")) == []

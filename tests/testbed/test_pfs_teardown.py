"""Teardown of the parallel file system leaves nothing behind: after up, and after SIGKILL of up.

Its own 2-host netns cluster, so the qdiscs checked are this module's alone.
"""

import os
import signal
import subprocess
import time

import pytest
from test_pfs import PFS, REPO, leftovers, netns_cluster, pfs, write_config

PREFIX = "pfsu"
SUBNET = "10.77.4.0/24"

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def netns(tmp_path_factory):
    yield from netns_cluster(tmp_path_factory, PREFIX, SUBNET)


def test_down_leaves_nothing_behind(netns, tmp_path):
    root = tmp_path / "root"
    cfg = write_config(tmp_path / "pfs.yaml", netns, root, port=24018)
    up = pfs(cfg, "up")
    assert up.returncode == 0, up.stderr
    assert leftovers(netns, root, PREFIX)
    # A second file system on the same port is refused, and leaves nothing of its own.
    (tmp_path / "other").mkdir()
    clash = pfs(write_config(tmp_path / "other" / "pfs.yaml", netns, tmp_path / "clash", port=24018), "up")
    assert clash.returncode == 1 and "is already in use" in clash.stderr
    assert leftovers(netns, tmp_path / "clash", PREFIX, qdiscs=False) == []
    down = pfs(cfg, "down")
    assert down.returncode == 0, down.stderr
    assert leftovers(netns, root, PREFIX) == []
    assert not (tmp_path / "pfs-state" / "pfs.journal.json").exists()
    assert pfs(cfg, "down").returncode == 0  # nothing to do: still fine


def test_down_after_sigkill_of_up_leaves_nothing_behind(netns, tmp_path):
    root = tmp_path / "root"
    cfg = write_config(tmp_path / "pfs.yaml", netns, root, port=24019)
    journal = tmp_path / "pfs-state" / "pfs.journal.json"
    proc = subprocess.Popen(
        [*PFS, "--config", str(cfg), "up"], cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    deadline = time.monotonic() + 60
    # Kill it once the first data server has been started (mid-way through up).
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            if "stop the data server" in journal.read_text():
                break
        except (OSError, ValueError):
            pass
        time.sleep(0.05)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    time.sleep(1)
    down = pfs(cfg, "down")
    assert down.returncode == 0, down.stderr
    assert leftovers(netns, root, PREFIX) == []

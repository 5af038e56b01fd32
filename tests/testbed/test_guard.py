"""corun.testbed.guard: a testbed command killed with SIGKILL leaves a journal that `corun recover`
undoes after the runs' journals; one that ends normally leaves none."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

from corun.machine.recovery import recover_stale
from corun.testbed.guard import Guard

REPO = Path(__file__).resolve().parents[2]


def test_closed_guard_leaves_no_journal(tmp_path, monkeypatch):
    monkeypatch.setenv("CORUN_STATE_DIR", str(tmp_path / "state"))
    g = Guard("cluster", tmp_path / "cluster")
    assert len(list((tmp_path / "state").glob("testbed-cluster-*.journal.json"))) == 1
    g.close()
    assert list((tmp_path / "state").glob("*.journal.json")) == []
    assert list((tmp_path / "state").glob("*.lock")) == []


def test_killed_command_is_recovered(tmp_path):
    """A process holding a guard is killed; recover runs the guard's teardown (here: a cluster
    folder without a cluster, so netns-cluster down has nothing to do and succeeds)."""
    state = tmp_path / "state"
    env = {**os.environ, "CORUN_STATE_DIR": str(state), "PYTHONPATH": str(REPO)}
    code = (
        "import sys, time; from pathlib import Path; from corun.testbed.guard import Guard; "
        f"Guard('cluster', Path({str(tmp_path / 'c')!r})); print('up', flush=True); time.sleep(60)"
    )
    p = subprocess.Popen([sys.executable, "-c", code], env=env, stdout=subprocess.PIPE, text=True, cwd=REPO)
    assert p.stdout.readline().strip() == "up"
    assert recover_stale(state) == []  # alive: left alone
    os.kill(p.pid, signal.SIGKILL)
    p.wait()
    lines = recover_stale(state)
    assert len(lines) == 1 and "undid 1 change(s)" in lines[0] and "error" not in lines[0], lines
    assert list(state.glob("*.journal.json")) == []


def test_runs_undone_before_testbed(tmp_path):
    """Journals of dead processes: a run's is undone before a testbed command's, whatever the names."""
    order = tmp_path / "order"
    dead = subprocess.Popen(["true"])
    dead.wait()
    for name in ("testbed-pfs-group-000", "aaa-run", "zzz-run"):
        action = {"kind": "command", "argv": ["sh", "-c", f'echo {name} >> "$0"', str(order)]}
        doc = {"run_id": name, "pid": dead.pid, "starttime": 1, "actions": [action]}
        (tmp_path / f"{name}.journal.json").write_text(json.dumps(doc))
    time.sleep(0.01)
    assert len(recover_stale(tmp_path)) == 3
    assert order.read_text().split() == ["aaa-run", "zzz-run", "testbed-pfs-group-000"]

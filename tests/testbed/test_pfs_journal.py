"""The file system's journal is corun.machine.state's Journal (corun.testbed.pfs): the unwind runs
actions of one `together` kind at once (the data servers' stops, the disks' teardowns), keeps the
order between kinds, and, for `down`, keeps what failed in the journal's file, which the next
`down` resumes."""

from __future__ import annotations

import time

from corun.machine.state import Journal
from corun.testbed.pfs import _push


def step(log, name, sleep_s=0.0, rc=0):
    return ["sh", "-c", f'sleep {sleep_s}; echo {name} >> "$0"; exit {rc}', str(log)]


def test_together_actions_run_at_once_after_the_newer_ones(tmp_path):
    log = tmp_path / "log"
    j = Journal("pfs", tmp_path)
    for i in (1, 2, 3):
        _push(j, f"disk {i}", step(log, f"disk{i}", 0.1), together="disks")
        _push(j, f"server {i}", step(log, f"server{i}", 0.6), together="servers")
    _push(j, "qdisc", step(log, "qdisc"))
    t0 = time.monotonic()
    assert j.unwind(keep_failed=True) == []
    took = time.monotonic() - t0
    order = log.read_text().split()
    assert order[0] == "qdisc"
    assert sorted(order[1:4]) == ["server1", "server2", "server3"]
    assert sorted(order[4:]) == ["disk1", "disk2", "disk3"]
    assert took < 1.5, took  # one after another: 3 x 0.6 + 3 x 0.1 s
    assert not j.path.exists() and not j.lock_path.exists()


def test_failed_undos_stay_in_order_for_the_next_down(tmp_path):
    log = tmp_path / "log"
    j = Journal("pfs", tmp_path)
    _push(j, "a", step(log, "a", rc=1))
    _push(j, "s1", step(log, "s1", rc=1), together="servers")
    _push(j, "s2", step(log, "s2"), together="servers")
    j.release()  # as `up` ends: the journal stays
    j = Journal("pfs", tmp_path, resume=True)  # `down`
    assert [a["what"] for a in j.actions] == ["a", "s1", "s2"]
    errors = j.unwind(keep_failed=True)
    assert len(errors) == 2 and all("exited 1" in e for e in errors)
    left = Journal("pfs", tmp_path, resume=True)
    assert [a["what"] for a in left.actions] == ["a", "s1"]
    assert len(left.unwind()) == 2 and not left.path.exists()  # without keep_failed: forgotten
    assert Journal("pfs", tmp_path).actions == []  # not resumed: a new journal

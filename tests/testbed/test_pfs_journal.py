"""corun.testbed.pfs.FsJournal: the unwind runs actions of one `together` kind at once (the data
servers' stops, the disks' teardowns), keeps the order between kinds, and keeps what failed."""

from __future__ import annotations

import time

from corun.testbed.pfs import FsJournal


def step(log, name, sleep_s=0.0, rc=0):
    return ["sh", "-c", f'sleep {sleep_s}; echo {name} >> "$0"; exit {rc}', str(log)]


def test_together_actions_run_at_once_after_the_newer_ones(tmp_path):
    log = tmp_path / "log"
    j = FsJournal(tmp_path / "journal.json")
    for i in (1, 2, 3):
        j.push(f"disk {i}", step(log, f"disk{i}", 0.1), together="disks")
        j.push(f"server {i}", step(log, f"server{i}", 0.6), together="servers")
    j.push("qdisc", step(log, "qdisc"))
    t0 = time.monotonic()
    assert j.unwind() == []
    took = time.monotonic() - t0
    order = log.read_text().split()
    assert order[0] == "qdisc"
    assert sorted(order[1:4]) == ["server1", "server2", "server3"]
    assert sorted(order[4:]) == ["disk1", "disk2", "disk3"]
    assert took < 1.5, took  # one after another: 3 x 0.6 + 3 x 0.1 s
    assert not (tmp_path / "journal.json").exists()


def test_failed_undos_stay_in_order(tmp_path):
    log = tmp_path / "log"
    j = FsJournal(tmp_path / "journal.json")
    j.push("a", step(log, "a", rc=1))
    j.push("s1", step(log, "s1", rc=1), together="servers")
    j.push("s2", step(log, "s2"), together="servers")
    errors = j.unwind()
    assert len(errors) == 2
    left = FsJournal(tmp_path / "journal.json").actions
    assert [a["what"] for a in left] == ["a", "s1"]

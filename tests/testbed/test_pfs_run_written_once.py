"""A file-system group's run appears under RUNS/<run> once, complete (the rule of `corun run`'s
own folders, tests/instrument/test_run_written_once.py): corun.testbed.pfs_runs has the client's
`corun run` measure it in RUNS/<run>.incomplete/<run> and writes the servers' counters
(pfs_counters.json), the server parts' record and fetched files, the companion runs of the other
client hosts and where the hosts were (pfs_group) into it before its one rename; nothing under
RUNS/<run> is written or moved after it first exists, and a failed run leaves nothing."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from corun.errors import CorunError
from corun.machine.state import Journal
from corun.testbed import pfs_runs
from corun.testbed.inventory import Host

CLIENT = Host(name="c0", address="10.0.0.1")
HOSTS = {"group": "g", "cluster": "inventory", "hosts": [{"name": "c0", "roles": ["client"], "netns": False}]}


def corun_run(fail: str | None = None):
    """run_on_host as `corun run` writes a run: in <out>.incomplete/, then one rename to <out>."""

    def run_on_host(host, spec, out, push, timeout=None, fresh=False):
        tmp = out.with_name(out.name + ".incomplete")
        tmp.mkdir(parents=True)
        (tmp / "jobs.csv").write_text("job_id\nj\n")
        meta = {"run_id": out.name, "scheduler": {"name": "p"}, "host": {"hostname": host.name}}
        (tmp / "metadata.json").write_text(json.dumps({**meta, "variant_verified_at_start": True}))
        if host.name == fail:
            raise CorunError(f"{host.name}: corun run failed (exit 1)")
        os.replace(tmp, out)
        return out

    return run_on_host


def tree(folder: Path) -> dict:
    return {str(p.relative_to(folder)): p.read_bytes() if p.is_file() else None for p in sorted(folder.rglob("*"))}


@pytest.fixture
def moves(monkeypatch):
    """Every os.replace and os.rename as (source, destination, the destination's tree after)."""
    seen: list[tuple[Path, Path, dict | None]] = []
    real_replace, real_rename = os.replace, os.rename

    def wrap(real):
        def move(src, dst, *a, **kw):
            real(src, dst, *a, **kw)
            seen.append((Path(src), Path(dst), tree(Path(dst)) if Path(dst).is_dir() else None))

        return move

    monkeypatch.setattr(os, "replace", wrap(real_replace))
    monkeypatch.setattr(os, "rename", wrap(real_rename))
    return seen


def under(p: Path, folder: Path) -> bool:
    return p == folder or folder in p.parents


def assert_written_once(moves, runs: Path, name: str) -> None:
    out = runs / name
    into = [m for m in moves if under(m[1], out)]
    assert len(into) == 1, [(s, d) for s, d, _ in into]  # its metadata.json too written before
    assert into[0][:2] == (runs / f"{name}.incomplete" / name, out)
    assert not [s for s, _, _ in moves if under(s, out)]  # never moved aside
    assert tree(out) == into[0][2]  # nothing written in it after the rename


def part(state: Path) -> dict:
    return {
        "what": "policy on the servers",
        "host": None,
        "state_dir": str(state),
        "apply": ["sh", "-c", 'echo x > "$0/count" && touch "$0/applied"', "{state_dir}"],
        "verify": ["test", "-e", "{state_dir}/applied"],
        "restore": ["rm", "-f", "{state_dir}/applied"],
        "fetch": ["count"],
    }


def test_counters_server_parts_and_hosts_are_in_the_run_before_its_rename(tmp_path, moves, monkeypatch):
    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", corun_run())
    reads = iter(range(10))
    monkeypatch.setattr(pfs_runs, "read_counters", lambda fs, counters: {"servers": [], "read": next(reads)})
    runs = tmp_path / "runs"
    group = {"runs": ["a", "b"], "server_parts": {r: [part(tmp_path / "parts" / r)] for r in ("a", "b")}}
    (tmp_path / "j").mkdir()
    journal = Journal("once", tmp_path / "j")
    try:
        done = pfs_runs._runs(group, tmp_path, runs, CLIENT, object(), {"sched_status": None}, journal, HOSTS)
    finally:
        journal.unwind()
    assert done == ["a", "b"]
    for r in ("a", "b"):
        assert_written_once(moves, runs, r)
        meta = json.loads((runs / r / "metadata.json").read_text())
        assert meta["pfs_group"] == HOSTS and meta["server_parts"][0]["restored"] is True
        assert (runs / r / "server_parts" / "controller" / "count").read_text() == "x\n"
    assert json.loads((runs / "a" / "pfs_counters.json").read_text()) == {
        "before": {"servers": [], "read": 0},
        "after": {"servers": [], "read": 1},
    }
    assert sorted(p.name for p in runs.iterdir()) == ["a", "b"]


def test_companion_runs_move_into_the_run_before_its_rename(tmp_path, moves, monkeypatch):
    inv = tmp_path / "inv.yml"
    inv.write_text("testbed:\n  hosts:\n    c0: {ansible_host: 10.0.0.1}\n    c1: {ansible_host: 10.0.0.2}\n")
    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", corun_run())
    runs = tmp_path / "runs"
    group = {"runs": ["r"], "pfs": {"inventory": str(inv)}, "companions": [{"host": "c1", "suffix": ".h1"}]}
    assert pfs_runs._runs(group, tmp_path, runs, CLIENT, None, None, None, HOSTS) == ["r"]
    assert_written_once(moves, runs, "r")
    other = json.loads((runs / "r" / "hosts" / "r.h1" / "metadata.json").read_text())
    assert other["host"]["hostname"] == "c1" and other["pfs_group"] == HOSTS
    assert sorted(p.name for p in runs.iterdir()) == ["r"]
    assert pfs_runs.finished(runs / "r", pfs_runs.companion_hosts(group))


def test_a_failed_run_leaves_nothing_in_the_runs_folder(tmp_path, moves, monkeypatch):
    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", corun_run(fail="c0"))
    runs = tmp_path / "runs"
    with pytest.raises(CorunError, match="c0: corun run failed"):
        pfs_runs._runs({"runs": ["a"]}, tmp_path, runs, CLIENT, None, None, None, HOSTS)
    assert list(runs.iterdir()) == []

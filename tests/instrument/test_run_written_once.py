"""A run folder appears under its final name once, complete: corun.run.runner.run_spec_file
decides to measure again on the not yet renamed `<out>.incomplete/`, puts the earlier attempts
and the `remeasured` record in it, and renames it last; nothing under `<out>/` is written or moved
after it first exists, and an interrupted attempt leaves only `.incomplete` folders."""

import json
import os
from pathlib import Path

import pytest
import yaml

from corun.errors import CorunError
from corun.run import runner


def spec_file(tmp: Path, remeasure: dict, cmd: list[str]) -> Path:
    spec = {
        "name": "once",
        "remeasure": remeasure,
        "jobs": [{"name": "j", "cmd": cmd}],
        "device": {"path": str(tmp)},
        "monitors": {"enabled": []},
    }
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def fake_steal(monkeypatch, values: list[float]) -> None:
    """The attempts' steal, in order (the machine's real shares otherwise)."""
    real, left = runner.hostmod.cpu_shares, list(values)

    def shares(before, after, interval_s):
        return {**real(before, after, interval_s), **({"steal_pct": left.pop(0)} if left else {})}

    monkeypatch.setattr(runner.hostmod, "cpu_shares", shares)


def record_moves(monkeypatch) -> list[tuple[Path, Path]]:
    """Every os.replace (each atomic write ends in one) and os.rename, as (source, destination)."""
    moves: list[tuple[Path, Path]] = []
    real_replace, real_rename = os.replace, os.rename

    def replace(src, dst, *a, **kw):
        moves.append((Path(src), Path(dst)))
        return real_replace(src, dst, *a, **kw)

    def rename(src, dst, *a, **kw):
        moves.append((Path(src), Path(dst)))
        return real_rename(src, dst, *a, **kw)

    monkeypatch.setattr(os, "replace", replace)
    monkeypatch.setattr(os, "rename", rename)
    return moves


def under(p: Path, folder: Path) -> bool:
    return p == folder or folder in p.parents


@pytest.mark.root
@pytest.mark.parametrize(
    "why, remeasure, cmd",
    [
        ("steal", {"max_steal_pct": 10, "attempts": 2}, ["/bin/true"]),
        ("too short", {"min_measure_s": 0.6, "attempts": 2}, ["/bin/sleep", "0.2"]),
    ],
)
def test_a_remeasured_run_is_renamed_into_place_once_with_its_attempts(disk_tmp, monkeypatch, why, remeasure, cmd):
    fake_steal(monkeypatch, [30.0, 1.0])
    out = disk_tmp / "run"
    moves = record_moves(monkeypatch)
    res = runner.run_spec_file(spec_file(disk_tmp, remeasure, cmd), out, progress=False)
    assert res == out
    into = [i for i, (_, dst) in enumerate(moves) if under(dst, out)]
    assert len(into) == 1, [moves[i] for i in into]  # metadata.json too is written before the rename
    (last,) = into
    assert moves[last] == (out.with_name("run.incomplete"), out)
    assert not [m for m in moves[last + 1 :] if under(m[0], out) or under(m[1], out)]
    assert not [src for src, _ in moves if under(src, out)]  # the finished folder is never moved aside
    meta = json.loads((out / "metadata.json").read_text())
    rm = meta["remeasured"]
    assert rm["attempt"] == 2 and [e["folder"] for e in rm["earlier"]] == ["remeasured/attempt-1"]
    kept = json.loads((out / "remeasured" / "attempt-1" / "metadata.json").read_text())
    assert kept["run_id"] == rm["earlier"][0]["run_id"] != meta["run_id"]
    assert "remeasured" not in kept and (out / "remeasured" / "attempt-1" / "jobs.csv").is_file()
    assert sorted(p.name for p in disk_tmp.iterdir() if p.name.startswith("run")) == ["run"]


@pytest.mark.root
def test_a_run_measured_once_is_renamed_once_with_its_metadata(disk_tmp, monkeypatch):
    out = disk_tmp / "run"
    moves = record_moves(monkeypatch)
    runner.run_spec_file(spec_file(disk_tmp, {"attempts": 2}, ["/bin/true"]), out, progress=False)
    assert [m for m in moves if under(m[1], out)] == [(out.with_name("run.incomplete"), out)]
    assert "remeasured" not in json.loads((out / "metadata.json").read_text())


@pytest.mark.root
def test_an_attempt_interrupted_after_one_set_aside_leaves_only_incomplete_folders(disk_tmp, monkeypatch):
    """The second attempt stopped (as by SIGINT): no `<out>/`, and the first attempt waits in a
    folder a reader of results skips (analysis.runindex: `.incomplete`), not beside it as a run."""
    fake_steal(monkeypatch, [30.0, 1.0])
    real_run = runner.Executor.run
    calls = []

    def run(self):
        calls.append(1)
        real_run(self)
        if len(calls) == 2:
            self.stop("SIGINT")

    monkeypatch.setattr(runner.Executor, "run", run)
    out = disk_tmp / "run"
    with pytest.raises(CorunError, match="stopped by SIGINT"):
        runner.run_spec_file(
            spec_file(disk_tmp, {"max_steal_pct": 10, "attempts": 2}, ["/bin/true"]), out, progress=False
        )
    assert not out.exists()
    left = sorted(p.name for p in disk_tmp.iterdir() if p.name.startswith("run"))
    assert left and all(n.endswith(".incomplete") for n in left), left

"""corun.testbed.pfs_runs gives the file system the inventory and netns state of the cluster it
brought up (or of the group's before it, shared), whatever folder the plan named: a later look's
group is planned with its first look's folder, and a file system pointed at a cluster state that
is not there runs its hosts without their namespaces' links."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from corun.errors import CorunError
from corun.testbed import pfs_runs


def group(planned: Path) -> dict:
    pfs = {
        "servers": 2,
        "state_dir": str(planned / "pfs"),
        "inventory": str(planned / "cluster" / "inventory.yml"),
        "netns_state": str(planned / "cluster" / "state"),
    }
    cluster = {"kind": "netns", "hosts": 3, "prefix": "saist", "subnet": "10.78.9.0/24"}
    return {"name": "s2_l1-look2", "pfs": pfs, "cluster": cluster, "runs": ["r0"]}


@pytest.fixture
def calls(monkeypatch):
    seen = []

    def fake_run(argv, what, timeout=900):
        seen.append((what, list(argv)))
        if what == "pfs up":  # stop there: the configuration is written
            raise CorunError("stop")
        if what == "pfs down":  # as the real one: the journal goes once all is down
            cfg = yaml.safe_load(Path(argv[argv.index("--config") + 1]).read_text())
            (Path(cfg["state_dir"]) / "pfs.journal.json").unlink(missing_ok=True)
        return ""

    monkeypatch.setattr(pfs_runs, "_run", fake_run)
    return seen


def test_own_cluster_paths_are_the_work_folders(tmp_path, calls):
    work = tmp_path / "work" / "s2_l1-look2"
    with pytest.raises(CorunError, match="stop"):
        pfs_runs.run_group(group(tmp_path / "work" / "s2_l1"), tmp_path, tmp_path / "runs", work)
    cfg = yaml.safe_load((work / "pfs.yaml").read_text())
    assert cfg["inventory"] == str((work / "cluster" / "inventory.yml").resolve())
    assert cfg["netns_state"] == str((work / "cluster" / "state").resolve())
    up = dict(calls)["netns-cluster up"]
    assert up[up.index("--inventory") + 1] == cfg["inventory"]
    assert up[up.index("--state-dir") + 1] == str(work / "cluster" / "state")


def test_shared_cluster_paths_are_the_first_groups(tmp_path, calls):
    first, work = tmp_path / "work" / "s2_l1-look2", tmp_path / "work" / "s4_l1-look2"
    g = group(tmp_path / "work" / "s4_l1")
    with pytest.raises(CorunError, match="stop"):
        pfs_runs.run_group(g, tmp_path, tmp_path / "runs", work, shared=first)
    cfg = yaml.safe_load((work / "pfs.yaml").read_text())
    assert cfg["inventory"] == str((first / "cluster" / "inventory.yml").resolve())
    assert cfg["netns_state"] == str((first / "cluster" / "state").resolve())
    assert "netns-cluster up" not in dict(calls)  # the first group's cluster is used, not another
    assert cfg["state_dir"] == g["pfs"]["state_dir"]  # the file system's own state stays planned


def test_teardown_takes_down_the_file_system_whose_journal_the_configuration_names(tmp_path, calls):
    """A later look's group keeps its first look's file system state: its journal is there, and
    the teardown (of the group, of every group, of `corun recover`) finds it and takes it down."""
    work = tmp_path / "work" / "s2_l1-look2"
    with pytest.raises(CorunError, match="stop"):
        pfs_runs.run_group(group(tmp_path / "work" / "s2_l1"), tmp_path, tmp_path / "runs", work)
    journal = tmp_path / "work" / "s2_l1" / "pfs" / "pfs.journal.json"
    journal.parent.mkdir(parents=True)
    journal.write_text("{}")  # the servers the look's `pfs up` started
    calls.clear()
    assert pfs_runs.teardown_all(tmp_path / "work") == []
    assert [what for what, _ in calls] == ["pfs down"]
    journal.write_text("{}")
    assert pfs_runs.teardown(work, work / "pfs.yaml", netns=False) == []
    assert [what for what, _ in calls] == ["pfs down", "pfs down"] and not journal.exists()
    calls.clear()
    assert pfs_runs.teardown_all(tmp_path / "work") == [] and calls == []  # nothing up: nothing done

"""Groups of runs on one netns cluster without a file system (mpl_sweep's), and which runs a
group's runner keeps (corun.testbed.pfs_runs): no root, the cluster's commands recorded."""

from __future__ import annotations

import json
import os
import time

from corun.testbed import pfs_runs
from corun.util import repo_root
from experiments import looks
from experiments.config import profile_config, validate_config
from experiments.mpl_sweep import experiment as mpl


def fake_run(started: list):
    def run_on_host(host, spec, out, push, timeout=None, fresh=False):
        started.append((host.name, spec.name, out.name))
        out.mkdir(parents=True)
        (out / "metadata.json").write_text("{}")
        return out

    return run_on_host


def test_a_run_older_than_its_spec_or_a_manifest_it_uses_is_not_finished(tmp_path):
    spec, manifest = tmp_path / "r.yaml", tmp_path / "manifest.yaml"
    spec.write_text("x")
    manifest.write_text("y")
    out = tmp_path / "runs" / "r"
    out.mkdir(parents=True)
    (out / "metadata.json").write_text("{}")
    past = time.time() - 60
    for f in (spec, manifest):
        os.utime(f, (past, past))
    assert pfs_runs.finished(out, [], [spec, manifest, tmp_path / "gone.yaml"])
    os.utime(manifest, None)  # edited after the run
    assert not pfs_runs.finished(out, [], [spec, manifest])
    assert pfs_runs.finished(out, [], [spec])


def smoke_cfg(tmp_path, **mpl_sweep):
    raw = profile_config(repo_root() / "workflows" / "config" / "smoke.yaml")
    raw.update(results_dir=str(tmp_path / "r"), data_dir=str(tmp_path / "d"))
    raw["mpl_sweep"] = {**raw["mpl_sweep"], **mpl_sweep}
    return validate_config(raw, "config")


def test_mpl_sweep_on_a_netns_cluster_is_one_group_with_each_runs_own_inputs(tmp_path):
    cfg = smoke_cfg(tmp_path)
    exp = mpl.EXPERIMENT
    names = exp.run_names(cfg)
    assert exp.group_runs(cfg) == {"cluster": names}
    out = tmp_path / "specs"
    exp.specs(cfg, {"needed": False}, tmp_path / "d", out)
    (g,) = looks.groups_file(json.loads((out / "groups.json").read_text()), exp, cfg)["groups"]
    n = cfg["mpl_sweep"]["cluster"]["netns"]
    assert g["pfs"] is None and g["runs"] == names
    assert g["cluster"] == {
        "kind": "netns",
        "prefix": n["prefix"],
        "subnet": n["subnet"],
        "hosts": n["hosts"],
        "cpus_per_host": n["cpus_per_host"],
        "inventory": str(mpl.inventory_path(cfg)),
    }
    assert g["run_inputs"] == {r: ["schedulers/mpi_cosched/manifest.yaml"] for r in names}
    # on an inventory: no group, every run a step of its own
    inv = tmp_path / "hosts.yml"
    inv.write_text("testbed:\n  hosts:\n    a: {ansible_host: 10.0.0.1}\n    b: {ansible_host: 10.0.0.2}\n")
    cfg = smoke_cfg(tmp_path, cluster={"inventory": str(inv), "netns": {"hosts": 0}})
    assert exp.group_runs(cfg) == {}
    exp.specs(cfg, {"needed": False}, tmp_path / "d", out)
    assert json.loads((out / "groups.json").read_text())["groups"] == []


def test_a_group_without_a_file_system_brings_its_cluster_up_once_and_down(tmp_path, monkeypatch):
    calls, started = [], []

    def fake_cluster(argv, what, timeout=900):
        calls.append(what)
        state = tmp_path / "work" / "cluster" / "cluster" / "state"
        if what == "netns-cluster up":
            assert argv[argv.index("--cpus-per-host") + 1] == "1"
            assert argv[argv.index("--inventory") + 1] == str(tmp_path / "netns" / "inventory.yml")
            state.mkdir(parents=True)
            (state / "state.json").write_text("{}")
        elif what == "netns-cluster down":
            (state / "state.json").unlink()
        return ""

    monkeypatch.setattr(pfs_runs, "_run", fake_cluster)
    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", fake_run(started))
    specs, runs = tmp_path / "specs", tmp_path / "runs"
    specs.mkdir()
    for r in ("a", "b", "c"):
        (specs / f"{r}.yaml").write_text("{}")
    past = time.time() - 60
    for f in specs.iterdir():
        os.utime(f, (past, past))
    (runs / "b").mkdir(parents=True)
    (runs / "b" / "metadata.json").write_text("{}")  # measured before: kept
    group = {
        "name": "cluster",
        "runs": ["a", "b", "c"],
        "cluster": {
            "kind": "netns",
            "prefix": "t",
            "subnet": "10.9.9.0/24",
            "hosts": 2,
            "cpus_per_host": 1,
            "inventory": str(tmp_path / "netns" / "inventory.yml"),
        },
        "pfs": None,
    }
    done = pfs_runs.run_group(group, specs, runs, tmp_path / "work" / "cluster")
    assert done == ["a", "b", "c"]
    assert [s[1] for s in started] == ["a.yaml", "c.yaml"]
    assert calls == ["netns-cluster up", "netns-cluster down"]
    assert not (tmp_path / "work" / "cluster" / "pfs.yaml").exists()
    assert not (tmp_path / "netns").exists()  # the inventory's folder goes with the cluster
    assert pfs_runs.teardown_all(tmp_path / "work") == []
    assert str(pfs_runs.__file__).startswith(str(repo_root()))


def test_recover_takes_down_the_cluster_a_killed_group_without_a_file_system_left(tmp_path, monkeypatch):
    """corun recover calls teardown_all on the group's work folder: a group without pfs.yaml
    whose cluster is still up is found by its cluster's state and taken down."""
    calls = []
    monkeypatch.setattr(pfs_runs, "_run", lambda argv, what, timeout=900: calls.append((what, argv)) or "")
    state = tmp_path / "work" / "cluster" / "cluster" / "state"
    state.mkdir(parents=True)
    (state / "state.json").write_text("{}")
    assert pfs_runs.teardown_all(tmp_path / "work") == []
    assert [w for w, _ in calls] == ["netns-cluster down"]
    assert str(state) in calls[0][1]

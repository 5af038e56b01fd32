"""Several client hosts on an inventory: one run per client host at the same time
(corun.testbed.pfs_runs.run_with_companions), kept together in the run's folder, collected as
one run (analysis.collect), and summed only when they read together (experiments.sais.analysis)."""

from __future__ import annotations

import json
import threading

import pandas as pd
import pytest
import yaml

from analysis import collect
from corun.errors import CorunError
from corun.testbed import pfs_runs
from corun.testbed.inventory import Host
from corun.util import repo_root
from experiments.config import profile_config, validate_config
from experiments.sais import analysis as an
from experiments.sais import experiment as sais

C0, C1, C2 = (Host(name=n, address=a) for n, a in (("c0", "10.0.0.1"), ("c1", "10.0.0.2"), ("c2", "10.0.0.3")))


def fake_run(started: list, fail: str | None = None, barrier: threading.Barrier | None = None):
    def run_on_host(host, spec, out, push, timeout=None, fresh=False):
        started.append((host.name, spec.name, out.name))
        if barrier:
            barrier.wait(timeout=5)  # every host's run is under way at once
        if host.name == fail:
            raise CorunError(f"{host.name}: corun run failed (exit 1)")
        out.mkdir(parents=True)
        (out / "metadata.json").write_text(json.dumps({"host": {"hostname": host.name}}))
        return out

    return run_on_host


def test_companion_runs_run_together_and_move_into_the_run(tmp_path, monkeypatch):
    started = []
    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", fake_run(started, barrier=threading.Barrier(3)))
    comp = [(".h1", C1), (".h2", C2)]
    runs = tmp_path / "runs"
    assert not pfs_runs.finished(runs / "r", comp)
    pfs_runs.run_with_companions(C0, comp, tmp_path / "specs", runs, "r")
    assert sorted(started) == [("c0", "r.yaml", "r"), ("c1", "r.h1.yaml", "r.h1"), ("c2", "r.h2.yaml", "r.h2")]
    assert sorted(p.name for p in (runs / "r" / "hosts").iterdir()) == ["r.h1", "r.h2"]
    assert sorted(p.name for p in runs.iterdir()) == ["r"]
    assert pfs_runs.finished(runs / "r", comp)
    (runs / "r" / "hosts" / "r.h2" / "metadata.json").unlink()
    assert not pfs_runs.finished(runs / "r", comp)  # measured again, every host


def test_a_failing_companion_leaves_no_part_of_the_run(tmp_path, monkeypatch):
    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", fake_run([], fail="c1"))
    runs = tmp_path / "runs"
    with pytest.raises(CorunError, match=r"pfs_runs: r: c1: corun run failed"):
        pfs_runs.run_with_companions(C0, [(".h1", C1), (".h2", C2)], tmp_path / "specs", runs, "r")
    assert list(runs.iterdir()) == []


def test_specs_on_an_inventory_with_several_client_hosts(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text(
        "testbed:\n  hosts:\n"
        + "".join(f"    {n}: {{ansible_host: 10.0.0.{i + 1}}}\n" for i, n in enumerate(["c1", "c2", "s1"]))
    )
    raw = profile_config(repo_root() / "workflows" / "config" / "smoke.yaml")
    raw["sais"] = {
        "servers": [1],
        "client_hosts": [2],
        "transfer_sizes_bytes": [1048576],
        "reps": 1,
        "cluster": {"kind": "inventory", "inventory": str(inv), "pfs_root": "/srv/pfs", "interfaces": "ens1"},
    }
    cfg = validate_config(raw, "test.yaml")
    sais.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    specs = tmp_path / "specs"
    main = yaml.safe_load((specs / "s1_l1_h2_source_aware_t1024k_c1_r0.yaml").read_text())
    comp = yaml.safe_load((specs / "s1_l1_h2_source_aware_t1024k_c1_r0.h1.yaml").read_text())
    assert [j["name"] for j in main["jobs"]] == ["client-h0-0"] and [j["name"] for j in comp["jobs"]] == ["client-h1-0"]
    assert "/srv/pfs/c1/client/stripe-0.vol" in main["jobs"][0]["cmd"]
    assert "/srv/pfs/c2/client/stripe-0.vol" in comp["jobs"][0]["cmd"]
    assert comp["jobs"][0]["cmd"][0].endswith("pfs_read")  # run on its own host, no namespace
    assert comp["scheduler"] == main["scheduler"] == {"name": "source_aware", "params": {"interfaces": "ens1"}}
    assert (main["labels"]["client_host_run"], comp["labels"]["client_host_run"]) == (0, 1)
    assert comp["name"] == "sais-s1_l1_h2_source_aware_t1024k_c1_r0.h1"
    (g,) = json.loads((specs / "groups.json").read_text())["groups"]
    assert g["companions"] == [{"host": "c2", "suffix": ".h1"}] and g["pfs"]["client_hosts"] == 2
    raw["sais"]["client_hosts"] = [3]
    with pytest.raises(Exception, match=r"sais.client_hosts: 3 \(expected at most 2 beside 1 data server\(s\): "):
        sais.EXPERIMENT.specs(validate_config(raw, "test.yaml"), {}, tmp_path / "data", tmp_path / "specs2")


def write_run(d, host, jobs):
    d.mkdir(parents=True)
    (d / "metadata.json").write_text(json.dumps({"host": {"hostname": host}, "labels": {"kind": "read"}}))
    pd.DataFrame(jobs).to_csv(d / "jobs.csv", index=False)


def test_collect_takes_every_host_runs_jobs_under_the_runs_id(tmp_path):
    r = tmp_path / "r"
    write_run(r, "c0", [{"job_id": "a", "label_client_host": 0, "result_read_bw_mean_mib_s": 100.0}])
    write_run(r / "hosts" / "r.h1", "c1", [{"job_id": "b", "label_client_host": 1, "result_read_bw_mean_mib_s": 90.0}])
    jobs, runs = collect.collect([r])
    assert list(jobs["run_id"]) == ["r", "r"] and list(jobs["client_host"]) == [0, 1]
    assert list(jobs["host_run"]) == ["", "r.h1"] and list(jobs["run_host"]) == ["c0", "c1"]
    assert list(runs["host_runs"]) == [2]
    (r / "hosts" / "r.h1" / "metadata.json").unlink()
    with pytest.raises(collect.CollectError, match="r.h1: not a finished run"):
        collect.collect([r])


@pytest.mark.parametrize("shift_s, expected", [(0.5, 0.95), (5.0, 0.5), (20.0, 0.0)])
def test_host_runs_are_summed_only_when_they_read_together(shift_s, expected):
    g = pd.DataFrame(
        {
            "host_run": [None, None, "r.h1"],
            "result_start_epoch_s": [1000.0, 1000.2, 1000.0 + shift_s],
            "runtime_s": [10.0, 9.8, 10.0],
        }
    )
    assert an.host_runs_overlap(g) == pytest.approx(expected)
    assert an.host_runs_overlap(g[g["host_run"].isna()]) is None  # one host: nothing to line up

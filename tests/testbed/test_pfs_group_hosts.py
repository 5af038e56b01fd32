"""Every run of a file-system group records where its hosts were (corun.testbed.pfs_runs
hosts_record, metadata.json `pfs_group`): each host a network namespace of this machine
(/run/netns/<name>: a netns cluster's host, an emulated node) or a host of its own (a real
testbed's), which analysis.stand_ins reads to name netns_links or not."""

from __future__ import annotations

import json
from types import SimpleNamespace

from analysis import stand_ins
from corun.testbed import pfs_runs
from corun.testbed.inventory import Host


def deployment(*names: str, clients: int = 1):
    hosts = [Host(name=n, address=f"10.0.0.{i + 1}") for i, n in enumerate(names)]
    return SimpleNamespace(clients=hosts[:clients], servers=[SimpleNamespace(host=h) for h in hosts[clients:]])


def test_hosts_that_are_namespaces_of_this_machine_and_hosts_of_their_own(tmp_path):
    netns = tmp_path / "netns"
    netns.mkdir()
    for n in ("saist-n1", "saist-n2", "saist-n3"):
        (netns / n).touch()  # as `ip netns add` leaves them
    group = {"name": "s2_l1", "cluster": {"kind": "netns"}}
    rec = pfs_runs.hosts_record(group, deployment("saist-n1", "saist-n2", "saist-n3"), netns)
    assert rec == {
        "group": "s2_l1",
        "cluster": "netns",
        "hosts": [
            {"name": "saist-n1", "roles": ["client"], "netns": True},
            {"name": "saist-n2", "roles": ["server"], "netns": True},
            {"name": "saist-n3", "roles": ["server"], "netns": True},
        ],
    }
    assert stand_ins.netns_links({"pfs_group": rec}) is True
    group = {"name": "a4", "cluster": {"kind": "inventory"}}
    real = pfs_runs.hosts_record(group, deployment("node-1", "node-2", "node-3"), netns)
    assert [h["netns"] for h in real["hosts"]] == [False] * 3
    assert stand_ins.netns_links({"pfs_group": real}) is False
    # a client host that is also a data server (colocate_client) is one host with both roles
    both = SimpleNamespace(
        clients=[Host(name="saist-n1", address="a")], servers=[SimpleNamespace(host=Host(name="saist-n1", address="a"))]
    )
    assert pfs_runs.hosts_record(group, both, netns)["hosts"] == [
        {"name": "saist-n1", "roles": ["client", "server"], "netns": True}
    ]


def test_each_run_records_the_hosts(tmp_path, monkeypatch):
    def run_on_host(host, spec, out, push, timeout=None, fresh=False):
        out.mkdir(parents=True)
        (out / "metadata.json").write_text(json.dumps({"run_id": out.name}))
        return out

    monkeypatch.setattr(pfs_runs.hostmod, "run_on_host", run_on_host)
    rec = {"group": "g", "cluster": "inventory", "hosts": [{"name": "node-1", "roles": ["client"], "netns": False}]}
    client = Host(name="node-1", address="10.0.0.1")
    done = pfs_runs._runs({"runs": ["a", "b"]}, tmp_path, tmp_path / "runs", client, None, None, None, rec)
    assert done == ["a", "b"]
    for r in ("a", "b"):
        meta = json.loads((tmp_path / "runs" / r / "metadata.json").read_text())
        assert meta == {"run_id": r, "pfs_group": rec}


def test_a_companion_run_records_them_too(tmp_path):
    out = tmp_path / "r"
    (out / "hosts" / "r.h1").mkdir(parents=True)
    for m in (out / "metadata.json", out / "hosts" / "r.h1" / "metadata.json"):
        m.write_text("{}")
    rec = {"group": "g", "cluster": "inventory", "hosts": []}
    pfs_runs.record_hosts(out, rec)
    for m in (out / "metadata.json", out / "hosts" / "r.h1" / "metadata.json"):
        assert json.loads(m.read_text()) == {"pfs_group": rec}

"""analysis.machine: the machine the runs describe records every need word claims.yaml accepts;
a need recorded as missing is "not measurable here", named; a need the runs did not record says
so."""

import json
from pathlib import Path

import pytest

from analysis import machine
from analysis.claims import complete_claim
from analysis.verdicts import NEED_WORDS, NOT_MEASURABLE, judge

SCHEMA = Path(__file__).resolve().parents[2] / "analysis" / "schemas" / "claims.schema.json"
NEEDS = json.loads(SCHEMA.read_text())["$defs"]["claim"]["properties"]["needs"]["properties"]
NIC = {"name": "eth0", "device": "virtio2", "irqs": [37, 38]}


def run(rid="r1", nics=(NIC,), hosts=None, smt=True, sockets=2, numa=2, cpus=16, cmps=4, pmu=True, pmem=True):
    meta = {
        "run_id": rid,
        "topology": {"cpus": cpus, "sockets": sockets, "numa_nodes": numa, "smt": smt, "cmps": [[0]] * cmps},
        "host": {
            "pmu": {"supported": pmu, "seen": "perf counts instructions" if pmu else "no counters"},
            "pmem": ["/dev/pmem0"] if pmem else [],
            "rfs_flow_table": True,
            "physical_nics": list(nics),
        },
    }
    if hosts:
        meta["cluster"] = {"hosts": [f"h{i}" for i in range(hosts)]}
    return meta


def test_every_need_word_is_a_fact_of_the_runs():
    m = machine.from_metadata([run(hosts=3)])
    assert set(NEEDS) == set(m.facts) == set(NEED_WORDS)
    assert m.facts["sockets"] == 2 and m.facts["physical_nics"] is True and m.facts["hosts"] == 3
    assert "eth0" in m.seen["physical_nics"]


def test_this_machine_records_every_need_but_the_runs_own():
    # hosts come with a run's cluster, CMPs with its grouping of the cores
    assert set(machine.here().facts) == set(NEEDS) - {"hosts", "cmps"}


def test_veth_links_are_no_physical_nics():
    m = machine.from_metadata([run(nics=())])
    assert m.facts["physical_nics"] is False
    assert m.unmet({"physical_nics": True}) == [
        "physical NICs with their own interrupts (this machine: no NIC with its own interrupts where a run ran "
        "(veth links, lo, bridges have none))"
    ]


@pytest.mark.parametrize(
    "interfaces, has",
    [
        ("sais-n1/eth0,sais-v1", False),  # the netns cluster's client end and its bridge-side veth
        ("eth0", True),  # an inventory's client: its own NIC
        ("eth0,sais-n1/eth0", True),
    ],
)
def test_a_steering_run_counts_only_the_nics_it_steers(interfaces, has):
    """The host has a virtio NIC, but a run on the netns cluster steers veth ends in namespaces:
    the NIC carries none of its data, so its claims on NIC interrupts are not measurable."""
    meta = run() | {"scheduler": {"kind": "irq_policy", "params": {"interfaces": interfaces}}}
    assert machine.from_metadata([meta]).facts["physical_nics"] is has
    other = run() | {"scheduler": {"kind": "placement", "params": {"interfaces": interfaces}}}
    assert machine.from_metadata([other]).facts["physical_nics"] is True


def test_a_bool_of_nics_is_read_too():
    assert machine.from_metadata([{"run_id": "r", "host": {"physical_nics": True}}]).facts["physical_nics"] is True


@pytest.mark.parametrize("fact", ["smt", "sockets", "numa_nodes", "pmu", "pmem", "physical_nics", "cpus", "cmps"])
def test_every_run_must_have_had_it(fact):
    rich, poor = run("a"), run("b", nics=(), smt=False, sockets=1, numa=1, cpus=2, cmps=1, pmu=False, pmem=False)
    both = machine.from_metadata([rich, poor]).facts[fact]
    assert both == machine.from_metadata([poor]).facts[fact]


def test_hosts_are_the_fewest_of_any_run():
    m = machine.from_metadata([run("a", hosts=8), run("b", hosts=2)])
    assert m.facts["hosts"] == 2 and m.seen["hosts"] == "2 hosts in each run's cluster"
    assert machine.from_metadata([run("a", hosts=8), run("b")]).facts["hosts"] == 1


def claim(needs):
    c = {"says": "s", "source": "S", "quote": "q", "paper_as": "same", "table": "runs", "effect": "ratio"}
    c.update(metric="m", head={"p": "a"}, base={"p": "b"}, expect="less", needs=needs)
    c.update(pair_by=["rep"], aggregate="mean", min_reps=2)
    return complete_claim("claims.yaml", "c", c, {})


def test_a_missing_need_is_not_measurable_here_named():
    m = machine.from_metadata([run(nics=(), sockets=1)])
    row = judge("c", claim({"physical_nics": True, "sockets": 2}), {}, m)
    assert row["outcome"] == NOT_MEASURABLE
    assert (
        "physical NICs with their own interrupts" in row["why"] and "2 sockets (this machine: 1 socket)" in row["why"]
    )


def test_a_need_the_runs_did_not_record_says_so():
    old = run()
    del old["host"]["physical_nics"]
    row = judge("c", claim({"physical_nics": True}), {}, machine.from_metadata([old]))
    assert row["outcome"] == NOT_MEASURABLE and "not recorded" in row["why"]


def test_the_steered_interfaces_decide_when_the_run_traced_them():
    veth = {"name": "sais-n1/eth0", "kind": "veth", "device": None, "irqs": []}
    nic = {"name": "eth1", "kind": "physical", "device": "0000:01:00.0", "irqs": [52]}
    assert machine.from_metadata([{**run(), "steered_nics": [veth]}]).facts["physical_nics"] is False
    assert machine.from_metadata([{**run(nics=()), "steered_nics": [nic]}]).facts["physical_nics"] is True
    assert machine.from_metadata([{**run(), "steered_nics": [nic, veth]}]).facts["physical_nics"] is False
    unknown = {"name": "x/eth0", "kind": None, "device": None, "irqs": [], "error": "no such namespace"}
    assert "physical_nics" not in machine.from_metadata([{**run(), "steered_nics": [unknown]}]).facts

"""Scheduling domains from sysfs and the placement policies of paper 003, on synthetic machines."""

import json
import subprocess
import sys

import pytest
from synthetic_sysfs import make_sysfs

from corun.machine.placement_domains import (
    NotMeasurable,
    PlacementError,
    Task,
    main,
    measurable,
    place,
    read_domains,
)


def tasks(n_cpu, n_io):
    return [Task(f"cpu{i}", "cpu") for i in range(n_cpu)] + [Task(f"io{i}", "io") for i in range(n_io)]


@pytest.fixture
def two_sockets(tmp_path):
    """2 sockets x 4 cores x 2 SMT, one LLC per socket, 2 NUMA nodes."""
    return read_domains(make_sysfs(tmp_path, sockets=2, cores=4, threads=2))


@pytest.fixture
def flat(tmp_path):
    """Like this VM: 2 cores, no SMT, one LLC, one NUMA node."""
    return read_domains(make_sysfs(tmp_path, sockets=1, cores=2, threads=1))


def node_of(d, cpu):
    return next(i for i, g in enumerate(d.nodes) if cpu in g)


def core_of(d, cpu):
    return next(g for g in d.cores if cpu in g)


def test_domains_of_two_sockets(two_sockets):
    d = two_sockets
    assert d.cpus == tuple(range(16))
    assert d.cores == tuple((c, c + 8) for c in range(8))
    assert d.smt
    assert d.llc_level == 3
    assert d.llcs == ((0, 1, 2, 3, 8, 9, 10, 11), (4, 5, 6, 7, 12, 13, 14, 15))
    assert d.nodes == d.llcs
    assert all(v is None for v in measurable(d).values())


def test_domains_without_cache_information(tmp_path):
    d = read_domains(make_sysfs(tmp_path, sockets=2, cores=2, threads=2, caches=False))
    assert d.llc_level is None and d.llcs == ()
    with pytest.raises(NotMeasurable, match="no cache information"):
        place("llc_mixed", d, tasks(2, 2))
    assert measurable(d)["concentrate"] is None


def test_llc_groups_inside_a_node(tmp_path):
    """An L3 per pair of cores (as on AMD CCXs): LLC policies work on one NUMA node."""
    d = read_domains(make_sysfs(tmp_path, sockets=1, cores=4, threads=1, llc="pairs"))
    assert d.llcs == ((0, 1), (2, 3)) and len(d.nodes) == 1
    same = place("llc_same_type", d, tasks(2, 2))
    assert {same["cpu0"], same["cpu1"]} == {0, 1} and {same["io0"], same["io1"]} == {2, 3}
    mix = place("llc_mixed", d, tasks(2, 2))
    for g in d.llcs:
        assert sorted(t[:-1] for t, c in mix.items() if c in g) == ["cpu", "io"]
    assert "one NUMA node" in measurable(d)["spread"]


def test_cfs_pins_nothing(two_sockets):
    assert place("cfs", two_sockets, tasks(2, 2)) == {"cpu0": None, "cpu1": None, "io0": None, "io1": None}


def test_same_type_pairs_one_type_per_core(two_sockets):
    d = two_sockets
    got = place("same_type", d, tasks(2, 2))
    assert core_of(d, got["cpu0"]) == core_of(d, got["cpu1"]) == (0, 8)
    assert core_of(d, got["io0"]) == core_of(d, got["io1"]) == (1, 9)
    assert len(set(got.values())) == 4


def test_mixed_pairs_a_cpu_with_an_io_task(two_sockets):
    d = two_sockets
    got = place("mixed", d, tasks(2, 2))
    assert core_of(d, got["cpu0"]) == core_of(d, got["io0"]) == (0, 8)
    assert core_of(d, got["cpu1"]) == core_of(d, got["io1"]) == (1, 9)
    assert got["cpu0"] != got["io0"]


def test_smt_policies_use_the_same_cores(two_sockets):
    a = place("same_type", two_sockets, tasks(4, 4))
    b = place("mixed", two_sockets, tasks(4, 4))
    assert sorted(a.values()) == sorted(b.values())


def test_concentrate_keeps_each_type_on_its_own_node(two_sockets):
    d = two_sockets
    got = place("concentrate", d, tasks(4, 4))
    assert {node_of(d, got[f"cpu{i}"]) for i in range(4)} == {0}
    assert {node_of(d, got[f"io{i}"]) for i in range(4)} == {1}
    # each task on its own physical core
    assert len({core_of(d, c) for c in got.values()}) == 8


def test_spread_puts_half_of_each_type_on_each_node(two_sockets):
    d = two_sockets
    got = place("spread", d, tasks(4, 4))
    for ty in ("cpu", "io"):
        nodes = [node_of(d, got[f"{ty}{i}"]) for i in range(4)]
        assert nodes.count(0) == nodes.count(1) == 2
    assert len({core_of(d, c) for c in got.values()}) == 8
    # the same physical cores as concentrate: only the mixing differs
    assert sorted(got.values()) == sorted(place("concentrate", d, tasks(4, 4)).values())


def test_paper_scale_needs_sixteen_cores(tmp_path, two_sockets):
    with pytest.raises(NotMeasurable, match="8 cpu \\+ 8 io tasks"):
        place("spread", two_sockets, tasks(8, 8))
    big = read_domains(make_sysfs(tmp_path / "big", sockets=2, cores=8, threads=2))
    got = place("spread", big, tasks(8, 8))
    assert [node_of(big, got[f"io{i}"]) for i in range(8)].count(1) == 4
    got = place("concentrate", big, tasks(8, 8))
    assert {node_of(big, got[f"cpu{i}"]) for i in range(8)} == {0}


def test_llc_pair_on_two_sockets(two_sockets):
    d = two_sockets
    same = place("llc_same_type", d, tasks(2, 2))
    assert node_of(d, same["cpu0"]) == node_of(d, same["cpu1"]) != node_of(d, same["io0"])
    mix = place("llc_mixed", d, tasks(2, 2))
    assert node_of(d, mix["cpu0"]) != node_of(d, mix["cpu1"])


@pytest.mark.parametrize(
    "policy, reason",
    [
        ("same_type", "no SMT"),
        ("mixed", "no SMT"),
        ("concentrate", "one NUMA node"),
        ("spread", "one NUMA node"),
        ("llc_same_type", "one LLC group"),
        ("llc_mixed", "one LLC group"),
    ],
)
def test_flat_machine_is_not_measurable(flat, policy, reason):
    with pytest.raises(NotMeasurable, match=f"not measurable here: {reason}") as exc:
        place(policy, flat, tasks(1, 1) if policy != "same_type" else tasks(2, 2))
    assert exc.value.exit_code == 4
    assert reason in measurable(flat)[policy]
    assert measurable(flat)["cfs"] is None


def test_too_many_pairs_for_the_cores(two_sockets):
    with pytest.raises(NotMeasurable, match="9 pairs need 9 physical cores with SMT, this machine has 8"):
        place("mixed", two_sockets, tasks(9, 9))


@pytest.mark.parametrize(
    "policy, n_cpu, n_io, msg",
    [
        ("same_type", 1, 2, "1 cpu tasks (expected an even number"),
        ("mixed", 2, 1, "2 cpu and 1 io tasks (expected as many of each"),
    ],
)
def test_tasks_that_cannot_be_paired(two_sockets, policy, n_cpu, n_io, msg):
    with pytest.raises(PlacementError, match=msg.replace("(", "\\(")):
        place(policy, two_sockets, tasks(n_cpu, n_io))


def test_bad_task_lists(two_sockets):
    with pytest.raises(PlacementError, match="type 'gpu' \\(expected cpu or io\\)"):
        place("spread", two_sockets, [Task("a", "gpu")])
    with pytest.raises(PlacementError, match="named twice"):
        place("spread", two_sockets, [Task("a", "cpu"), Task("a", "io")])
    with pytest.raises(PlacementError, match="expected one of cfs"):
        place("nearest", two_sockets, [])


def test_restrict_to_the_run_cpus(two_sockets):
    d = two_sockets.restrict([0, 1, 8, 9])
    assert d.cores == ((0, 8), (1, 9)) and len(d.nodes) == 1
    assert "one NUMA node" in measurable(d)["spread"]


def test_cli(tmp_path, capsys):
    root = make_sysfs(tmp_path, sockets=2, cores=4, threads=2)
    assert main(["--root", str(root)]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["numa_nodes"] == ["0-3,8-11", "4-7,12-15"] and out["smt"] is True
    assert main(["--root", str(root), "--policy", "mixed", "--tasks", "cpu:a,io:b"]) == 0
    assert json.loads(capsys.readouterr().out)["cpus"] == {"a": 0, "b": 8}
    flat = make_sysfs(tmp_path / "flat", sockets=1, cores=2, threads=1)
    assert main(["--root", str(flat), "--policy", "spread", "--tasks", "cpu:a,io:b"]) == 4
    err = capsys.readouterr().err
    assert err.startswith("corun: spread: not measurable here: one NUMA node") and err.count("\n") == 1
    assert main(["--root", str(root), "--policy", "mixed", "--tasks", "a"]) == 2
    assert "expected TYPE:NAME" in capsys.readouterr().err


def test_this_machine(repo_root):
    """The real sysfs reads; every online CPU is in one core, one node and (if any) one LLC."""
    res = subprocess.run(
        [sys.executable, "-m", "corun.machine.placement_domains"],
        cwd=repo_root,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["measurable"]["cfs"] is None
    d = read_domains("/")
    for groups in (d.cores, d.nodes) + ((d.llcs,) if d.llc_level else ()):
        assert sorted(c for g in groups for c in g) == list(d.cpus)

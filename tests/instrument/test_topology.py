"""CMP discovery from sysfs: sockets, NUMA nodes, core groups, SMT siblings kept together."""

import pytest

from corun.errors import ConfigError
from corun.machine import topology


def fake_sysfs(tmp_path, cpus):
    """cpus: list of (id, package, core, node, siblings)."""
    cpu = tmp_path / "cpu"
    node = tmp_path / "node"
    ids = [c[0] for c in cpus]
    cpu.mkdir()
    (cpu / "online").write_text(topology.format_cpulist(ids) + "\n")
    nodes = {}
    for i, pkg, core, nd, sib in cpus:
        t = cpu / f"cpu{i}" / "topology"
        t.mkdir(parents=True)
        (t / "physical_package_id").write_text(f"{pkg}\n")
        (t / "core_id").write_text(f"{core}\n")
        (t / "thread_siblings_list").write_text(topology.format_cpulist(sib) + "\n")
        nodes.setdefault(nd, []).append(i)
    for nd, lst in nodes.items():
        d = node / f"node{nd}"
        d.mkdir(parents=True)
        (d / "cpulist").write_text(topology.format_cpulist(lst) + "\n")
    return topology.discover(cpu, node)


def test_cpulist_round_trip():
    assert topology.parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]
    assert topology.format_cpulist([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"
    assert topology.parse_cpulist("") == []


def test_two_sockets_with_smt(tmp_path):
    # 2 sockets x 2 cores x 2 threads; siblings are (0,4) (1,5) (2,6) (3,7)
    cpus = []
    for i in range(8):
        core = i % 4
        cpus.append((i, core // 2, core % 2, core // 2, [core, core + 4]))
    topo = fake_sysfs(tmp_path, cpus)
    assert topo.sockets == 2 and topo.numa_nodes == 2 and topo.smt
    assert topology.cmp_groups(topo, "auto") == ("socket", [[0, 1, 4, 5], [2, 3, 6, 7]])
    g, cmps = topology.cmp_groups(topo, "cores", 1)
    assert g == "cores" and cmps == [[0, 4], [1, 5], [2, 6], [3, 7]]


def test_one_socket_vm_is_one_cmp_per_core(tmp_path):
    topo = fake_sysfs(tmp_path, [(0, 0, 0, 0, [0]), (1, 0, 1, 0, [1])])
    assert not topo.smt
    assert topology.cmp_groups(topo, "auto") == ("cores", [[0], [1]])
    assert topology.cmp_groups(topo, "cores", 2) == ("cores", [[0, 1]])


def test_numa_grouping(tmp_path):
    topo = fake_sysfs(tmp_path, [(0, 0, 0, 0, [0]), (1, 0, 1, 0, [1]), (2, 0, 2, 1, [2]), (3, 0, 3, 1, [3])])
    assert topology.cmp_groups(topo, "auto") == ("numa", [[0, 1], [2, 3]])


def test_bad_groupings(tmp_path):
    topo = fake_sysfs(tmp_path, [(0, 0, 0, 0, [0]), (1, 0, 1, 0, [1])])
    with pytest.raises(ConfigError, match="cores_per_cmp: 3 .expected an integer <= 2"):
        topology.cmp_groups(topo, "cores", 3)
    with pytest.raises(ConfigError, match=r"groups\[0\]: 5 .expected an online CPU"):
        topology.cmp_groups(topo, "explicit", groups=[[5]])
    with pytest.raises(ConfigError, match="each CPU in one CMP only"):
        topology.cmp_groups(topo, "explicit", groups=[[0], [0, 1]])


def test_this_machine_has_cmps():
    topo = topology.discover()
    _, cmps = topology.cmp_groups(topo)
    assert sum(len(g) for g in cmps) == len(topo.cpus)

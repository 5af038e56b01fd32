"""Machine topology and CMP grouping.

A CMP (chip multiprocessor) is the unit the papers stack: a socket, a NUMA node,
or a configured group of cores. It is discovered from sysfs (what hwloc and lscpu
read too), so the same code runs on a laptop, a VM or an 8-socket server.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from corun.errors import ConfigError

SYS_CPU = Path("/sys/devices/system/cpu")
SYS_NODE = Path("/sys/devices/system/node")


def parse_cpulist(text: str) -> list[int]:
    """'0-3,8,10-11' -> [0, 1, 2, 3, 8, 10, 11]."""
    cpus: list[int] = []
    for part in text.strip().split(","):
        part = part.strip()
        if not part:
            continue
        if "-" in part:
            lo, hi = part.split("-", 1)
            cpus.extend(range(int(lo), int(hi) + 1))
        else:
            cpus.append(int(part))
    return sorted(set(cpus))


def format_cpulist(cpus: list[int]) -> str:
    cpus = sorted(set(cpus))
    out, i = [], 0
    while i < len(cpus):
        j = i
        while j + 1 < len(cpus) and cpus[j + 1] == cpus[j] + 1:
            j += 1
        out.append(str(cpus[i]) if i == j else f"{cpus[i]}-{cpus[j]}")
        i = j + 1
    return ",".join(out)


@dataclass
class Cpu:
    id: int
    package: int
    core: int
    node: int
    siblings: list[int] = field(default_factory=list)


@dataclass
class Topology:
    cpus: list[Cpu]

    @property
    def sockets(self) -> int:
        return len({c.package for c in self.cpus})

    @property
    def numa_nodes(self) -> int:
        return len({c.node for c in self.cpus})

    @property
    def smt(self) -> bool:
        return any(len(c.siblings) > 1 for c in self.cpus)

    def cpu_ids(self) -> list[int]:
        return [c.id for c in self.cpus]

    def as_dict(self) -> dict:
        return {
            "cpus": len(self.cpus),
            "sockets": self.sockets,
            "numa_nodes": self.numa_nodes,
            "smt": self.smt,
            "cpu_list": format_cpulist(self.cpu_ids()),
            "packages": {
                str(p): format_cpulist([c.id for c in self.cpus if c.package == p])
                for p in sorted({c.package for c in self.cpus})
            },
            "nodes": {
                str(n): format_cpulist([c.id for c in self.cpus if c.node == n])
                for n in sorted({c.node for c in self.cpus})
            },
        }


def _read(path: Path, default: str = "") -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return default


def discover(sys_cpu: Path = SYS_CPU, sys_node: Path = SYS_NODE) -> Topology:
    """Read the online CPUs with their package, core, NUMA node and SMT siblings."""
    online = _read(sys_cpu / "online")
    ids = parse_cpulist(online) if online else sorted(os.sched_getaffinity(0))
    node_of: dict[int, int] = {}
    if sys_node.is_dir():
        for nd in sorted(sys_node.glob("node[0-9]*")):
            n = int(nd.name[4:])
            for c in parse_cpulist(_read(nd / "cpulist")):
                node_of[c] = n
    cpus = []
    for i in ids:
        topo = sys_cpu / f"cpu{i}" / "topology"
        pkg = int(_read(topo / "physical_package_id", "0") or 0)
        core = int(_read(topo / "core_id", str(i)) or i)
        sib = _read(topo / "thread_siblings_list") or _read(topo / "core_cpus_list")
        cpus.append(Cpu(i, max(pkg, 0), core, node_of.get(i, 0), parse_cpulist(sib) if sib else [i]))
    return Topology(cpus)


GROUPINGS = ("auto", "socket", "numa", "cores", "explicit")


def cmp_groups(
    topo: Topology,
    grouping: str = "auto",
    cores_per_cmp: int | None = None,
    groups: list[list[int]] | None = None,
    source: str = "spec",
) -> tuple[str, list[list[int]]]:
    """Group the online CPUs into CMPs. Returns (grouping actually used, [[cpu ids] per CMP]).

    auto: sockets if there are several, else NUMA nodes if several, else one CMP per
    physical core (SMT siblings stay together), so a one-socket machine still has
    several CMPs to stack.
    """
    online = set(topo.cpu_ids())
    if grouping == "explicit":
        if not groups:
            raise ConfigError(
                source, "placement.cmp.groups", groups, "a non-empty list of CPU lists with grouping: explicit"
            )
        seen: set[int] = set()
        for i, g in enumerate(groups):
            for c in g:
                if c not in online:
                    raise ConfigError(
                        source, f"placement.cmp.groups[{i}]", c, f"an online CPU ({format_cpulist(sorted(online))})"
                    )
                if c in seen:
                    raise ConfigError(source, f"placement.cmp.groups[{i}]", c, "each CPU in one CMP only")
                seen.add(c)
        return "explicit", [sorted(g) for g in groups]
    if grouping == "auto":
        if topo.sockets > 1:
            grouping = "socket"
        elif topo.numa_nodes > 1:
            grouping = "numa"
        else:
            grouping = "cores"
    if grouping == "socket":
        keys = sorted({c.package for c in topo.cpus})
        return "socket", [sorted(c.id for c in topo.cpus if c.package == k) for k in keys]
    if grouping == "numa":
        keys = sorted({c.node for c in topo.cpus})
        return "numa", [sorted(c.id for c in topo.cpus if c.node == k) for k in keys]
    if grouping == "cores":
        # physical cores in order, SMT siblings kept together
        phys: list[list[int]] = []
        seen2: set[int] = set()
        for c in sorted(topo.cpus, key=lambda c: (c.package, c.core, c.id)):
            if c.id in seen2:
                continue
            sib = sorted(s for s in c.siblings if s in online) or [c.id]
            seen2.update(sib)
            phys.append(sib)
        n = cores_per_cmp or 1
        if n > len(phys):
            raise ConfigError(
                source, "placement.cmp.cores_per_cmp", n, f"an integer <= {len(phys)} (physical cores on this machine)"
            )
        out = [sum(phys[i : i + n], []) for i in range(0, len(phys) - n + 1, n)]
        return "cores", [sorted(g) for g in out]
    raise ConfigError(source, "placement.cmp.grouping", grouping, "one of " + ", ".join(GROUPINGS))

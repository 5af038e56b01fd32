"""Scheduling domains for task placement (paper 003), and the placement policies over them.

The kernel balances load domain by domain: SMT siblings (hardware threads of one physical
core), cores sharing a last-level cache (LLC), NUMA nodes. `read_domains` reads the three
from sysfs (`topology/thread_siblings_list`, `cache/index*/{level,type,shared_cpu_list}`,
`node*/cpulist`) under a root folder, so a test can describe any machine with a small tree.

The policies are pure functions: given the domains and a list of typed tasks (`cpu` or `io`,
from the workload definition) they return a CPU for each task, or None where the kernel
decides (`cfs`). A policy the machine cannot express (no SMT, one NUMA node, one LLC group,
too few cores) raises NotMeasurable with the reason; a task list the policy cannot pair
raises PlacementError.

    python -m corun.machine.placement_domains [--root DIR]                 # the domains, JSON
    python -m corun.machine.placement_domains --policy mixed --tasks cpu:a,io:b [--root DIR]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

from corun.errors import CorunError, one_line_errors
from corun.machine.topology import discover, format_cpulist, parse_cpulist

TASK_TYPES = ("cpu", "io")


class NotMeasurable(CorunError):
    """The machine lacks the domain a policy needs: recorded as a missing row, exit 4."""

    exit_code = 4

    def __init__(self, policy: str, reason: str):
        self.policy, self.reason = policy, reason
        super().__init__(f"{policy}: not measurable here: {reason}")


class PlacementError(CorunError):
    """The task list does not suit the policy (odd pairs, unknown type): a user error, exit 2."""

    exit_code = 2


@dataclass(frozen=True)
class Task:
    name: str
    type: str


@dataclass(frozen=True)
class Domains:
    cpus: tuple[int, ...]  # online CPUs
    cores: tuple[tuple[int, ...], ...]  # physical cores: SMT sibling groups
    llcs: tuple[tuple[int, ...], ...]  # groups of CPUs sharing the last-level cache
    llc_level: int | None  # cache level of the LLC (None: no cache information)
    nodes: tuple[tuple[int, ...], ...]  # NUMA nodes

    @property
    def smt(self) -> bool:
        return any(len(c) > 1 for c in self.cores)

    def restrict(self, cpus: list[int] | set[int]) -> Domains:
        """The same machine seen through a subset of CPUs (a run's CPUs)."""
        keep = set(cpus)

        def cut(groups):
            return tuple(t for t in (tuple(c for c in g if c in keep) for g in groups) if t)

        return Domains(
            tuple(c for c in self.cpus if c in keep), cut(self.cores), cut(self.llcs), self.llc_level, cut(self.nodes)
        )

    def as_dict(self) -> dict:
        def lists(groups):
            return [format_cpulist(list(g)) for g in groups]

        return {
            "cpus": format_cpulist(list(self.cpus)),
            "smt": self.smt,
            "cores": lists(self.cores),
            "llc_level": self.llc_level,
            "llcs": lists(self.llcs),
            "numa_nodes": lists(self.nodes),
            "measurable": measurable(self),
        }


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _groups(sets) -> tuple[tuple[int, ...], ...]:
    uniq = {tuple(sorted(s)) for s in sets if s}
    return tuple(sorted(uniq))


def read_domains(root: str | Path = "/") -> Domains:
    """The SMT, LLC and NUMA groups of the online CPUs, from sysfs under `root`."""
    root = Path(root)
    sys_cpu = root / "sys/devices/system/cpu"
    topo = discover(sys_cpu, root / "sys/devices/system/node")
    online = set(topo.cpu_ids())
    cores = _groups([set(c.siblings) & online or {c.id} for c in topo.cpus])
    llc_sets, level = [], None
    for c in topo.cpus:
        best = None  # (level, cpus) of the highest data or unified cache
        for idx in sorted((sys_cpu / f"cpu{c.id}" / "cache").glob("index[0-9]*")):
            if _read(idx / "type") == "Instruction":
                continue
            lv, shared = _read(idx / "level"), _read(idx / "shared_cpu_list")
            if not lv.isdigit() or not shared:
                continue
            if best is None or int(lv) > best[0]:
                best = (int(lv), set(parse_cpulist(shared)) & online)
        if best is None:
            llc_sets = []
            level = None
            break
        level = best[0] if level is None else max(level, best[0])
        llc_sets.append(best[1] or {c.id})
    nodes = _groups([{c.id for c in topo.cpus if c.node == n} for n in {c.node for c in topo.cpus}])
    return Domains(tuple(sorted(online)), cores, _groups(llc_sets), level, nodes)


# ------------------------------------------------------------------------- the policies
def _check_tasks(policy: str, tasks: list[Task]) -> dict[str, list[Task]]:
    names = set()
    for t in tasks:
        if t.type not in TASK_TYPES:
            raise PlacementError(f"{policy}: task {t.name}: type {t.type!r} (expected cpu or io)")
        if t.name in names:
            raise PlacementError(f"{policy}: task {t.name}: named twice (expected unique names)")
        names.add(t.name)
    return {ty: [t for t in tasks if t.type == ty] for ty in TASK_TYPES}


def _core_order(d: Domains) -> list[tuple[int, ...]]:
    """Physical cores by NUMA node, LLC group, then first CPU: neighbours first."""
    node = {c: i for i, g in enumerate(d.nodes) for c in g}
    llc = {c: i for i, g in enumerate(d.llcs) for c in g}
    return sorted(d.cores, key=lambda g: (node.get(g[0], 0), llc.get(g[0], 0), g[0]))


def cfs(d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    """No pinning: the kernel's scheduler decides (corun records where each task ran)."""
    _check_tasks("cfs", tasks)
    return {t.name: None for t in tasks}


def _smt_pairs(policy: str, d: Domains, pairs: list[tuple[Task, Task]]) -> dict[str, int | None]:
    smt_cores = [c for c in _core_order(d) if len(c) > 1]
    if not smt_cores:
        raise NotMeasurable(
            policy, "no SMT: every physical core runs one hardware thread (topology/thread_siblings_list)"
        )
    if len(pairs) > len(smt_cores):
        raise NotMeasurable(
            policy, f"{len(pairs)} pairs need {len(pairs)} physical cores with SMT, this machine has {len(smt_cores)}"
        )
    out: dict[str, int | None] = {}
    for (a, b), core in zip(pairs, smt_cores):
        out[a.name], out[b.name] = core[0], core[1]
    return out


def same_type(d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    """SMT level: two tasks of one type on the sibling threads of each physical core."""
    by = _check_tasks("same_type", tasks)
    pairs = []
    for ty in TASK_TYPES:
        if len(by[ty]) % 2:
            raise PlacementError(
                f"same_type: {len(by[ty])} {ty} tasks (expected an even number "
                f"of each type, to pair them on sibling threads)"
            )
        pairs += [(by[ty][i], by[ty][i + 1]) for i in range(0, len(by[ty]), 2)]
    return _smt_pairs("same_type", d, pairs)


def mixed(d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    """SMT level: one cpu and one io task on the sibling threads of each physical core."""
    by = _check_tasks("mixed", tasks)
    if len(by["cpu"]) != len(by["io"]):
        raise PlacementError(
            f"mixed: {len(by['cpu'])} cpu and {len(by['io'])} io tasks "
            f"(expected as many of each, to pair them on sibling threads)"
        )
    return _smt_pairs("mixed", d, list(zip(by["cpu"], by["io"])))


def _by_groups(
    policy: str, domain: str, groups: tuple[tuple[int, ...], ...], d: Domains, tasks: list[Task], mix: bool
) -> dict[str, int | None]:
    """One task per physical core (its first hardware thread) within groups of CPUs.

    Unmixed: each type fills groups of its own, a group never holds two types. Mixed: the
    same number of groups, each type spread over them as evenly as possible (round robin).
    """
    by = _check_tasks(policy, tasks)
    if len(groups) < 2:
        raise NotMeasurable(
            policy,
            f"one {domain} ({format_cpulist(list(groups[0])) if groups else 'none'})"
            f": types cannot be kept apart or spread across {domain}s",
        )
    gcpu = {c: i for i, g in enumerate(groups) for c in g}
    free: list[list[int]] = [[] for _ in groups]  # first thread of each physical core, per group
    for core in _core_order(d):
        if core[0] in gcpu:
            free[gcpu[core[0]]].append(core[0])
    # the unmixed layout decides how many groups both layouts use
    plan: list[list[Task]] = []
    for ty in TASK_TYPES:
        todo = list(by[ty])
        while todo:
            i = len(plan)
            if i >= len(groups):
                raise NotMeasurable(
                    policy,
                    f"{len(by['cpu'])} cpu + {len(by['io'])} io tasks on their "
                    f"own physical cores, each type in {domain}s of its own, need "
                    f"more than the {len(groups)} {domain}s here "
                    f"({', '.join(str(len(f)) for f in free)} cores)",
                )
            if not free[i]:
                raise NotMeasurable(policy, f"{domain} {i} has no physical core")
            plan.append(todo[: len(free[i])])
            todo = todo[len(free[i]) :]
    used = max(len(plan), 2)
    if mix:
        plan = [[] for _ in range(used)]
        k = 0
        for ty in TASK_TYPES:
            for t in by[ty]:
                for _ in range(used):  # the next group with room, round robin
                    if len(plan[k % used]) < len(free[k % used]):
                        break
                    k += 1
                else:
                    raise NotMeasurable(
                        policy, f"{len(tasks)} tasks do not fit on the physical cores of {used} {domain}s"
                    )
                plan[k % used].append(t)
                k += 1
    out: dict[str, int | None] = {}
    for i, group_tasks in enumerate(plan):
        for t, cpu in zip(group_tasks, free[i]):
            out[t.name] = cpu
    return out


def concentrate(d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    """NUMA level: each type on NUMA nodes of its own, one task per physical core."""
    return _by_groups("concentrate", "NUMA node", d.nodes, d, tasks, mix=False)


def spread(d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    """NUMA level: each type evenly over the same NUMA nodes, one task per physical core."""
    return _by_groups("spread", "NUMA node", d.nodes, d, tasks, mix=True)


def _llcs(policy: str, d: Domains):
    if d.llc_level is None:
        raise NotMeasurable(policy, "no cache information in sysfs (cache/index*/shared_cpu_list)")
    return d.llcs


def llc_same_type(d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    """LLC level: each type on cores of its own last-level caches, one task per physical core."""
    return _by_groups("llc_same_type", "LLC group", _llcs("llc_same_type", d), d, tasks, mix=False)


def llc_mixed(d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    """LLC level: each type evenly over the same last-level caches, one task per physical core."""
    return _by_groups("llc_mixed", "LLC group", _llcs("llc_mixed", d), d, tasks, mix=True)


POLICIES = {
    "cfs": cfs,
    "same_type": same_type,
    "mixed": mixed,
    "concentrate": concentrate,
    "spread": spread,
    "llc_same_type": llc_same_type,
    "llc_mixed": llc_mixed,
}

# The level each policy acts at (the experiment's "domain" column).
POLICY_DOMAIN = {
    "cfs": "none",
    "same_type": "smt",
    "mixed": "smt",
    "concentrate": "numa",
    "spread": "numa",
    "llc_same_type": "llc",
    "llc_mixed": "llc",
}


def place(policy: str, d: Domains, tasks: list[Task]) -> dict[str, int | None]:
    try:
        fn = POLICIES[policy]
    except KeyError:
        raise PlacementError(f"policy {policy!r} (expected one of {', '.join(POLICIES)})") from None
    return fn(d, tasks)


def measurable(d: Domains) -> dict[str, str | None]:
    """Per policy: None if this machine can express it for one pair of each type, else why not."""
    probe = [Task("cpu0", "cpu"), Task("cpu1", "cpu"), Task("io0", "io"), Task("io1", "io")]
    out = {}
    for name in POLICIES:
        try:
            place(name, d, probe)
            out[name] = None
        except NotMeasurable as exc:
            out[name] = exc.reason
    return out


def parse_tasks(text: str) -> list[Task]:
    """'cpu:a,io:b' -> [Task('a', 'cpu'), Task('b', 'io')]."""
    out = []
    for part in text.split(","):
        ty, sep, name = part.strip().partition(":")
        if not sep or not name:
            raise PlacementError(f"--tasks: {part!r} (expected TYPE:NAME with TYPE cpu or io)")
        out.append(Task(name, ty))
    return out


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="python -m corun.machine.placement_domains",
        description="SMT, LLC and NUMA domains of this machine, and a placement policy's CPU for each task (JSON)",
    )
    ap.add_argument("--root", default="/", help="folder holding sys/devices/system (default /)")
    ap.add_argument("--policy", choices=list(POLICIES))
    ap.add_argument("--tasks", help="TYPE:NAME,... with TYPE cpu or io (with --policy)")
    ap.add_argument("--cpus", help="restrict to these CPUs, e.g. 0-7")
    args = ap.parse_args(argv)
    d = read_domains(args.root)
    if args.cpus:
        d = d.restrict(parse_cpulist(args.cpus))
    if not args.policy:
        print(json.dumps(d.as_dict(), indent=2))
        return 0
    if not args.tasks:
        raise PlacementError("--tasks: missing (expected TYPE:NAME,... with --policy)")
    print(json.dumps({"policy": args.policy, "cpus": place(args.policy, d, parse_tasks(args.tasks))}))
    return 0


if __name__ == "__main__":
    sys.exit(main())

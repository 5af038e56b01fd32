"""The CPU time of everything that is not the run's own while its jobs run ("foreign" CPU).

A run's own work is its jobs (the processes of its cgroup, all children the runner started and
waits for) and the processes the runner started for the run that are not its monitors (a
variant's daemon, an emulated disk's server). Everything else that ran on the machine meanwhile
is foreign to the measurement, in three parts recorded apart:

- ``corun``: the runner process itself (all its threads: executor, waiters, in-process
  samplers) and its monitors' programs: the instrument, present in every attempt;
- ``orchestrator``: the runner's ancestors (the shell of the Snakemake rule, a group runner
  such as corun.testbed.pfs_runs, Snakemake itself), what a quiet orchestrator keeps near zero;
- ``other``: every other process, those that started and ended within the window included.

The run's hosts on this machine (a netns cluster's or an emulated testbed's nodes: network
namespaces of this machine, /run/netns/<host>) are its own too: their processes (MPI ranks, node
daemons) start through their host's sshd, neither in the run's cgroup nor below the runner, and
end before the second snapshot; their time is counted from the processes of those namespaces,
the ones that ended through their reapers' cutime + cstime (``hosts``, part of ``own``).

Kernel threads (``kernel``: writeback, a loop device, softirq threads) are recorded too but not
counted as foreign: most of their work while a run measures is that run's own I/O.

How: two snapshots, one before the first job starts and one after the last ends. Each holds
/proc/stat's aggregate "cpu" line (the machine's user, nice and system time: process context,
so interrupts are left out as they are of processes) and user + system time of every process
in /proc/<pid>/stat. The jobs, which have ended by the second snapshot, are counted through the
runner's reaped children (its cutime + cstime, os.times' children fields). Then

    foreign = machine's process time - jobs - own processes - kernel threads

so that short-lived processes no snapshot saw are in it (as ``other``), and each named part is
the sum of its processes' differences. Shares are of all CPUs' time in the window, like steal.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

from corun.machine.host import cpu_ticks

PROC = Path("/proc")
PF_KTHREAD = 0x00200000  # task flags (field 9 of /proc/<pid>/stat): a kernel thread
TOP_N = 8  # foreign processes named in metadata.json, largest first


@dataclass
class Proc:
    ppid: int
    comm: str
    starttime: int
    cpu_ticks: int  # utime + stime
    kthread: bool
    child_ticks: int = 0  # cutime + cstime: its children that ended and were waited for
    netns: int | None = None  # the inode of its network namespace


@dataclass
class Snapshot:
    machine: dict | None  # corun.machine.host.cpu_ticks()
    procs: dict[int, Proc] = field(default_factory=dict)
    children_ticks: int = 0  # the runner's reaped children (cutime + cstime), in clock ticks
    self_ticks: int | None = None  # the runner's own user + system time (all its threads)


def parse_stat(text: str) -> Proc:
    """One /proc/<pid>/stat line -> Proc (comm may hold spaces and parentheses)."""
    lo, hi = text.index("("), text.rindex(")")
    f = text[hi + 2 :].split()  # f[0] is field 3 (state)
    return Proc(
        ppid=int(f[1]),
        comm=text[lo + 1 : hi],
        starttime=int(f[19]),
        cpu_ticks=int(f[11]) + int(f[12]),
        child_ticks=int(f[13]) + int(f[14]),
        kthread=bool(int(f[6]) & PF_KTHREAD) or int(f[1]) == 2 or text.startswith("2 "),
    )


def processes(proc: Path = PROC) -> dict[int, Proc]:
    out: dict[int, Proc] = {}
    for entry in os.scandir(proc):
        if not entry.name.isdigit():
            continue
        try:
            p = parse_stat((proc / entry.name / "stat").read_text())
        except (OSError, ValueError, IndexError):
            continue  # ended between the listing and the read
        p.netns = _ns_inode(proc / entry.name / "ns" / "net")
        out[int(entry.name)] = p
    return out


def _ns_inode(link: Path) -> int | None:
    """The inode of the namespace LINK (/proc/<pid>/ns/net: "net:[4026531840]") names."""
    try:
        return int(os.readlink(link).rpartition("[")[2].rstrip("]"))
    except (OSError, ValueError):
        return None


def host_namespaces(names: list[str], netns_dir: Path = Path("/run/netns")) -> set[int]:
    """The network namespaces of this machine that NAMES (a run's hosts) are: /run/netns/<name>,
    as scripts/netns-cluster and scripts/bare-testbed name their hosts' namespaces. A host of
    another machine has none."""
    out = set()
    for name in names:
        try:
            out.add((netns_dir / name).stat().st_ino)
        except OSError:
            continue
    return out


def snapshot(end: bool = False) -> Snapshot:
    """The machine's and every process's CPU time now. The listing of /proc costs the runner
    tens of milliseconds on a loaded machine: the window's first snapshot (END false) reads the
    runner's own time and the machine's after it, the last (END true) before it, so that cost
    stays outside the window."""
    hz = os.sysconf("SC_CLK_TCK")

    def own() -> tuple[dict | None, os.times_result]:
        return cpu_ticks(), os.times()

    if end:
        (machine, t), procs = own(), processes()
    else:
        procs = processes()
        machine, t = own()
    return Snapshot(
        machine=machine,
        procs=procs,
        children_ticks=round((t.children_user + t.children_system) * hz),
        self_ticks=round((t.user + t.system) * hz),
    )


def _delta(pid: int, before: Snapshot, after: Snapshot) -> int:
    """Clock ticks PID used between the snapshots (all of them if it started in between)."""
    a = after.procs.get(pid)
    if a is None:
        return 0
    b = before.procs.get(pid)
    if b is None or b.starttime != a.starttime:
        return a.cpu_ticks
    return max(0, a.cpu_ticks - b.cpu_ticks)


def descendants(root: int, procs: dict[int, Proc]) -> set[int]:
    """Every process below ROOT in PROCS (ROOT itself not included)."""
    kids: dict[int, list[int]] = {}
    for pid, p in procs.items():
        kids.setdefault(p.ppid, []).append(pid)
    out, todo = set(), [root]
    while todo:
        for k in kids.get(todo.pop(), []):
            if k not in out:
                out.add(k)
                todo.append(k)
    return out


def _ancestors(pid: int, procs: dict[int, Proc]) -> list[int]:
    """PID's parent, grandparent ... up to but without PID 1 (and 0)."""
    out: list[int] = []
    p = procs.get(pid)
    while p is not None and p.ppid > 1 and p.ppid not in out:
        out.append(p.ppid)
        p = procs.get(p.ppid)
    return out


def shares(
    before: Snapshot,
    after: Snapshot,
    runner: int | None = None,
    monitors: list[int] | None = None,
    job_pids: list[int] | None = None,
    host_netns: set[int] | None = None,
) -> dict:
    """The foreign CPU between two snapshots, in % of all CPUs' time. RUNNER (default: this
    process) ran the jobs and reaped them; MONITORS are the pids of its monitors' programs;
    JOB_PIDS the processes still in the run's cgroup at the second snapshot, if any; HOST_NETNS
    the network namespaces of the run's hosts on this machine (host_namespaces)."""
    runner = os.getpid() if runner is None else runner
    out: dict = {
        "foreign_pct": None,
        "corun_pct": None,
        "orchestrator_pct": None,
        "other_pct": None,
        "kernel_pct": None,
        "own_pct": None,
        "hosts_pct": None,
        "foreign_top": [],
    }
    m0, m1 = before.machine, after.machine
    if not m0 or not m1:
        return {**out, "foreign_reason": "no cpu line in /proc/stat"}
    total = sum(m1[k] - m0[k] for k in m1 if k in m0)
    if total <= 0:
        return {**out, "foreign_reason": "no clock ticks passed between the two readings"}
    process_time = sum(m1.get(k, 0) - m0.get(k, 0) for k in ("user", "nice", "system"))
    procs = {**before.procs, **after.procs}
    mon_roots = set(monitors or [])
    corun = {runner}
    for m in mon_roots:
        corun |= {m} | descendants(m, procs)
    corun &= set(after.procs)
    own = (descendants(runner, after.procs) | set(job_pids or [])) - corun
    in_hosts = {pid for pid, p in after.procs.items() if host_netns and p.netns in host_netns} - own - corun
    hosts_ticks = _subtree_ticks(in_hosts, before, after, host_netns or set())
    orchestrator = set(_ancestors(runner, after.procs)) - own - corun
    kernel = {pid for pid, p in after.procs.items() if p.kthread} - own - corun - orchestrator
    ticks = {pid: _delta(pid, before, after) for pid in after.procs}
    if runner == os.getpid() and before.self_ticks is not None and after.self_ticks is not None:
        ticks[runner] = max(0, after.self_ticks - before.self_ticks)
    jobs = max(0, after.children_ticks - before.children_ticks)
    part = {
        name: sum(ticks[p] for p in pids)
        for name, pids in (("corun", corun), ("orchestrator", orchestrator), ("kernel", kernel), ("own", own))
    }
    own_ticks = jobs + part["own"] + hosts_ticks
    # at least its named parts (the machine's line and the processes' are read apart, each to a tick)
    foreign = max(part["corun"] + part["orchestrator"], process_time - own_ticks - part["kernel"])
    other = max(0, foreign - part["corun"] - part["orchestrator"])

    def pct(x: float) -> float:
        return round(100 * x / total, 2)

    kind = {**{p: "corun" for p in corun}, **{p: "orchestrator" for p in orchestrator}}
    named = [
        (ticks[pid], pid)
        for pid in after.procs
        if pid not in own and pid not in kernel and pid not in in_hosts and ticks[pid] > 0
    ]
    top = [
        {"pid": pid, "comm": after.procs[pid].comm, "kind": kind.get(pid, "other"), "pct": pct(t)}
        for t, pid in sorted(named, reverse=True)[:TOP_N]
    ]
    return {
        "foreign_pct": pct(foreign),
        "corun_pct": pct(part["corun"]),
        "orchestrator_pct": pct(part["orchestrator"]),
        "other_pct": pct(other),
        "kernel_pct": pct(part["kernel"]),
        "own_pct": pct(own_ticks),
        "hosts_pct": pct(hosts_ticks) if host_netns else None,
        "foreign_top": top,
    }


def _subtree_ticks(alive: set[int], before: Snapshot, after: Snapshot, netns: set[int]) -> int:
    """Clock ticks the processes of NETNS used between the snapshots: each process's own and its
    waited-for children's (cutime + cstime) at the second, less the same at the first of those
    that were there then (one that ended since is in its reaper's cutime by then)."""

    def total(p: Proc) -> int:
        return p.cpu_ticks + p.child_ticks

    now = sum(total(after.procs[pid]) for pid in alive)
    then = 0
    for pid, b in before.procs.items():
        a = after.procs.get(pid)
        if b.netns not in netns or (a is not None and a.starttime == b.starttime and pid not in alive):
            continue  # not a host's, or still there and counted as another part
        then += total(b)
    return max(0, now - then)

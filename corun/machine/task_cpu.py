"""Where a task runs: CPU affinity of a process tree, and the CPU each thread last ran on.

A job is a process tree: every thread of the job's process and of its descendants (fio forks
one process per job, kernels start threads). `pin_tree` sets the affinity of each thread
with sched_setaffinity, `tree_affinity` reads it back, `reset_tree` gives them all CPUs back.
`processor` reads field 39 of /proc/<pid>/task/<tid>/stat, the CPU the thread last ran on;
`CpuSampler` records it periodically to a CSV, the kernel's placement over time.
"""

from __future__ import annotations

import csv
import os
import time
from pathlib import Path

PROC = Path("/proc")
SAMPLE_COLUMNS = ["t_s", "mono_s", "job", "pid", "tid", "comm", "cpu", "assigned_cpu"]


def _stat_fields(text: str) -> tuple[str, list[str]]:
    """(comm, [field 3 ...]) of a stat line; comm may hold spaces and parentheses."""
    lo, hi = text.index("("), text.rindex(")")
    return text[lo + 1 : hi], text[hi + 2 :].split()


def processor(text: str) -> int:
    """Field 39 of /proc/<pid>/stat ('processor'): the CPU the task last ran on."""
    return int(_stat_fields(text)[1][39 - 3])


def threads(pid: int) -> list[int]:
    try:
        return sorted(int(t) for t in os.listdir(PROC / str(pid) / "task"))
    except OSError:
        return []


def children_map() -> dict[int, list[int]]:
    """ppid -> [pid] of every process: one scan of /proc, shared by the trees of one pass."""
    kids: dict[int, list[int]] = {}
    for entry in os.scandir(PROC):
        if not entry.name.isdigit():
            continue
        try:
            text = (PROC / entry.name / "stat").read_text()
        except OSError:
            continue
        ppid = int(_stat_fields(text)[1][1])
        kids.setdefault(ppid, []).append(int(entry.name))
    return kids


class ProcTable:
    """ppid of every process, kept across passes: each refresh lists /proc and reads the stat of
    new processes only (a process's parent is fixed at fork; an orphan keeps the parent it had,
    so it stays in its job's tree)."""

    def __init__(self):
        self.ppid: dict[int, int] = {}

    def refresh(self) -> dict[int, list[int]]:
        live = {int(e) for e in os.listdir(PROC) if e.isdigit()}
        for pid in set(self.ppid) - live:
            del self.ppid[pid]
        for pid in live - set(self.ppid):
            try:
                self.ppid[pid] = int(_stat_fields((PROC / str(pid) / "stat").read_text())[1][1])
            except (OSError, ValueError, IndexError):
                continue
        kids: dict[int, list[int]] = {}
        for pid, parent in self.ppid.items():
            kids.setdefault(parent, []).append(pid)
        return kids


def tree(pid: int, kids: dict[int, list[int]] | None = None) -> list[int]:
    """pid and its live descendants (processes)."""
    kids = children_map() if kids is None else kids
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        if p in out:
            continue
        out.append(p)
        todo.extend(kids.get(p, []))
    return sorted(out)


def tree_threads(pid: int, kids: dict[int, list[int]] | None = None) -> list[int]:
    return [t for p in tree(pid, kids) for t in threads(p)]


def pin_tree(pid: int, cpus: set[int], kids: dict[int, list[int]] | None = None) -> list[int]:
    """Set the affinity of every thread of the tree; the threads changed (gone ones skipped)."""
    changed = []
    for tid in tree_threads(pid, kids):
        try:
            if os.sched_getaffinity(tid) != cpus:
                os.sched_setaffinity(tid, cpus)
                changed.append(tid)
        except (ProcessLookupError, PermissionError):
            continue
    return changed


def reset_tree(pid: int, cpus: set[int], passes: int = 10) -> list[int]:
    """Give the whole tree `cpus` (all the run's CPUs): nothing stays pinned.

    Repeated until a pass changes nothing: a thread or child created during a pass inherits
    the affinity its creator had at that moment."""
    changed: list[int] = []
    for _ in range(passes):
        now = pin_tree(pid, cpus)
        if not now:
            break
        changed += now
    return changed


def tree_affinity(pid: int) -> dict[int, set[int]]:
    out = {}
    for tid in tree_threads(pid):
        try:
            out[tid] = os.sched_getaffinity(tid)
        except ProcessLookupError:
            continue
    return out


def sample(pid: int, kids: dict[int, list[int]] | None = None) -> list[tuple[int, int, str, int]]:
    """(pid, tid, comm, cpu) of every thread of the tree, now."""
    rows = []
    for p in tree(pid, kids):
        for tid in threads(p):
            try:
                text = (PROC / str(p) / "task" / str(tid) / "stat").read_text()
            except OSError:
                continue
            comm, _ = _stat_fields(text)
            rows.append((p, tid, comm, processor(text)))
    return rows


class CpuSampler:
    """Appends the CPU of every thread of some jobs to a CSV (SAMPLE_COLUMNS), line-buffered."""

    def __init__(self, path: str | Path, t0_mono: float | None = None):
        self.path = Path(path)
        self.t0 = time.monotonic() if t0_mono is None else t0_mono
        new = not self.path.exists() or self.path.stat().st_size == 0
        self.fh = open(self.path, "a", newline="", buffering=1)
        self.w = csv.writer(self.fh)
        self.table = ProcTable()
        if new:
            self.w.writerow(SAMPLE_COLUMNS)

    def sample(self, jobs: dict[str, tuple[int, int | None]]) -> int:
        """jobs: name -> (pid, assigned cpu or None). Returns the rows written."""
        now = time.monotonic()
        n = 0
        kids = self.table.refresh() if jobs else {}
        for name, (pid, assigned) in jobs.items():
            for p, tid, comm, cpu in sample(pid, kids):
                self.w.writerow(
                    [
                        f"{now - self.t0:.3f}",
                        f"{now:.6f}",
                        name,
                        p,
                        tid,
                        comm,
                        cpu,
                        "" if assigned is None else assigned,
                    ]
                )
                n += 1
        return n

    def close(self) -> None:
        self.fh.close()

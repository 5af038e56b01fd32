"""The placement variants of paper 003: pin each job of a run to the CPU its policy chose.

    pin.py --job-events F --state-dir D --cpus LIST --policy P --tasks TYPE:NAME,...
           --interval-s S --sample-interval-s S          (the daemon)
    pin.py --check D      exit 0 when every live job's threads have the affinity chosen
    pin.py --restore D    every live job gets all the run's CPUs back (nothing stays pinned)
    pin.py --limits       the options' types and bounds, as JSON

The daemon takes every option explicitly: the variants' manifest (schedulers/placement) holds
the one default of each, and its bounds are LIMITS here (tests/schedulers/test_variant_limits.py
compares them).

The daemon computes the whole assignment at start from the run's CPUs (SMT, LLC and NUMA
groups read from sysfs) and the typed task list, then follows the runner's job events: when a
job starts, every thread of its process tree is pinned with sched_setaffinity, and again each
--interval-s for threads and children that appear later. `cfs` pins nothing: each job gets all
the run's CPUs (the runner had confined it to its slot) and the kernel decides. For every
policy the CPU each thread last ran on is sampled every --sample-interval-s into
D/cpu_samples.csv. On SIGTERM or SIGINT the jobs still alive get all the run's CPUs back.

A task NAME matches a job id (0003-fio) or the job's name in the spec (fio).
Exit codes: 0 ok, 1 runtime error or check failed, 2 usage, 4 the policy is not measurable
on these CPUs (no SMT, one NUMA node, one LLC group; the reason on one line). When the daemon
stops before pinning anything, D/state.json says why (status not_measurable or error, reason)
and --check repeats the reason with the same exit code (4 for not measurable).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import time
from pathlib import Path

from corun.errors import CorunError
from corun.machine.placement_domains import POLICIES, parse_tasks, place, read_domains
from corun.machine.task_cpu import CpuSampler, ProcTable, pin_tree, reset_tree, tree_affinity
from corun.machine.topology import format_cpulist, parse_cpulist
from corun.util import atomic_write_json, proc_starttime

PROG = "corun-placement"
_stop = False


def _on_signal(signum, frame):  # only a flag: the loop does the work
    global _stop
    _stop = True


def _say(msg: str) -> None:
    print(f"{PROG}: {msg}", file=sys.stderr, flush=True)


def _alive(pid: int, starttime) -> bool:
    return starttime is not None and proc_starttime(pid) == starttime


def _task_name(job_id: str, names: set[str]) -> str | None:
    if job_id in names:
        return job_id
    bare = re.sub(r"^[0-9]{4}-", "", job_id)
    return bare if bare in names else None


class Events:
    """Reads the job events file as it grows (whole lines only)."""

    def __init__(self, path: Path):
        self.path, self.offset, self.partial = path, 0, ""

    def read(self) -> list[dict]:
        try:
            with open(self.path) as fh:
                fh.seek(self.offset)
                chunk = fh.read()
                self.offset = fh.tell()
        except FileNotFoundError:
            return []
        text = self.partial + chunk
        lines = text.split("\n")
        self.partial = lines.pop()
        out = []
        for line in lines:
            if line.strip():
                try:
                    out.append(json.loads(line))
                except json.JSONDecodeError:
                    _say(f"skipped a malformed job event: {line[:80]}")
        return out


def run_daemon(args) -> int:
    try:
        cpus = set(parse_cpulist(args.cpus))
    except ValueError:
        cpus = set()
    if not cpus:
        raise CorunError(f"--cpus: {args.cpus!r} (expected a CPU list such as 0-3)", 2)
    tasks = parse_tasks(args.tasks) if args.tasks else []
    if args.policy != "cfs" and not tasks:
        raise CorunError(f"--tasks: '' (expected TYPE:NAME,... for policy {args.policy})", 2)
    domains = read_domains(args.sysfs_root).restrict(cpus)
    assignment = place(args.policy, domains, tasks)
    state_dir = Path(args.state_dir)
    state_dir.mkdir(parents=True, exist_ok=True)
    state = {
        "policy": args.policy,
        "cpus": format_cpulist(sorted(cpus)),
        "status": "running",
        "domains": domains.as_dict(),
        "tasks": {t.name: t.type for t in tasks},
        "assignment": assignment,
        "jobs": {},
        "daemon_pid": os.getpid(),
    }
    atomic_write_json(state_dir / "state.json", state)
    names = {t.name for t in tasks}
    events = Events(Path(args.job_events))
    sampler = CpuSampler(state_dir / "cpu_samples.csv")
    jobs: dict[str, dict] = {}  # job id -> {pid, starttime, task, cpu}
    procs = ProcTable()
    next_sample = 0.0
    try:
        while not _stop:
            changed = False
            for ev in events.read():
                jid = ev.get("job_id")
                if ev.get("event") == "start" and isinstance(ev.get("pid"), int):
                    task = _task_name(jid, names)
                    cpu = assignment.get(task) if task else None
                    if args.policy != "cfs" and task is None:
                        _say(f"job {jid}: not in --tasks, left where the runner put it")
                        continue
                    jobs[jid] = {"pid": ev["pid"], "starttime": ev.get("starttime"), "task": task, "cpu": cpu}
                    changed = True
                elif ev.get("event") == "end" and jid in jobs:
                    del jobs[jid]
                    changed = True
            kids = procs.refresh() if jobs else {}  # new processes' parents only
            for jid, j in list(jobs.items()):
                if not _alive(j["pid"], j["starttime"]):
                    del jobs[jid]
                    changed = True
                    continue
                want = {j["cpu"]} if j["cpu"] is not None else cpus
                pin_tree(j["pid"], want, kids)
            if changed:
                state["jobs"] = jobs
                atomic_write_json(state_dir / "state.json", state)
            now = time.monotonic()
            if now >= next_sample:
                sampler.sample({jid: (j["pid"], j["cpu"]) for jid, j in jobs.items()})
                next_sample = now + args.sample_interval_s
            time.sleep(args.interval_s)
    finally:
        sampler.close()
        for j in jobs.values():
            if _alive(j["pid"], j["starttime"]):
                reset_tree(j["pid"], cpus)
        state["status"] = "stopped"
        state["jobs"] = jobs
        atomic_write_json(state_dir / "state.json", state)
    return 0


def _load_state(state_dir: Path, wait_s: float) -> dict | None:
    deadline = time.monotonic() + wait_s
    while True:
        try:
            return json.loads((state_dir / "state.json").read_text())
        except (OSError, json.JSONDecodeError):
            if time.monotonic() >= deadline:
                return None
            time.sleep(0.05)


def check(state_dir: Path) -> int:
    """Read the affinities back: every live job's threads must have the CPUs chosen for it."""
    state = _load_state(state_dir, 5.0)
    if state is None:
        _say(f"{state_dir}/state.json: missing (expected the daemon's state)")
        return 1
    if state["status"] in ("not_measurable", "error"):  # the daemon stopped before pinning anything
        _say(state["reason"])
        return 4 if state["status"] == "not_measurable" else 1
    cpus = set(parse_cpulist(state["cpus"]))
    bad = []
    for jid, j in state["jobs"].items():
        if not _alive(j["pid"], j["starttime"]):
            continue
        want = {j["cpu"]} if j["cpu"] is not None else cpus
        for tid, got in tree_affinity(j["pid"]).items():
            if got != want:
                bad.append(
                    f"job {jid} thread {tid} on {format_cpulist(sorted(got))} (expected {format_cpulist(sorted(want))})"
                )
    if bad:
        _say(f"policy {state['policy']} not in effect: {bad[0]}" + (f" (+{len(bad) - 1} more)" if len(bad) > 1 else ""))
        return 1
    return 0


def restore(state_dir: Path) -> int:
    """Every live job of the state gets all the run's CPUs back; then none is pinned."""
    state = _load_state(state_dir, 0.0)
    if state is None or "jobs" not in state:
        return 0  # the daemon never started pinning: nothing was pinned
    cpus = set(parse_cpulist(state["cpus"]))
    left = []
    for j in state["jobs"].values():
        if _alive(j["pid"], j["starttime"]):
            reset_tree(j["pid"], cpus)
            left += [tid for tid, got in tree_affinity(j["pid"]).items() if got != cpus]
    if left:
        _say(f"threads {left[:5]} still pinned after the restore")
        return 1
    return 0


# The options the manifest's params are passed to, in JSON schema words: the bounds each checks.
LIMITS = {
    "policy": {"type": "string", "enum": list(POLICIES)},
    "tasks": {"type": "string"},
    "interval-s": {"type": "number", "minimum": 0.001, "maximum": 60},
    "sample-interval-s": {"type": "number", "minimum": 0.001, "maximum": 60},
}


class UsageError(Exception):
    pass


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(message)


def _seconds(opt: str):
    lim = LIMITS[opt]

    def parse(text: str) -> float:
        try:
            v = float(text)
        except ValueError:
            v = float("nan")
        if not lim["minimum"] <= v <= lim["maximum"]:  # false for nan
            raise UsageError(f"--{opt}: {text!r} (expected seconds from {lim['minimum']} to {lim['maximum']})")
        return v

    return parse


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog=PROG, description=__doc__.split("\n\n")[0])
    ap.add_argument("--job-events", help="the runner's job events file (JSON lines)")
    ap.add_argument("--state-dir", help="folder for state.json and cpu_samples.csv")
    ap.add_argument("--cpus", help="the run's CPUs, e.g. 0-15")
    ap.add_argument("--policy", choices=LIMITS["policy"]["enum"])
    ap.add_argument("--tasks", help="TYPE:NAME,... with TYPE cpu or io ('' for cfs)")
    ap.add_argument(
        "--interval-s", type=_seconds("interval-s"), help="seconds between scans of the events and the jobs' threads"
    )
    ap.add_argument(
        "--sample-interval-s", type=_seconds("sample-interval-s"), help="seconds between samples of each thread's CPU"
    )
    ap.add_argument("--sysfs-root", default="/", help="folder holding sys/devices/system (default /)")
    ap.add_argument("--check", metavar="STATE_DIR", help="verify the pinning and exit")
    ap.add_argument("--restore", metavar="STATE_DIR", help="unpin every live job and exit")
    ap.add_argument("--limits", action="store_true", help="print the options' types and bounds as JSON and exit")
    return ap


# what the daemon needs: every option a run passes (the manifest's params among them)
DAEMON_NEEDS = ("job_events", "state_dir", "cpus", "policy", "tasks", "interval_s", "sample_interval_s")


def main(argv: list[str] | None = None) -> int:
    try:
        args = build_parser().parse_args(argv)
    except UsageError as exc:
        _say(str(exc).splitlines()[0])
        return 2
    if args.limits:
        print(json.dumps(LIMITS))
        return 0
    if args.check:
        return check(Path(args.check))
    if args.restore:
        return restore(Path(args.restore))
    for opt in DAEMON_NEEDS:
        if getattr(args, opt) is None:
            _say(f"--{opt.replace('_', '-')}: missing (expected a value: the manifest's)")
            return 2
    signal.signal(signal.SIGTERM, _on_signal)
    signal.signal(signal.SIGINT, _on_signal)
    try:
        return run_daemon(args)
    except CorunError as exc:
        # recorded for --check, which the runner calls right after start
        Path(args.state_dir).mkdir(parents=True, exist_ok=True)
        atomic_write_json(
            Path(args.state_dir) / "state.json",
            {
                "policy": args.policy,
                "status": "not_measurable" if exc.exit_code == 4 else "error",
                "reason": str(exc),
                "exit_code": exc.exit_code,
            },
        )
        _say(str(exc))
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())

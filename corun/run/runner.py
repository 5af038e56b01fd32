"""Run a batch workload the way the papers do, with monitors, caps and a scheduler variant.

A run spec (schemas/run_spec.schema.json) lists jobs in submit order. They are
queued first-come-first-served, at most `slots_per_core` jobs per core, each
confined to one CMP, never preempted by corun. Per job the runner records command,
CMP, CPUs, submit/start/end time, runtime, exit status, CPU time and the
/proc/<pid>/io counters (read from the exited process before it is reaped).

A run with a `cluster` runs jobs of kind `mpi` across the hosts of an inventory
(corun/run/cluster.py): each job is submitted at its `submit_s`, waits in a FIFO
queue for a free MPL slot on enough hosts, and runs through mpirun; a daemon
variant runs one daemon per host. Per job: wait_s, start, end and response_s.

The run directory is built as `<out>.incomplete/` and renamed to `<out>/` only
when everything is written, so an interrupted run never looks finished.
"""

from __future__ import annotations

import collections
import csv
import fcntl
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from corun import config
from corun.errors import ConfigError, CorunError
from corun.machine import cgroup as cg
from corun.machine import device as devmod
from corun.machine import host as hostmod
from corun.machine import topology
from corun.machine.recovery import recover_stale
from corun.machine.rotating_disk import RunDevice
from corun.machine.state import Journal, state_dir
from corun.monitors import MonitorContext, make_monitors
from corun.monitors.base import wait_started
from corun.results import metadata
from corun.run import cluster as clu
from corun.run import job_result
from corun.run.placement import Placer, Slot
from corun.run.schedulers import Variant
from corun.testbed import inventory as inv
from corun.util import atomic_write_json, proc_starttime, read_proc_io

DAEMON_WATCH_S = 0.05  # the shortest quantum a daemon variant may take (dynamic_io: 0.05 s)
IO_KEYS = ["rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes"]


@dataclass
class Job:
    job_id: str
    name: str
    index: int
    copy: int
    spec: dict
    cmp_pin: int | None
    slot: Slot | None = None
    pid: int | None = None
    starttime: int | None = None
    start_mono: float | None = None
    end_mono: float | None = None
    exit_code: int | None = None
    term_signal: int | None = None
    timed_out: bool = False
    killed: bool = False
    cpu_user_s: float | None = None
    cpu_sys_s: float | None = None
    max_rss_kb: int | None = None
    io: dict | None = None
    result: dict = field(default_factory=dict)
    result_error: str | None = None
    journal_action: dict | None = None
    alloc: clu.Allocation | None = None


def expand_jobs(spec: dict) -> list[Job]:
    jobs, n = [], 0
    for i, js in enumerate(spec["jobs"]):
        for c in range(js["repeat"]):
            suffix = f"-{c}" if js["repeat"] > 1 else ""
            jobs.append(Job(f"{n:04d}-{js['name']}{suffix}", js["name"], i, c, js, js.get("cmp")))
            n += 1
    return jobs


def load_spec(path: str | Path) -> dict:
    return config.load(path, "run_spec")


class Progress:
    def __init__(self, name: str, total: int, enabled: bool):
        self.name, self.total, self.enabled = name, total, enabled
        self.tty = sys.stderr.isatty()
        self.last = 0.0

    def show(self, done: int, running: int, elapsed: float, runtimes: list[float], capacity: int, force=False):
        if not self.enabled:
            return
        now = time.monotonic()
        if not force and now - self.last < 10:
            return
        self.last = now
        eta = ""
        if runtimes and done < self.total:
            mean = sum(runtimes) / len(runtimes)
            left = (self.total - done) * mean / max(1, min(capacity, self.total - done))
            eta = f", ~{left:.0f} s left"
        line = f"corun: {self.name}: {done}/{self.total} jobs done, {running} running, {elapsed:.1f} s elapsed{eta}"
        if self.tty:
            print("\r" + line, end="\n" if done == self.total else "", file=sys.stderr, flush=True)
        else:
            print(line, file=sys.stderr, flush=True)


class Runner:
    def __init__(
        self,
        spec: dict,
        out_dir: str | Path,
        source: str = "spec",
        progress: bool = True,
        allow_job_failures: bool = False,
        attempt: int = 1,
    ):
        self.spec, self.source = spec, source
        self.attempt = attempt  # > 1: measured again (run_spec_file, steal)
        self.out = Path(out_dir)
        self.tmp = self.out.parent / (self.out.name + ".incomplete")
        self.progress_on = progress
        self.allow_job_failures = allow_job_failures
        self.events: queue.Queue = queue.Queue()
        self.stop_reason: str | None = None
        self.jobs: list[Job] = []
        self.running: dict[int, Job] = {}
        self.waiters: list[threading.Thread] = []
        self.job_events_fh = None

    # ---------------------------------------------------------------- checks
    def prepare(self) -> None:
        """Everything that can be wrong with the input is found here, before anything runs."""
        spec, src = self.spec, self.source
        self.topo = topology.discover()
        pc = spec["placement"]["cmp"]
        self.grouping, cmps = topology.cmp_groups(
            self.topo, pc["grouping"], pc.get("cores_per_cmp"), pc.get("groups"), src
        )
        use = spec["placement"]["use_cmps"]
        if use is not None:
            for i, c in enumerate(use):
                if c >= len(cmps):
                    raise ConfigError(
                        src,
                        f"placement.use_cmps[{i}]",
                        c,
                        f"a CMP index < {len(cmps)} (this machine has {len(cmps)} CMPs)",
                    )
            self.cmp_ids = list(use)
        else:
            self.cmp_ids = list(range(len(cmps)))
        self.all_cmps = cmps
        self.placer = Placer(
            [cmps[i] for i in self.cmp_ids], spec["placement"]["slots_per_core"], spec["placement"]["policy"]
        )
        self.jobs = expand_jobs(spec)
        self._prepare_cluster()
        for i, js in enumerate(spec["jobs"]):
            if js["kind"] == "mpi":
                continue  # checked by _prepare_cluster
            pin = js.get("cmp")
            if pin is not None and pin not in self.cmp_ids:
                raise ConfigError(src, f"jobs[{i}].cmp", pin, f"one of the CMPs in use: {self.cmp_ids}")
            local_pin = self.cmp_ids.index(pin) if pin is not None else None
            if not self.placer.fits_anywhere(js["cores"], local_pin):
                biggest = max(len(g) for g in self.placer.cmps)
                raise ConfigError(src, f"jobs[{i}].cores", js["cores"], f"an integer <= {biggest} (cores of one CMP)")
            if js.get("cwd") and not Path(js["cwd"]).is_dir() and not self._on_run_fs(js["cwd"]):
                raise ConfigError(src, f"jobs[{i}].cwd", js["cwd"], "an existing directory")
            _check_program(src, i, js)
        for j in self.jobs:
            if j.cmp_pin is not None:
                j.cmp_pin = self.cmp_ids.index(j.cmp_pin)
        # a device built or formatted for the run (kind rotating_disk, block with format) is
        # found once it exists, first thing in _setup_machine
        self.run_device = RunDevice.prepare(spec["device"], src)
        self.device = None if self.run_device else devmod.device_of(spec["device"]["path"], src, "device.path")
        thr = spec["device"]["throttle"]
        self.cgroup = cg.RunCgroup(self._run_id())
        if thr and not self.cgroup.available:
            raise ConfigError(
                src,
                "device.throttle",
                thr,
                "a machine with a writable blkio (v1) or io (v2) cgroup controller (run as root)",
            )
        mem = spec["memory"]["limit_bytes"]
        if mem is not None and not (self.cgroup.available and self.cgroup.memory_available()):
            raise ConfigError(
                src, "memory.limit_bytes", mem, "a machine with a writable memory cgroup controller (run as root)"
            )
        for i, e in enumerate(spec["device"]["evict"]):
            if not Path(e).exists() and not self._on_run_fs(e):
                raise ConfigError(src, f"device.evict[{i}]", e, "an existing file or folder")
        if spec["device"]["drop_caches"] and not os.access("/proc/sys/vm/drop_caches", os.W_OK):
            raise ConfigError(
                src, "device.drop_caches", True, "false, or running as root (writes /proc/sys/vm/drop_caches)"
            )
        self.variant = Variant.load(spec["scheduler"]["name"], spec["scheduler"]["params"], src)
        mon = spec["monitors"]
        self.raw_dir = self.tmp / "monitors"
        self.mon_ctx, self.monitors = None, []
        if mon["enabled"]:  # tools checked here (MissingTool)
            self.mon_ctx = MonitorContext(
                raw_dir=self.raw_dir,
                interval_s=mon["interval_s"],
                devices=[self.device.name] if self.device else [],
                perf_events=list(mon["perf_events"]),
            )
            self.monitors = make_monitors(list(mon["enabled"]), self.mon_ctx)
        if (self.out / "metadata.json").exists():
            raise CorunError(f"{self.out}: already measured (metadata.json exists); remove the folder to measure again")

    def _prepare_cluster(self) -> None:
        """Hosts, the MPL-slot placer and the checks of jobs of kind mpi."""
        spec, src = self.spec, self.source
        cs = spec.get("cluster")
        self.cluster, self.hosts, self.node_daemons = cs, [], None
        if cs is None:
            for i, js in enumerate(spec["jobs"]):
                if js["kind"] == "mpi":
                    raise ConfigError(src, f"jobs[{i}].kind", "mpi", "process, or a run with a cluster section")
            return
        if not Path(cs["inventory"]).is_file():
            raise ConfigError(src, "cluster.inventory", cs["inventory"], "an existing inventory file")
        hosts = inv.load(cs["inventory"], cs["group"], f"{src}: cluster.inventory")
        self.hosts = inv.pick(hosts, cs["hosts"], f"{src}: cluster.hosts") if cs["hosts"] else hosts
        self.cluster_placer = clu.ClusterPlacer(len(self.hosts), cs["mpl"], cs["ranks_per_node"])
        self.mpi_network = clu.network_of(self.hosts)
        for i, js in enumerate(spec["jobs"]):
            if js["kind"] != "mpi":
                raise ConfigError(src, f"jobs[{i}].kind", js["kind"], "mpi (a run with a cluster runs MPI jobs only)")
            if "ranks" not in js:
                raise ConfigError(src, f"jobs[{i}].ranks", None, "an integer >= 1 (the job's MPI ranks)")
            if not self.cluster_placer.fits_anywhere(js["ranks"]):
                most = len(self.hosts) * cs["ranks_per_node"]
                raise ConfigError(
                    src,
                    f"jobs[{i}].ranks",
                    js["ranks"],
                    f"an integer <= {most} ({len(self.hosts)} hosts x {cs['ranks_per_node']} ranks per node)",
                )
            _check_program(src, i, js)
        if shutil.which("mpirun") is None:
            raise ConfigError(src, "cluster", "mpirun", "Open MPI's mpirun on PATH (the openmpi role)")
        mpl_param = spec["scheduler"]["params"].get("mpl")
        if mpl_param is not None and mpl_param != cs["mpl"]:
            raise ConfigError(src, "scheduler.params.mpl", mpl_param, f"cluster.mpl ({cs['mpl']})")

    def _on_run_fs(self, path: str) -> bool:
        """Is PATH on the file system built for the run (it does not exist yet)?"""
        if self.run_device is None:
            return False
        root = Path(self.spec["device"]["path"]).absolute()
        return root == Path(path).absolute() or root in Path(path).absolute().parents

    def _run_id(self) -> str:
        again = f"-a{self.attempt}" if self.attempt > 1 else ""
        return f"{self.spec['name']}-{os.getpid()}-{int(time.time())}{again}"

    # ---------------------------------------------------------------- run
    def run(self) -> Path:
        # where the run's wall time went (metadata.json phases_s): a campaign pays all of it
        t_phase = time.monotonic()
        self.phases: dict[str, float | None] = {"process_start_s": process_age_s()}
        for line in recover_stale():
            print(f"corun: {line}", file=sys.stderr)
        self.prepare()
        self._lock_machine()
        if self.tmp.exists():
            shutil.rmtree(self.tmp)
        (self.tmp / "jobs").mkdir(parents=True)
        self.raw_dir.mkdir(parents=True)
        atomic_write_json(self.tmp / "status.json", {"state": "running", "pid": os.getpid()})
        self.journal = Journal(self.cgroup.run_id)
        old_handlers = {s: signal.signal(s, self._on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        ok = False
        self.host_meta: dict | BaseException | None = None
        self.meta: dict = {
            "run_id": self.cgroup.run_id,
            "spec_name": self.spec["name"],
            "labels": self.spec["labels"],
            "teardown_errors": [],
            "machine_lock": self.lock_wait,
        }
        self.phases["prepare_s"] = _lap(t_phase)
        t_phase = time.monotonic()
        try:
            self._setup_machine()
            self.phases["setup_s"] = _lap(t_phase)
            # what the machine's CPUs did while the jobs ran (steal: the VM's host took them)
            cpu0, mono0 = hostmod.cpu_ticks(), time.monotonic()
            self._execute()
            self.meta["machine_cpu"] = hostmod.cpu_shares(cpu0, hostmod.cpu_ticks(), time.monotonic() - mono0)
            self.phases["jobs_s"] = _lap(mono0)
            ok = self.stop_reason is None
        finally:
            t_phase = time.monotonic()
            self._teardown()
            self.phases["teardown_s"] = _lap(t_phase)
            for s, h in old_handlers.items():
                signal.signal(s, h)
            self._lock_fh.close()  # releases the machine lock
            if not ok:
                atomic_write_json(
                    self.tmp / "status.json", {"state": "interrupted", "reason": self.stop_reason or "error"}
                )
        self._t_finish = time.monotonic()
        return self._finish()

    def _lock_machine(self) -> None:
        """One run at a time per machine: runs would disturb each other's measurements and
        race on the elevator and caps. A second run waits for the first."""

        path = state_dir() / "machine.lock"
        self._lock_fh = open(path, "a+")
        # how long the run waited for another (recorded: it lengthens a campaign's wall time)
        self.lock_wait = {"waited_s": 0.0, "waited_for": None}
        try:
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            self._lock_fh.seek(0)
            holder = self._lock_fh.read().strip() or "another run"
            print(
                f"corun: waiting for {holder} to finish (one run at a time on a machine)", file=sys.stderr, flush=True
            )
            t = time.monotonic()
            fcntl.flock(self._lock_fh, fcntl.LOCK_EX)
            self.lock_wait = {"waited_s": round(time.monotonic() - t, 3), "waited_for": holder}
        self._lock_fh.seek(0)
        self._lock_fh.truncate()
        self._lock_fh.write(f"run {self.spec['name']} (pid {os.getpid()})\n")
        self._lock_fh.flush()

    def _on_signal(self, signum, frame):
        self.stop_reason = signal.Signals(signum).name
        self.events.put(("signal", signum))

    def _setup_machine(self) -> None:
        j = self.journal
        if self.run_device is not None:  # the emulated (or formatted) disk, journalled
            name = self.run_device.start(j, self.cgroup.run_id)
            self.device = devmod.device_by_name(name)
            if self.mon_ctx is not None:
                self.mon_ctx.devices[:] = [name]
        # the cgroup: contains the jobs and carries the I/O cap
        if self.cgroup.available:
            mem = self.spec["memory"]["limit_bytes"]
            self.cgroup.create(memory=mem is not None)
            for action in self.cgroup.undo_actions():
                j.push(action)
            thr = self.spec["device"]["throttle"]
            if thr:
                self.cgroup.throttle(self.device.majmin, thr)
            if mem is not None:
                self.cgroup.limit_memory(mem)
            if self.mon_ctx is not None:
                self.mon_ctx.memory_cgroup = str(self.cgroup.memory_path or self.cgroup.path)
        self.device_before = self.device.describe()
        sched_dir = self.tmp / "sched"
        sched_dir.mkdir()
        self.job_events_path = sched_dir / "job_events.jsonl"
        self.job_events_fh = open(self.job_events_path, "a", buffering=1)
        # absolute: variant commands run in their own folder
        ctx = {
            "state_dir": str((sched_dir / "state").absolute()),
            "run_dir": str(self.tmp.absolute()),
            "device": self.device.name,
            "device_majmin": self.device.majmin,
            "cgroup": str(self.cgroup.path or ""),
            "job_events": str(self.job_events_path.absolute()),
            "cpus": topology.format_cpulist(sum(self.placer.cmps, [])),
        }
        if self.cluster is not None:
            # each mpirun keeps its session folder apart: two started at the same moment race on
            # creating a shared /tmp/ompi.<host>.<uid> ("File exists"); a short path, as Open MPI
            # puts Unix sockets in it
            self.ompi_dir = Path(tempfile.mkdtemp(prefix="corun-ompi-"))
            j.push({"kind": "command", "argv": ["rm", "-rf", str(self.ompi_dir)], "what": "Open MPI session folders"})
        if self.cluster is not None:  # one daemon per host, the ranks' environment from each
            self.node_daemons = clu.NodeDaemons(
                self.variant, self.hosts, sched_dir / "state", self.cluster["daemon_port"]
            )
            self.node_daemons.start(j)
            self.node_daemons.verify()
        else:
            self.variant.start(j, ctx)
            self.variant.verify()
        self.meta["variant_verified_at_start"] = True
        self.device_during = self.device.describe()
        if self.spec["device"]["drop_caches"]:
            os.sync()  # clean pages first, so dropping leaves no job input in the page cache
            with open("/proc/sys/vm/drop_caches", "w") as fh:
                fh.write("3")
            self.meta["caches_dropped_epoch_s"] = time.time()
        if self.spec["device"]["evict"]:
            self.meta["evicted"] = evict(self.spec["device"]["evict"])
        for m in self.monitors:
            m.start()
            proc = getattr(m, "_proc", None)
            if proc is not None:  # a killed runner must not leave its monitors running
                m.journal_action = j.push(
                    {
                        "kind": "processes",
                        "what": f"monitor {m.name}",
                        "pids": {str(proc.pid): proc_starttime(proc.pid)},
                    }
                )
        # the host's state (tools, doctor's findings, hwloc) is read before the jobs, while the
        # monitors' own start-up passes; nothing of it runs beside a job
        collect = threading.Thread(target=self._collect_host, name="metadata", daemon=True)
        collect.start()
        if self.monitors:  # let the monitors' own start-up pass before the first job starts
            settle_s = self.spec["monitors"]["settle_s"]
            waited = wait_started(self.monitors, settle_s)
            self.meta["monitors_settle"] = {"waited_s": round(waited, 4), "limit_s": settle_s}
        collect.join()
        if isinstance(self.host_meta, BaseException):
            raise self.host_meta

    def _collect_host(self) -> None:
        try:
            self.host_meta = {**metadata.collect(self.device_during), "hwloc": metadata.hwloc_summary()}
        except BaseException as exc:  # noqa: BLE001 - raised again in the runner's thread
            self.host_meta = exc

    def _execute(self) -> None:
        if self.cluster is not None:
            return self._execute_cluster()
        pending = collections.deque(self.jobs)
        prog = Progress(self.spec["name"], len(self.jobs), self.progress_on)
        self.t0_epoch = time.time()
        self.t0_mono = time.monotonic()
        done_runtimes: list[float] = []
        done = 0
        while (pending or self.running) and self.stop_reason is None:
            while pending:  # FCFS: the head blocks the queue
                slot = self.placer.place(pending[0].spec["cores"], pending[0].cmp_pin)
                if slot is None:
                    break
                job = pending.popleft()
                job.slot = slot
                self._launch(job)
            prog.show(done, len(self.running), time.monotonic() - self.t0_mono, done_runtimes, self.placer.capacity())
            try:
                kind, payload = self.events.get(timeout=self._next_timeout())
            except queue.Empty:
                self._check_timeouts()
                continue
            finally:
                self._check_variant()  # also when jobs end often: a dead daemon is seen at once
            if kind == "exit":
                job = payload
                self.running.pop(job.pid, None)
                self.placer.release(job.slot)
                self._job_event("end", job)
                self.journal.forget(job.journal_action)
                done += 1
                done_runtimes.append(job.end_mono - job.start_mono)
                prog.show(
                    done,
                    len(self.running),
                    time.monotonic() - self.t0_mono,
                    done_runtimes,
                    self.placer.capacity(),
                    force=True,
                )
        self.t_end_mono = time.monotonic()

    def _execute_cluster(self) -> None:
        """MPI jobs: submitted at their submit_s, FIFO into the hosts' MPL slots."""
        pending = sorted(self.jobs, key=lambda j: j.spec["submit_s"])  # stable: spec order on ties
        prog = Progress(self.spec["name"], len(self.jobs), self.progress_on)
        self.t0_epoch = time.time()
        self.t0_mono = time.monotonic()
        done_runtimes: list[float] = []
        done = 0
        placer = self.cluster_placer

        def submit_of(job: Job) -> float:
            return job.spec["submit_s"]

        while (pending or self.running) and self.stop_reason is None:
            now_s = time.monotonic() - self.t0_mono
            for job, alloc in clu.fifo_starts(pending, now_s, placer, lambda j: j.spec["ranks"], submit_of):
                job.alloc = alloc
                self._launch(job)
            prog.show(done, len(self.running), time.monotonic() - self.t0_mono, done_runtimes, placer.capacity())
            timeout = self._next_timeout()
            nxt = clu.next_submit_in(pending, time.monotonic() - self.t0_mono, submit_of)
            if nxt is not None:
                timeout = max(0.0, min(timeout, nxt))
            try:
                kind, payload = self.events.get(timeout=timeout)
            except queue.Empty:
                self._check_timeouts()
                continue
            finally:
                self._check_variant()
            if kind == "exit":
                job = payload
                self.running.pop(job.pid, None)
                placer.release(job.alloc)
                self._job_event("end", job)
                self.journal.forget(job.journal_action)
                done += 1
                done_runtimes.append(job.end_mono - job.start_mono)
                prog.show(
                    done, len(self.running), time.monotonic() - self.t0_mono, done_runtimes, placer.capacity(), True
                )
        self.t_end_mono = time.monotonic()

    def _daemon_watched(self) -> bool:
        if self.node_daemons is not None:
            return self.node_daemons.active
        return self.variant.process is not None

    def _next_timeout(self) -> float:
        now = time.monotonic()
        # a variant's daemon is watched this often, so that the jobs it stopped are resumed
        # within one of its quanta if it dies
        t = DAEMON_WATCH_S if self._daemon_watched() else (0.2 if self.run_device else 1.0)
        for job in self.running.values():
            to = job.spec.get("timeout_s")
            if to:
                t = min(t, max(0.01, job.start_mono + to - now))
        return t

    def _check_timeouts(self) -> None:
        now = time.monotonic()
        for job in list(self.running.values()):
            to = job.spec.get("timeout_s")
            if to and now - job.start_mono > to and not job.timed_out:
                job.timed_out = True
                _signal_group(job.pid, signal.SIGKILL)

    def _check_variant(self) -> None:
        if self.run_device is not None:
            self.run_device.check()  # a dead emulator fails the run, naming it
        if self.node_daemons is not None:
            dead = self.node_daemons.alive()
            if dead:  # restore every node at once: no rank stays boosted or stopped
                self._resume_all()
                errors = self.node_daemons.restore_now(self.journal)
                raise CorunError(
                    f"scheduler {self.variant.name}: the daemon on {', '.join(dead)} died "
                    f"(see {self.tmp}/sched/state/<host>/daemon.log)" + (f"; {'; '.join(errors)}" if errors else "")
                )
            return
        if not self.variant.alive():
            # a scheduler daemon that dies must not leave jobs stopped
            self._resume_all()
            self.variant.verify()  # raises with the daemon's exit status

    def _resume_all(self) -> None:
        for job in self.running.values():
            _signal_group(job.pid, signal.SIGCONT)
        for p in self.cgroup.pids():
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass

    def _mpi_cmd(self, job: Job) -> list[str]:
        """mpirun of an MPI job over its allocated hosts, each node's ranks with that node's
        daemon environment (rank_env.json) and the job's own."""
        js = job.spec
        base = self.node_daemons.node_env() if self.node_daemons and self.node_daemons.active else None
        node_env = []
        for n in range(len(self.hosts)):
            e = dict(base[n]) if base else {}
            e.update(js["env"])
            e.update({"CORUN_JOB_ID": job.job_id, "CORUN_COSCHED_JOB": job.job_id})
            node_env.append(e)
        appfile = self.tmp / "jobs" / f"{job.job_id}.appfile"
        appfile.write_text(clu.appfile_text(job.alloc, self.hosts, js["cmd"], node_env))
        session = self.ompi_dir / job.job_id
        session.mkdir()
        return clu.mpirun_argv(self.hosts, str(appfile.absolute()), self.mpi_network, str(session))

    def _launch(self, job: Job) -> None:
        js = job.spec
        env = dict(os.environ)
        env.update(js["env"])
        env["CORUN_JOB_ID"] = job.job_id
        cmd = js["cmd"]
        if job.alloc is not None:  # mpirun runs here; its ranks on the hosts, in their CPU sets
            cmd = self._mpi_cmd(job)
            cpus = None
        else:
            env["CORUN_CPUS"] = topology.format_cpulist(job.slot.cpus)
            cpus = set(job.slot.cpus)
        procs = [str(f) for f in self.cgroup.procs_files] if self.cgroup.path else []

        def child_setup():  # runs in the child between fork and exec: syscalls only
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
            for f in procs:
                with open(f, "w") as fh:
                    fh.write(str(os.getpid()))

        out = open(self.tmp / "jobs" / f"{job.job_id}.out", "wb")
        err = open(self.tmp / "jobs" / f"{job.job_id}.err", "wb")
        try:
            p = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=out,
                stderr=err,
                env=env,
                cwd=js.get("cwd"),
                preexec_fn=child_setup,
                start_new_session=True,
            )
        except OSError as exc:
            raise CorunError(f"job {job.job_id}: cannot start {cmd[0]}: {exc.strerror}") from None
        finally:
            out.close()
            err.close()
        job.start_mono = time.monotonic()
        job.pid = p.pid
        job.starttime = proc_starttime(p.pid)
        self.running[p.pid] = job
        job.journal_action = self.journal.push(
            {"kind": "processes", "what": f"job {job.job_id}", "pids": {str(p.pid): job.starttime}}
        )
        self._job_event("start", job)
        t = threading.Thread(target=self._wait, args=(job, p), daemon=True, name=f"wait-{job.job_id}")
        t.start()
        self.waiters.append(t)

    def _wait(self, job: Job, p) -> None:
        """Block until the job exits; read its counters before reaping it."""
        while True:
            try:
                os.waitid(os.P_PID, job.pid, os.WEXITED | os.WNOWAIT)
                break
            except ChildProcessError:
                break
            except InterruptedError:
                continue
        job.end_mono = time.monotonic()
        job.io = read_proc_io(job.pid)
        _, status, ru = os.wait4(job.pid, 0)
        p.returncode = os.waitstatus_to_exitcode(status)
        if os.WIFSIGNALED(status):
            job.term_signal = os.WTERMSIG(status)
            job.exit_code = 128 + job.term_signal
        else:
            job.exit_code = os.WEXITSTATUS(status)
        job.cpu_user_s, job.cpu_sys_s, job.max_rss_kb = ru.ru_utime, ru.ru_stime, ru.ru_maxrss
        self.events.put(("exit", job))

    def _job_event(self, event: str, job: Job) -> None:
        now = time.monotonic()  # CLOCK_MONOTONIC, the clock a variant's daemon reads too
        rec = {
            "event": event,
            "job_id": job.job_id,
            "pid": job.pid,
            "starttime": job.starttime,
            "t_s": round(now - self.t0_mono, 6),
            "mono_s": round(now, 6),
        }
        if job.alloc is not None:
            rec["hosts"] = {self.hosts[n].name: k for n, k in job.alloc.nodes}
        else:
            rec["cmp"] = self.cmp_ids[job.slot.cmp]
            rec["cpus"] = job.slot.cpus
        if event == "end":
            rec["exit_code"] = job.exit_code
        if self.job_events_fh:
            self.job_events_fh.write(json.dumps(rec) + "\n")

    # ---------------------------------------------------------------- teardown
    def _teardown(self) -> None:
        errors = self.meta["teardown_errors"]
        grace = self.spec["kill_grace_s"]
        if self.running:
            for job in self.running.values():
                job.killed = True
                _signal_group(job.pid, signal.SIGCONT)
                _signal_group(job.pid, signal.SIGTERM)
            end = time.monotonic() + grace
            while self.running and time.monotonic() < end:
                try:
                    kind, job = self.events.get(timeout=0.05)
                    if kind == "exit":
                        self.running.pop(job.pid, None)
                except queue.Empty:
                    pass
            for job in self.running.values():
                _signal_group(job.pid, signal.SIGKILL)
        for t in self.waiters:
            t.join(timeout=5)
        if getattr(self, "t_end_mono", None) is None:
            self.t_end_mono = time.monotonic()
        for m in getattr(self, "monitors", []):
            try:
                m.stop()
            except Exception as exc:  # noqa: BLE001 - teardown goes on
                errors.append(f"monitor {m.name}: {exc}")
            if hasattr(self, "journal"):
                self.journal.forget(getattr(m, "journal_action", None))
        if getattr(self, "node_daemons", None) is not None and hasattr(self, "journal"):
            try:
                if self.stop_reason is None and not self.node_daemons.alive():
                    self.node_daemons.verify()  # still in effect on every host at the end?
                    self.meta["variant_verified_at_end"] = True
            except CorunError as exc:
                errors.append(str(exc))
                self.meta["variant_verified_at_end"] = False
            errors.extend(self.node_daemons.stop(self.journal))
        elif hasattr(self, "variant") and hasattr(self, "journal"):
            try:
                if self.stop_reason is None and self.variant.alive():
                    self.variant.verify()  # still in effect at the end of the run?
                    self.meta["variant_verified_at_end"] = True
            except CorunError as exc:
                errors.append(str(exc))
                self.meta["variant_verified_at_end"] = False
            errors.extend(self.variant.stop(self.journal))
        if self.job_events_fh:
            self.job_events_fh.close()
            self.job_events_fh = None
        rdev = getattr(self, "run_device", None)
        if rdev is not None and getattr(self, "device", None) is not None:
            self.device_after = self.device.describe()  # before the device goes away
            try:
                rdev.record_end()
            except Exception as exc:  # noqa: BLE001 - teardown goes on
                errors.append(f"device: {exc}")
        if hasattr(self, "journal"):
            errors.extend(self.journal.unwind())
        if rdev is not None:
            rdev.after_teardown(self.tmp)
        elif getattr(self, "device", None) is not None:
            self.device_after = self.device.describe()

    def _finish(self) -> Path:
        if self.stop_reason is not None:
            raise CorunError(
                f"run {self.spec['name']} stopped by {self.stop_reason}: "
                f"partial data left in {self.tmp} (not a finished run)",
                exit_code=130,
            )
        t0 = self.t0_epoch
        rows = [self._job_row(j) for j in self.jobs]
        _write_csv(self.tmp / "jobs.csv", rows)
        missing: list[dict] = []
        tidy = self.tmp / "tidy"
        tidy.mkdir(exist_ok=True)
        for m in self.monitors:
            try:
                table, miss = m.tidy(t0)
                table.write_csv(tidy / f"{m.name}.csv")
                missing.extend(miss)
            except Exception as exc:  # noqa: BLE001 - a broken monitor file is a missing metric, not a crash
                missing.append({"metric": m.name, "reason": f"could not parse raw output: {exc}", "source": m.name})
        failed = [r["job_id"] for r in rows if r["exit_code"] != 0]
        meta = dict(self.host_meta)
        meta.update(self.meta)
        meta.update(
            {
                "spec": self.spec,
                "start_epoch_s": t0,
                "end_epoch_s": t0 + (self.t_end_mono - self.t0_mono),
                "duration_s": self.t_end_mono - self.t0_mono,
                "topology": {
                    **self.topo.as_dict(),
                    "cmp_grouping": self.grouping,
                    "cmps": self.all_cmps,
                    "cmps_used": self.cmp_ids,
                },
                "device": self.device_during,
                "device_after": self.device_after,
                "device_kind": self.spec["device"]["kind"],
                "device_setup": self.run_device.describe() if self.run_device else None,
                "throttle": {**self.cgroup.describe(), **(self.spec["device"]["throttle"] or {})}
                if self.spec["device"]["throttle"]
                else None,
                "memory_cap": {
                    "limit_bytes": self.cgroup.memory_limit,
                    "requested_bytes": self.spec["memory"]["limit_bytes"],
                    "cgroup": str(self.cgroup.memory_path),
                }
                if self.spec["memory"]["limit_bytes"] is not None
                else None,
                "caches_dropped": bool(self.spec["device"]["drop_caches"]),
                "evicted": self.meta.get("evicted"),
                "scheduler": {
                    **self.variant.describe(),
                    "verified": self.meta.get("variant_verified_at_start", False),
                    "verified_at_end": self.meta.get("variant_verified_at_end"),
                },
                "monitors": {
                    "enabled": self.spec["monitors"]["enabled"],
                    "interval_s": self.spec["monitors"]["interval_s"],
                },
                "cluster": self._cluster_meta(),
                "missing": missing,
                "jobs_failed": failed,
                "status": "ok" if not failed else "jobs_failed",
            }
        )
        # prepare: spec checks and the machine lock (its wait is machine_lock); tables: jobs.csv
        # and the monitors' tidy tables, up to this file
        meta["phases_s"] = {**self.phases, "tables_s": _lap(self._t_finish)}
        if self.device_after.get("elevator") != self.device_before.get("elevator"):
            meta["teardown_errors"].append(
                f"elevator of {self.device.name} is {self.device_after.get('elevator')} after the run, "
                f"was {self.device_before.get('elevator')}"
            )
        (self.tmp / "status.json").unlink(missing_ok=True)
        atomic_write_json(self.tmp / "metadata.json", meta)
        if self.out.exists():
            shutil.rmtree(self.out)
        os.replace(self.tmp, self.out)
        if meta["teardown_errors"]:
            raise CorunError(
                f"run {self.spec['name']}: could not restore the machine: " + "; ".join(meta["teardown_errors"])
            )
        if failed and not self.allow_job_failures:
            raise CorunError(
                f"run {self.spec['name']}: {len(failed)} job(s) failed ({', '.join(failed[:3])}); "
                f"see {self.out}/jobs/*.err"
            )
        return self.out

    def _cluster_meta(self) -> dict | None:
        if self.cluster is None:
            return None
        out = {
            **self.cluster,
            "hosts": [h.describe() | {"cpus": h.vars.get("corun_cpus")} for h in self.hosts],
            "mpi_network": self.mpi_network,
        }
        if self.node_daemons is not None and self.node_daemons.active:
            out["daemons"] = self.node_daemons.summaries()
        return out

    def _job_row(self, j: Job) -> dict:
        js = j.spec
        started = j.start_mono is not None
        rt = (j.end_mono - j.start_mono) if started and j.end_mono else None
        row = {
            "job_id": j.job_id,
            "name": j.name,
            "spec_index": j.index,
            "copy": j.copy,
            "cmp": self.cmp_ids[j.slot.cmp] if j.slot else None,
            "cpus": topology.format_cpulist(j.slot.cpus) if j.slot else None,
            "pid": j.pid,
            "submit_s": float(js.get("submit_s", 0.0)),
            "start_s": round(j.start_mono - self.t0_mono, 6) if started else None,
            "end_s": round(j.end_mono - self.t0_mono, 6) if started and j.end_mono else None,
            "runtime_s": round(rt, 6) if rt is not None else None,
            "exit_code": j.exit_code,
            "signal": j.term_signal,
            "timed_out": j.timed_out,
            "cpu_user_s": _r6(j.cpu_user_s),
            "cpu_sys_s": _r6(j.cpu_sys_s),
            "cpu_s": _r6(j.cpu_user_s + j.cpu_sys_s) if j.cpu_user_s is not None else None,
            "max_rss_kb": j.max_rss_kb,
        }
        if js["kind"] == "mpi":  # the paper's response time: waiting in the queue + execution
            sub = float(js["submit_s"])
            row["ranks"] = js["ranks"]
            row["hosts"] = " ".join(f"{self.hosts[n].name}:{k}" for n, k in j.alloc.nodes) if j.alloc else None
            row["wait_s"] = round(row["start_s"] - sub, 6) if started else None
            row["response_s"] = round(row["end_s"] - sub, 6) if row["end_s"] is not None else None
        for k in IO_KEYS:
            row[f"io_{k}"] = j.io.get(k) if j.io else None
        row["io_read_mb_s"] = (j.io["read_bytes"] / 1e6 / rt) if j.io and rt else None
        row["io_rchar_mb_s"] = (j.io["rchar"] / 1e6 / rt) if j.io and rt else None
        row["cmd"] = " ".join(js["cmd"])
        for k, v in {**self.spec["labels"], **js["labels"]}.items():
            row[f"label_{k}"] = v
        if js["result"] != "none":
            res, err = job_result.parse(self.tmp / "jobs" / f"{j.job_id}.out", js["result"])
            row["result_error"] = err
            for k, v in res.items():
                if isinstance(v, (str, int, float, bool)) or v is None:
                    row[f"result_{k}"] = v
        return row


def _check_program(src: str, i: int, js: dict) -> None:
    """The job's program exists and is executable (MPI jobs: at the same path on every host)."""
    exe = js["cmd"][0]
    if "/" in exe:
        if not os.access(exe, os.X_OK):
            raise ConfigError(
                src,
                f"jobs[{i}].cmd[0]",
                exe,
                "an executable file (built by the corun_kernels role: ansible-playbook site.yml --tags corun_kernels)",
            )
    elif shutil.which(exe, path=js["env"].get("PATH", os.environ.get("PATH"))) is None:
        raise ConfigError(src, f"jobs[{i}].cmd[0]", exe, "a program on PATH")


def evict(paths: list[str]) -> dict:
    """Drop the cached pages of these files (folders: every file below); returns counts."""
    files = 0
    for root in paths:
        p = Path(root)
        for f in [p] if p.is_file() else [x for x in p.rglob("*") if x.is_file()]:
            fd = os.open(f, os.O_RDONLY)
            try:
                os.fdatasync(fd)
                os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                files += 1
            finally:
                os.close(fd)
    return {"files": files, "paths": list(paths)}


def _r6(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def _signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _write_csv(path: Path, rows: list[dict]) -> None:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})


def _lap(since: float) -> float:
    return round(time.monotonic() - since, 4)


def process_age_s() -> float | None:
    """Seconds since this process started (interpreter start, imports, parsing), from
    /proc/self/stat and /proc/uptime; None where they cannot be read."""
    ticks = proc_starttime(os.getpid())
    try:
        uptime = float(Path("/proc/uptime").read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return None
    if ticks is None:
        return None
    return round(max(0.0, uptime - ticks / os.sysconf("SC_CLK_TCK")), 3)


STEAL_ENV = "CORUN_REMEASURE_STEAL_PCT"
ATTEMPTS_ENV = "CORUN_REMEASURE_ATTEMPTS"


def remeasure_policy(max_steal_pct: float | None = None, attempts: int | None = None) -> tuple[float | None, int]:
    """(steal limit in % or None, attempts at most): the arguments, else the environment
    (CORUN_REMEASURE_STEAL_PCT, CORUN_REMEASURE_ATTEMPTS, which the workflow sets from its
    config's `remeasure`), else no limit and 3."""
    if max_steal_pct is None and os.environ.get(STEAL_ENV, "") not in ("", "none", "null"):
        raw = os.environ[STEAL_ENV]
        try:
            max_steal_pct = float(raw)
        except ValueError:
            raise ConfigError("environment", STEAL_ENV, raw, "a number from 0 to 100, or none") from None
    if attempts is None and os.environ.get(ATTEMPTS_ENV):
        raw = os.environ[ATTEMPTS_ENV]
        try:
            attempts = int(raw)
        except ValueError:
            raise ConfigError("environment", ATTEMPTS_ENV, raw, "an integer from 2 to 10") from None
    attempts = 3 if attempts is None else attempts
    if max_steal_pct is not None and not 0 <= max_steal_pct <= 100:
        raise ConfigError("remeasure", "max_steal_pct", max_steal_pct, "a number from 0 to 100, or none")
    if not 2 <= attempts <= 10:
        raise ConfigError("remeasure", "attempts", attempts, "an integer from 2 to 10")
    return max_steal_pct, attempts


def run_spec_file(
    spec_path: str | Path, out_dir: str | Path, max_steal_pct: float | None = None, attempts: int | None = None, **kw
) -> Path:
    """Run a spec. With a steal limit, a run whose machine lost more than that share of its CPU
    time to steal while the jobs ran (a VM's host running others: noise no scheduler caused) is
    measured again, `attempts` times at most; the last is kept whatever its steal. The disturbed
    attempts stay in the run's folder, under remeasured/attempt-N/, and metadata.json says so
    (`remeasured`)."""
    spec = load_spec(spec_path)
    limit, attempts = remeasure_policy(max_steal_pct, attempts)
    out = Path(out_dir)
    earlier: list[tuple[dict, Path]] = []
    for attempt in range(1, attempts + 1):
        res = Runner(spec, out, source=str(spec_path), attempt=attempt, **kw).run()
        if limit is None:  # measured once: nothing to read back
            break
        meta = json.loads((res / "metadata.json").read_text())
        steal = (meta.get("machine_cpu") or {}).get("steal_pct")
        if steal is None or steal <= limit or attempt == attempts:
            break
        aside = out.parent / f"{out.name}.steal-attempt-{attempt}"
        shutil.rmtree(aside, ignore_errors=True)
        os.replace(res, aside)
        earlier.append(
            (
                {"attempt": attempt, "steal_pct": steal, "duration_s": meta["duration_s"], "run_id": meta["run_id"]},
                aside,
            )
        )
        print(
            f"corun: run {spec['name']}: {steal:.1f} % of the machine's CPU time went to steal while the jobs ran "
            f"(limit {limit:g} %): measuring it again ({attempt + 1} of {attempts})",
            file=sys.stderr,
            flush=True,
        )
    if limit is not None:
        kept = res / "remeasured"
        for rec, aside in earlier:
            kept.mkdir(exist_ok=True)
            os.replace(aside, kept / f"attempt-{rec['attempt']}")
        meta["remeasured"] = {
            "max_steal_pct": limit,
            "attempts": attempts,
            "attempt": len(earlier) + 1,
            "earlier": [{**rec, "folder": f"remeasured/attempt-{rec['attempt']}"} for rec, _ in earlier],
        }
        atomic_write_json(res / "metadata.json", meta)
    return res

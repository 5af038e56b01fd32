"""The machine session of a run: the machine's state set up for the run and restored after it.

One run at a time per machine (a lock). Every change is journalled (corun.machine.state) before
it is made, so that the restore, `corun recover` or the next corun command after a killed runner
undoes it in reverse order: the device built for the run, the run's cgroup with its caps, the
scheduler variant (its daemon on this host, or one per host of a cluster), the monitors. The
session also watches what must stay alive while the jobs run (a daemon variant, an emulated
disk): a variant's daemon that dies has the jobs it may have stopped resumed at once, so no job
is ever left stopped.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import sys
import tempfile
import threading
import time
from collections.abc import Iterable
from pathlib import Path

from corun.errors import CorunError
from corun.machine import block_device as devmod
from corun.machine import topology
from corun.machine.state import Journal, state_dir
from corun.monitors.base import wait_started
from corun.run import cluster as clu
from corun.run import metadata
from corun.run.checked_spec import CheckedSpec
from corun.util import Laps, proc_starttime


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


def signal_group(pid: int, sig: int) -> None:
    try:
        os.killpg(pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def stop_monitors(monitors: list) -> list[str]:
    """Stop the monitors side by side (each signals its program and waits for its last
    sample); returns the errors."""
    errors: list[str] = []

    def stop(m) -> None:
        try:
            m.stop()
        except Exception as exc:  # noqa: BLE001 - teardown goes on
            errors.append(f"monitor {m.name}: {exc}")

    threads = [threading.Thread(target=stop, args=(m,), name=f"stop-{m.name}") for m in monitors]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return errors


class MachineSession:
    def __init__(self, plan: CheckedSpec, meta: dict):
        self.plan = plan
        self.meta = meta  # metadata.json's entries the session adds (verified, evicted, settle ...)
        self.journal: Journal | None = None
        self.device = plan.device
        self.device_before: dict = {}
        self.device_during: dict | None = None
        self.device_after: dict = {}
        self.node_daemons: clu.NodeDaemons | None = None
        self.ompi_dir: Path | None = None
        self.job_events_fh = None
        self.host_meta: dict | BaseException | None = None
        self.lock_wait = {"waited_s": 0.0, "waited_for": None}
        self._lock_fh = None

    # ------------------------------------------------------------ the machine lock
    def lock(self) -> None:
        """One run at a time per machine: runs would disturb each other's measurements and
        race on the elevator and caps. A second run waits for the first."""
        self._lock_fh = open(state_dir() / "machine.lock", "a+")
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
            # how long the run waited for another (recorded: it lengthens a campaign's wall time)
            self.lock_wait = {"waited_s": round(time.monotonic() - t, 3), "waited_for": holder}
        self._lock_fh.seek(0)
        self._lock_fh.truncate()
        self._lock_fh.write(f"run {self.plan.spec['name']} (pid {os.getpid()})\n")
        self._lock_fh.flush()

    def unlock(self) -> None:
        if self._lock_fh is not None:
            self._lock_fh.close()
            self._lock_fh = None

    # ------------------------------------------------------------ set-up
    def open_journal(self) -> Journal:
        self.journal = Journal(self.plan.run_id())
        return self.journal

    def setup(self) -> None:
        plan, spec, j = self.plan, self.plan.spec, self.journal
        # the host's state (tools, hwloc, git) is read in a thread while the machine is set up
        # and the monitors start; nothing of it runs beside a job
        collect = threading.Thread(target=self._collect_host, name="metadata", daemon=True)
        collect.start()
        try:
            self._setup(plan, spec, j)
        finally:
            collect.join()
        if isinstance(self.host_meta, BaseException):
            raise self.host_meta
        # what depends on the device as the jobs find it: advice, doctor's device findings
        self.host_meta = metadata.with_device(self.host_meta, self.device_during)

    def _setup(self, plan: CheckedSpec, spec: dict, j: Journal) -> None:
        if plan.run_device is not None:  # the emulated (or formatted) disk, journalled
            name = plan.run_device.start(j, plan.cgroup.run_id)
            self.device = devmod.device_by_name(name)
            if plan.mon_ctx is not None:
                plan.mon_ctx.devices[:] = [name]
        cgroup = plan.cgroup  # contains the jobs and carries the I/O cap
        if cgroup.available:
            mem = spec["memory"]["limit_bytes"]
            cgroup.create(memory=mem is not None)
            for action in cgroup.undo_actions():
                j.push(action)
            if spec["device"]["throttle"]:
                cgroup.throttle(self.device.majmin, spec["device"]["throttle"])
            if mem is not None:
                cgroup.limit_memory(mem)
            if plan.mon_ctx is not None:
                plan.mon_ctx.memory_cgroup = str(cgroup.memory_path or cgroup.path)
        self.device_before = self.device.describe()
        self._start_scheduler()
        if not self.by_controller:  # else the controller records whether it was in effect
            self.meta["variant_verified_at_start"] = True
        self.device_during = self.device.describe()
        if spec["device"]["drop_caches"]:
            os.sync()  # clean pages first, so dropping leaves no job input in the page cache
            with open("/proc/sys/vm/drop_caches", "w") as fh:
                fh.write("3")
            self.meta["caches_dropped_epoch_s"] = time.time()
        if spec["device"]["evict"]:
            self.meta["evicted"] = evict(spec["device"]["evict"])
        for m in plan.monitors:
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
        if plan.monitors:  # let the monitors' own start-up pass before the first job starts
            settle_s = spec["monitors"]["settle_s"]
            waited = wait_started(plan.monitors, settle_s)
            self.meta["monitors_settle"] = {"waited_s": round(waited, 4), "limit_s": settle_s}

    def _start_scheduler(self) -> None:
        plan, j = self.plan, self.journal
        sched_dir = plan.tmp / "sched"
        sched_dir.mkdir()
        events = sched_dir / "job_events.jsonl"
        self.job_events_fh = open(events, "a", buffering=1)
        if plan.cluster is not None:
            # each mpirun keeps its session folder apart: two started at the same moment race on
            # creating a shared /tmp/ompi.<host>.<uid> ("File exists"); a short path, as Open MPI
            # puts Unix sockets in it
            self.ompi_dir = Path(tempfile.mkdtemp(prefix="corun-ompi-"))
            j.push({"kind": "command", "argv": ["rm", "-rf", str(self.ompi_dir)], "what": "Open MPI session folders"})
            # one daemon per host, the ranks' environment from each
            self.node_daemons = clu.NodeDaemons(
                plan.variant, plan.hosts, sched_dir / "state", plan.cluster["daemon_port"], plan.cluster["lifeline_s"]
            )
            self.node_daemons.start(j)
            self.node_daemons.verify()
            return
        if self.by_controller:
            return
        ctx = {  # absolute: variant commands run in their own folder
            "state_dir": str((sched_dir / "state").absolute()),
            "run_dir": str(plan.tmp.absolute()),
            "device": self.device.name,
            "device_majmin": self.device.majmin,
            "cgroup": str(plan.cgroup.path or ""),
            "job_events": str(events.absolute()),
            "cpus": topology.format_cpulist(sum(plan.placer.cmps, [])),
        }
        plan.variant.start(j, ctx)
        plan.variant.verify()

    def _collect_host(self) -> None:
        try:
            self.host_meta = metadata.collect_host(hwloc=True)
        except BaseException as exc:  # noqa: BLE001 - raised again in the runner's thread
            self.host_meta = exc

    # ------------------------------------------------------------ while the jobs run
    def daemon_watched(self) -> bool:
        if self.node_daemons is not None:
            return self.node_daemons.active
        return self.plan.variant.process is not None

    def job_event(self, rec: dict) -> None:
        if self.job_events_fh:
            self.job_events_fh.write(json.dumps(rec) + "\n")

    def watch(self, running_pids: Iterable[int]) -> None:
        """Raise if something the run needs died; a dead variant's daemon first has every job
        resumed (it must not leave one stopped), on every node of a cluster."""
        plan = self.plan
        if plan.run_device is not None:
            plan.run_device.check()  # a dead emulator fails the run, naming it
        if self.node_daemons is not None:
            dead = self.node_daemons.alive()
            if dead:  # restore every node at once: no rank stays boosted or stopped
                self.resume(running_pids)
                errors = self.node_daemons.restore_now(self.journal)
                raise CorunError(
                    f"scheduler {plan.variant.name}: the daemon on {', '.join(dead)} died "
                    f"(see {plan.tmp}/sched/state/<host>/daemon.log)" + (f"; {'; '.join(errors)}" if errors else "")
                )
            return
        if not plan.variant.alive():
            self.resume(running_pids)
            plan.variant.verify()  # raises with the daemon's exit status

    def resume(self, running_pids: Iterable[int]) -> None:
        """SIGCONT to every job's process group and every process of the run's cgroup."""
        for pid in list(running_pids):
            signal_group(pid, signal.SIGCONT)
        for p in self.plan.cgroup.pids():
            try:
                os.kill(p, signal.SIGCONT)
            except ProcessLookupError:
                pass

    # ------------------------------------------------------------ restore
    def restore(self, stopped: bool) -> list[str]:
        """After the jobs: monitors stopped, the variant checked and stopped, the device's state
        read, then the journal undone (also what set-up had done before an error). Every step
        runs whatever failed before it; returns the errors."""
        plan, errors, j = self.plan, [], self.journal
        # where the teardown went (metadata.json teardown_steps_s; undo: the journal's undos per
        # kind of action over the whole run, the scheduler's own stop included)
        laps = Laps()
        errors.extend(stop_monitors(plan.monitors))
        for m in plan.monitors:
            if j is not None:
                j.forget(getattr(m, "journal_action", None))
        laps.lap("monitors")
        if j is not None:
            errors.extend(self._stop_scheduler(stopped))
        laps.lap("scheduler")
        if self.job_events_fh:
            self.job_events_fh.close()
            self.job_events_fh = None
        rdev = plan.run_device
        if rdev is not None and self.device is not None:
            self.device_after = self.device.describe()  # before the device goes away
            try:
                rdev.record_end()
            except Exception as exc:  # noqa: BLE001 - teardown goes on
                errors.append(f"device: {exc}")
        laps.lap("device_record")
        if j is not None:
            errors.extend(j.unwind())
        laps.lap("unwind")
        if rdev is not None:
            rdev.after_teardown(plan.tmp)
        elif self.device is not None:
            self.device_after = self.device.describe()
        laps.lap("device_after")
        steps: dict = dict(laps.steps)
        if j is not None:
            steps["undo"] = dict(j.undo_s)
        self.meta["teardown_steps_s"] = steps
        return errors

    @property
    def by_controller(self) -> bool:
        """The variant is applied by the testbed's controller around this run, not by it."""
        return self.plan.spec["scheduler"].get("applied_by") == "controller"

    def _stop_scheduler(self, stopped: bool) -> list[str]:
        errors = []
        if self.by_controller:
            return errors
        nd, variant = self.node_daemons, self.plan.variant
        try:  # still in effect at the end of the run (on every host)?
            if not stopped and (not nd.alive() if nd is not None else variant.alive()):
                (nd or variant).verify()
                self.meta["variant_verified_at_end"] = True
        except CorunError as exc:
            errors.append(str(exc))
            self.meta["variant_verified_at_end"] = False
        errors.extend(nd.stop(self.journal) if nd is not None else variant.stop(self.journal))
        return errors

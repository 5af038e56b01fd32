"""The executor of a run: the jobs started, watched and ended, on this host or across a cluster.

On this host the jobs are queued first-come-first-served, at most `slots_per_core` per core, each
confined to one CMP (its CPUs and the run's cgroup, set in the child before exec), never
preempted by corun. On a cluster each MPI job is submitted at its `submit_s`, waits in a FIFO
queue for a free MPL slot on enough hosts and runs through mpirun. Per job: start and end
(CLOCK_MONOTONIC), exit status, CPU time and the /proc/<pid>/io counters, read from the exited
process before it is reaped. Every job is journalled while it runs, so a killed runner's jobs
are ended by the next corun command; the machine session is asked often enough whether the
variant's daemon is alive that jobs it stopped are resumed within one of its quanta.
"""

from __future__ import annotations

import collections
import os
import queue
import signal
import subprocess
import sys
import threading
import time

from corun.errors import CorunError
from corun.machine import topology
from corun.run import cluster as clu
from corun.run.checked_spec import CheckedSpec, Job
from corun.run.session import MachineSession, signal_group
from corun.run.session import evict as evict_files
from corun.util import proc_starttime, read_proc_io

DAEMON_WATCH_S = 0.05  # the shortest quantum a daemon variant may take (dynamic_io: 0.05 s)


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


class Executor:
    def __init__(self, plan: CheckedSpec, session: MachineSession, progress: bool = True):
        self.plan, self.session = plan, session
        self.progress = Progress(plan.spec["name"], len(plan.jobs), progress)
        self.events: queue.Queue = queue.Queue()
        self.stop_reason: str | None = None
        self.running: dict[int, Job] = {}
        self.waiters: list[threading.Thread] = []
        self.t0_epoch: float | None = None
        self.t0_mono: float | None = None
        self.t_end_mono: float | None = None

    def stop(self, reason: str) -> None:
        """Stop the run (a signal): the loop ends at once, the teardown ends the jobs."""
        self.stop_reason = reason
        self.events.put(("signal", reason))

    def run(self) -> None:
        self.t0_epoch = time.time()
        self.t0_mono = time.monotonic()
        if self.plan.cluster is not None:
            self._loop(*self._cluster_queue())
        else:
            self._loop(*self._local_queue())
        self.t_end_mono = time.monotonic()

    # each queue: (start what can start, release a job's slot, capacity, (pending, s to next submit))
    def _local_queue(self):
        """FCFS: the head blocks the queue."""
        pending, placer = collections.deque(self.plan.jobs), self.plan.placer

        def start() -> None:
            while pending:
                slot = placer.place(pending[0].spec["cores"], pending[0].cmp_pin)
                if slot is None:
                    break
                job = pending.popleft()
                job.slot = slot
                self._launch(job)

        return start, lambda job: placer.release(job.slot), placer.capacity, lambda: (pending, None)

    def _cluster_queue(self):
        """MPI jobs: submitted at their submit_s, FIFO into the hosts' MPL slots."""
        pending = sorted(self.plan.jobs, key=lambda j: j.spec["submit_s"])  # stable: spec order on ties
        placer = self.plan.cluster_placer

        def submit_of(job: Job) -> float:
            return job.spec["submit_s"]

        def start() -> None:
            now_s = time.monotonic() - self.t0_mono
            for job, alloc in clu.fifo_starts(pending, now_s, placer, lambda j: j.spec["ranks"], submit_of):
                job.alloc = alloc
                self._launch(job)

        def left():  # (pending, seconds to the next submission or None)
            return pending, clu.next_submit_in(pending, time.monotonic() - self.t0_mono, submit_of)

        return start, lambda job: placer.release(job.alloc), placer.capacity, left

    def _loop(self, start, release, capacity, left) -> None:
        done, runtimes = 0, []
        while (left()[0] or self.running) and self.stop_reason is None:
            start()
            self.progress.show(done, len(self.running), time.monotonic() - self.t0_mono, runtimes, capacity())
            timeout = self._next_timeout()
            nxt = left()[1]
            if nxt is not None:
                timeout = max(0.0, min(timeout, nxt))
            try:
                kind, payload = self.events.get(timeout=timeout)
            except queue.Empty:
                self._check_timeouts()
                continue
            finally:  # also when jobs end often: a dead daemon is seen at once
                self.session.watch(self.running)
            if kind == "exit":
                job = payload
                self.running.pop(job.pid, None)
                release(job)
                self._job_event("end", job)
                self.session.journal.forget(job.journal_action)
                done += 1
                runtimes.append(job.end_mono - job.start_mono)
                self.progress.show(
                    done, len(self.running), time.monotonic() - self.t0_mono, runtimes, capacity(), force=True
                )

    def _next_timeout(self) -> float:
        now = time.monotonic()
        # a variant's daemon is watched this often, so that the jobs it stopped are resumed
        # within one of its quanta if it dies
        t = DAEMON_WATCH_S if self.session.daemon_watched() else (0.2 if self.plan.run_device else 1.0)
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
                signal_group(job.pid, signal.SIGKILL)

    def _mpi_cmd(self, job: Job) -> list[str]:
        """mpirun of an MPI job over its allocated hosts, each node's ranks with that node's
        daemon environment (rank_env.json) and the job's own."""
        js, hosts, nd = job.spec, self.plan.hosts, self.session.node_daemons
        base = nd.node_env() if nd and nd.active else None
        node_env = []
        for n in range(len(hosts)):
            e = dict(base[n]) if base else {}
            e.update(js["env"])
            e.update({"CORUN_JOB_ID": job.job_id, "CORUN_COSCHED_JOB": job.job_id})
            node_env.append(e)
        appfile = self.plan.tmp / "jobs" / f"{job.job_id}.appfile"
        appfile.write_text(clu.appfile_text(job.alloc, hosts, js["cmd"], node_env))
        session = self.session.ompi_dir / job.job_id
        session.mkdir()
        return clu.mpirun_argv(hosts, str(appfile.absolute()), self.plan.mpi_network, str(session))

    def _launch(self, job: Job) -> None:
        js, cgroup = job.spec, self.plan.cgroup
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
        procs = [str(f) for f in cgroup.procs_files] if cgroup.path else []

        def child_setup():  # runs in the child between fork and exec: syscalls only
            if cpus is not None:
                os.sched_setaffinity(0, cpus)
            for f in procs:
                with open(f, "w") as fh:
                    fh.write(str(os.getpid()))

        if js.get("evict"):  # its own input read from the disk, not the cache (a repeated copy)
            evict_files(js["evict"])
        out = open(self.plan.tmp / "jobs" / f"{job.job_id}.out", "wb")
        err = open(self.plan.tmp / "jobs" / f"{job.job_id}.err", "wb")
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
        job.journal_action = self.session.journal.push(
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
            rec["hosts"] = {self.plan.hosts[n].name: k for n, k in job.alloc.nodes}
        else:
            rec["cmp"] = self.plan.cmp_ids[job.slot.cmp]
            rec["cpus"] = job.slot.cpus
        if event == "end":
            rec["exit_code"] = job.exit_code
        self.session.job_event(rec)

    def end(self, grace_s: float) -> None:
        """The jobs still running (a stop, an error): resumed and asked to end, killed after
        `grace_s`; their waiters joined."""
        if self.running:
            for job in self.running.values():
                job.killed = True
                signal_group(job.pid, signal.SIGCONT)  # a stopped job cannot act on SIGTERM
                signal_group(job.pid, signal.SIGTERM)
            end = time.monotonic() + grace_s
            while self.running and time.monotonic() < end:
                try:
                    kind, job = self.events.get(timeout=0.05)
                    if kind == "exit":
                        self.running.pop(job.pid, None)
                except queue.Empty:
                    pass
            for job in self.running.values():
                signal_group(job.pid, signal.SIGKILL)
        for t in self.waiters:
            t.join(timeout=5)
        if self.t_end_mono is None:
            self.t_end_mono = time.monotonic()

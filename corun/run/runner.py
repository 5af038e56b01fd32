"""Run a batch workload the way the papers do, with monitors, caps and a scheduler variant.

A run spec (schemas/run_spec.schema.json) lists jobs in submit order. A run is four parts, each
its own module:

- the checked spec (corun.run.checked_spec.CheckedSpec): the spec checked against this machine
  before anything runs;
- the machine session (corun.run.session): the machine set up for the run (device, cgroup and
  caps, the scheduler variant, monitors), watched while the jobs run, and restored after;
- the executor (corun.run.executor): the jobs queued, started, watched and ended, on this host
  (FCFS, confined to one CMP, never preempted by corun) or across a cluster (MPI jobs in MPL
  slots through mpirun);
- the recorder (corun.run.recorder): jobs.csv, the monitors' tidy tables and metadata.json,
  built in `<out>.incomplete/` and renamed to `<out>/` only when everything is written.

`Runner` puts them together in that order, with the restore in a `finally` (also on an error,
SIGINT, SIGTERM or SIGHUP); `run_spec_file` measures a run again when the machine lost too much of
its CPU time to steal, or other processes took too much of it (foreign CPU,
corun.machine.foreign_cpu), while the jobs ran (the spec's `remeasure` section).
"""

from __future__ import annotations

import os
import shutil
import signal
import sys
import time
from pathlib import Path

from corun.errors import ConfigError
from corun.machine import foreign_cpu
from corun.machine import host as hostmod
from corun.machine.recovery import recover_stale
from corun.run import run_length
from corun.run.checked_spec import CheckedSpec, load_spec
from corun.run.executor import Executor
from corun.run.recorder import WrittenRun, write_run
from corun.run.session import MachineSession
from corun.util import atomic_write_json, proc_starttime

__all__ = ["Runner", "foreign_limit", "load_spec", "process_age_s", "remeasure_policy", "run_spec_file"]


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
        self.spec, self.source, self.attempt = spec, source, attempt
        self.out = Path(out_dir)
        self.progress_on = progress
        self.allow_job_failures = allow_job_failures
        self.plan: CheckedSpec | None = None

    def prepare(self) -> CheckedSpec:
        """Everything that can be wrong with the input is found here, before anything runs."""
        self.plan = CheckedSpec.build(self.spec, self.out, self.source, self.attempt)
        return self.plan

    def run(self) -> Path:
        """The run measured and put in place: its folder `<out>/`, written once."""
        return self.measure().finish()

    def measure(self) -> WrittenRun:
        """The run measured, its tables written in `<out>.incomplete/`; the folder is renamed by
        the returned run's `finish` (or moved aside by its `set_aside`), after which nothing in it
        changes. Raises, leaving only `.incomplete`, when the run was stopped."""
        # where the run's wall time went (metadata.json phases_s): a campaign pays all of it
        t_phase = time.monotonic()
        phases: dict[str, float | None] = {"process_start_s": process_age_s()}
        for line in recover_stale():
            print(f"corun: {line}", file=sys.stderr)
        plan = self.prepare()
        meta: dict = {
            "run_id": plan.run_id(),
            "spec_name": self.spec["name"],
            "labels": self.spec["labels"],
            "teardown_errors": [],
        }
        session = MachineSession(plan, meta)
        session.lock()
        meta["machine_lock"] = session.lock_wait
        ex = Executor(plan, session, self.progress_on)
        try:
            if plan.tmp.exists():
                shutil.rmtree(plan.tmp)
            (plan.tmp / "jobs").mkdir(parents=True)
            plan.raw_dir.mkdir(parents=True)
            atomic_write_json(plan.tmp / "status.json", {"state": "running", "pid": os.getpid()})
            session.open_journal()
        except BaseException:
            session.unlock()
            raise

        def on_signal(signum, frame):  # only flags: the loop ends, the finally below restores
            ex.stop(signal.Signals(signum).name)

        old_handlers = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)}
        ok = False
        phases["prepare_s"] = _lap(t_phase)
        t_phase = time.monotonic()
        try:
            session.setup()
            phases["setup_s"] = _lap(t_phase)
            # what the machine's CPUs did while the jobs ran (steal: the VM's host took them;
            # foreign: processes that are not the run's own took them)
            fg0 = foreign_cpu.snapshot()
            cpu0, mono0 = fg0.machine, time.monotonic()
            ex.run()
            phases["jobs_s"] = _lap(mono0)
            fg1 = foreign_cpu.snapshot(end=True)
            meta["machine_cpu"] = {
                **hostmod.cpu_shares(cpu0, fg1.machine, phases["jobs_s"]),
                **foreign_cpu.shares(
                    fg0,
                    fg1,
                    monitors=_monitor_pids(plan),
                    job_pids=plan.cgroup.pids(),
                    host_netns=foreign_cpu.host_namespaces([h.name for h in plan.hosts]),
                ),
            }
            ok = ex.stop_reason is None
        finally:
            t_phase = time.monotonic()
            ex.end(self.spec["kill_grace_s"])  # no job outlives the run, none stays stopped
            meta["teardown_errors"].extend(session.restore(stopped=ex.stop_reason is not None))
            phases["teardown_s"] = _lap(t_phase)
            for s, h in old_handlers.items():
                signal.signal(s, h)
            session.unlock()
            if not ok:
                atomic_write_json(
                    plan.tmp / "status.json", {"state": "interrupted", "reason": ex.stop_reason or "error"}
                )
        return write_run(plan, session, ex, meta, phases, self.allow_job_failures)


def _lap(since: float) -> float:
    return round(time.monotonic() - since, 4)


def _monitor_pids(plan: CheckedSpec) -> list[int]:
    """The pids of the monitors' programs (a monitor sampling in the runner has none)."""
    return [m._proc.pid for m in plan.monitors if getattr(m, "_proc", None) is not None]


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


def remeasure_policy(
    spec: dict, max_steal_pct: float | None = None, attempts: int | None = None
) -> tuple[float | None, int]:
    """(steal limit in % or None, attempts at most): the spec's `remeasure` section (its defaults
    in the run spec schema), each value replaced by the argument given (`corun run
    --max-steal-pct/--attempts`)."""
    rm = spec["remeasure"]
    if max_steal_pct is not None and not 0 <= max_steal_pct <= 100:
        raise ConfigError("command line", "--max-steal-pct", max_steal_pct, "a number from 0 to 100")
    if attempts is not None and not 2 <= attempts <= 10:
        raise ConfigError("command line", "--attempts", attempts, "an integer from 2 to 10")
    return (
        rm["max_steal_pct"] if max_steal_pct is None else max_steal_pct,
        rm["attempts"] if attempts is None else attempts,
    )


def foreign_limit(spec: dict, max_foreign_pct: float | None = None) -> float | None:
    """The foreign CPU limit in % (None: never measured again for it): the spec's
    remeasure.max_foreign_pct, replaced by the argument given (`corun run --max-foreign-pct`)."""
    if max_foreign_pct is not None and not 0 <= max_foreign_pct <= 100:
        raise ConfigError("command line", "--max-foreign-pct", max_foreign_pct, "a number from 0 to 100")
    return spec["remeasure"].get("max_foreign_pct") if max_foreign_pct is None else max_foreign_pct


def _disturbed(cpu: dict, steal_limit: float | None, foreign_limit: float | None) -> list[str]:
    """Why a run's machine was disturbed beyond the limits: its steal, its foreign CPU beyond
    corun's own runner and monitors (which every attempt has alike: measuring again cannot
    remove them; they are recorded as corun_pct)."""
    out = []
    foreign, corun = cpu.get("foreign_pct"), cpu.get("corun_pct") or 0.0
    for v, limit, what in (
        (cpu.get("steal_pct"), steal_limit, "went to steal"),
        (
            None if foreign is None else round(foreign - corun, 2),
            foreign_limit,
            "went to processes not of the run nor corun",
        ),
    ):
        if limit is not None and v is not None and v > limit:
            out.append(f"{v:.1f} % of the machine's CPU time {what} (limit {limit:g} %)")
    return out


def run_spec_file(
    spec_path: str | Path,
    out_dir: str | Path,
    max_steal_pct: float | None = None,
    attempts: int | None = None,
    max_foreign_pct: float | None = None,
    **kw,
) -> Path:
    """Run a spec. With a steal limit, a run whose machine lost more than that share of its CPU
    time to steal while the jobs ran (a VM's host running others: noise no scheduler caused) is
    measured again, `attempts` times at most; the last is kept whatever its steal. So is a run
    during which processes that are neither its own nor corun's runner and monitors
    (corun.machine.foreign_cpu: the orchestrator, other users) took more than the foreign limit
    (metadata.json machine_cpu: foreign_pct - corun_pct). A run whose jobs lasted less than the
    spec's remeasure.min_measure_s (its monitors' metrics need that many intervals) is measured
    again longer, its jobs repeated (corun.run.run_length.lengthen), or as it is when its
    remeasure.lengthen is "none" (jobs sized, not repeated: cmp_stacking). A run that ends in an error
    (machine not restored, a job failed) is kept as it is. The decision is taken before the run's
    folder is renamed: an attempt set aside waits in `<out>.remeasured.incomplete/attempt-N/`, and
    the kept attempt's folder gets them, as remeasured/attempt-N/, and its metadata.json the
    `remeasured` record before its one rename to `<out>/`."""
    spec = load_spec(spec_path)
    limit, attempts = remeasure_policy(spec, max_steal_pct, attempts)
    flimit = foreign_limit(spec, max_foreign_pct)
    min_s = spec["remeasure"].get("min_measure_s")
    policy = limit is not None or flimit is not None or min_s is not None
    out = Path(out_dir)
    aside = out.parent / f"{out.name}.remeasured.incomplete"  # skipped as unfinished by readers
    earlier: list[dict] = []
    for attempt in range(1, attempts + 1):
        run = Runner(spec, out, source=str(spec_path), attempt=attempt, **kw).measure()
        if not policy or run.ends_in_error():  # measured once, or kept as it ended
            break
        meta = run.meta
        cpu = meta.get("machine_cpu") or {}
        why = _disturbed(cpu, limit, flimit)
        short = run_length.too_short(spec, meta)
        if not (why or short) or attempt == attempts:
            break
        if attempt == 1:  # an interrupted earlier try's attempts are not this run's
            shutil.rmtree(aside, ignore_errors=True)
            aside.mkdir(parents=True)
        run.set_aside(aside / f"attempt-{attempt}")
        earlier.append(
            {
                "attempt": attempt,
                "steal_pct": cpu.get("steal_pct"),
                "foreign_pct": cpu.get("foreign_pct"),
                "corun_pct": cpu.get("corun_pct"),
                "duration_s": meta["duration_s"],
                "run_id": meta["run_id"],
                **({"short": short} if short else {}),
                "folder": f"remeasured/attempt-{attempt}",
            }
        )
        if short and spec["remeasure"].get("lengthen", "repeat") == "none":  # its jobs are sized, not copied
            why.append(f"{short}: its jobs as they are (sized, never repeated)")
        elif short:  # measured again longer: every job repeated enough to last min_measure_s
            spec, copies = run_length.lengthen(spec, meta["duration_s"], min_s)
            why.append(f"{short}: {copies} copies of each job")
        print(
            f"corun: run {spec['name']}: {'; '.join(why)}: measuring it again ({attempt + 1} of {attempts})",
            file=sys.stderr,
            flush=True,
        )
    if earlier:
        os.replace(aside, run.tmp / "remeasured")
    if policy:
        run.meta["remeasured"] = {
            "max_steal_pct": limit,
            "max_foreign_pct": flimit,
            "min_measure_s": min_s,
            "attempts": attempts,
            "attempt": len(earlier) + 1,
            "earlier": earlier,
        }
    return run.finish()

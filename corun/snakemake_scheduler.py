"""A quiet Snakemake scheduler while a run measures: its rate limiter's timers, coalesced.

Snakemake 9's job scheduler (snakemake/scheduling/job_scheduler.py) ends every pass of its
loop that found jobs waiting by starting a `threading.Timer` of the rate limit's timespan
(`--max-jobs-per-timespan`, default 100/1s) that releases the loop again, whether or not the
limit held any job back. The timer's pass ends by starting another, so every pass a finished
job causes starts one more chain of timers: after N jobs, N timer threads wake the loop every
second and each wake re-evaluates the DAG. A campaign that runs one job at a time (every
measuring profile: cores 1, testbed=1) has jobs waiting all along, so its Snakemake grows to
hundreds of idle timer threads and 14-17 % of a CPU while runs measure (upstream:
https://github.com/snakemake/snakemake/issues/2354, "after ~12h it starts using a lot of CPU").

A profile setting cannot cure it: a longer timespan only slows the chains down, and the timers
are not daemon threads, so Snakemake waits for the last one before it exits (with 100000/3600s
an hour after the workflow finished). `quiet_reevaluation()` replaces the one method that starts
those timers, `JobScheduler._schedule_reevalutation(delay)`, by one that

- starts no timer for the rate limit when the limit holds nothing back (jobs it has room for are
  started by the pass itself; a finishing job or freed resources release the loop anyway);
- keeps at most one timer pending per scheduler (a later request while one waits is the same
  wake-up), a daemon thread, so the process never waits for it at exit.

Waits for queue input (`--queue-input-wait-time`) keep their timer. The workflow applies it
(workflows/rules/common.smk) in the Snakemake process; the method's name and signature are
checked first, so a Snakemake that changed them runs unpatched and says so on stderr.
"""

from __future__ import annotations

import inspect
import sys
import threading

from snakemake.scheduling import job_scheduler

PATCHED = "_corun_quiet_reevaluation"


def _limit_reached(limiter) -> bool:
    """Whether the rate limit held jobs back at the pass's selection: the selection took as many
    jobs as the limit left room for, so its window of submissions is full. Read as the selection
    left it (without expiring entries since), so a limit that bound is never missed."""
    window = getattr(limiter, "_jobs", None)
    if window is None:
        return limiter.get_free_jobs() == 0
    return len(window) >= limiter.max_jobs


def _quiet_reevaluation(self, delay) -> None:
    limiter = self.job_rate_limiter
    if limiter is not None and delay == limiter.timespan and not _limit_reached(limiter):
        queue = getattr(self.workflow.dag, "has_unfinished_queue_input_jobs", None)
        if queue is None or not queue():
            return  # the limit held nothing back: nothing to wait for
    pending = getattr(self, "_corun_pending_timer", None)
    if pending is not None and pending.is_alive():
        return
    timer = threading.Timer(delay, self._open_jobs.release)
    timer.daemon = True
    self._corun_pending_timer = timer
    timer.start()


def quiet_reevaluation() -> str:
    """Patch Snakemake's JobScheduler (once per process); returns what was done, in words."""
    cls = getattr(job_scheduler, "JobScheduler", None)
    method = getattr(cls, "_schedule_reevalutation", None)
    if getattr(method, PATCHED, False):
        return "patched already"
    if method is None or list(inspect.signature(method).parameters) != ["self", "delay"]:
        msg = (
            "Snakemake's JobScheduler._schedule_reevalutation(self, delay) is not there: "
            "its rate limiter's timers run unchanged"
        )
        print(f"corun: {msg}", file=sys.stderr)
        return f"not patched: {msg}"
    setattr(_quiet_reevaluation, PATCHED, True)
    cls._schedule_reevalutation = _quiet_reevaluation
    return "patched"

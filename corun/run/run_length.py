"""Runs sized in time, not in counts: evidence that does not depend on the machine's speed.

A metric read from a monitor's intervals (iostat, sar, pidstat, PSI, memory) needs a run that
lasts some of them: a Graph500 level that took 0.7 s on a fast machine had no memory interval
inside it, and the claim that read it failed where it had been decided on slower ones. So an
experiment whose runs feed such a metric sizes them to a measured minimum length:

- its calibrate step times one job of its smallest level on this machine, once
  (`time_job`), and records it (calibration.json);
- each level runs `copies_for(job_s, min_s)` copies of every job slot's job one after another
  (`repeat_jobs`: the same CMP, FCFS), so that the run's measuring phase lasts at least
  `min_s` = the experiment's `min_intervals` x the monitors' interval; the copies, the job time
  they rest on and the minimum are recorded in the plan and in each run's labels;
- the run spec's `remeasure.min_measure_s` says the same minimum to the runner, which measures a
  run that still came out shorter again with its jobs repeated (corun.run.runner: `too_short`,
  `lengthen`);
- the analysis fails a run shorter than its metric needs, naming it (analysis.run_length).
"""

from __future__ import annotations

import contextlib
import contextvars
import copy
import math
import os
import subprocess
import time
from collections.abc import Iterator

from corun.errors import CorunError

# at most this many jobs in one run: the paper's 64 graph jobs per workload (paper 000, Fig. 8)
MAX_JOBS = 64


def copies_for(job_s: float, min_s: float, slots: int = 1, max_jobs: int = MAX_JOBS) -> int:
    """How many copies of each slot's job, run one after another, make a run of at least `min_s`
    seconds when one job takes `job_s`; at least 1, at most max_jobs // slots."""
    if min_s <= 0:
        return 1
    cap = max(1, max_jobs // max(1, slots))
    if not job_s > 0 or not math.isfinite(job_s):
        return cap
    return max(1, min(cap, math.ceil(min_s / job_s)))


def repeat_jobs(jobs: list[dict], copies: int) -> list[dict]:
    """The jobs, then `copies - 1` more copies of the whole list in the same order (each job's CMP
    pin kept, so every slot runs its copies one after another under the FCFS queue); copy c of a
    job is named <name>-c<c> and labelled repeat: c (the first 0; not `copy`, a column of the
    runner's own in jobs.csv)."""
    out = []
    for c in range(max(1, copies)):
        for j in jobs:
            job = copy.deepcopy(j)
            job["labels"] = {**(job.get("labels") or {}), "repeat": c}
            if c:
                job["name"] = f"{j['name']}-c{c}"
            out.append(job)
    return out


def lengthen(spec: dict, measured_s: float, min_s: float) -> tuple[dict, int]:
    """(the spec with its jobs repeated so that a run of `measured_s` lasts `min_s`, the factor);
    the copies of jobs already repeated count once (repeat 0 only)."""
    base = [j for j in spec["jobs"] if (j.get("labels") or {}).get("repeat", 0) == 0]
    have = max(1, len(spec["jobs"]) // max(1, len(base)))
    factor = max(2, math.ceil(min_s / measured_s)) if measured_s > 0 else 2
    copies = min(have * factor, max(have, MAX_JOBS // max(1, len(base))))
    labels = {**(spec.get("labels") or {}), "copies": copies}
    return {**spec, "labels": labels, "jobs": repeat_jobs(base, copies)}, copies


_TIMED: contextvars.ContextVar[list[float] | None] = contextvars.ContextVar("corun_timed_jobs", default=None)


@contextlib.contextmanager
def timed_jobs() -> Iterator[list[float]]:
    """The wall seconds of every job time_job timed inside the block, in order: the calibrate
    step records their sum as what it measured (phases_s.jobs_s), apart from its own cost."""
    token = _TIMED.set([])
    try:
        yield _TIMED.get()
    finally:
        _TIMED.reset(token)


def time_job(cmd: list[str], env: dict | None = None, cwd: str | None = None, timeout_s: float = 600) -> float:
    """Wall seconds of one job run alone (its output discarded); a one-line error when it fails."""
    t0 = time.monotonic()
    try:
        res = subprocess.run(
            cmd,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            text=True,
            timeout=timeout_s,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CorunError(f"timing one job ({' '.join(cmd[:3])} ...): {exc}") from None
    if res.returncode != 0:
        tail = (res.stderr or "").strip().splitlines()[-1:] or [""]
        raise CorunError(f"timing one job ({' '.join(cmd[:3])} ...): exit {res.returncode}: {tail[0]}")
    wall = time.monotonic() - t0
    count_timed(wall)
    return wall


def count_timed(wall_s: float) -> None:
    """wall_s counted as a job timed alone in the enclosing timed_jobs block (none: nowhere);
    time_job counts its own, a timing of another kind says so itself."""
    timed = _TIMED.get()
    if timed is not None:
        timed.append(wall_s)


def too_short(spec: dict, meta: dict) -> str:
    """Why a measured run is shorter than its spec's remeasure.min_measure_s, or ""."""
    min_s = (spec.get("remeasure") or {}).get("min_measure_s")
    d = meta.get("duration_s")
    if min_s is None or d is None or d >= min_s:
        return ""
    return f"its jobs ran {d:.2f} s, shorter than the {min_s:g} s its monitors' metrics need"

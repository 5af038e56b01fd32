"""noisy_neighbour's alone CPU runs sized in time: long enough for perf's intervals.

A CPU program's memory bandwidth alone is read from the perf monitor's LLC-miss counts over its
alone run (metrics.cpu_bandwidth), so the run must last `min_intervals` monitor intervals; a
program of a fixed input (SPEC CPU's, PARSEC's, the llc_miss stand-in at its accesses) may end
sooner on a fast machine. The alone run is one program alone on one CPU, so it is lengthened by
running the program again after itself, never beside itself:

- the calibrate step times one job of each CPU workload alone on this machine and gives the
  workload the copies, one after another, that make its alone run last `min_measure_s`
  (corun.run.run_length.copies_for; calibration.json: job_s, copies, min_measure_s);
- the alone run's CPU is its one CMP (placement grouping explicit, the first online CPU, where
  it ran before), so the FCFS queue starts a copy only when the one before it has ended; the
  copies, the minimum and the job time are in the run's labels;
- the spec's remeasure.min_measure_s has the runner measure a run that still came out shorter
  again with more copies (corun.run.runner), the short attempt kept.

Each copy is a job of its own in jobs.csv, so the workload's alone time (the normalised
performance's base) is still the mean over its jobs, one program's run each; the bandwidth is
the misses over the whole run, the copies back to back. A CPU program reads no input from the
disk, so a copy is the same job again.
"""

from __future__ import annotations

import os
import signal
import subprocess
import time

from corun.errors import CorunError
from corun.run import run_length

NAME = "noisy_neighbour"


def min_measure_s(cfg: dict) -> float:
    return cfg[NAME]["min_intervals"] * cfg["monitors"]["interval_s"]


def time_up_to(cmd: list[str], env: dict | None, cwd: str | None, limit_s: float) -> float | None:
    """Wall seconds of one job alone, or None when it was still running after `limit_s` (then
    stopped, its process group killed: one copy is long enough, however long it would take)."""
    t0 = time.monotonic()
    try:
        p = subprocess.Popen(
            cmd,
            env={**os.environ, **(env or {})},
            cwd=cwd,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
            start_new_session=True,
        )
    except OSError as exc:
        raise CorunError(f"timing one job ({' '.join(cmd[:3])} ...): {exc.strerror}") from None
    try:
        _, err = p.communicate(timeout=limit_s)
    except subprocess.TimeoutExpired:
        os.killpg(p.pid, signal.SIGKILL)
        p.communicate()
        run_length.count_timed(time.monotonic() - t0)  # measured up to the limit all the same
        return None
    if p.returncode != 0:
        tail = (err or b"").decode(errors="replace").strip().splitlines()[-1:] or [""]
        raise CorunError(f"timing one job ({' '.join(cmd[:3])} ...): exit {p.returncode}: {tail[0]}")
    wall = time.monotonic() - t0
    run_length.count_timed(wall)
    return wall


def calibrate(cfg: dict, workloads: list[dict], template) -> dict:
    """One job of each CPU workload timed alone (`template(w)`: its job), and its copies; a job
    still running at min_measure_s is stopped there (job_s null, 1 copy): SPEC CPU's reference
    runs take minutes, and the calibration needs only to know it is long enough."""
    want = min_measure_s(cfg)
    job_s = {}
    for w in workloads:
        t = template(w)
        s = time_up_to([str(c) for c in t["cmd"]], t.get("env"), t.get("cwd"), want)
        job_s[w["name"]] = None if s is None else round(s, 4)
    return {
        "needed": True,
        "min_measure_s": want,
        "job_s": job_s,
        "copies": {w: 1 if s is None else run_length.copies_for(s, want) for w, s in job_s.items()},
    }


def sized_alone(cfg: dict, spec: dict, workload: str, cal: dict | None, cpu: int) -> dict:
    """The alone CPU run's spec: its job repeated by the calibration's copies (1 without one),
    one after another on one CPU, labelled, and measured again longer when short."""
    cal = cal or {}
    copies = int((cal.get("copies") or {}).get(workload, 1))
    spec["jobs"] = run_length.repeat_jobs(spec["jobs"], copies)
    spec["placement"] = {"cmp": {"grouping": "explicit", "groups": [[cpu]]}}
    spec["labels"].update(
        {"copies": copies, "min_measure_s": min_measure_s(cfg), "job_s": (cal.get("job_s") or {}).get(workload)}
    )
    spec["remeasure"] = {**cfg["remeasure"], "min_measure_s": min_measure_s(cfg)}
    return spec

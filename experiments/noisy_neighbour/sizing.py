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

from corun.run import run_length

NAME = "noisy_neighbour"


def min_measure_s(cfg: dict) -> float:
    return cfg[NAME]["min_intervals"] * cfg["monitors"]["interval_s"]


def calibrate(cfg: dict, workloads: list[dict], template) -> dict:
    """One job of each CPU workload timed alone (`template(w)`: its job), and its copies."""
    want = min_measure_s(cfg)
    job_s = {}
    for w in workloads:
        t = template(w)
        job_s[w["name"]] = round(run_length.time_job([str(c) for c in t["cmd"]], t.get("env"), t.get("cwd")), 4)
    return {
        "needed": True,
        "min_measure_s": want,
        "job_s": job_s,
        "copies": {w: run_length.copies_for(s, want) for w, s in job_s.items()},
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

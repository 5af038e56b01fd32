"""dynamic_io's campaign runs sized in time: batches long enough for iostat's intervals.

The waiting and serving times are means over iostat's intervals (evidence.py, latency), so a
campaign run must last `min_intervals` monitor intervals. A run is one workload's batch under the
FCFS queue, and the claims compare the schedulers run against run, rep by rep, so the batch is
sized once, before any run, the same for every variant and rep:

- the calibrate step times one job of each job type of the campaign alone on this machine, its
  input files' cached pages dropped first (`job_s`, on the data folder's own device, without the
  run's throttle or emulated disk: no slower than in a run), and gives each workload the
  shortest batch, at least the configured one and at most Table 3's, that lasts `min_measure_s`
  by the longer of two lower bounds (co-running only slows it; `batch_s` in calibration.json):
  its jobs' times spread over the cores they may use, and the bytes its jobs read (their input
  files, inputs.read_bytes) at the read cap all of a run's jobs share (`throttle.read_bps`, the
  run's cgroup), which on its own can make a batch sized by CPU time last several times longer;
- it makes the input files the longer batches read, one file (set) per job as the data step
  does, so no job reads what another left in the page cache;
- the specs step writes the calibrated batches (`calibrated_batch` in the section, read by
  plan.batch_length), recorded in calibration.json and in every campaign run's labels
  (batch_length, calibrated_batch_length, min_measure_s).

A campaign run that still comes out shorter is measured again longer by the runner (the spec's
remeasure.min_measure_s: its batch repeated, corun.run.run_length). Every job drops its own input
files' cached pages as it starts (the job's `evict`, inputs.job_for), so a copy reads its input
from the disk again, as the paper's job does; the copies follow the whole batch in the FCFS
queue, so a copy starts after the batch's other jobs have, its original long done in a batch of
alike jobs. A run measured again longer ran a longer batch than its pair's other run: its
wall-time metrics are failed, naming it (`lengthened_reason`), its latency stands.
"""

from __future__ import annotations

import math
from pathlib import Path

from corun.plan.calibration import calibrate_reader, write_calibration_files
from corun.run import run_length
from corun.run.session import evict
from experiments.dynamic_io.inputs import (
    CALIBRATION_BYTES,
    CALIBRATION_NOPS,
    cores_for,
    input_files,
    job_for,
    layout,
    make_data,
    parsec_of,
    read_bytes,
)
from experiments.dynamic_io.plan import NAME, full_load, job_types, workload_apps


def min_measure_s(cfg: dict) -> float:
    return cfg[NAME]["min_intervals"] * cfg["monitors"]["interval_s"]


def sized(cfg: dict, cal: dict) -> dict:
    """The configuration with the calibration's batch lengths (plan.batch_length reads them)."""
    batches = (cal or {}).get("batch_length")
    if not batches:
        return cfg
    return {**cfg, NAME: {**cfg[NAME], "calibrated_batch": dict(batches)}}


def read_bps(cfg: dict) -> int | None:
    """The read cap every job of a run shares (dynamic_io.throttle.read_bps, the cgroup the
    session puts the run's jobs in), or None without one."""
    return (cfg[NAME].get("throttle") or {}).get("read_bps")


def batch_s(cfg: dict, wid: str, apps: list[str], job_s: dict[str, float], job_bytes: dict[str, int]) -> dict:
    """How long the batch APPS of `wid` lasts at least: its jobs' times alone spread over the
    cores they may use (cpu_bound_s), the bytes they read at the run's read cap (io_bound_s, 0
    without one: all jobs share the cap however many run at once), the longer of the two."""
    cpu = sum(job_s[a] for a in apps) / max(1, min(len(apps), full_load(cfg, wid)))
    bps = read_bps(cfg)
    io = sum(job_bytes.get(a, 0) for a in apps) / bps if bps else 0.0
    return {"cpu_bound_s": cpu, "io_bound_s": io, "expected_s": max(cpu, io)}


def batch_for(cfg: dict, wid: str, job_s: dict[str, float], job_bytes: dict[str, int] | None = None) -> int:
    """The shortest batch of `wid`, from its configured length up to Table 3's, that lasts
    min_measure_s by batch_s: its jobs' times alone, or the bytes they read (JOB_BYTES, per job
    type) at the run's read cap when that is longer."""
    e = cfg[NAME]
    want = min_measure_s(cfg)
    paper = e["table3"][wid]["batch_length"]
    n = len(workload_apps(cfg, wid))
    while n < paper:
        apps = workload_apps({**cfg, NAME: {**e, "calibrated_batch": {wid: n}}}, wid)
        if batch_s(cfg, wid, apps, job_s, job_bytes or {})["expected_s"] >= want:
            break
        n = min(paper, max(n + 1, math.ceil(n * 1.25)))
    return n


def time_app(cfg: dict, cal: dict, app_name: str, data_dir: Path) -> float:
    """One job of the application alone on this machine, its input's cached pages dropped."""
    e = cfg[NAME]
    lay = layout(cfg)
    job = job_for(cfg, cal, app_name, "duplicated", 0, data_dir, cores_for(e, app_name, "D", lay["cmp_cores"]))
    files = [str(p) for p in input_files(e, app_name, "duplicated", 0, data_dir) if p.exists()]
    if files:
        evict(files)
    return run_length.time_job(job["cmd"], job["env"], job.get("cwd"))


def calibrate_batches(cfg: dict, cal: dict, data_dir: Path) -> dict:
    """job_s and the bytes read of every job type, each workload's batch length and how long it
    lasts at least (batch_s), and the inputs of those batches."""
    e = cfg[NAME]
    # a batch already at Table 3's length cannot grow: its job types are timed only for another
    short = [w for w in e["workloads"] if len(workload_apps(cfg, w)) < e["table3"][w]["batch_length"]]
    apps = sorted({a for w in short for a in workload_apps(cfg, w)})
    job_s = {a: round(time_app(cfg, cal, a, data_dir), 4) for a in apps}
    job_bytes = {a: read_bytes(e, a, data_dir) for a in apps}
    batches = {w: batch_for(cfg, w, job_s, job_bytes) for w in e["workloads"]}
    longer = sized(cfg, {"batch_length": batches})
    made = make_data(longer, data_dir, record=False)["made"]
    bps = read_bps(cfg)
    return {
        "min_measure_s": min_measure_s(cfg),
        "job_s": job_s,
        "job_s_note": (
            "one job alone on the data folder's device, without the run's throttle or emulated disk: "
            "its CPU-bound time; job_io_s is its reads at the run's read_bps"
        ),
        "read_bps": bps,
        "job_read_bytes": job_bytes,
        "job_io_s": {a: round(b / bps, 4) for a, b in job_bytes.items()} if bps else None,
        "batch_length": batches,
        "batch_s": {
            w: {k: round(v, 3) for k, v in batch_s(cfg, w, workload_apps(longer, w), job_s, job_bytes).items()}
            for w in short
        },
        "inputs_made": len(made),
    }


def lengthened_reason(run: dict) -> str:
    """Why a campaign run's wall-time metrics are not its pair's, or "": measured again longer."""
    try:
        copies = int(float(run.get("copies")))
    except (TypeError, ValueError):
        return ""
    if copies <= 1:
        return ""
    return (
        f"measured again longer with its batch repeated {copies} times (the first run was too short "
        "for iostat's intervals): not the batch the pair's other run ran"
    )


def calibrate(cfg: dict, data_dir: Path) -> dict:
    """t_read and t_nop of the sensitivity_ranking kernel, which sets the read rate of the
    file_reader stand-ins (only when the campaign has one); then each workload's batch sized in
    time (calibrate_batches: the jobs timed, the batch lengths, their inputs)."""
    e = cfg[NAME]
    cal: dict = {"needed": False}
    if any(e["apps"][a]["kind"] == "file_reader" and not parsec_of(e["apps"][a]) for a in job_types(cfg)):
        cal_dir = data_dir / "calibration"
        write_calibration_files(cal_dir, CALIBRATION_BYTES, e["block_size"])
        cal = {"needed": True, **calibrate_reader(cal_dir, e["block_size"], "evict", CALIBRATION_NOPS)}
    return {**cal, **calibrate_batches(cfg, cal, data_dir)}

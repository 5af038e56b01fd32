"""cmp_stacking's jobs sized in time, each job larger, never repeated (README, "Run length").

io_latency_split reads these runs' iostat intervals, so the shortest step (k = 1) must last
`min_intervals` monitor intervals. Repeating a job would break the paper's design (8 jobs per
CMP started together; a second copy of an x264 job reads its clip from the page cache), so the
calibrate step sizes each job instead: it times one job of each workload alone on this machine
at the configured size (its CPU time: `time_alone`) and, while that is shorter than the minimum,
grows the job and times it again (`size_job`):

  x264        the generated clip's frames (the clip is written at that size, one copy per slot,
              so every job still reads its own from the device);
  graph       Graph500 2.1.4 runs 64 BFS, fixed: its SCALE, one step doubling the edges;
              corun's graph_bfs stand-in: its BFS roots (at most 64).

A size never goes below the configuration's, nor above a cap (x264: 4 x the paper's frames;
Graph500: the paper's SCALE 22; graph_bfs: 64 roots). The chosen sizes, the time measured at each
and the minimum are recorded in calibration.json and in every run's labels; the spec's
remeasure.min_measure_s, with remeasure.lengthen "none", makes the runner measure a run that
still came out shorter again as it is, never with its jobs repeated, and io_latency_split fails
a run that stays shorter, naming it.
"""

from __future__ import annotations

import copy
import math
import resource
import shutil
from collections.abc import Callable
from pathlib import Path

from corun.run import run_length
from corun.run.inputs import PRESETS, fits, make_y4m, y4m_bytes

ATTEMPTS = 5  # timings of one workload at most: the configured size and up to 4 larger ones
GROWTH_CAP = 8.0  # the most a job's work grows after its first timing (its fixed cost unknown)
MARGIN = 1.2  # a grown job aims this far above the minimum (the run's own start and end)
X264_FRAMES_CAP = 4  # x the paper's frames
GRAPH_SCALE_CAP = 22  # the paper's Table 2
ROOTS_CAP = 64  # graph_bfs, as Graph500's 64 BFS


def min_measure_s(cfg: dict) -> float:
    """The shortest run io_latency_split's metrics are sized for: min_intervals monitor intervals."""
    return cfg["cmp_stacking"]["min_intervals"] * cfg["monitors"]["interval_s"]


def size_key(wl: dict, stand_in: bool) -> str:
    """What sizes a workload's job: frames (x264), scale (Graph500) or roots (graph_bfs)."""
    if wl["kind"] == "x264":
        return "frames"
    return "roots" if stand_in else "scale"


def cap(wl: dict, key: str, paper: dict) -> int:
    have = wl.get(key, 8 if key == "roots" else 1)
    if key == "frames":
        return max(have, X264_FRAMES_CAP * paper.get("frames", have))
    if key == "scale":
        return max(have, GRAPH_SCALE_CAP)
    return max(have, ROOTS_CAP)


def grow(key: str, timings: list[dict], want_s: float, top: int) -> int:
    """The next size to time, aiming at MARGIN x `want_s`. The work of a size is its frames or
    roots, or 2 ** SCALE (a step doubles the edges); its time is taken as affine in the work
    (a job's start, a clip's first frames, a graph's setup are a fixed cost that dominates a small
    job): fitted on the last two timings, or, after the first, the work scaled by the time
    missing, at most GROWTH_CAP times. At least one more, at most `top`."""
    work = (lambda n: 2.0**n) if key == "scale" else float
    size_of = (lambda w: math.ceil(math.log2(w))) if key == "scale" else math.ceil
    aim = MARGIN * want_s
    last, job_s = timings[-1][key], timings[-1]["job_s"]
    w = work(last) * min(GROWTH_CAP, aim / job_s if job_s > 0 else 2.0)
    if len(timings) >= 2:
        prev, prev_s = timings[-2][key], timings[-2]["job_s"]
        slope = (job_s - prev_s) / (work(last) - work(prev)) if last != prev else 0.0
        if slope > 0:  # at most twice the work scaled by the time missing (a noisy pair of timings)
            w = min((aim - (job_s - slope * work(last))) / slope, 2 * work(last) * aim / job_s)
    nxt = max(last + 1, size_of(max(w, 1.0)))
    return min(top, nxt)


def size_job(key: str, size: int, top: int, want_s: float, time_at: Callable[[int], dict]) -> dict:
    """Time the job at `size` (`time_at(size)`: {job_s, wall_s}, job_s the least it lasts, see
    time_alone) and grow it while shorter than `want_s`, ATTEMPTS timings at most;
    {key, size, job_s, configured, cap, timings, reached}."""
    configured, timings = size, []
    for _ in range(ATTEMPTS):
        t = time_at(size)
        job_s = t["job_s"]
        timings.append({key: size, **{k: round(v, 4) for k, v in t.items()}})
        if job_s >= want_s or size >= top:
            break
        size = grow(key, timings, want_s, top)
    last = timings[-1]
    return {
        "key": key,
        "size": last[key],
        "job_s": last["job_s"],
        "configured": configured,
        "cap": top,
        "timings": timings,
        "reached": last["job_s"] >= want_s,
    }


def sized_config(cfg: dict, calibration: dict) -> dict:
    """The configuration with each workload's size replaced by the calibration's (unchanged
    without one: a spec written by hand keeps the configured sizes)."""
    sizes = calibration.get("sizes") if calibration.get("needed") else None
    if not sizes:
        return cfg
    out = copy.deepcopy(cfg)
    for name, s in sizes.items():
        if name in out["workloads"]:
            out["workloads"][name][s["key"]] = s["size"]
    return out


def size_labels(cfg: dict, calibration: dict, name: str) -> dict:
    """What a run records of its jobs' size: the minimum, and the calibration's choice."""
    s = (calibration.get("sizes") or {}).get(name) if calibration.get("needed") else None
    return {
        "min_measure_s": min_measure_s(cfg),
        "sized_by": s["key"] if s else None,
        "size": s["size"] if s else None,
        "configured_size": s["configured"] if s else None,
        "calibrated_job_s": s["job_s"] if s else None,
    }


def read_floor_s(cfg: dict, wl: dict) -> float:
    """The least time an x264 job of `wl` takes to read its clip through the run's throttle
    (cmp_stacking.throttle.read_bps, the caches dropped): its bytes over the cap; 0 without one."""
    e = cfg["cmp_stacking"]
    bps = (e.get("throttle") or {}).get("read_bps")
    if wl["kind"] != "x264" or not bps or not e["drop_caches"]:
        return 0.0
    w, h = PRESETS[wl["input"]]
    return y4m_bytes(w, h, wl["frames"]) / bps


def write_clips(master: Path, slot_paths: list[Path], wl: dict) -> list[Path]:
    """The clip of `wl`'s frames at `master` and one copy per slot (kept while their size fits)."""
    w, h = PRESETS[wl["input"]]
    size = y4m_bytes(w, h, wl["frames"])
    made = []
    if not fits(master, size):
        make_y4m(master, w, h, wl["frames"])
        made.append(master)
    for p in slot_paths:
        if not fits(p, size):
            shutil.copyfile(master, p)
            made.append(p)
    return made


def time_alone(job: dict) -> dict:
    """{job_s, wall_s} of one job run alone: wall_s its wall time, job_s its CPU time (user +
    system) over its cores, the least its run can last. The sizes rest on job_s: on a machine
    others load, a job's wall time alone varies several fold with their load (a SCALE 12 Graph500
    took 0.95 s timed alone and 0.16 s in its run), its CPU time does not, and it shrinks on a
    faster machine, so the job grows there."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    wall = run_length.time_job(job["cmd"], job["env"])
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return {"job_s": cpu / max(1, job.get("cores", 1)), "wall_s": wall}

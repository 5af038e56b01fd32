"""cmp_stacking's jobs sized in time, each job larger, never repeated (README, "Run length").

io_latency_split reads these runs' iostat intervals, so the shortest step (k = 1) must last
`min_intervals` monitor intervals. Repeating a job would break the paper's design (8 jobs per
CMP started together; a second copy of an x264 job reads its clip from the page cache), so the
calibrate step sizes each job instead: it times one job of each workload alone on this machine
at the configured size and, while that is shorter than the minimum, grows the job and times it
again (`size_job`):

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
import shutil
from collections.abc import Callable
from pathlib import Path

from corun.run import run_length
from corun.run.inputs import PRESETS, fits, make_y4m, y4m_bytes

ATTEMPTS = 4  # timings of one workload at most: the configured size and up to 3 larger ones
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


def grow(key: str, size: int, job_s: float, want_s: float, top: int) -> int:
    """The next size to time: frames and roots in proportion to the time wanted, SCALE by the
    steps that double the edges enough; at least one more, at most `top`."""
    ratio = MARGIN * want_s / job_s if job_s > 0 else 2.0
    if key == "scale":
        nxt = size + max(1, math.ceil(math.log2(ratio)))
    else:
        nxt = max(size + 1, math.ceil(size * ratio))
    return min(top, nxt)


def size_job(key: str, size: int, top: int, want_s: float, time_at: Callable[[int], float]) -> dict:
    """Time the job at `size` (`time_at(size)`, seconds alone) and grow it while shorter than
    `want_s`, ATTEMPTS timings at most; {key, size, job_s, configured, timings, reached}."""
    configured, timings = size, []
    for _ in range(ATTEMPTS):
        job_s = time_at(size)
        timings.append({key: size, "job_s": round(job_s, 4)})
        if job_s >= want_s or size >= top:
            break
        size = grow(key, size, job_s, want_s, top)
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


def time_alone(job: dict) -> float:
    return run_length.time_job(job["cmd"], job["env"])

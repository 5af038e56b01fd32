"""cmp_stacking's jobs sized in time (experiments/cmp_stacking/sizing.py): the calibrate step grows
each workload's job (x264 frames, Graph500's SCALE) until the k = 1 step lasts min_intervals
monitor intervals, records what it chose, and the specs run one job per slot at that size; a run
that still came out shorter is measured again as it is, never with its jobs repeated."""

import json
import re

import pytest
import yaml

from experiments.cmp_stacking import experiment as ce
from experiments.cmp_stacking import sizing
from experiments.config import validate_config

WORKLOADS = {
    "x264_simlarge": {"kind": "x264", "input": "simlarge", "frames": 2},
    "graph_s22_e16": {"kind": "graph", "scale": 12, "edgefactor": 16, "roots": 2},
}


def cfg(**sec) -> dict:
    section = {"reps": 1, "workloads": list(WORKLOADS), **sec}
    return validate_config(
        {"plan_for": "2x1", "experiments": ["cmp_stacking"], "workloads": WORKLOADS, "cmp_stacking": section}, "t"
    )


def fake_time(job: dict) -> dict:
    """0.5 s of CPU a frame (x264), 0.5 s at SCALE 12 doubling with every step (graph); the wall
    time alone 3 x longer (a machine others load): the sizes rest on the CPU time."""
    cmd = job["cmd"]
    clip = re.search(r"_(\d+)f_s\d+\.y4m$", cmd[-1])
    if clip:
        cpu = 0.5 * int(clip.group(1))
    else:
        cpu = 0.5 * 2 ** (int(cmd[cmd.index("-s") + 1]) - 12)
    return {"job_s": cpu, "wall_s": 3 * cpu}


@pytest.mark.parametrize(
    "key, size, times, want, top, sizes, reached",
    [
        ("frames", 2, {2: 1.0, 10: 5.0}, 4.0, 512, [2, 10], True),  # 1 s: 1.2 x 4 s wanted, 10 frames
        ("frames", 8, {8: 6.0}, 4.0, 512, [8], True),  # long enough at the configured size: kept
        ("scale", 12, {12: 0.5, 15: 4.0}, 4.0, 22, [12, 15], True),  # 9.6x wanted, 8x at most: 3 doublings
        # a fixed cost (0.1 s + 0.01 s a frame): 8x, then the affine fit of the two timings
        ("frames", 4, {4: 0.14, 32: 0.42, 471: 4.81}, 4.0, 512, [4, 32, 471], True),
        ("frames", 2, {2: 0.1, 4: 0.2}, 4.0, 4, [2, 4], False),  # the cap reached, still short: said
    ],
)
def test_size_job_grows_a_short_job_and_times_it_again(key, size, times, want, top, sizes, reached):
    out = sizing.size_job(key, size, top, want, lambda s: {"job_s": times[s]})
    assert [t[key] for t in out["timings"]] == sizes
    assert out["size"] == sizes[-1] and out["configured"] == size and out["reached"] is reached


def test_the_calibration_sizes_each_job_records_it_and_writes_its_clips(tmp_path, monkeypatch):
    monkeypatch.setattr(sizing, "time_alone", fake_time)
    c = cfg()
    ce.EXPERIMENT.make_data(c, tmp_path)
    cal = json.loads(json.dumps(ce.EXPERIMENT.calibrate(c, tmp_path)))  # as calibration.json holds it
    assert cal["needed"] and cal["min_measure_s"] == 4.0  # 4 intervals of 1 s, the default
    x264, graph = cal["sizes"]["x264_simlarge"], cal["sizes"]["graph_s22_e16"]
    assert (x264["key"], x264["configured"], x264["size"], x264["job_s"]) == ("frames", 2, 10, 5.0)
    assert (graph["key"], graph["configured"], graph["size"], graph["job_s"]) == ("scale", 12, 15, 4.0)
    for slot in (0, 1):  # every slot's job reads its own copy of the sized clip
        assert (tmp_path / "inputs" / f"simlarge_10f_s{slot:03d}.y4m").is_file()

    out = tmp_path / "specs"
    out.mkdir()
    assert ce.EXPERIMENT.specs(c, cal, tmp_path, out) == 4
    spec = yaml.safe_load((out / "g00_k2_r0.yaml").read_text())
    assert [j["cmd"][-1].rsplit("/", 1)[1] for j in spec["jobs"]] == ["simlarge_10f_s000.y4m", "simlarge_10f_s001.y4m"]
    labels = spec["labels"]
    assert (labels["min_measure_s"], labels["sized_by"], labels["size"], labels["configured_size"]) == (
        4.0,
        "frames",
        10,
        2,
    )
    assert labels["calibrated_job_s"] == 5.0
    assert [t["wall_s"] for t in cal["sizes"]["x264_simlarge"]["timings"]] == [3.0, 15.0]  # recorded, not used
    graph_spec = yaml.safe_load((out / "g01_k1_r0.yaml").read_text())
    assert graph_spec["jobs"][0]["cmd"][graph_spec["jobs"][0]["cmd"].index("-s") + 1] == "15"
    assert "scale 15 (paper 22)" in graph_spec["jobs"][0]["labels"]["scale_note"]


def test_a_clip_read_through_the_throttle_lasts_at_least_its_bytes_over_the_cap(tmp_path, monkeypatch):
    monkeypatch.setattr(sizing, "time_alone", fake_time)
    c = cfg(throttle={"read_bps": 100_000})  # 2 simlarge frames, 691 kB: 6.9 s through the cap
    ce.EXPERIMENT.make_data(c, tmp_path)
    x264 = ce.EXPERIMENT.calibrate(c, tmp_path)["sizes"]["x264_simlarge"]
    assert x264["size"] == 2 and x264["reached"] and x264["timings"][0]["io_s"] == pytest.approx(6.91, abs=0.01)
    assert x264["job_s"] == x264["timings"][0]["io_s"]  # the larger of its CPU time and its reading


def test_without_a_calibration_the_configured_sizes_run_and_say_so(tmp_path):
    out = tmp_path / "specs"
    out.mkdir()
    ce.EXPERIMENT.specs(cfg(min_intervals=5), {"needed": False}, tmp_path, out)
    spec = yaml.safe_load((out / "g00_k1_r0.yaml").read_text())
    assert spec["jobs"][0]["cmd"][-1].endswith("simlarge_2f_s000.y4m")
    assert spec["labels"]["min_measure_s"] == 5.0 and spec["labels"]["sized_by"] is None
    assert spec["remeasure"]["min_measure_s"] == 5.0 and spec["remeasure"]["lengthen"] == "none"


def test_time_alone_is_the_jobs_cpu_time_not_its_wall_time():
    t = sizing.time_alone({"cmd": ["/bin/sleep", "0.3"], "env": {}, "cores": 1})
    assert t["wall_s"] >= 0.3 and t["job_s"] < 0.1  # sleeping is no work: its wall time is the load's
    busy = sizing.time_alone({"cmd": ["/bin/sh", "-c", "i=0; while [ $i -lt 20000 ]; do i=$((i+1)); done"], "env": {}})
    assert 0 < busy["job_s"] <= busy["wall_s"] + 0.01


def test_the_estimate_counts_each_run_at_its_minimum():
    est = ce.EXPERIMENT.estimate(cfg(min_intervals=10))
    assert est["runs"] == 4 and est["seconds"] >= 4 * 10

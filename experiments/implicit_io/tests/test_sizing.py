"""implicit_io's runs sized in time (corun.run.run_length): the calibrate step times one job of the
smallest graph, each level runs enough copies of its jobs to last min_intervals monitor
intervals, and the analysis fails a run shorter than its metrics need, naming it."""

import shutil

import pandas as pd
import yaml

from corun.run import run_length
from experiments.config import validate_config
from experiments.implicit_io import experiment as ie
from experiments.implicit_io.tests.test_analysis import FIXTURES, analysed

GRAPHS = [{"scale": 15, "edgefactor": 12}, {"scale": 15, "edgefactor": 16}, {"scale": 16, "edgefactor": 16}]


def cfg(**section) -> dict:
    sec = {"graphs": GRAPHS, "memory_limit_bytes": 70254592, "reps": 1, **section}
    return validate_config({"plan_for": "1x2", "experiments": ["implicit_io"], "implicit_io": sec}, "t.yaml")


def test_the_calibration_times_the_smallest_graph_and_sizes_every_level(tmp_path, monkeypatch):
    timed = []
    monkeypatch.setattr(run_length, "time_job", lambda cmd, env=None: timed.append(cmd) or 0.75)
    cal = ie.EXPERIMENT.calibrate(cfg(), tmp_path)
    assert len(timed) == 1 and cal["smallest"] == "graph_s15_e12" and cal["smallest_job_s"] == 0.75
    assert cal["min_measure_s"] == 10.0  # 10 intervals of 1 s
    # s15/e12 0.75 s: 14 copies; s15/e16 a third more edges, 1.0 s: 10; s16/e16 2.0 s: 5
    assert cal["copies"] == {"graph_s15_e12": 14, "graph_s15_e16": 10, "graph_s16_e16": 5}


def test_the_specs_repeat_each_levels_jobs_and_record_what_sized_them(tmp_path):
    c = cfg(min_intervals=4)
    cal = {
        "needed": True,
        "smallest_job_s": 0.5,
        "min_measure_s": 4.0,
        "copies": {"graph_s15_e12": 8, "graph_s15_e16": 6, "graph_s16_e16": 1},
    }
    out = tmp_path / "specs"
    out.mkdir()
    assert ie.EXPERIMENT.specs(c, cal, tmp_path, out) == 3
    spec = yaml.safe_load((out / "g00_k1_r0.yaml").read_text())
    assert len(spec["jobs"]) == 2 * 8 and spec["jobs"][2]["name"] == "implicit_io-s0-c1"
    assert [j["cmp"] for j in spec["jobs"][:4]] == [0, 0, 0, 0]  # one CMP of 2 cores: both slots on it
    assert spec["labels"]["copies"] == 8 and spec["labels"]["min_measure_s"] == 4.0
    assert spec["labels"]["smallest_job_s"] == 0.5 and spec["remeasure"]["min_measure_s"] == 4.0
    top = yaml.safe_load((out / "g02_k1_r0.yaml").read_text())
    assert len(top["jobs"]) == 2 and top["labels"]["copies"] == 1
    # without a calibration (a spec written by hand): the plan's estimate of the job's time
    assert ie.EXPERIMENT.specs(c, {"needed": False}, tmp_path, out) == 3
    assert yaml.safe_load((out / "g00_k1_r0.yaml").read_text())["labels"]["smallest_job_s"] is None


def test_the_plan_counts_the_copies(tmp_path):
    est = ie.EXPERIMENT.estimate(cfg())
    assert est["runs"] == 3 and est["seconds"] >= 3 * (10.0 + 3.0)


def test_a_run_shorter_than_its_metrics_need_is_failed_naming_it(tmp_path):
    """2.5 s of a 1 s monitor: two intervals inside the run, a share of 0, 1/2 or 1. The run is
    failed with the reason (the runner measures such a run again longer; a last attempt still
    short is never ranked with the others)."""
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    runs = pd.read_csv(copy / "runs.csv")
    runs.loc[runs["run_id"] == "s17_e16_k2_r1", "duration_s"] = 2.5
    runs.to_csv(copy / "runs.csv", index=False)
    result, section, _ = analysed(tmp_path, fixtures=copy)
    r = result.evidence["runs"].set_index("run_id").loc["s17_e16_k2_r1"]
    assert (
        r["failed"]
        and "run shorter than the 3 monitor intervals its metric needs (2.50 s measured" in r["failed_reason"]
    )
    trend = next(c for c in section["claims"] if c["claim"] == "share_rises_with_mem_util")
    assert trend["outcome"] == "failed" and trend["runs"] == ["s17_e16_k2_r1"] and "run shorter" in trend["why"]
    # the same run at its full 4.6 s: not failed
    ok = analysed(tmp_path / "ok")[0].evidence["runs"].set_index("run_id").loc["s17_e16_k2_r1"]
    assert not ok["failed"], ok["failed_reason"]

"""llc_miss's k = 1 runs sized in time (corun.run.run_length): their LLC miss rate is read from the
perf monitor's intervals, so the calibrate step times one job of each group, each group's
k = 1 run repeats its jobs enough to last min_intervals intervals, and the analysis fails a k = 1
run shorter than the miss rate needs, naming it. The runs at k > 1 feed the CC cost only (the
kernel's own timed passes): they keep one job per slot."""

import shutil

import pandas as pd
import yaml

from analysis.experiment import read_inputs
from corun.run import run_length
from experiments import PAPERS_DIR
from experiments.config import validate_config
from experiments.llc_miss import analysis as llc
from experiments.llc_miss import experiment as le
from experiments.llc_miss import metrics as m
from experiments.llc_miss.tests.test_analysis import FIXTURES, FOLDER, cell


def cfg(**section) -> dict:
    sec = {"nops": [0, 100], "mem_size_bytes": 16777216, "iterations": 5, "reps": 1, **section}
    return validate_config({"plan_for": "2x1", "experiments": ["llc_miss"], "llc_miss": sec}, "t.yaml")


def test_the_calibration_times_one_job_of_each_group_and_sizes_its_k1_run(tmp_path, monkeypatch):
    timed = []
    monkeypatch.setattr(run_length, "time_job", lambda cmd, env=None: timed.append(cmd) or [0.5, 2.0][len(timed) - 1])
    cal = le.EXPERIMENT.calibrate(cfg(), tmp_path)
    assert len(timed) == 2 and cal["smallest"] == "nops0" and cal["smallest_job_s"] == 0.5
    assert cal["job_s"] == {"nops0": 0.5, "nops100": 2.0}
    assert cal["min_measure_s"] == 5.0  # the default 5 intervals of 1 s
    assert cal["copies"] == {"nops0": 10, "nops100": 3}


def test_only_the_k1_runs_repeat_their_jobs_and_record_what_sized_them(tmp_path):
    cal = {"needed": True, "smallest_job_s": 0.5, "min_measure_s": 5.0, "copies": {"nops0": 10, "nops100": 2}}
    out = tmp_path / "specs"
    out.mkdir()
    assert le.EXPERIMENT.specs(cfg(), cal, tmp_path, out) == 4
    k1 = yaml.safe_load((out / "g00_k1_r0.yaml").read_text())
    assert len(k1["jobs"]) == 10 and k1["jobs"][1]["name"].endswith("-c1")
    assert k1["labels"]["copies"] == 10 and k1["labels"]["min_measure_s"] == 5.0
    assert k1["labels"]["smallest_job_s"] == 0.5 and k1["remeasure"]["min_measure_s"] == 5.0
    k2 = yaml.safe_load((out / "g00_k2_r0.yaml").read_text())
    assert len(k2["jobs"]) == 2 and k2["labels"]["copies"] == 1
    assert (k2.get("remeasure") or {}).get("min_measure_s") is None  # its metric: the kernel's own time
    # without a calibration: the plan's estimate of the job's time
    assert le.EXPERIMENT.specs(cfg(), {"needed": False}, tmp_path, out) == 4
    assert yaml.safe_load((out / "g00_k1_r0.yaml").read_text())["labels"]["smallest_job_s"] is None


def test_the_plan_counts_the_copies():
    est = le.EXPERIMENT.estimate(cfg())
    assert est["runs"] == 4 and est["seconds"] >= 2 * (5.0 + 3.0)


def test_a_k1_run_shorter_than_its_miss_rate_needs_is_failed_naming_it(tmp_path):
    copy = tmp_path / "llc_miss"
    shutil.copytree(FIXTURES, copy)
    runs = pd.read_csv(copy / "runs_perf.csv")
    runs.loc[runs["run_id"] == "n0_k1_r0", "duration_s"] = 2.5
    runs.loc[runs["run_id"] == "n0_k2_r0", "duration_s"] = 2.5  # k = 2: no monitor metric, kept
    runs.to_csv(copy / "runs_perf.csv", index=False)
    inputs = read_inputs(
        "llc_miss",
        FOLDER,
        PAPERS_DIR,
        copy / "jobs.csv",
        copy / "runs_perf.csv",
        job_text=llc.JOB_TEXT,
        run_text=llc.RUN_TEXT,
    )
    ev = llc.analyse(inputs).evidence
    k1 = ev["k1"].set_index("run_id")
    assert k1.loc["n0_k1_r0", "failed"]
    assert (
        f"run shorter than the {m.MIN_PERF_INTERVALS} perf intervals its metric needs (2.50 s measured"
        in k1.loc["n0_k1_r0", "failed_reason"]
    )
    assert not k1.loc["n0_k1_r1", "failed"]
    # the k = 2 run's own part is not failed: its cost fails for its k = 1 run only
    why = cell(ev["cc_cost"], "failed_reason", nops=0, k=2, rep=0)
    assert why.startswith("n0_k1_r0: run shorter") and "n0_k2_r0" not in why

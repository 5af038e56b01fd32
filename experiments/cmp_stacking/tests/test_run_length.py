"""cmp_stacking's runs are sized in time by making each job larger, not by repeating it (README,
"Run length"): a copy of an x264 job would read its slot's clip from the page cache (the caches
are dropped once, before the jobs), and each step would run more jobs than the paper's 8 per CMP,
all started together. So its specs keep one job per slot, name the minimum their iostat metrics
need (remeasure.min_measure_s) and ask the runner to measure a short run again as it is
(remeasure.lengthen "none"), even when the configuration's remeasure section names another
minimum; its own claims read the jobs' own runtimes (no monitor), which a short run does not
fail; the iostat metrics that need a length (io_latency_split) fail a short run, naming it."""

import shutil

import pandas as pd
import pytest
import yaml

from analysis import runtables as rt
from analysis.experiment import read_inputs
from experiments import PAPERS_DIR
from experiments.cmp_stacking import analysis as cs
from experiments.cmp_stacking import experiment as ce
from experiments.cmp_stacking.tests.test_analysis import FIXTURES, FOLDER
from experiments.config import validate_config
from experiments.io_latency_split import metrics as iom
from experiments.io_latency_split.tests.test_analysis import STACK, fixture_result  # noqa: F401


def cfg(**top) -> dict:
    sec = {"reps": 1, "workloads": ["x264_simlarge", "graph_s22_e16"]}
    return validate_config({"plan_for": "2x1", "experiments": ["cmp_stacking"], "cmp_stacking": sec, **top}, "t")


def test_the_specs_keep_one_job_per_slot_and_never_lengthen_by_repetition(tmp_path):
    out = tmp_path / "specs"
    out.mkdir()
    c = cfg(remeasure={"min_measure_s": 5.0})  # a minimum asked for every experiment
    assert ce.EXPERIMENT.specs(c, {}, tmp_path, out) == 4
    for path in sorted(out.glob("*.yaml")):
        spec = yaml.safe_load(path.read_text())
        k = spec["labels"]["k"]
        assert len(spec["jobs"]) == k  # 2x1: one job per loaded CMP, no copies
        assert all("repeat" not in (j.get("labels") or {}) for j in spec["jobs"])
        # its own minimum (4 intervals of 1 s), a short run measured again as it is
        assert spec["remeasure"]["min_measure_s"] == 4.0, path.name
        assert spec["remeasure"]["lengthen"] == "none" and spec["labels"]["min_measure_s"] == 4.0
    assert ce.EXPERIMENT.estimate(c)["runs"] == 4


def test_a_short_run_keeps_its_runtime_here_and_fails_the_latency_it_feeds(tmp_path, fixture_result):  # noqa: F811
    copy = tmp_path / "cmp_stacking"
    shutil.copytree(FIXTURES, copy)
    runs = pd.read_csv(copy / "runs.csv")
    runs.loc[runs["run_id"] == "w1_k1_r0", "duration_s"] = 2.5
    runs.to_csv(copy / "runs.csv", index=False)
    inputs = read_inputs(
        "cmp_stacking",
        FOLDER,
        PAPERS_DIR,
        copy / "jobs.csv",
        copy / "runs.csv",
        job_text=cs.JOB_TEXT,
        run_text=cs.RUN_TEXT,
    )
    mine = cs.analyse(inputs).evidence["runs"].set_index("run_id")
    assert not mine.loc["w1_k1_r0", "failed"]  # its jobs' own runtimes: no monitor interval in them
    jobs, all_runs = fixture_result["jobs"], fixture_result["all_runs"].copy()
    all_runs.loc[all_runs["run_id"] == "w1_k1_r0", "duration_s"] = 2.5
    t = iom.latency_tables(jobs, all_runs, rt.run_dirs(all_runs, STACK / "runs.csv"), rt.MissingLog())
    io = iom.evidence(t["runs"], jobs, all_runs, "x264_simlarge")["runs"].set_index("run_id")
    assert io.loc["w1_k1_r0", "failed"]
    assert "run shorter than the 3 iostat intervals its metric needs (2.50 s" in io.loc["w1_k1_r0", "failed_reason"]


@pytest.mark.parametrize("profile", ["smoke", "local", "paper"])
def test_no_profile_sizes_the_runs_by_copies(profile):
    prof = yaml.safe_load((FOLDER / "profiles" / f"{profile}.yaml").read_text()) or {}
    assert "copies" not in prof

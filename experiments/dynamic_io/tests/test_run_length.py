"""dynamic_io's waiting and serving times are read from iostat's intervals: a campaign run shorter
than the intervals they need fails its latency row with that reason (analysis.run_length), never
pooled, while its wall-time metrics (eq. 3-5, from the jobs' runtimes) stand; the minimum is
declared (dynamic_io.min_intervals) and recorded in every campaign run's labels."""

import pandas as pd

from analysis.experiment import read_inputs, write
from experiments import PAPERS_DIR
from experiments.dynamic_io import analysis as dio
from experiments.dynamic_io import evidence as ev
from experiments.dynamic_io import experiment as dx
from experiments.dynamic_io.tests.campaign import FOLDER, write_campaign
from experiments.dynamic_io.tests.test_experiment import cfg


def test_a_run_shorter_than_its_latency_needs_fails_its_latency_claims_naming_it(tmp_path):
    jobs_csv, runs_csv = write_campaign(tmp_path)
    runs = pd.read_csv(runs_csv)
    runs.loc[runs["run_id"] == "w01-linux-r0", "duration_s"] = 2.5
    runs.to_csv(runs_csv, index=False)
    inputs = read_inputs(
        "dynamic_io", FOLDER, PAPERS_DIR, jobs_csv, runs_csv, job_text=dio.JOB_TEXT, run_text=dio.RUN_TEXT
    )
    result = dio.analyse(inputs)
    section = write(tmp_path / "out", inputs, result)
    lat = result.evidence["latency"].set_index("run_id")
    assert lat.loc["w01-linux-r0", "failed"]
    assert lat.loc["w01-linux-r0", "failed_reason"].startswith(
        f"run shorter than the {ev.MIN_IO_INTERVALS} iostat intervals its metric needs (2.50 s measured"
    )
    assert not lat.loc["w01-linux-r1", "failed"]
    rows = {r["claim"]: r for r in section["claims"]}
    assert rows["w01_wait"]["outcome"] == "failed" and rows["w01_wait"]["runs"] == ["w01-linux-r0"]
    assert "run shorter" in rows["w01_wait"]["why"]
    assert rows["d_explicit_runtime"]["outcome"] != "failed"  # its jobs' runtimes need no interval


def test_the_campaign_runs_record_the_minimum_their_latency_needs(tmp_path):
    c = cfg(workloads=["w01"], min_intervals=4)
    entry = next(e for e in dx.campaign(c) if e["kind"] == "campaign")
    cal = {"needed": True, "block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
    spec = dx.make_spec(c, cal, entry, tmp_path)
    assert spec["labels"]["min_measure_s"] == 4.0
    alone = next(e for e in dx.campaign(c) if e["kind"] == "alone")
    assert "min_measure_s" not in dx.make_spec(c, cal, alone, tmp_path)["labels"]  # T_alone: wall time only

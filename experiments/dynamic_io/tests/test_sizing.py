"""dynamic_io's campaign runs sized in time (experiments.dynamic_io.sizing): the calibrate step
times one job of each job type and gives each workload a batch long enough for iostat's
intervals, the same for every variant and rep, recorded; a run that still came out shorter is
measured again longer, each copy reading its input from the disk again; the wall-time metrics of
a run so lengthened are failed (its batch is not its pair's), its latency stands."""

import json

import pandas as pd
import yaml

from analysis.experiment import read_inputs
from corun.run import runner
from experiments import PAPERS_DIR
from experiments.dynamic_io import analysis as dio
from experiments.dynamic_io import experiment as dx
from experiments.dynamic_io import sizing
from experiments.dynamic_io.tests.campaign import FOLDER, write_campaign
from experiments.dynamic_io.tests.test_experiment import cfg
from tests.fake_runs import fake_runner

JOB_S = {"x264": 0.2, "km": 1.5}
CAL = {"needed": False, "min_measure_s": 5.0, "job_s": JOB_S, "batch_length": {"w01": 24, "w06": 4}}


def test_the_calibration_times_each_job_type_and_sizes_every_batch(tmp_path, monkeypatch):
    c = cfg(workloads=["w01", "w06"])  # a 2-core machine, batch_scale 1/32: 4 and 2 jobs
    assert [dx.batch_length(c, w) for w in ("w01", "w06")] == [4, 2]
    timed, made = [], []
    monkeypatch.setattr(sizing, "time_app", lambda cfg, cal, app, d: timed.append(app) or JOB_S[app])
    monkeypatch.setattr(sizing, "make_data", lambda cfg, d, record: made.append((cfg, record)) or {"made": ["f"]})
    cal = dx.calibrate(c, tmp_path)
    assert sorted(timed) == ["km", "x264"] and cal["job_s"] == JOB_S and cal["min_measure_s"] == 5.0
    # w01: 0.2 s jobs on 2 cores last 5 s at 50 jobs (Table 3: 128); w06: 1.5 s jobs, 7 > 8 at most
    w01, w06 = cal["batch_length"]["w01"], cal["batch_length"]["w06"]
    assert 50 <= w01 < 64 and sum([JOB_S["x264"]] * w01) / 2 >= 5.0
    assert w06 == 7 and 1.5 * 6 / 2 < 5.0
    # the inputs of the longer batches are made, one set per job, layout.json left as the data step wrote it
    # at Table 3's lengths (the paper profile) no batch can grow: nothing is timed
    timed.clear()
    full = dx.calibrate(cfg(workloads=["w01", "w06"], batch_scale=1.0), tmp_path)
    assert timed == [] and full["batch_length"] == {"w01": 128, "w06": 8}
    sized, record = made[0]
    assert sized["dynamic_io"]["calibrated_batch"] == cal["batch_length"] and record is False
    assert dx.layout(sized)["inputs"] == {"km/duplicated": w06, "x264/duplicated": w01}


def test_every_variant_and_rep_runs_the_calibrated_batch_recorded_in_its_labels(tmp_path):
    c = cfg(workloads=["w01", "w06"])
    out = tmp_path / "specs"
    out.mkdir()
    dx.write_specs(c, CAL, tmp_path, out)
    runs = [yaml.safe_load(p.read_text()) for p in sorted(out.glob("*.yaml"))]
    w01 = [s for s in runs if s["labels"]["run_kind"] == "campaign" and s["labels"]["workload"] == "w01"]
    assert len(w01) == 4  # 2 variants x 2 reps
    for s in w01:
        assert len(s["jobs"]) == 24 and s["labels"]["batch_length"] == 24
        assert s["labels"]["calibrated_batch_length"] == 24 and s["labels"]["min_measure_s"] == 5.0
        assert s["remeasure"]["min_measure_s"] == 5.0
        clips = [j["evict"] for j in s["jobs"]]  # each job its own clip, dropped from the cache as it starts
        assert len({c[0] for c in clips}) == 24 and all(c[0].endswith(".y4m") for c in clips)
    warm = cfg(workloads=["w01"], drop_caches=False)  # nothing dropped, by the run nor by its jobs
    assert all("evict" not in j for j in dx.make_spec(warm, CAL, dx.campaign(warm)[-1], tmp_path)["jobs"])
    alone = next(s for s in runs if s["labels"]["run_kind"] == "alone")
    assert len(alone["jobs"]) == 1 and "remeasure" not in alone  # T_alone: wall time only


def test_a_campaign_run_measured_shorter_than_its_minimum_is_measured_again_longer(tmp_path, monkeypatch):
    c = cfg(workloads=["w01"])
    entry = next(e for e in dx.campaign(c) if e["kind"] == "campaign")
    spec = dx.make_spec(sizing.sized(c, {"batch_length": {"w01": 16}}), CAL, entry, tmp_path)
    path = tmp_path / "run.yaml"
    path.write_text(yaml.safe_dump(spec))
    measured = fake_runner(monkeypatch, 0.25)  # 16 jobs of 0.25 s: 4 s, under the 5 s the latency needs
    out = runner.run_spec_file(path, tmp_path / "run")
    meta = json.loads((out / "metadata.json").read_text())
    assert len(measured) == 2 and len(measured[0]["jobs"]) == 16
    longer = measured[1]
    assert len(longer["jobs"]) == 32 and longer["labels"]["copies"] == 2 and meta["duration_s"] == 8.0
    copy = longer["jobs"][16]
    assert copy["name"].endswith("-c1") and copy["labels"]["repeat"] == 1
    assert copy["evict"] == longer["jobs"][0]["evict"]  # the copy reads its clip from the disk again
    short = meta["remeasured"]["earlier"][0]
    assert short["duration_s"] == 4.0 and "shorter than the 5 s" in short["short"]
    assert (out / "remeasured" / "attempt-1").is_dir()  # the short attempt kept


def test_a_run_measured_again_longer_fails_its_wall_time_metrics_not_its_latency(tmp_path):
    jobs_csv, runs_csv = write_campaign(tmp_path)
    runs = pd.read_csv(runs_csv)
    runs["copies"] = [2 if r == "w01-linux-r0" else None for r in runs["run_id"]]
    runs.to_csv(runs_csv, index=False)
    inputs = read_inputs(
        "dynamic_io", FOLDER, PAPERS_DIR, jobs_csv, runs_csv, job_text=dio.JOB_TEXT, run_text=dio.RUN_TEXT
    )
    result = dio.analyse(inputs)
    by_run = result.evidence["runs"].set_index("run_id")
    assert by_run.loc["w01-linux-r0", "failed"]
    assert "measured again longer with its batch repeated 2 times" in by_run.loc["w01-linux-r0", "failed_reason"]
    assert not by_run.loc["w01-linux-r1", "failed"]
    assert not result.evidence["latency"].set_index("run_id").loc["w01-linux-r0", "failed"]


def test_the_plan_sizes_the_batches_by_its_job_times():
    """x264's estimated 0.35 s jobs: 30 of them on 2 cores for 5 s, Table 3's 128 for 50 s."""
    short, long = (dx.EXPERIMENT.estimate(cfg(workloads=["w01"], min_intervals=m))["seconds"] for m in (5, 50))
    assert long > short > 4 * 5.0


def test_a_batch_whose_reads_at_the_throttle_last_long_enough_stays_at_its_configured_length():
    """The run's jobs share one read cap (throttle.read_bps): 4 jobs of 12 MB at 8 MB/s last 6 s
    whatever their CPU times, so the 4 jobs of batch_scale 1/32 already last min_measure_s."""
    throttled = cfg(workloads=["w01"], throttle={"read_bps": 8_000_000})
    assert dx.batch_length(throttled, "w01") == 4 and sizing.min_measure_s(throttled) == 5.0
    assert sizing.batch_for(throttled, "w01", JOB_S, {"x264": 12_000_000}) == 4
    # 2 MB a job: 20 jobs read for 5 s, the first step past it 24 (CPU time alone: 50 jobs)
    assert sizing.batch_for(throttled, "w01", JOB_S, {"x264": 2_000_000}) == 24
    # without the cap the reads bound nothing: the batch grows by its jobs' times, as before
    free = cfg(workloads=["w01"])
    cpu_only = sizing.batch_for(free, "w01", JOB_S)
    assert sizing.batch_for(free, "w01", JOB_S, {"x264": 12_000_000}) == cpu_only
    assert 50 <= cpu_only < 64 and cpu_only == sizing.batch_for(throttled, "w01", JOB_S, {"x264": 1})


def test_the_calibration_records_the_batches_reads_at_the_throttle(tmp_path, monkeypatch):
    c = cfg(workloads=["w01", "w06"], throttle={"read_bps": 8_000_000})
    monkeypatch.setattr(sizing, "time_app", lambda cfg, cal, app, d: JOB_S[app])
    monkeypatch.setattr(sizing, "make_data", lambda cfg, d, record: {"made": []})
    cal = dx.calibrate(c, tmp_path)
    # KM re-reads its 6.4 MB file (1e5 points x 16 float32 at scale 0.05) in each of 10 iterations
    assert cal["read_bps"] == 8_000_000 and cal["job_read_bytes"]["km"] == 100_000 * 16 * 4 * 10
    assert cal["job_io_s"]["km"] == 8.0 and cal["job_s"] == JOB_S and "job_io_s" in cal["job_s_note"]
    # w06: its 2 KM jobs read for 16 s, past the 5 s, their CPU times 1.5 s: not lengthened
    assert cal["batch_length"]["w06"] == 2
    assert cal["batch_s"]["w06"] == {"cpu_bound_s": 1.5, "io_bound_s": 16.0, "expected_s": 16.0}
    # w01: x264's 6-frame clips, 2 MB each, read for 5 s by the first batch that lasts it (24 jobs)
    w01 = cal["batch_s"]["w01"]
    assert w01["expected_s"] == w01["io_bound_s"] >= 5.0 > w01["cpu_bound_s"]
    assert cal["batch_length"]["w01"] < 50  # sized by CPU time alone it had 50 jobs or more
    free = dx.calibrate(cfg(workloads=["w06"]), tmp_path)
    assert free["read_bps"] is None and free["job_io_s"] is None and free["batch_length"]["w06"] == 7
    assert free["batch_s"]["w06"]["io_bound_s"] == 0.0


def test_a_job_reads_its_input_files_kms_once_per_iteration():
    e = cfg(workloads=["w01", "w06", "w07"])["dynamic_io"]
    assert dx.read_bytes(e, "km") == dx.scaled_app(e, "km")["points"] * 16 * 4 * 10
    ps = dx.scaled_app(e, "ps")
    assert dx.read_bytes(e, "ps") == 3 * ps["paper_bytes"]  # the paper and its K = 2 others
    assert dx.read_bytes(e, "graph_s22_e16") == 0  # the batch's shared graph folder, cached

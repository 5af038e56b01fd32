"""noisy_neighbour's alone CPU runs sized in time (experiments.noisy_neighbour.sizing): the
calibrate step times one job of each CPU workload, the alone run repeats it one after another on
one CPU to last min_intervals perf intervals, recorded in calibration.json and its labels; a run
that still came out shorter is measured again longer, its copies still one after another."""

import json

import pytest
import yaml

from corun.errors import CorunError
from corun.run import runner
from experiments.noisy_neighbour import experiment as nn
from experiments.noisy_neighbour import sizing
from experiments.noisy_neighbour.tests.test_experiment import cfg_with
from tests.fake_runs import fake_runner


def cfg(**extra):
    return cfg_with({"reps": 1, "alone_reps": 2, "use_workloads": ["mcf_r", "lbm_r"], **extra})


def test_the_calibration_times_each_workload_and_gives_its_alone_run_copies(tmp_path, monkeypatch):
    times = iter([0.3, None])  # mcf_r's job (or its stand-in's) 0.3 s, lbm_r's still running at 5 s
    limits = []
    monkeypatch.setattr(sizing, "time_up_to", lambda cmd, env, cwd, limit: limits.append(limit) or next(times))
    c = cfg()
    cal = nn.EXPERIMENT.calibrate(c, tmp_path)
    assert nn.EXPERIMENT.calibrates and cal["min_measure_s"] == 5.0 and limits == [5.0, 5.0]  # 5 intervals of 1 s
    assert cal["job_s"] == {"mcf_r": 0.3, "lbm_r": None} and cal["copies"] == {"mcf_r": 17, "lbm_r": 1}


def test_timing_a_job_stops_it_at_the_limit_and_a_failure_is_one_line():
    assert 0 <= sizing.time_up_to(["/bin/true"], None, None, 5.0) < 5.0
    assert sizing.time_up_to(["/bin/sh", "-c", "sleep 30 & wait"], None, None, 0.3) is None  # its group killed
    with pytest.raises(CorunError) as err:
        sizing.time_up_to(["/bin/sh", "-c", "echo broken >&2; exit 3"], None, None, 5.0)
    assert "exit 3: broken" in str(err.value) and "\n" not in str(err.value)


@pytest.mark.parametrize("workload, copies", [("mcf_r", 17), ("lbm_r", 1)])
def test_an_alone_run_repeats_its_job_one_after_another_on_one_cpu(tmp_path, workload, copies):
    c = cfg()
    cal = {
        "needed": True,
        "min_measure_s": 5.0,
        "job_s": {"mcf_r": 0.3, "lbm_r": 12.0},
        "copies": {"mcf_r": 17, "lbm_r": 1},
    }
    p = {"kind": "alone_cpu", "workload": workload, "rep": 0}
    spec = nn.make_spec(c, p, tmp_path, 4, cal, cpu=2)
    assert len(spec["jobs"]) == copies and spec["jobs"][0]["name"] == f"{workload}-0"
    assert spec["placement"] == {"cmp": {"grouping": "explicit", "groups": [[2]]}}  # one CPU: one job at a time
    assert spec["labels"]["copies"] == copies and spec["labels"]["min_measure_s"] == 5.0
    assert spec["labels"]["job_s"] == cal["job_s"][workload] and spec["remeasure"]["min_measure_s"] == 5.0
    io = nn.make_spec(c, {"kind": "alone_io", "workload": "fio_randwrite", "rep": 0}, tmp_path, 4, cal)
    assert len(io["jobs"]) == 1 and "remeasure" not in io  # fio runs its own runtime_s


def test_without_a_calibration_an_alone_run_is_one_job_still_measured_again_when_short(tmp_path):
    spec = nn.make_spec(cfg(), {"kind": "alone_cpu", "workload": "mcf_r", "rep": 0}, tmp_path, 2, {"needed": False})
    assert len(spec["jobs"]) == 1 and spec["labels"]["copies"] == 1 and spec["labels"]["job_s"] is None
    assert spec["remeasure"]["min_measure_s"] == 5.0


def test_a_short_alone_run_is_measured_again_longer_its_copies_one_after_another(tmp_path, monkeypatch):
    spec = nn.make_spec(cfg(), {"kind": "alone_cpu", "workload": "mcf_r", "rep": 0}, tmp_path, 2, {"needed": False})
    path = tmp_path / "alone.yaml"
    path.write_text(yaml.safe_dump(spec))
    measured = fake_runner(monkeypatch, 1.5)  # one 1.5 s program a copy
    out = runner.run_spec_file(path, tmp_path / "run")
    meta = json.loads((out / "metadata.json").read_text())
    longer = measured[-1]
    assert len(measured) == 2 and len(longer["jobs"]) == 4 and meta["duration_s"] == 6.0
    assert longer["placement"]["cmp"] == spec["placement"]["cmp"] and longer["labels"]["copies"] == 4
    assert [j["name"] for j in longer["jobs"]] == ["mcf_r-0", "mcf_r-0-c1", "mcf_r-0-c2", "mcf_r-0-c3"]
    assert "shorter than the 5 s" in meta["remeasured"]["earlier"][0]["short"]


def test_the_plan_counts_each_alone_cpu_run_at_its_minimum():
    short, long = (nn.EXPERIMENT.estimate(cfg(min_intervals=m))["seconds"] for m in (5, 10))
    assert long - short == pytest.approx(2 * 2 * 5.0)  # 2 workloads x 2 alone reps, 5 s more each

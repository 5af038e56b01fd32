"""bench/workflow_times.py: wall time per rule read from a Snakemake log."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("workflow_times", ROOT / "bench" / "workflow_times.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

FIXTURES = ROOT / "tests" / "fixtures" / "snakemake"
# jobs 5 and 7 one after another, job 8 overlapping job 9, which never finishes
LOG = (FIXTURES / "interleaved.snakemake.log").read_text()


def write_metadata(results, exp, name, meta):
    """RESULTS/EXP/runs/NAME/metadata.json holding META."""
    run = results / exp / "runs" / name
    run.mkdir(parents=True)
    (run / "metadata.json").write_text(json.dumps(meta))


def test_jobs_are_timed_from_their_start_to_their_finish():
    done, span = bench.parse(LOG.splitlines())
    assert done == [("make_x_data", 1.0), ("run_x", 10.0), ("run_x", 25.0)]
    assert span == 38.0


def test_a_log_without_finished_jobs_is_an_error(tmp_path, capsys):
    log = tmp_path / "empty.snakemake.log"
    log.write_text("Building DAG of jobs...\n")
    assert bench.main([str(log)]) == 1
    assert "no finished job" in capsys.readouterr().err


def test_the_table_lists_rules_by_time(tmp_path, capsys):
    log = tmp_path / "x.snakemake.log"
    log.write_text(LOG)
    assert bench.main([str(log)]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[2].split()[:3] == ["run_x", "2", "35"]
    assert out[3].split()[:3] == ["make_x_data", "1", "1"]


def test_run_phases_are_summed_per_experiment_and_runs_without_them_are_counted(tmp_path, capsys):
    def run(exp, name, phases):
        write_metadata(tmp_path, exp, name, {"phases_s": phases} if phases else {})

    p = {"process_start_s": 0.3, "prepare_s": 0.1, "setup_s": 1.0, "jobs_s": 4.0, "teardown_s": 0.5, "tables_s": 0.1}
    run("a", "r1", p)
    run("a", "r2", {**p, "jobs_s": 6.0})
    run("a", "old", None)
    run("b", "r1", p)
    per = bench.run_phases(tmp_path)
    assert per["a"]["runs"] == 3 and per["a"]["unrecorded"] == 1
    assert per["a"]["jobs_s"] == 10.0 and abs(per["a"]["setup_s"] - 2.0) < 1e-9
    assert per["b"]["runs"] == 1
    assert bench.print_phases(tmp_path) == 0
    rows = capsys.readouterr().out.splitlines()
    a_row = next(r for r in rows if r.startswith("a "))
    assert a_row.split()[:11] == ["a", "3", "0.6", "0.2", "2.0", "10.0", "1.0", "0.2", "0.0", "4.0", "(1"]
    assert a_row.endswith("(1 runs without phases_s)")


def test_attempts_measured_again_are_a_column_of_their_own_not_the_process_start(tmp_path, capsys):
    p = {"process_start_s": 12.3, "prepare_s": 0.1, "setup_s": 1.0, "jobs_s": 4.0, "teardown_s": 0.5, "tables_s": 0.1}
    write_metadata(tmp_path, "a", "r1", {"phases_s": p, "remeasured": {"earlier": [{"duration_s": 12.0}]}})
    assert bench.print_phases(tmp_path) == 0
    row = next(r for r in capsys.readouterr().out.splitlines() if r.startswith("a "))
    assert row.split() == ["a", "1", "0.3", "0.1", "1.0", "4.0", "0.5", "0.1", "12.0", "2.0"]


def test_a_results_folder_without_runs_is_an_error(tmp_path, capsys):
    assert bench.print_phases(tmp_path) == 1
    assert "no run" in capsys.readouterr().err


# a run, its analysis, a look of the sequential design, a group of runs and the report
SHARE_LOG = (FIXTURES / "harness_share.snakemake.log").read_text()


def test_jobs_carry_their_wildcards_and_belong_to_their_experiment():
    jobs, span = bench.parse_jobs(SHARE_LOG.splitlines())
    assert span == 50.0
    assert jobs[2] == ("decide_looks", 2.0, {"exp": "sais", "look": "1"})
    names = ["mpl_sweep", "sais", "pfs"]
    assert [bench.experiment_of(r, wc, names) for r, _, wc in jobs] == ["mpl_sweep", "mpl_sweep", "sais", "sais", None]


def test_harness_share_per_experiment_and_in_total(tmp_path, capsys):
    for exp, name, jobs_s in (("mpl_sweep", "r1", 8.0), ("sais", "a", 5.0), ("sais", "b", 5.0)):
        write_metadata(tmp_path, exp, name, {"phases_s": {"jobs_s": jobs_s}})
    # an attempt measured again for steal counts as measuring, not as the harness's cost
    again = {"earlier": [{"attempt": 1, "duration_s": 4.0}]}
    write_metadata(tmp_path, "mpl_sweep", "r2", {"phases_s": {"jobs_s": 2.0}, "remeasured": again})
    jobs, span = bench.parse_jobs(SHARE_LOG.splitlines())
    rows = bench.harness_share(jobs, span, bench.run_phases(tmp_path))
    by = {r[0]: r for r in rows}
    assert by["mpl_sweep"][1:6] == (20.0, 2, 10.0, 0.0, 4.0) and abs(by["mpl_sweep"][6] - 0.3) < 1e-9
    assert by["sais"][1:6] == (20.0, 2, 10.0, 0.0, 0.0) and abs(by["sais"][6] - 0.5) < 1e-9
    assert by["(other rules)"][1] == 10.0 and by["(other rules)"][6] == 1.0
    assert by["total"][1:6] == (50.0, 4, 20.0, 0.0, 4.0) and abs(by["total"][6] - 26 / 50) < 1e-9
    log = tmp_path / "x.snakemake.log"
    log.write_text(SHARE_LOG)
    assert bench.main([str(log), "--runs", str(tmp_path)]) == 0
    out = capsys.readouterr().out
    assert "the harness's share" in out
    assert out.splitlines()[-1].split() == ["total", "50.0", "4", "20.0", "0.0", "4.0", "52.0"]


def test_measurements_that_are_not_runs_are_measuring_not_the_harness(tmp_path, capsys):
    """A premise measured beside an experiment's runs counts for that experiment, the device's
    calibration (a folder of no experiment) for the other rules; a run's own files, a JSON
    without phases_s and a broken one count nothing."""
    write_metadata(tmp_path, "mpl_sweep", "r1", {"phases_s": {"jobs_s": 8.0}})
    write_metadata(tmp_path, "sais", "a", {"phases_s": {"jobs_s": 10.0}})
    premise = tmp_path / "sais" / "premise" / "alone" / "r0"
    premise.mkdir(parents=True)
    (premise / "summary.json").write_text(json.dumps({"phases_s": {"jobs_s": 4.0}, "layout": "alone"}))
    (tmp_path / "sais" / "analysis").mkdir()
    (tmp_path / "sais" / "analysis" / "claims.json").write_text(json.dumps({"rows": []}))
    (tmp_path / "sais" / "analysis" / "broken.json").write_text('{"phases_s": ')
    (tmp_path / "device").mkdir()
    (tmp_path / "device" / "calibration.json").write_text(json.dumps({"phases_s": {"jobs_s": 6.0}}))
    outside = bench.measured_outside_runs(tmp_path)
    assert outside == {"sais": 4.0, "device": 6.0}
    jobs, span = bench.parse_jobs(SHARE_LOG.splitlines())
    by = {r[0]: r for r in bench.harness_share(jobs, span, bench.run_phases(tmp_path), outside)}
    # sais: 20 s in Snakemake, 10 s of runs, 4 s of premise: 6 s of harness
    assert by["sais"][1:6] == (20.0, 1, 10.0, 4.0, 0.0) and abs(by["sais"][6] - 0.3) < 1e-9
    assert by["(other rules)"][4] == 6.0 and abs(by["(other rules)"][6] - 0.4) < 1e-9
    assert by["total"][3:6] == (18.0, 10.0, 0.0) and abs(by["total"][6] - 22 / 50) < 1e-9

"""bench/workflow_times.py: wall time per rule read from a Snakemake log."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
spec = importlib.util.spec_from_file_location("workflow_times", ROOT / "bench" / "workflow_times.py")
bench = importlib.util.module_from_spec(spec)
spec.loader.exec_module(bench)

LOG = """\
Select jobs to execute...
[Tue Nov 24 08:12:02 2026]
localrule make_x_data:
    output: results/local/data/x/layout.json
    jobid: 5
Shell command: python -m experiments data x
[Tue Nov 24 08:12:03 2026]
Finished jobid: 5 (Rule: make_x_data)
[Tue Nov 24 08:12:04 2026]
rule run_x:
    jobid: 7
    wildcards: run=a
[Tue Nov 24 08:12:14 2026]
Finished jobid: 7 (Rule: run_x)
[Tue Nov 24 08:12:15 2026]
rule run_x:
    jobid: 8
[Tue Nov 24 08:12:20 2026]
rule never_finished:
    jobid: 9
[Tue Nov 24 08:12:40 2026]
Finished jobid: 8 (Rule: run_x)
"""


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
    import json

    def run(exp, name, phases):
        d = tmp_path / exp / "runs" / name
        d.mkdir(parents=True)
        meta = {"phases_s": phases} if phases else {}
        (d / "metadata.json").write_text(json.dumps(meta))

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
    assert a_row.split()[:10] == ["a", "3", "0.6", "0.2", "2.0", "10.0", "1.0", "0.2", "4.0", "(1"]
    assert a_row.endswith("(1 runs without phases_s)")


def test_a_results_folder_without_runs_is_an_error(tmp_path, capsys):
    assert bench.print_phases(tmp_path) == 1
    assert "no run" in capsys.readouterr().err

"""corun's Snakemake logger plugin (workflows/logger): the progress per experiment from a recorded
sequence of log events, and a tiny workflow run with it."""

import io
import logging
import subprocess
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "workflows" / "logger"))

from snakemake_interface_logger_plugins.common import LogEvent  # noqa: E402
from snakemake_logger_plugin_corun import LogHandler  # noqa: E402
from snakemake_logger_plugin_corun.progress import Progress, clock  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
PLAN = {
    "experiments": [
        {"name": "alpha", "runs": 4, "seconds": 40.0, "cap_runs": 8},
        {"name": "beta", "runs": 2, "seconds": 20.0, "cap_runs": 2},
    ],
    "steps": {"run": {}, "run_groups": {"runs": {"beta/1": 2}}},
    "outputs": {
        "alpha": [[f"res/alpha/runs/r{i}", 1, "run", 1] for i in range(1, 5)],
        "beta": [["res/beta/groups/1", 2, "run_groups", 1]],
    },
}
NOTHING_THERE = lambda path: False  # noqa: E731


def _events(p: Progress) -> None:
    """alpha: 4 runs of 10 s planned, measured at 20 s each; beta: one group job of 2 runs."""
    p.plan(PLAN)
    p.tick(100.0)
    p.run_info({"run": 4, "run_groups": 1, "collect": 2}, exists=NOTHING_THERE)
    p.job_info(1, "run", {"exp": "alpha", "run": "r1"}, ["res/alpha/runs/r1"], 100.0)
    p.job_finished(1, 120.0)
    p.job_info(2, "run", {"exp": "alpha", "run": "r2"}, ["res/alpha/runs/r2"], 120.0)
    p.job_finished(2, 140.0)
    p.job_info(3, "run", {"exp": "alpha", "run": "r3"}, ["res/alpha/runs/r3"], 140.0)
    p.progress(2, 10, 145.0)


def test_counts_and_estimates_corrected_by_measured_runs():
    p = Progress()
    _events(p)
    a, b = p.experiments["alpha"], p.experiments["beta"]
    assert (a.done, a.target(), b.done, b.target()) == (2, 4, 0, 2)
    # alpha's runs took 20 s, not the plan's 10: 2 runs left at 20 s, 5 s of the third spent
    assert a.left_s(*p.running_of("alpha")) == pytest.approx(35.0)
    assert b.left_s() == pytest.approx(20.0)  # nothing measured: the plan's estimate ...
    assert p.factor() == pytest.approx(2.0) and p.left_of("beta") == pytest.approx(40.0)  # ... as slow as alpha's
    lines = p.lines()
    assert lines[0] == "corun: 2 of 6 runs, 0:45 so far, ~1:15 left (2 of 10 steps, running)"
    assert "  alpha                   2 of 4       0:45    ~0:35 (up to 8)" in lines
    assert "  beta                    0 of 2       0:00    ~0:40" in lines
    assert lines[-1] == "  measuring now: alpha r3 (0:05)"


def test_group_job_counts_its_runs_and_earlier_runs_count_as_done():
    p = Progress()
    p.plan(PLAN)
    # 3 of alpha's runs measured before
    p.run_info(
        {"run": 1, "run_groups": 1},
        exists=lambda path: path in {"res/alpha/runs/r1", "res/alpha/runs/r2", "res/alpha/runs/r4"},
    )
    assert p.experiments["alpha"].done == 3
    p.job_info(7, "run_groups", {"exp": "beta", "look": "1"}, ["res/beta/groups/1"], 10.0)
    assert p.lines()[-1] == "  measuring now: beta: 2 runs on a cluster (0:00)"
    p.job_finished(7, 40.0)
    assert p.experiments["beta"].done == 2 and p.experiments["beta"].left_s() == 0.0
    p.finished = True
    assert p.lines()[0] == "corun: 5 of 6 runs, 0:30 so far"
    assert clock(3725) == "1:02:05"


def test_jobs_run_again_over_outputs_there_count_as_runs_left():
    """Snakemake counts jobs per rule, one rule for every experiment: runs done before but
    outdated (their outputs there) are runs left, not runs done."""
    p = Progress()
    p.plan(PLAN)
    p.run_info({"run": 4, "run_groups": 1}, exists=lambda path: True)
    assert [(e.done, e.to_run) for e in p.experiments.values()] == [(0, 4), (0, 2)]
    p.run_info({"run": 0}, exists=lambda path: True)  # nothing to measure: everything was
    assert [(e.done, e.to_run) for e in p.experiments.values()] == [(4, 0), (2, 0)]


def test_a_later_look_of_one_experiment_takes_no_job_count_of_another():
    """A fresh campaign's DAG holds the first looks only: a sequential design's later runs (in
    the plan, not yet asked for) are not runs left, and another experiment's runs of the same
    rule are not counted done for them (the local profile's mpl_sweep read "run 106 of 105")."""
    plan = {
        "experiments": [
            {"name": "alpha", "runs": 2, "seconds": 20.0, "cap_runs": 6},
            {"name": "beta", "runs": 3, "seconds": 30.0},
            {"name": "gamma", "runs": 2, "seconds": 20.0},
        ],
        "steps": {"run": {}, "run_across_hosts": {}, "run_groups": {"runs": {"gamma/1": 2}}},
        "outputs": {
            "alpha": [[f"a/r{i}", 1, "run", 1 + i // 2] for i in range(6)],
            "beta": [[f"b/r{i}", 1, "run_across_hosts", 1] for i in range(3)],
            "gamma": [["g/groups/1", 2, "run_groups", 1], ["g/groups/2", 2, "run_groups", 2]],
        },
    }
    p = Progress()
    p.plan(plan)
    p.run_info({"run": 2, "run_across_hosts": 3, "run_groups": 1}, exists=NOTHING_THERE)
    assert [(e.done, e.to_run, e.target()) for e in p.experiments.values()] == [(0, 2, 2), (0, 3, 3), (0, 2, 2)]
    # a rerun after alpha's checkpoint asked for its second look: 2 of its runs there, 2 to go
    p = Progress()
    p.plan(plan)
    there = {"a/r0", "a/r1", "b/r0", "b/r1", "b/r2", "g/groups/1"}
    p.run_info({"run": 2, "run_across_hosts": 0, "run_groups": 0}, exists=there.__contains__)
    assert [(e.done, e.to_run) for e in p.experiments.values()] == [(2, 2), (3, 0), (2, 0)]
    # the same invocation's checkpoint asks for a later look: Snakemake logs no count again, so
    # the look's first job brings its runs (the local profile's sais read "run 37 of 36", then
    # "108 of 107": each run raised both)
    p = Progress()
    p.plan(plan)
    done = set()
    p.run_info({"run": 2, "run_across_hosts": 3, "run_groups": 1}, exists=done.__contains__)
    for i, out in enumerate(["a/r0", "a/r1"]):
        p.job_info(i, "run", {"exp": "alpha", "run": out[2:]}, [out], float(i))
        p.job_finished(i, i + 1.0)
        done.add(out)
    p.job_info(5, "run", {"exp": "alpha", "run": "r2"}, ["a/r2"], 10.0)
    assert "(run 3 of 4, " in p.line(p.jobs[5])
    p.job_finished(5, 11.0)
    done.add("a/r2")
    p.job_info(6, "run", {"exp": "alpha", "run": "r3"}, ["a/r3"], 11.0)
    assert "(run 4 of 4, " in p.line(p.jobs[6])
    p.job_info(7, "run_groups", {"exp": "gamma", "look": "2"}, ["g/groups/2"], 11.0)
    assert p.experiments["gamma"].target() == 4  # its first look's 2 and the second's 2


class _Settings:
    dryrun = False
    stdout = False
    printshellcmds = True
    nocolor = True
    quiet = None
    debug_dag = False
    verbose = False
    show_failed_logs = True


def _record(msg, event=None, t=0.0, level=logging.INFO, **extra):
    r = logging.LogRecord("snakemake", level, "", 0, msg, None, None)
    r.created = t
    if event is not None:
        r.event = event
    r.__dict__.update(extra)
    return r


def test_handler_prints_a_line_per_run_and_the_table_at_the_end():
    h = LogHandler(_Settings(), None)
    h.stream = io.StringIO()
    h.setFormatter(logging.Formatter("%(message)s"))
    h.emit(_record("", t=1.0, corun_plan=PLAN))
    h.emit(_record("Select jobs to execute...", t=1.0))
    h.emit(_record(None, LogEvent.RUN_INFO, 1.0, stats={"run": 4, "run_groups": 1}))
    h.emit(
        _record(
            "", LogEvent.JOB_INFO, 1.0, jobid=1, rule_name="run", wildcards={"exp": "alpha", "run": "r1"}, output=[]
        )
    )
    h.emit(_record("", LogEvent.JOB_FINISHED, 11.0, job_id=1))
    h.emit(_record("Nothing else", t=12.0))
    out = h.stream.getvalue()
    assert out.splitlines() == [
        "corun: measuring alpha r1 (run 1 of 4, 0:00 so far, ~0:40 left; all: 0 of 6 runs, ~1:00 left)",
        "Nothing else",
    ]
    h.close()
    assert "  alpha                   1 of 4       0:10    ~0:30 (up to 8)" in h.stream.getvalue()


def test_a_tiny_workflow_run_with_the_plugin(tmp_path):
    plan = {
        "experiments": [{"name": "alpha", "runs": 2, "seconds": 4.0}],
        "steps": {"run": {}},
        "outputs": {"alpha": [["res/alpha/runs/r1", 1, "run", 1], ["res/alpha/runs/r2", 1, "run", 1]]},
    }
    (tmp_path / "Snakefile").write_text(
        "from snakemake.logging import logger\n"
        f"logger.info('', extra=dict(corun_plan={plan!r}))\n"
        "rule all:\n    input: expand('res/alpha/runs/{run}', run=['r1', 'r2'])\n"
        "rule run:\n    output: 'res/{exp}/runs/{run}'\n    shell: 'touch {output}'\n"
    )
    res = subprocess.run(
        [str(ROOT / ".venv/bin/snakemake"), "--cores", "1", "--logger", "corun", "--", "all"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert res.returncode == 0, res.stderr[-2000:]
    assert "corun: measuring alpha r" in res.stderr
    assert (
        "corun: measuring alpha r2 (run 2 of 2" in res.stderr or "corun: measuring alpha r1 (run 2 of 2" in res.stderr
    )
    assert "  alpha                   2 of 2" in res.stderr
    assert "rule run:" not in res.stderr  # Snakemake's own log stays in its file
    (log,) = (tmp_path / ".snakemake" / "log").glob("*.snakemake.log")
    assert "rule run:" in log.read_text()
    assert f"Complete log(s): {log}" in res.stderr
    again = subprocess.run(res.args, cwd=tmp_path, capture_output=True, text=True, timeout=300)
    assert "Nothing to be done" in again.stderr and "corun:" not in again.stderr  # no table of nothing

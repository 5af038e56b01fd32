"""analysis.collect: job labels become plain columns; one that would take the name of a column
of the runner's own is a one-line error, not two columns of one name (which pandas cannot
concatenate across runs)."""

import pandas as pd
import pytest

from analysis import collect
from analysis.synthetic import write_run
from corun.run import run_length


def _with_label(run, name, value):
    f = run / "jobs.csv"
    jobs = pd.read_csv(f)
    jobs[f"label_{name}"] = value
    jobs.to_csv(f, index=False)


def test_runs_with_and_without_the_repeat_label_collect_into_one_table(tmp_path):
    a = write_run(tmp_path / "a", "linux", [1.0, 1.1])
    b = write_run(tmp_path / "b", "linux", [1.0, 1.2])
    _with_label(a, "repeat", [0, 1])
    jobs, runs = collect.collect([a, b])
    assert len(jobs) == 4 and list(jobs.columns).count("repeat") == 1
    assert jobs["repeat"].fillna(0).tolist() == [0, 1, 0, 0]


def test_a_label_named_like_a_runner_column_is_one_line(tmp_path):
    a = write_run(tmp_path / "a", "linux", [1.0])
    assert "copy" in pd.read_csv(a / "jobs.csv").columns  # the runner's own
    _with_label(a, "copy", [0])
    with pytest.raises(collect.CollectError) as exc:
        collect.collect([a])
    assert "'copy'" in str(exc.value) and "jobs.csv" in str(exc.value) and "\n" not in str(exc.value)


def test_repeated_jobs_are_labelled_apart_from_the_runners_columns():
    jobs = [{"name": "j", "cmd": ["true"], "labels": {}}]
    out = run_length.repeat_jobs(jobs, 2)
    assert [j["labels"]["repeat"] for j in out] == [0, 1] and all("copy" not in j["labels"] for j in out)

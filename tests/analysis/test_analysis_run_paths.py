"""analysis.common.resolve_run_paths: which run folder a runs.csv row names."""

from __future__ import annotations

import os

import pandas as pd
import pytest

from analysis.common import AnalysisInputError, resolve_run_paths

REL = os.path.join("results", "local", "e", "runs", "r1", "metadata.json")


def checkout(root):
    (root / REL).parent.mkdir(parents=True)
    (root / REL).write_text("{}")
    runs_csv = root / "results" / "local" / "e" / "runs.csv"
    pd.DataFrame({"metadata_path": [REL]}).to_csv(runs_csv, index=False)
    return runs_csv


def test_another_checkouts_tables_read_that_checkouts_runs(tmp_path, monkeypatch):
    here, other = checkout(tmp_path / "here"), checkout(tmp_path / "other")
    monkeypatch.chdir(tmp_path / "here")  # holds a run of the same relative name
    (path,) = resolve_run_paths(pd.read_csv(other), other)
    assert path.resolve() == (tmp_path / "other" / REL).resolve()
    (path,) = resolve_run_paths(pd.read_csv(here), os.path.relpath(here))
    assert str(path) == REL  # the workflow's own case: the path as written


def test_moved_tables_and_missing_runs(tmp_path, monkeypatch):
    runs_csv = checkout(tmp_path / "a")
    monkeypatch.chdir(tmp_path)
    moved = pd.DataFrame({"metadata_path": ["/gone/machine/results/local/e/runs/r1/metadata.json"]})
    (path,) = resolve_run_paths(moved, runs_csv)
    assert path.resolve() == (tmp_path / "a" / REL).resolve()  # the longest tail found
    (path,) = resolve_run_paths(pd.DataFrame({"metadata_path": ["nowhere/r9/metadata.json"]}), runs_csv)
    assert str(path) == "nowhere/r9/metadata.json"
    with pytest.raises(AnalysisInputError, match="row 2: metadata_path: nan"):
        resolve_run_paths(pd.DataFrame({"metadata_path": [float("nan")]}), runs_csv)

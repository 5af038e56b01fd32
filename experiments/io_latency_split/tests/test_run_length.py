"""A cmp_stacking run shorter than the iostat intervals its waiting and serving times need is
failed with that reason (analysis.run_length), and its intervals are not pooled into its k."""

import pandas as pd
import pytest

from analysis import runtables as rt
from experiments.io_latency_split import metrics as iom
from experiments.io_latency_split.tests.test_analysis import STACK, at, fixture_result  # noqa: F401


def tables(runs: pd.DataFrame, jobs: pd.DataFrame) -> dict:
    return iom.latency_tables(jobs, runs, rt.run_dirs(runs, STACK / "runs.csv"), rt.MissingLog())


def test_a_run_shorter_than_its_latency_needs_is_failed_and_not_pooled(fixture_result):  # noqa: F811
    jobs, runs = fixture_result["jobs"], fixture_result["all_runs"].copy()
    runs.loc[runs["run_id"] == "w1_k1_r0", "duration_s"] = 2.5  # two 1 s iostat intervals inside it
    t = tables(runs, jobs)
    ev = iom.evidence(t["runs"], jobs, runs, "x264_simlarge")
    r = ev["runs"].set_index("run_id")
    assert r.loc["w1_k1_r0", "failed"]
    assert r.loc["w1_k1_r0", "failed_reason"].startswith(
        f"run shorter than the {iom.MIN_IO_INTERVALS} iostat intervals its metric needs (2.50 s measured"
    )
    assert not r.loc["w1_k1_r1", "failed"]
    assert ev["growth"].set_index("run_id").loc["w1_k2_r0", "failed"]
    # k = 1 pools rep 1's intervals only (rep 0's two were 150 requests of 300)
    assert at(t["table"], "x264_simlarge", 1, "n_runs_with_io") == 1
    assert at(t["table"], "x264_simlarge", 1, "wait_ms") == pytest.approx(4.0)
    assert at(t["table"], "x264_simlarge", 1, "io_requests") == pytest.approx(150.0)

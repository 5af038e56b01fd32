"""Memory utilization against I/O contention (paper 000, Fig. 8), counted by hand."""

import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis import report
from analysis import runtables as rt
from analysis.common import AnalysisInputError
from analysis.paper import load_paper_values
from experiments.implicit_io import analysis as imp

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "implicit_io"
PAPER = load_paper_values("000")


def analyse(criterion=imp.DEFAULT_CRITERION, runs=None, runs_csv=FIXTURES / "runs.csv"):
    jobs = imp.read_jobs(FIXTURES / "jobs.csv")
    runs = imp.read_runs(runs_csv) if runs is None else runs
    log = rt.MissingLog()
    result = imp.analyse(jobs, runs, rt.run_dirs(runs, runs_csv), imp.parse_criterion(criterion), log)
    result["log"] = log
    return result


@pytest.fixture(scope="module")
def default():
    return analyse()


def level(table, scale, edgefactor, column):
    hit = table.loc[(table["scale"] == scale) & (table["edgefactor"] == edgefactor), column]
    assert len(hit) == 1
    return hit.iloc[0]


def test_per_run_values_by_hand(default):
    runs = default["runs"].set_index("run_id")
    r = runs.loc["s18_e16_k2_r1"]
    # cg_used_pct 70, 74, 76, 76 inside the run (the row after the run, 99 %, is left out)
    assert r["memory_basis"] == "cgroup cap (cg_used_pct)"
    assert r["mem_util_pct"] == pytest.approx(74.0)
    assert r["mem_util_peak_pct"] == pytest.approx(76.0)
    # PSI io some 20, 25, 50, 10: all four >= 10 (10 counts); t_s 0 and 5.5 lie outside
    assert (r["n_intervals"], r["n_contended"]) == (4, 4)
    assert r["contention_share"] == pytest.approx(1.0)
    assert r["majfault_per_s"] == pytest.approx(900.0)
    # 4 jobs x 96 MiB of storage over a 512 MiB cap
    assert r["storage_pct_of_memory"] == pytest.approx(75.0)
    r = runs.loc["s17_e16_k2_r0"]  # 5, 12, 8, 3 -> 1 of 4
    assert r["contention_share"] == pytest.approx(0.25)


def test_levels_by_hand(default):
    t = default["table"]
    assert level(t, 16, 8, "mem_util_pct") == pytest.approx((25 + 30) / 2)
    assert level(t, 16, 16, "mem_util_pct") == pytest.approx((40 + 44) / 2)
    assert level(t, 17, 16, "contention_share") == pytest.approx(3 / 8)
    assert level(t, 18, 16, "contention_share") == pytest.approx(7 / 8)
    assert level(t, 16, 8, "contention_share") == 0.0
    assert level(t, 18, 16, "mem_util_peak_pct") == pytest.approx(76.0)
    assert level(t, 18, 16, "teps_harmonic_mean") == pytest.approx(4 / (2 / 2e6 + 2 / 4e6))
    assert level(t, 18, 16, "storage_bytes_per_job") == 100663296
    assert level(t, 18, 16, "label") == "s18/e16"


def test_iostat_util_criterion_by_hand():
    t = analyse("iostat_util_pct>=80")["table"]
    # util >= 80: s16/e16 85 once in 8 intervals; s17/e16 90, 80 | 95, 95; s18/e16 3 | 4
    assert level(t, 16, 8, "contention_share") == 0.0
    assert level(t, 16, 16, "contention_share") == pytest.approx(1 / 8)
    assert level(t, 17, 16, "contention_share") == pytest.approx(4 / 8)
    assert level(t, 18, 16, "contention_share") == pytest.approx(7 / 8)
    assert (level(t, 16, 16, "n_intervals"), level(t, 16, 16, "criterion")) == (
        8,
        "iostat_util_pct>=80",
    )


def test_await_without_io_counts_as_not_contended():
    t = analyse("iostat_await_ms>=4")["table"]
    # s16/e16: rep 0 has I/O in all 4 intervals (await 4 ms), rep 1 none (await NaN)
    assert (level(t, 16, 16, "n_contended"), level(t, 16, 16, "n_intervals")) == (4, 8)


def test_system_basis_without_a_cap(tmp_path):
    runs = pd.read_csv(FIXTURES / "runs.csv")
    runs["memory_limit_bytes"] = None
    for col in ("metadata_path", "run_dir"):
        runs[col] = [str(FIXTURES / p) for p in runs[col]]
    runs.to_csv(tmp_path / "runs.csv", index=False)
    result = analyse(runs_csv=tmp_path / "runs.csv")
    t, per_run = result["table"], result["runs"]
    assert set(per_run["memory_basis"]) == {"system (mem_used_pct)"}
    # mem_used_pct is cg_used_pct - 10 in the fixture
    assert level(t, 18, 16, "mem_util_pct") == pytest.approx(62.0)
    assert level(t, 18, 16, "majfault_per_s") == pytest.approx(905.0)  # pgmajfault_per_s
    # storage over MemTotal (4000000 kB) without a cap
    assert level(t, 18, 16, "storage_pct_of_memory") == pytest.approx(100 * 4 * 100663296 / (4_000_000 * 1024))


def test_missing_memory_and_psi_tables_are_missing_not_zero(tmp_path):
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    (copy / "runs" / "s16_e8_k2_r0" / "tidy" / "memory.csv").unlink()
    (copy / "runs" / "s16_e8_k2_r0" / "tidy" / "psi.csv").unlink()
    result = analyse(runs_csv=copy / "runs.csv")
    r = result["runs"].set_index("run_id").loc["s16_e8_k2_r0"]
    assert math.isnan(r["mem_util_pct"]) and math.isnan(r["contention_share"])
    assert "tidy/memory.csv absent" in r["reason"] and "tidy/psi.csv absent" in r["reason"]
    # the level keeps its other rep only
    assert level(result["table"], 16, 8, "mem_util_pct") == pytest.approx(30.0)
    metrics = {m["metric"] for m in result["log"].records()}
    assert metrics == {
        "memory utilization (cgroup cap (cg_used_pct))",
        "contention share (psi_io_some_pct>=10)",
    }


def verdicts(result):
    cmp = imp.compare_with_paper(result, PAPER)
    return cmp["verdict"].tolist(), cmp


def test_fixture_verdicts(default):
    got, cmp = verdicts(default)
    assert got == [
        "reproduced in direction",  # 8 runs, rho 0.94
        "reproduced in direction",  # 0 and 0 below 50 %, 0.875 at 72 %
        "differs (machine-specific)",
        "differs (machine-specific)",
    ]
    assert cmp["measured_value"].iloc[2] == pytest.approx(0.875)
    assert cmp["paper_value"].iloc[2] == 0.75 and cmp["paper_value"].iloc[3] == 0.004
    assert cmp["measured_value"].iloc[3] == 0.0  # s16/e16 at 42 %


def test_util_criterion_breaks_the_rare_rule():
    got, _ = verdicts(analyse("iostat_util_pct>=80"))
    assert got[1] == "not reproduced"  # s16/e16 at 42 %: 1/8 >= 0.01


def test_one_level_and_no_level_above_half_are_not_measurable(tmp_path):
    runs = imp.read_runs(FIXTURES / "runs.csv")
    for col in ("metadata_path", "run_dir"):
        runs[col] = [str(FIXTURES / p) for p in runs[col]]
    got, _ = verdicts(analyse(runs=runs[runs["scale"] == 18].reset_index(drop=True)))
    assert got[:2] == ["not measurable here", "not measurable here"]
    low = runs[runs["edgefactor"] == 8].reset_index(drop=True)
    low = pd.concat([low, runs[(runs["scale"] == 16) & (runs["edgefactor"] == 16)]])
    got, cmp = verdicts(analyse(runs=low.reset_index(drop=True)))
    assert got[1] == "not measurable here" and "no level reached 50 %" in cmp["note"].iloc[1]


@pytest.mark.parametrize(
    "text",
    ["psi_io_some_pct>10", "foo>=1", "psi_io_some_pct>=abc", "", "psi_io_some_pct>=1>=2"],
)
def test_bad_criterion_is_one_line_exit_2(tmp_path, capsys, text):
    code = imp.main(
        ["--jobs", str(FIXTURES / "jobs.csv"), "--runs", str(FIXTURES / "runs.csv")]
        + ["--out-dir", str(tmp_path / "out"), f"--criterion={text}"]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert err.startswith(f"experiments.implicit_io.analysis: --criterion: {text!r} (expected METRIC>=NUMBER")
    assert not (tmp_path / "out").exists()


def test_criterion_forms():
    c = imp.parse_criterion(" iostat_wait_ms >= 2e1 ")
    assert (c.metric, c.threshold, c.table, c.column, c.text) == (
        "iostat_wait_ms",
        20.0,
        "iostat",
        "wait_ms",
        "iostat_wait_ms>=20",
    )
    assert imp.parse_criterion("psi_io_some_pct>=10").resource == "io"
    with pytest.raises(AnalysisInputError, match="--criterion"):
        imp.parse_criterion("psi_cpu_some_pct>=10")


def test_fixture_matches_golden_and_section_is_valid(tmp_path):
    out = tmp_path / "out"
    code = imp.main(
        ["--jobs", str(FIXTURES / "jobs.csv"), "--runs", str(FIXTURES / "runs.csv")] + ["--out-dir", str(out)]
    )
    assert code == 0
    golden = FIXTURES / "golden" / "implicit_io.csv"
    assert (out / "implicit_io.csv").read_bytes() == golden.read_bytes()
    section = report.load_section(out / "section.json")
    assert "psi_io_some_pct>=10" in section["figures"][0]["caption"]
    assert "8 run(s) cgroup cap (cg_used_pct)" in section["summary"]
    assert any("page cache was dropped" in n for n in section["notes"])
    assert [m["metric"] for m in section["missing"]] == ["psi_cpu_full"]
    setup = pd.read_csv(out / "setup.csv", dtype=str)
    assert setup["this_run_value"].tolist() == ["27.5", "72.0", "4", "4", "9.2"]
    text = (out / "section.json").read_text()
    assert str(tmp_path) not in text and str(FIXTURES) not in text
    assert (out / imp.FIG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_labels_name_k_when_levels_differ_in_k():
    jobs = imp.read_jobs(FIXTURES / "jobs.csv")
    runs = imp.read_runs(FIXTURES / "runs.csv")
    for df in (jobs, runs):
        df.loc[df["scale"] == 18, "k"] = 1
    result = imp.analyse(
        jobs,
        runs,
        rt.run_dirs(runs, FIXTURES / "runs.csv"),
        imp.parse_criterion(imp.DEFAULT_CRITERION),
        rt.MissingLog(),
    )
    assert result["table"]["label"].tolist() == [
        "s16/e8, k=2",
        "s16/e16, k=2",
        "s17/e16, k=2",
        "s18/e16, k=1",
    ]

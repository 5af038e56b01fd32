"""LLC-miss kernel CC cost (paper 000, Fig. 2): perf-missing fallback and a counted miss rate."""

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis import report
from analysis import runtables as rt
from analysis.paper import load_paper_values
from corun.monitors.perf import NOT_SUPPORTED_REASON
from experiments.llc_miss import analysis as llc

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "llc_miss"
STACKING = (
    Path(__file__).resolve().parents[2] / "cmp_stacking/tests/fixtures/cmp_stacking/golden/normalized_runtime.csv"
)
PAPER = load_paper_values("000")
PERF_REASON = f"LLC-load-misses, LLC-store-misses, cycles: {NOT_SUPPORTED_REASON}"


def analyse(runs_name, time="elapsed"):
    runs_csv = FIXTURES / runs_name
    jobs, runs = llc.read_jobs(FIXTURES / "jobs.csv"), llc.read_runs(runs_csv)
    paths = rt.resolve_run_paths(runs, runs_csv, "metadata_path")
    log = rt.MissingLog()
    result = llc.analyse(
        jobs,
        runs,
        rt.run_dirs(runs, runs_csv),
        dict(zip(runs["run_id"], paths)),
        5.0,
        time,
        log,
    )
    result["log"] = log
    return result


@pytest.fixture(scope="module")
def fallback():
    return analyse("runs.csv")


@pytest.fixture(scope="module")
def counted():
    return analyse("runs_perf.csv")


def at(table, nops, k, column):
    hit = table.loc[(table["nops"] == nops) & (table["k"] == k), column]
    assert len(hit) == 1
    return hit.iloc[0]


def test_degradation_by_hand(fallback):
    t = fallback["table"]
    # elapsed: nops 0 k=1 10 s; k=2 reps 12.0 and 12.4 -> 12.2 -> 22 %
    assert at(t, 0, 2, "degradation_pct") == pytest.approx(22.0)
    assert at(t, 50, 2, "degradation_pct") == pytest.approx(10.0)
    assert at(t, 200, 2, "degradation_pct") == pytest.approx(6.0)  # 21.2 / 20
    # nops 1000: one job with result_check 'mismatch' is left out -> 40.4 / 40
    assert at(t, 1000, 2, "degradation_pct") == pytest.approx(1.0)
    assert (at(t, 1000, 2, "n_jobs"), at(t, 1000, 2, "n_failed")) == (7, 1)
    assert at(t, 0, 1, "degradation_pct") == pytest.approx(0.0, abs=1e-9)


def test_wall_time_option(tmp_path):
    result = analyse("runs.csv", time="runtime")
    # runtime_s = elapsed + 0.6 -> (12.2 + 0.6) / (10 + 0.6) - 1
    assert at(result["table"], 0, 2, "degradation_pct") == pytest.approx(100 * (12.8 / 10.6 - 1))


def test_fallback_axis_is_the_access_rate(fallback):
    t = fallback["table"]
    assert fallback["fallback"] is True and fallback["axis"] == "accesses_per_s_per_cmp"
    # nops 0 at k=1: 2 jobs per CMP at 5.0e7 (rep 0) and 5.2e7 (rep 1) accesses/s
    assert at(t, 0, 1, "accesses_per_s_per_cmp") == pytest.approx((1.0e8 + 1.04e8) / 2)
    assert at(t, 1000, 2, "accesses_per_s_per_cmp") == pytest.approx(8.0e6)
    # the miss rate is missing with perf's reason, never zero
    assert t[llc.MISS_METRIC].isna().all()
    assert fallback["miss_reasons"] == [PERF_REASON]
    records = fallback["log"].records()
    assert records == [{"metric": llc.MISS_METRIC, "reason": PERF_REASON, "source": llc.SOURCE, "runs": 8}]


def test_counted_miss_rate_by_hand(counted):
    t, runs = counted["table"], counted["miss_runs"].set_index("run_id")
    # n0_k1_r0: per 1 s interval 1e8 load + 1e8 store misses, 4e9 cycles over 2 busy CPUs:
    # 2e8 misses/s / (4e9 / 2 cycles/s) = 0.1; the rows at t_s 0 and after the run are ignored
    assert runs.loc["n0_k1_r0", "llc_misses_per_s"] == pytest.approx(2e8)
    assert runs.loc["n0_k1_r0", "cycles_per_s"] == pytest.approx(4e9)
    assert runs.loc["n0_k1_r0", llc.MISS_METRIC] == pytest.approx(0.1)
    assert runs.loc["n0_k1_r1", llc.MISS_METRIC] == pytest.approx(2.4e8 / 2e9)
    assert runs.loc["n0_k1_r0", "n_intervals"] == 10
    assert at(t, 0, 2, llc.MISS_METRIC) == pytest.approx(0.11)
    assert at(t, 50, 2, llc.MISS_METRIC) == pytest.approx(0.05)
    assert at(t, 200, 2, llc.MISS_METRIC) == pytest.approx(0.02)
    assert at(t, 1000, 2, llc.MISS_METRIC) == pytest.approx(0.005)
    assert counted["fallback"] is False and counted["axis"] == llc.MISS_METRIC
    assert counted["log"].records() == []


def test_perf_table_absent_gives_a_reason(tmp_path):
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    rate = llc.run_miss_rate({"duration_s": 10.0}, run_dir, None, 2)
    assert math.isnan(rate[llc.MISS_METRIC])
    assert rate["reason"] == "tidy/perf.csv absent (monitor disabled or run too short)"


def test_verdicts_fallback_and_counted(fallback, counted):
    stacking = llc.read_stacking(STACKING)
    cmp = llc.compare_with_paper(fallback, PAPER, stacking)
    assert cmp["verdict"].tolist() == [
        "reproduced in direction",  # rho = 1 over 4 groups, p = 1/24
        "reproduced in direction",  # 22 % < 0.5 x 107 %
        "differs (machine-specific)",  # 22 % vs 33.7 %
        "not measurable here",  # miss rate not counted
    ]
    assert "access rate" in cmp["quantity"].iloc[0] and "fallback" in cmp["quantity"].iloc[0]
    assert NOT_SUPPORTED_REASON in cmp["note"].iloc[3]
    assert cmp["measured_value"].iloc[2] == pytest.approx(22.0)
    cmp = llc.compare_with_paper(counted, PAPER, None)
    assert cmp["verdict"].tolist() == [
        "reproduced in direction",
        "not measurable here",  # no --stacking-degradation
        "differs (machine-specific)",
        "differs (machine-specific)",
    ]
    assert "LLC miss rate" in cmp["quantity"].iloc[0]
    assert cmp["measured_value"].iloc[3] == pytest.approx(0.11)
    assert cmp["paper_value"].iloc[3] == 6.90


def test_cc_cost_not_far_below_small_io_degradation(counted):
    stacking = pd.DataFrame({"workload": ["w"], "k": [2], "degradation_pct": [30.0]})
    cmp = llc.compare_with_paper(counted, PAPER, stacking)
    assert cmp["verdict"].iloc[1] == "not reproduced"  # 22 % is not below 15 %


def run_cli(tmp_path, runs_name, *extra):
    out = tmp_path / "out"
    code = llc.main(
        ["--jobs", str(FIXTURES / "jobs.csv"), "--runs", str(FIXTURES / runs_name)] + ["--out-dir", str(out), *extra]
    )
    return code, out


def test_fallback_matches_golden(tmp_path):
    code, out = run_cli(tmp_path, "runs.csv", "--stacking-degradation", str(STACKING))
    assert code == 0
    golden = FIXTURES / "golden" / "degradation.csv"
    assert (out / "degradation.csv").read_bytes() == golden.read_bytes()
    section = report.load_section(out / "section.json")
    assert "FALLBACK" in section["figures"][0]["caption"]
    assert "falls back to the kernel's own access rate" in section["summary"]
    missing = [(m["metric"], m["reason"], m["runs"]) for m in section["missing"]]
    assert ("LLC-load-misses", NOT_SUPPORTED_REASON, 16) in missing
    assert (llc.MISS_METRIC, PERF_REASON, 8) in missing
    text = (out / "section.json").read_text()
    assert str(tmp_path) not in text and str(FIXTURES) not in text


def test_counted_matches_golden(tmp_path):
    code, out = run_cli(tmp_path, "runs_perf.csv")
    assert code == 0
    golden = FIXTURES / "golden" / "miss_rate_perf.csv"
    assert (out / "miss_rate.csv").read_bytes() == golden.read_bytes()
    section = report.load_section(out / "section.json")
    assert "FALLBACK" not in section["figures"][0]["caption"]
    assert "LLC misses per cycle per CMP" in section["figures"][0]["caption"]
    assert (out / llc.FIG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_bad_stacking_csv_is_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text("workload,k,runtime\nw,2,3\n")
    code, _ = run_cli(tmp_path, "runs.csv", "--stacking-degradation", str(bad))
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--stacking-degradation" in err and "normalized_runtime absent" in err


def test_bad_time_choice_is_a_usage_error(tmp_path):
    with pytest.raises(SystemExit) as exc:
        run_cli(tmp_path, "runs.csv", "--time", "cpu")
    assert exc.value.code == 2

"""CMP stacking (paper 000, Fig. 1): normalized runtime and verdicts against hand-computed values."""

import json
import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from analysis import report
from analysis.common import AnalysisInputError
from analysis.paper import load_paper_values
from experiments.cmp_stacking import analysis as cs

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "cmp_stacking"
PAPER = load_paper_values("000")
NAMES = {1: "x264_simlarge", 2: "x264_native", 3: "graph_s22_e16", 4: "graph_s22_e18"}


def make_jobs(rows, jobs_per_cmp=1):
    """rows: (workload_id, k, rep, cmp, runtime_s[, exit_code, result_check])."""
    out = []
    for i, (wid, k, rep, cmp, runtime, *rest) in enumerate(rows):
        exit_code, check = rest if rest else (0, None)
        out.append(
            {
                "run_id": f"w{wid}_k{k}_r{rep}",
                "workload": NAMES[wid],
                "workload_id": wid,
                "k": k,
                "rep": rep,
                "cmp": cmp,
                "job_id": f"j{i}",
                "runtime_s": runtime,
                "exit_code": exit_code,
                "jobs_per_cmp": jobs_per_cmp,
                "result_check": check,
            }
        )
    return pd.DataFrame(out)


def row(table, workload_id, k):
    hit = table[(table["workload_id"] == workload_id) & (table["k"] == k)]
    assert len(hit) == 1
    return hit.iloc[0]


def test_brief_example_normalized_runtime_is_two():
    # 7, 7 at k=1 and 14, 14 at k=2 -> T_1-c = 7, normalized runtime 14 / 7 = 2.0
    jobs = make_jobs([(1, 1, 0, 0, 7.0), (1, 1, 0, 0, 7.0), (1, 2, 0, 0, 14.0), (1, 2, 0, 1, 14.0)])
    table = cs.normalized_table(jobs, 5.0)
    assert row(table, 1, 2)["t1c_s"] == pytest.approx(7.0)
    assert row(table, 1, 2)["normalized_runtime"] == pytest.approx(2.0)
    assert row(table, 1, 1)["normalized_runtime"] == pytest.approx(1.0)
    assert math.isnan(row(table, 1, 2)["ci95_low"])  # one rep: no interval
    assert bool(row(table, 1, 2)["degraded"]) is True
    assert row(table, 1, 2)["n_jobs_co_running"] == 2


@pytest.fixture(scope="module")
def fixture_result():
    return cs.analyse(cs.read_jobs(FIXTURES / "jobs.csv"), 5.0)


def test_fixture_by_hand(fixture_result):
    t = fixture_result["table"]
    # #1: k=1 reps 7.1 and 6.9 -> T_1-c 7.0; k=2 reps 14.0 and 15.0 -> 14.5 -> 2.0714
    assert row(t, 1, 2)["t1c_s"] == pytest.approx(7.0)
    assert row(t, 1, 2)["mean_runtime_s"] == pytest.approx(14.5)
    assert row(t, 1, 2)["normalized_runtime"] == pytest.approx(14.5 / 7.0)
    per_rep = [14.0 / 7.0, 15.0 / 7.0]
    low, high = stats.t.interval(0.95, df=1, loc=14.5 / 7.0, scale=stats.sem(per_rep))
    assert (row(t, 1, 2)["ci95_low"], row(t, 1, 2)["ci95_high"]) == (
        pytest.approx(low),
        pytest.approx(high),
    )
    # #2: T_1-c (41 + 39) / 2 = 40; k=2 60 and 61 -> 1.5125
    assert row(t, 2, 2)["normalized_runtime"] == pytest.approx(60.5 / 40.0)
    # #3: 20.1 / 20 -> 1.005, not degraded
    assert row(t, 3, 2)["normalized_runtime"] == pytest.approx(1.005)
    assert bool(row(t, 3, 2)["degraded"]) is False
    # #4: one job failed (exit 1) -> (4 x 45 + 3 x 46.5) / 7 / 30
    assert row(t, 4, 2)["normalized_runtime"] == pytest.approx((4 * 45 + 3 * 46.5) / 7 / 30)
    assert (row(t, 4, 2)["n_jobs"], row(t, 4, 2)["n_failed"]) == (7, 1)


def test_x264_without_self_check_counts_but_bad_check_does_not():
    jobs = make_jobs(
        [
            (1, 1, 0, 0, 7.0),
            (1, 1, 0, 0, 7.0, 0, "mismatch"),
            (1, 2, 0, 0, 14.0),
            (1, 2, 0, 1, 14.0, 0, "ok"),
        ]
    )
    t = cs.normalized_table(jobs, 5.0)
    assert (row(t, 1, 1)["n_jobs"], row(t, 1, 1)["n_failed"]) == (1, 1)
    assert row(t, 1, 2)["n_jobs"] == 2


def test_workload_trends(fixture_result):
    w = fixture_result["workloads"].set_index("workload_id")
    assert w.loc[1, "trend"] == "grows" and w.loc[2, "trend"] == "grows"
    assert w.loc[3, "trend"] == "undecided"  # CI 0.94..1.07 contains 1.05
    assert w.loc[4, "trend"] == "grows" and w.loc[4, "onset_k"] == 2
    assert w.loc[1, "scale_note"] == "scaled down: frames 16 (paper 128)"
    assert w.loc[3, "binary"] == "corun graph_bfs"


def test_trend_does_not_grow_when_a_step_drops():
    rows = [(1, 1, 0, 0, 10.0), (1, 2, 0, 0, 20.0), (1, 4, 0, 0, 15.0)]
    jobs = make_jobs(rows)
    result = cs.analyse(jobs, 5.0)
    w = result["workloads"].iloc[0]
    assert w["largest_drop"] == pytest.approx(0.5)
    assert w["trend"] == "does not grow"
    cmp = cs.compare_with_paper(result, PAPER)
    assert cmp["verdict"].iloc[0] == "not reproduced"


def test_fixture_verdicts(fixture_result):
    cmp = cs.compare_with_paper(fixture_result, PAPER)
    got = dict(zip(cmp["quantity"], cmp["verdict"]))
    assert got == {
        "Runtime of workload #1 x264_simlarge grows with k": "reproduced in direction",
        "Runtime of workload #2 x264_native grows with k": "reproduced in direction",
        # the paper reports the graph workloads stable below 4 CMPs; K = 2 here
        "Runtime of workload #3 graph_s22_e16 grows with k": "not measurable here",
        "Runtime of workload #4 graph_s22_e18 grows with k": "reproduced in direction",
        "All workloads degrade with CMP stacking": "not measurable here",
        "Onset k of the graph workloads (#3, #4)": "differs (machine-specific)",
        "T_1-c of workload #1 (x264 simlarge)": "differs (machine-specific)",
        "Mean runtime of workload #1 (x264 simlarge) at k = 8": "not measurable here",
        "Normalized runtime of workload #1 (x264 simlarge) at k = 8": "not measurable here",
    }
    by_q = cmp.set_index("quantity")
    t1 = by_q.loc["T_1-c of workload #1 (x264 simlarge)"]
    assert (t1["paper_value"], t1["measured_value"]) == (7, pytest.approx(7.0))
    k8 = by_q.loc["Normalized runtime of workload #1 (x264 simlarge) at k = 8"]
    assert k8["paper_value"] == 16 and k8["measured_value"] is None
    assert "this machine ran k <= 2" in k8["note"] and "Ours at k = 2: 2.07" in k8["note"]


def test_one_workload_not_growing_fails_the_all_row():
    rows = [(1, 1, 0, 0, 10.0), (1, 2, 0, 0, 20.0), (2, 1, 0, 0, 10.0), (2, 2, 0, 0, 10.0)]
    cmp = cs.compare_with_paper(cs.analyse(make_jobs(rows), 5.0), PAPER)
    got = dict(zip(cmp["quantity"], cmp["verdict"]))
    assert got["Runtime of workload #2 x264_native grows with k"] == "not reproduced"
    assert got["All workloads degrade with CMP stacking"] == "not reproduced"


def test_graph_onset_beyond_k_is_not_measurable_and_only_k1():
    rows = [(3, 1, 0, 0, 10.0), (3, 2, 0, 0, 10.0), (1, 1, 0, 0, 5.0)]
    cmp = cs.compare_with_paper(cs.analyse(make_jobs(rows), 5.0), PAPER)
    got = dict(zip(cmp["quantity"], cmp["verdict"]))
    assert got["Onset k of the graph workloads (#3, #4)"] == "not measurable here"
    assert got["Runtime of workload #1 x264_simlarge grows with k"] == "not measurable here"
    assert got["Runtime of workload #3 graph_s22_e16 grows with k"] == "not measurable here"


def test_fixture_matches_golden_and_section_is_valid(tmp_path):
    out = tmp_path / "out"
    code = cs.main(
        [
            "--jobs",
            str(FIXTURES / "jobs.csv"),
            "--runs",
            str(FIXTURES / "runs.csv"),
            "--out-dir",
            str(out),
        ]
    )
    assert code == 0
    golden = FIXTURES / "golden" / "normalized_runtime.csv"
    assert (out / "normalized_runtime.csv").read_bytes() == golden.read_bytes()
    assert (out / cs.FIG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    section = report.load_section(out / "section.json")  # schema-valid, files present
    assert len(section["runs"]) == 16
    assert {m["metric"]: m["runs"] for m in section["missing"]} == {"psi_cpu_full": 16, "iostat": 2}
    assert "K = 2" in section["summary"]
    assert any("; scaled down: frames 16 (paper 128)." in n for n in section["notes"])
    assert any("read cap of 20 MB/s" in n for n in section["notes"])
    text = (out / "section.json").read_text()
    assert str(tmp_path) not in text and str(FIXTURES) not in text
    setup = pd.read_csv(out / "setup.csv")
    assert setup["this_run_value"].tolist() == ["1, 2", "2", "4"]
    html = tmp_path / "report.html"
    report.write_report([out / "section.json"], html, "Fixture report")
    assert "data:image/png;base64," in html.read_text()


def test_bad_input_is_one_line(tmp_path, capsys):
    jobs = pd.read_csv(FIXTURES / "jobs.csv", dtype=str)
    jobs.loc[2, "workload_id"] = "one"
    jobs.to_csv(tmp_path / "jobs.csv", index=False)
    code = cs.main(
        ["--jobs", str(tmp_path / "jobs.csv"), "--runs", str(FIXTURES / "runs.csv")]
        + ["--out-dir", str(tmp_path / "out")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "row 4: workload_id: 'one' (expected an integer >= 1 or empty)" in err


def test_wrong_experiment_is_rejected(tmp_path):
    jobs = pd.read_csv(FIXTURES / "jobs.csv")
    jobs["experiment"] = "llc_miss"
    jobs.to_csv(tmp_path / "jobs.csv", index=False)
    with pytest.raises(AnalysisInputError, match=r"experiment: 'llc_miss' \(expected 'cmp_stack"):
        cs.read_jobs(tmp_path / "jobs.csv")


def test_negative_tolerance_is_one_line(tmp_path, capsys):
    code = cs.main(["--jobs", "j.csv", "--runs", "r.csv", "--out-dir", str(tmp_path), "--tol-pct", "-1"])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "--tol-pct" in err


def test_workloads_csv_lists_trend(tmp_path):
    cs.run(str(FIXTURES / "jobs.csv"), str(FIXTURES / "runs.csv"), 5.0, str(tmp_path))
    w = pd.read_csv(tmp_path / "workloads.csv")
    assert w["trend"].tolist() == ["grows", "grows", "undecided", "grows"]
    section = json.loads((tmp_path / "section.json").read_text())
    assert section["figures"][0]["path"] == cs.FIG_NAME


def test_workload_outside_table_2_has_an_empty_id(tmp_path):
    jobs = make_jobs([(1, 1, 0, 0, 7.0), (1, 2, 0, 0, 14.0)])
    jobs["workload"] = "vips_native"
    jobs["workload_id"] = None
    jobs.to_csv(tmp_path / "jobs.csv", index=False)
    read = cs.read_jobs(tmp_path / "jobs.csv")
    assert read["workload_id"].isna().all()
    result = cs.analyse(read, 5.0)
    assert row_by_name(result["table"], "vips_native", 2)["normalized_runtime"] == 2.0
    cmp = cs.compare_with_paper(result, PAPER)
    got = dict(zip(cmp["quantity"], cmp["verdict"]))
    assert got["Runtime of workload vips_native grows with k"] == "reproduced in direction"
    assert got["T_1-c of workload #1 (x264 simlarge)"] == "not measurable here"
    assert got["Onset k of the graph workloads (#3, #4)"] == "not measurable here"


def row_by_name(table, workload, k):
    hit = table[(table["workload"] == workload) & (table["k"] == k)]
    assert len(hit) == 1
    return hit.iloc[0]

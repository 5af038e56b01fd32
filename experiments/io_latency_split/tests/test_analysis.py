"""I/O waiting and serving time (paper 000, Fig. 5-7) from the cmp_stacking fixture runs."""

import math
from pathlib import Path

import pandas as pd
import pytest

from analysis import report
from analysis import runtables as rt
from analysis.paper import load_paper_values
from experiments.io_latency_split import analysis as iol

FIXTURES = Path(__file__).resolve().parent / "fixtures"
STACK = Path(__file__).resolve().parents[2] / "cmp_stacking" / "tests" / "fixtures" / "cmp_stacking"
PAPER = load_paper_values("000")


@pytest.fixture(scope="module")
def fixture_result():
    jobs, runs = iol.read_jobs(STACK / "jobs.csv"), iol.read_runs(STACK / "runs.csv")
    log = rt.MissingLog()
    result = iol.analyse(jobs, runs, rt.run_dirs(runs, STACK / "runs.csv"), log)
    result["log"] = log
    return result


def at(table, workload, k, column):
    hit = table.loc[(table["workload"] == workload) & (table["k"] == k), column]
    assert len(hit) == 1
    return hit.iloc[0]


def test_one_run_request_weighted_by_hand(fixture_result):
    runs = fixture_result["runs"].set_index("run_id")
    # w1_k1_r0, vda intervals inside the run (0 < t_s <= 7.7) with I/O:
    #   t 0.5: 100 req/s, await 5, util 20 -> svc 10 x 20 / 100 = 2, wait 3
    #   t 1.5:  50 req/s, await 4, util 5  -> svc 1, wait 3
    # t -0.5 and t 8.5 lie outside the run; vdb rows belong to another device.
    r = runs.loc["w1_k1_r0"]
    assert r["await_ms"] == pytest.approx((100 * 5 + 50 * 4) / 150)
    assert r["svc_ms"] == pytest.approx((100 * 2 + 50 * 1) / 150)
    assert r["wait_ms"] == pytest.approx(3.0)
    assert (r["n_intervals"], r["n_io_intervals"]) == (7, 2)
    assert r["io_requests"] == pytest.approx(150.0)  # 1 s iostat interval


def test_pooled_per_k_and_growth_by_hand(fixture_result):
    t = fixture_result["table"]
    w = "x264_simlarge"
    # k=1: requests 100, 50 (r0) and 150 (r1: await 6, svc 2, wait 4)
    assert at(t, w, 1, "await_ms") == pytest.approx((100 * 5 + 50 * 4 + 150 * 6) / 300)
    assert at(t, w, 1, "svc_ms") == pytest.approx((100 * 2 + 50 * 1 + 150 * 2) / 300)
    assert at(t, w, 1, "wait_ms") == pytest.approx((100 * 3 + 50 * 3 + 150 * 4) / 300)
    # k=2: 250 req (await 44, util 100 -> svc 4), 100 req (await 36, util 60 -> svc 6),
    #      250 req (await 54, svc 4)
    wait2 = (250 * 40 + 100 * 30 + 250 * 50) / 600
    svc2 = (250 * 4 + 100 * 6 + 250 * 4) / 600
    assert at(t, w, 2, "wait_ms") == pytest.approx(wait2)
    assert at(t, w, 2, "svc_ms") == pytest.approx(svc2)
    assert at(t, w, 2, "ratio_wait") == pytest.approx(wait2 / 3.5)
    assert at(t, w, 2, "ratio_svc") == pytest.approx(svc2 / (550 / 300))
    assert at(t, w, 2, "ratio_wait") > at(t, w, 2, "ratio_svc")


def test_psi_io_is_time_weighted_inside_the_run(fixture_result):
    t = fixture_result["table"]
    # k=1: r0 3,1,2,2,2,2,2 and r1 2 x 7 -> 2; rows at t_s 0 and after the run are left out
    assert at(t, "x264_simlarge", 1, "psi_io_some_pct") == pytest.approx(2.0)
    # k=2: r0 14 s at 40 %, r1 16 s at 30 % -> (14 x 40 + 16 x 30) / 30
    assert at(t, "x264_simlarge", 2, "psi_io_some_pct") == pytest.approx(1040 / 30)


def test_missing_iostat_is_missing_not_zero(fixture_result):
    t, runs = fixture_result["table"], fixture_result["runs"].set_index("run_id")
    for k in (1, 2):
        for col in ("await_ms", "svc_ms", "wait_ms", "ratio_wait"):
            assert math.isnan(at(t, "graph_s22_e16", k, col))
            assert math.isnan(at(t, "graph_s22_e18", k, col))
    assert at(t, "graph_s22_e16", 2, "reason") == ("tidy/iostat.csv absent (monitor disabled or run too short)")
    assert at(t, "graph_s22_e16", 1, "reason") == "tidy/iostat.csv has no rows (no sample)"
    assert "no iostat interval with I/O" in at(t, "graph_s22_e18", 1, "reason")
    assert math.isnan(runs.loc["w3_k2_r0", "io_requests"])
    records = {(m["metric"], m["reason"]): m["runs"] for m in fixture_result["log"].records()}
    assert records == {
        (iol.LATENCY_METRIC, "tidy/iostat.csv has no rows (no sample)"): 2,
        (iol.LATENCY_METRIC, "tidy/iostat.csv absent (monitor disabled or run too short)"): 2,
        (iol.LATENCY_METRIC, "no iostat interval with I/O on the run's device during the run"): 4,
    }


def test_device_selection():
    df = pd.DataFrame({"device": ["vda", "vdb"], "t_s": [1.0, 1.0]})
    rows, name, why = rt.device_rows(df, "/dev/vdb")
    assert name == "vdb" and len(rows) == 1 and why is None
    rows, _, why = rt.device_rows(df, None)
    assert rows is None and "2 devices" in why
    rows, _, why = rt.device_rows(df, "sda")
    assert rows is None and "no rows for device sda" in why


def verdicts(result, workload):
    cmp = iol.compare_with_paper(result, PAPER, workload, 5.0)
    return dict(zip(cmp["quantity"], cmp["verdict"])), cmp


def test_fixture_verdicts(fixture_result):
    got, cmp = verdicts(fixture_result, "x264_simlarge")
    assert got == {
        "Waiting time grows with k": "reproduced in direction",
        "Serving time grows with k": "reproduced in direction",
        # pooled x12.1 against x2.5, but 2 reps: a signed-rank test cannot go below p = 1/4
        "Waiting time grows more than serving time": "not reproduced",
        "Waiting time at k = 1": "differs (machine-specific)",
        "Waiting time at k = 8": "not measurable here",
        "Growth of the waiting time at k = 8": "not measurable here",
    }
    by_q = cmp.set_index("quantity")
    assert by_q.loc["Waiting time at k = 1", "paper_value"] == 4.55
    assert by_q.loc["Waiting time at k = 1", "measured_value"] == pytest.approx(3.5)
    assert by_q.loc["Growth of the waiting time at k = 8", "paper_value"] == 128
    assert "Ours at k = 2: 12.1." in by_q.loc["Growth of the waiting time at k = 8", "note"]
    # per rep: r0 wait 3 -> 37.14 (260/7), svc 5/3 -> 32/7; r1 wait 4 -> 50, svc 2 -> 4
    q0, q1 = (260 / 7 / 3) / ((32 / 7) / (5 / 3)), (50 / 4) / (4 / 2)
    median = math.exp((math.log(q0) + math.log(q1)) / 2)
    note = by_q.loc["Waiting time grows more than serving time", "note"]
    assert f"median x{iol.fmt_num(median)}, above 1 in 2 of 2 paired reps, p = 0.25" in note
    assert "x12.4 / x2.74, x12.5 / x2" in note


def hand_result(rows: list[tuple[int, int, float, float]]) -> dict:
    """A result of analyse() for x264_simlarge from (k, rep, wait_ms, svc_ms) per run: the
    pooled table is the plain mean over the reps (equal request counts)."""
    runs = pd.DataFrame(
        [{"workload": "x264_simlarge", "k": k, "rep": r, "wait_ms": w, "svc_ms": s} for k, r, w, s in rows]
    )
    table = runs.groupby(["workload", "k"], as_index=False)[["wait_ms", "svc_ms"]].mean()
    table["await_ms"] = table["wait_ms"] + table["svc_ms"]
    for m in ("wait", "svc", "await"):
        table[f"ratio_{m}"] = table[f"{m}_ms"] / table.loc[table["k"] == 1, f"{m}_ms"].iloc[0]
    return {"runs": runs, "table": table}


def reps_of(quotients: list[float], wait_1: float = 0.5, svc_1: float = 1.0) -> list[tuple]:
    """Runs at k = 1 and 2 whose per-rep quotient is q: serving x1.5, waiting x1.5 q."""
    out = []
    for rep, q in enumerate(quotients):
        out += [(1, rep, wait_1, svc_1), (2, rep, wait_1 * 1.5 * q, svc_1 * 1.5)]
    return out


@pytest.mark.parametrize(
    "rows, verdict, says",
    [
        # x264 simlarge measured on the emulated disk, 3 reps: quotients 0.82, 1.5, 2.8; 3 reps
        # cannot reach p < 0.05 whatever they show
        ([(1, 0, 0.453, 0.937), (1, 1, 0.255, 1.064), (1, 2, 0.178, 1.090),
          (2, 0, 0.625, 1.573), (2, 1, 0.611, 1.723), (2, 2, 0.736, 1.581)], "not reproduced",
         "above 1 in 2 of 3 paired reps, p = 0.25 (the smallest 3 reps can give: 0.125)"),
        ([(1, 0, 0.704, 1.047), (1, 1, 0.803, 1.035), (1, 2, 0.747, 1.142),
          (2, 0, 2.351, 1.494), (2, 1, 2.103, 1.452), (2, 2, 2.180, 1.420)], "not reproduced",
         "above 1 in 3 of 3 paired reps, p = 0.125"),
        # 7 reps above 1, one of them far out (a k = 1 wait near 0): ranks are not moved by it
        (reps_of([1.35, 38.0, 1.42, 1.22, 3.2, 1.25, 1.79]), "reproduced in direction",
         "above 1 in 7 of 7 paired reps, p = 0.00781"),
        # 8 reps, the one below 1 by the least: signed ranks 2..8 against 1 -> p = 2/256
        (reps_of([0.99, 1.3, 1.4, 1.5, 1.6, 1.7, 1.8, 1.9]), "reproduced in direction", "p = 0.00781"),
        # 8 reps, the two below 1 by the most: W+ = 1 + ... + 6 = 21 -> p = 0.37
        (reps_of([0.5, 0.6, 1.3, 1.35, 1.4, 1.45, 1.5, 1.55]), "not reproduced",
         "above 1 in 6 of 8 paired reps, p = 0.371"),
        # one rep at each k: the pooled factors alone
        ([(1, 0, 0.5, 1.0), (2, 0, 1.5, 1.2)], "reproduced in direction", "no test: 1 rep(s)"),
        ([(1, 0, 0.5, 1.0), (2, 0, 0.6, 1.3)], "not reproduced", "no test: 1 rep(s)"),
    ],
)  # fmt: skip
def test_waiting_grows_more_needs_a_signed_rank_test_over_reps(rows, verdict, says):
    got, cmp = verdicts(hand_result(rows), "x264_simlarge")
    assert got["Waiting time grows more than serving time"] == verdict
    note = cmp.set_index("quantity").loc["Waiting time grows more than serving time", "note"]
    assert says in note, note


def test_equal_growth_is_not_more_and_no_io_is_not_measurable(fixture_result):
    got, _ = verdicts(fixture_result, "x264_native")  # both x1.5
    assert got["Waiting time grows more than serving time"] == "not reproduced"
    assert got["Waiting time grows with k"] == "reproduced in direction"
    got, cmp = verdicts(fixture_result, "graph_s22_e18")
    assert got["Waiting time grows more than serving time"] == "not measurable here"
    assert "no interval with I/O at k = 1" in cmp["note"].iloc[0]


def run_cli(tmp_path, runs_csv=STACK / "runs.csv", *extra):
    out = tmp_path / "out"
    code = iol.main(["--jobs", str(STACK / "jobs.csv"), "--runs", str(runs_csv), "--out-dir", str(out)] + list(extra))
    return code, out


def test_fixture_matches_golden_and_section_is_valid(tmp_path):
    code, out = run_cli(tmp_path)
    assert code == 0
    golden = FIXTURES / "io_latency" / "golden" / "latency.csv"
    assert (out / "latency.csv").read_bytes() == golden.read_bytes()
    section = report.load_section(out / "section.json")
    assert [f["path"] for f in section["figures"]] == [iol.FIG_LATENCY, iol.FIG_GROWTH]
    assert "derived" in section["summary"] and "svctm" in section["summary"]
    assert "throttled" in section["summary"]
    assert any("BEFORE it reaches the device queue" in n for n in section["notes"])
    missing = [(m["metric"], m["source"], m["runs"]) for m in section["missing"]]
    assert missing == [
        ("psi_cpu_full", "psi", 16),
        ("iostat", "iostat", 2),  # the runs' own record
        (iol.LATENCY_METRIC, iol.SOURCE, 2),  # no rows
        (iol.LATENCY_METRIC, iol.SOURCE, 2),  # file absent
        (iol.LATENCY_METRIC, iol.SOURCE, 4),  # no interval with I/O
    ]
    text = (out / "section.json").read_text()
    assert str(tmp_path) not in text and str(FIXTURES) not in text
    for name in (iol.FIG_LATENCY, iol.FIG_GROWTH):
        assert (out / name).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_unthrottled_runs_have_no_throttle_note(tmp_path):
    runs = pd.read_csv(STACK / "runs.csv")
    runs["throttle_read_bps"] = None
    for col in ("metadata_path", "run_dir"):
        runs[col] = [str(STACK / p) for p in runs[col]]
    runs.to_csv(tmp_path / "runs.csv", index=False)
    code, out = run_cli(tmp_path, tmp_path / "runs.csv")
    assert code == 0
    section = report.load_section(out / "section.json")
    assert "throttled" not in section["summary"]
    assert not any("blk-throttle" in n for n in section["notes"])


def test_unknown_workload_is_one_line(tmp_path, capsys):
    code, _ = run_cli(tmp_path, STACK / "runs.csv", "--workload", "vips")
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--workload: 'vips' (expected one of graph_s22_e16" in err


def test_no_io_workload_still_writes_figures(tmp_path):
    code, out = run_cli(tmp_path, STACK / "runs.csv", "--workload", "graph_s22_e16")
    assert code == 0
    section = report.load_section(out / "section.json")
    verdict = {c["quantity"]: c["verdict"] for c in section["comparison"]}
    assert verdict["Waiting time grows with k"] == "not measurable here"

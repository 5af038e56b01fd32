"""Sensitivity_RANKING metrics against values computed by hand."""

import math
from pathlib import Path

import pandas as pd
import pytest
from scipy import stats

from analysis.common import AnalysisInputError, read_csv
from experiments.sensitivity_ranking import analysis as sens
from experiments.sensitivity_ranking import figures
from experiments.sensitivity_ranking import metrics as m
from tests.experiment_helpers import cmp_job_fields

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sensitivity"
COLUMNS = m.JOB_COLUMNS


def read_jobs(path):
    return m.check_jobs(read_csv(path, m.JOB_TEXT), str(path))


def analyse(jobs, tol_pct=5.0, throttle_read_bps=None):
    table = m.degradation_table(jobs, tol_pct)
    return {"table": table, "threshold": m.threshold(table, tol_pct, throttle_read_bps)}


def make_jobs(rows):
    """rows: (group, k, rep, cmp, runtime_s, bw_mb_s[, exit_code, check]); jobs_per_cmp from data."""
    out = []
    for i, row in enumerate(rows):
        group, k, rep, cmp, runtime, bw, *rest = row
        exit_code, check = rest if rest else (0, "ok")
        out.append(
            {
                "run_id": f"g{group}-k{k}-r{rep}",
                "group": group,
                **cmp_job_fields(i, k, rep, cmp, runtime, exit_code),
                "demand_target_mb_s": 1.0 + group,
                "jobs_per_cmp": 1,
                "result_bw_mb_s": bw,
                "result_bytes_read": 1000,
                "result_check": check,
            }
        )
    return pd.DataFrame(out, columns=COLUMNS)


def one_rep(group, bw, alone, stacked):
    """make_jobs rows of GROUP's rep 0 at bandwidth BW: a k=1 job on CMP 0 per runtime in ALONE,
    then a k=2 job per runtime in STACKED, on CMPs 0, 1, ..."""
    return [(group, 1, 0, 0, t, bw) for t in alone] + [(group, 2, 0, cmp, t, bw) for cmp, t in enumerate(stacked)]


def row(table, group, k):
    hit = table[(table["group"] == group) & (table["k"] == k)]
    assert len(hit) == 1
    return hit.iloc[0]


@pytest.fixture(scope="module")
def fixture_table():
    return m.degradation_table(read_jobs(FIXTURES / "jobs.csv"), 5.0)


def test_brief_example_one_rep():
    # group 0: k=1 10, 10 -> T_1-c 10; k=2 10.2, 9.8 -> 0 %. group 1: k=1 10; k=2 15, 15 -> 50 %.
    jobs = make_jobs(one_rep(0, 1.0, [10.0, 10.0], [10.2, 9.8]) + one_rep(1, 5.0, [10.0], [15.0, 15.0]))
    table = m.degradation_table(jobs, 5.0)
    assert row(table, 0, 2)["t1c_s"] == pytest.approx(10.0)
    assert row(table, 0, 2)["degradation_pct"] == pytest.approx(0.0, abs=1e-9)
    assert row(table, 1, 2)["degradation_pct"] == pytest.approx(50.0)
    # one rep: no CI, degraded decided on the point estimate
    assert math.isnan(row(table, 1, 2)["ci95_low_pct"])
    assert bool(row(table, 1, 2)["degraded"]) is True
    assert bool(row(table, 0, 2)["degraded"]) is False


def test_fixture_degradation_by_hand(fixture_table):
    t = fixture_table
    # group 0: T_1-c = 10; k=2 runtimes 10.2, 9.8, 10.2, 9.8 | 10.3, 10.1, 10.3, 10.1 -> 10.1 s
    assert row(t, 0, 2)["mean_runtime_s"] == pytest.approx(10.1)
    assert row(t, 0, 2)["degradation_pct"] == pytest.approx(1.0)
    # group 1: T_1-c = 10; k=2 15.0 x4 | 15.2 x4 -> 15.1 s -> 51 %
    assert row(t, 1, 2)["degradation_pct"] == pytest.approx(51.0)
    # group 2: T_1-c = (10 + 10 + 12 + 12) / 4 = 11; k=2 22 x4 | 23.1 x3 (999 s job failed)
    assert row(t, 2, 2)["t1c_s"] == pytest.approx(11.0)
    assert row(t, 2, 2)["degradation_pct"] == pytest.approx(100 * ((4 * 22 + 3 * 23.1) / 7 / 11 - 1))
    # group 4: T_1-c = 10; k=2 25 x4 | 26 x3 (one exit code 1)
    assert row(t, 4, 2)["degradation_pct"] == pytest.approx(100 * ((4 * 25 + 3 * 26) / 7 / 10 - 1))
    # at k=1 eq. (1) gives exactly 0
    for g in (0, 1, 2, 4):
        assert row(t, g, 1)["degradation_pct"] == pytest.approx(0.0, abs=1e-9)


def test_fixture_demand_is_sum_over_one_cmp_averaged_over_reps(fixture_table):
    t = fixture_table
    assert row(t, 0, 1)["demand_per_cmp_mb_s"] == pytest.approx((1.0 + 1.0 + 1.1 + 1.1) / 2)
    assert row(t, 1, 2)["demand_per_cmp_mb_s"] == pytest.approx((4.0 + 3.9 + 4.0 + 4.1) / 2)
    assert row(t, 2, 1)["demand_per_cmp_mb_s"] == pytest.approx((2 * 9.5 + 2 * 10.5) / 2)
    assert row(t, 4, 2)["demand_target_mb_s"] == 30.0


def test_failed_jobs_are_excluded_and_counted(fixture_table):
    t = fixture_table
    assert (row(t, 2, 2)["n_jobs"], row(t, 2, 2)["n_failed"]) == (7, 1)
    assert (row(t, 4, 2)["n_jobs"], row(t, 4, 2)["n_failed"]) == (7, 1)
    assert row(t, 2, 2)["mean_runtime_s"] < 100  # the 999 s 'mismatch' job is not in the mean
    assert int(t["n_failed"].sum()) == 6


def test_group_without_valid_k1_gets_nan_and_reason(fixture_table):
    t = fixture_table
    for k in (1, 2):
        r = row(t, 3, k)
        assert math.isnan(r["degradation_pct"]) and math.isnan(r["demand_per_cmp_mb_s"])
        assert pd.isna(r["degraded"])
        assert "no valid k=1 job" in r["reason"]
    assert row(t, 3, 1)["n_failed"] == 4
    assert row(t, 3, 2)["mean_runtime_s"] == pytest.approx(30.0)


def test_ci_matches_scipy_t_interval(fixture_table):
    per_rep = [50.0, 52.0]  # group 1, k=2: rep means 15.0 and 15.2 over T_1-c = 10
    low, high = stats.t.interval(0.95, df=1, loc=51.0, scale=stats.sem(per_rep))
    r = row(fixture_table, 1, 2)
    assert (r["ci95_low_pct"], r["ci95_high_pct"]) == (pytest.approx(low), pytest.approx(high))
    assert bool(r["degraded"]) is True  # lower bound 38.3 > 5


def test_ci_three_reps_and_lower_bound_decides():
    rows = [(0, 1, rep, 0, 10.0, 1.0) for rep in range(3)]
    rows += [(0, 2, 0, 0, 10.0, 1.0), (0, 2, 1, 0, 11.0, 1.0), (0, 2, 2, 0, 12.5, 1.0)]
    table = m.degradation_table(make_jobs(rows), 5.0)
    r = row(table, 0, 2)
    per_rep = [0.0, 10.0, 25.0]
    low, high = stats.t.interval(0.95, df=2, loc=sum(per_rep) / 3, scale=stats.sem(per_rep))
    assert (r["ci95_low_pct"], r["ci95_high_pct"]) == (pytest.approx(low), pytest.approx(high))
    assert r["degradation_pct"] == pytest.approx(35.0 / 3)  # point estimate above 5 %
    assert low < 5.0 and bool(r["degraded"]) is False  # but the CI does not exclude 5 %


def test_demand_scales_a_cmp_with_a_failed_job():
    jobs = make_jobs(
        [
            (0, 1, 0, 0, 10.0, 3.0),
            (0, 1, 0, 0, 10.0, 5.0, 1, "ok"),
            (0, 1, 0, 0, 10.0, 4.0),
            (0, 2, 0, 0, 10.0, 4.0),
            (0, 2, 0, 1, 10.0, 4.0),
        ]
    )
    jobs["jobs_per_cmp"] = 3
    table = m.degradation_table(jobs, 5.0)
    assert row(table, 0, 1)["demand_per_cmp_mb_s"] == pytest.approx(3 * (3.0 + 4.0) / 2)


def test_k_with_only_failed_jobs_has_reason():
    jobs = make_jobs([(0, 1, 0, 0, 10.0, 1.0), (0, 2, 0, 0, 12.0, 1.0, 1, "ok")])
    r = row(m.degradation_table(jobs, 5.0), 0, 2)
    assert math.isnan(r["degradation_pct"]) and r["reason"] == "no valid job at k=2"


# ----------------------------------------------------------------------------- threshold


def table_from(groups):
    """groups: {group: (demand, {k: degraded})} -> a minimal degradation table."""
    rows = [
        {
            "group": g,
            "k": k,
            "demand_per_cmp_mb_s": d,
            "degradation_pct": 50.0 if deg else 0.0,
            "degraded": deg,
            "reason": "",
        }
        for g, (d, ks) in groups.items()
        for k, deg in ks.items()
    ]
    table = pd.DataFrame(rows)
    table["degraded"] = table["degraded"].astype("boolean")
    return table


def test_threshold_fixture(fixture_table):
    thr = m.threshold(fixture_table, 5.0, throttle_read_bps=10_000_000)
    assert thr["no_degradation_demand_mb_s"] == pytest.approx(2.1)
    assert thr["first_degrading_demand_mb_s"] == pytest.approx(8.0)
    assert thr["onset_k"] == {0: None, 1: 2, 2: 2, 3: None, 4: 2}
    assert thr["K"] == 2
    assert thr["suggested_io_bound_interval_mb_s"] == pytest.approx(2.1 * 2)
    assert thr["throttle_cap_mb_s"] == pytest.approx(10.0)
    assert thr["expected_threshold_from_cap_mb_s"] == pytest.approx(10.0 / 2)
    assert thr["excluded_groups"] == [{"group": 3, "reason": "no valid k=1 job: T_1-c undefined"}]
    assert thr["no_degradation_is_lower_bound"] is False


def test_threshold_stops_at_first_degrading_demand():
    table = table_from(
        {
            0: (1.0, {1: False, 2: False, 3: False}),
            1: (2.0, {1: False, 2: False, 3: True}),
            2: (3.0, {1: False, 2: False, 3: False}),
        }
    )
    thr = m.threshold(table, 5.0)
    assert thr["no_degradation_demand_mb_s"] == 1.0
    assert thr["first_degrading_demand_mb_s"] == 2.0
    assert thr["onset_k"] == {0: None, 1: 3, 2: None}
    assert thr["suggested_io_bound_interval_mb_s"] == 3.0
    assert thr["expected_threshold_from_cap_mb_s"] is None


def test_threshold_ties_at_the_degrading_demand():
    table = table_from(
        {
            0: (1.0, {1: False, 2: False}),
            1: (2.0, {1: False, 2: False}),
            2: (2.0, {1: False, 2: True}),
        }
    )
    assert m.threshold(table, 5.0)["no_degradation_demand_mb_s"] == 1.0


def test_threshold_lowest_group_degrades():
    table = table_from({0: (1.0, {1: False, 2: True}), 1: (2.0, {1: False, 2: True})})
    thr = m.threshold(table, 5.0)
    assert thr["no_degradation_demand_mb_s"] is None
    assert thr["suggested_io_bound_interval_mb_s"] is None
    assert thr["first_degrading_demand_mb_s"] == 1.0


def test_threshold_no_group_degrades_is_lower_bound():
    table = table_from({0: (1.0, {1: False, 2: False}), 1: (4.0, {1: False, 2: False})})
    thr = m.threshold(table, 5.0)
    assert thr["no_degradation_demand_mb_s"] == 4.0
    assert thr["no_degradation_is_lower_bound"] is True
    assert thr["first_degrading_demand_mb_s"] is None


# ----------------------------------------------------------------------------- input errors


def test_read_jobs_missing_column(tmp_path):
    path = tmp_path / "jobs.csv"
    pd.read_csv(FIXTURES / "jobs.csv").drop(columns=["result_check"]).to_csv(path, index=False)
    with pytest.raises(AnalysisInputError) as err:
        read_jobs(path)
    msg = str(err.value)
    assert "\n" not in msg and str(path) in msg and "result_check" in msg


def test_read_jobs_bad_integer(tmp_path):
    path = tmp_path / "jobs.csv"
    df = pd.read_csv(FIXTURES / "jobs.csv", dtype=str)
    df.loc[3, "k"] = "two"
    df.to_csv(path, index=False)
    with pytest.raises(AnalysisInputError, match=r"row 5: k: 'two' \(expected an integer >= 1\)"):
        read_jobs(path)


# ----------------------------------------------------------------------------- compute-only control

CONTROL_FIXTURES = FIXTURES.parent / "sensitivity_control"
T95_DF2 = stats.t.ppf(0.975, 2)  # 4.302653


@pytest.fixture(scope="module")
def control_jobs():
    return read_jobs(CONTROL_FIXTURES / "jobs.csv")


@pytest.fixture(scope="module")
def control_result(control_jobs):
    return analyse(control_jobs, 5.0, 16_000_000)


def test_control_fixture_excess_by_hand(control_result):
    t = control_result["table"]
    # control (group 0): k=1 9.9, 10.0, 10.1 -> T_1-c 10; k=2 12.8, 13.0, 13.2 -> 28, 30, 32 %
    c = row(t, 0, 2)
    assert c["degradation_pct"] == pytest.approx(30.0)
    half = T95_DF2 * 2.0 / math.sqrt(3)  # sd 2 over 3 reps
    assert (c["ci95_low_pct"], c["ci95_high_pct"]) == (
        pytest.approx(30.0 - half),
        pytest.approx(30.0 + half),
    )
    assert bool(c["degraded"]) is True  # lower bound 25.0 > 5: stacking alone costs 30 %
    assert c["control_degradation_pct"] == pytest.approx(30.0)
    assert math.isnan(c["excess_degradation_pct"]) and pd.isna(c["degraded_excess"])
    assert c["excess_ci_method"] == "control group"
    # group 1: k=2 runtimes as the control's -> raw 30 % (degraded), excess 0 in every rep
    a = row(t, 1, 2)
    assert a["degradation_pct"] == pytest.approx(30.0) and bool(a["degraded"]) is True
    assert a["control_degradation_pct"] == pytest.approx(30.0)
    assert a["excess_degradation_pct"] == pytest.approx(0.0, abs=1e-9)
    assert (a["excess_ci95_low_pct"], a["excess_ci95_high_pct"]) == (
        pytest.approx(0.0, abs=1e-9),
        pytest.approx(0.0, abs=1e-9),
    )
    assert a["excess_ci_method"] == "paired by rep"
    assert bool(a["degraded_excess"]) is False
    # group 3: k=2 17.8, 18.0, 18.2 -> 78, 80, 82 %; excess 50 % in every rep
    b = row(t, 3, 2)
    assert b["degradation_pct"] == pytest.approx(80.0)
    assert b["excess_degradation_pct"] == pytest.approx(50.0)
    assert b["excess_ci95_low_pct"] == pytest.approx(50.0)
    assert b["excess_ci95_high_pct"] == pytest.approx(50.0)
    assert bool(b["degraded_excess"]) is True
    assert row(t, 4, 2)["excess_degradation_pct"] == pytest.approx(80.0)


def test_control_excess_ci_pairs_reps(control_result):
    t = control_result["table"]
    # group 2: k=2 13.0, 13.6, 15.4 -> 30, 36, 54 %; minus the control's 28, 30, 32 per rep
    r = row(t, 2, 2)
    diffs = [2.0, 6.0, 22.0]
    low, high = stats.t.interval(0.95, df=2, loc=10.0, scale=stats.sem(diffs))
    assert r["excess_degradation_pct"] == pytest.approx(10.0)
    assert (r["excess_ci95_low_pct"], r["excess_ci95_high_pct"]) == (
        pytest.approx(low),
        pytest.approx(high),
    )
    # the point excess is above 5 %, the CI's lower bound (-16.3) is not
    assert low < 5.0 and bool(r["degraded_excess"]) is False
    # raw: 30, 36, 54 % -> lower bound 8.97 > 5, degraded
    assert bool(r["degraded"]) is True
    # at k=1 the control's per-rep noise -1, 0, +1 % pairs with the group's 0, 0, 0
    k1 = row(t, 1, 1)
    assert k1["excess_degradation_pct"] == pytest.approx(0.0, abs=1e-9)
    assert k1["excess_ci95_high_pct"] == pytest.approx(T95_DF2 / math.sqrt(3))
    assert k1["excess_ci_method"] == "paired by rep"


def test_control_demand_and_columns(control_result):
    t = control_result["table"]
    assert list(t.columns) == m.TABLE_COLUMNS
    assert row(t, 0, 1)["demand_per_cmp_mb_s"] == pytest.approx((0.00662 + 0.006554 + 0.006489) / 3)
    assert row(t, 2, 1)["demand_per_cmp_mb_s"] == pytest.approx(4.0)
    assert row(t, 0, 1)["demand_target_mb_s"] == 0.0


def test_excess_falls_back_to_welch_when_reps_do_not_pair(control_jobs):
    jobs = control_jobs.copy()
    failed = (jobs["group"] == 3) & (jobs["k"] == 2) & (jobs["rep"] == 2)
    jobs.loc[failed, "exit_code"] = 1  # group 3 keeps reps 0, 1 at k=2; the control has 0, 1, 2
    r = row(m.degradation_table(jobs, 5.0), 3, 2)
    assert r["excess_ci_method"] == "unpaired (Welch)"
    assert r["excess_degradation_pct"] == pytest.approx(79.0 - 30.0)
    ci = stats.ttest_ind([78.0, 80.0], [28.0, 30.0, 32.0], equal_var=False).confidence_interval()
    assert (r["excess_ci95_low_pct"], r["excess_ci95_high_pct"]) == (
        pytest.approx(ci.low),
        pytest.approx(ci.high),
    )
    assert bool(r["degraded_excess"]) is True  # lower bound ~ 43 > 5


def test_excess_with_one_rep_is_decided_on_the_point_estimate():
    jobs = make_jobs(one_rep(0, 0.01, [10.0], [13.0, 13.0]) + one_rep(1, 5.0, [10.0], [18.0, 18.0]))
    jobs.loc[jobs["group"] == 0, "demand_target_mb_s"] = 0.0
    r = row(m.degradation_table(jobs, 5.0), 1, 2)
    assert r["control_degradation_pct"] == pytest.approx(30.0)
    assert r["excess_degradation_pct"] == pytest.approx(50.0)
    assert math.isnan(r["excess_ci95_low_pct"]) and r["excess_ci_method"] == "fewer than 2 reps"
    assert bool(r["degraded_excess"]) is True


def test_no_control_leaves_the_new_columns_empty(fixture_table):
    assert fixture_table["control_degradation_pct"].isna().all()
    assert fixture_table["excess_degradation_pct"].isna().all()
    assert fixture_table["degraded_excess"].isna().all()
    assert set(fixture_table["excess_ci_method"]) == {""}
    assert m.threshold(fixture_table, 5.0)["basis"] == "raw degradation"


def test_threshold_on_excess_over_control(control_result):
    thr = control_result["threshold"]
    assert thr["basis"] == "excess over control" and thr["control_group"] == 0
    assert [r["group"] for r in thr["groups"]] == [1, 2, 3, 4]  # the control is left out
    assert thr["onset_k"] == {1: None, 2: None, 3: 2, 4: 2}
    assert thr["no_degradation_demand_mb_s"] == pytest.approx(4.0)
    assert thr["first_degrading_demand_mb_s"] == pytest.approx(8.0)
    assert thr["suggested_io_bound_interval_mb_s"] == pytest.approx(8.0)
    assert thr["expected_threshold_from_cap_mb_s"] == pytest.approx(8.0)
    at_k2 = m.control_at(thr, 2)
    assert at_k2["degradation_pct"] == pytest.approx(30.0) and at_k2["degraded"] is True
    assert thr["control"]["onset_k"] == 2


def test_same_data_without_control_has_no_threshold(control_jobs):
    jobs = control_jobs.copy()
    jobs.loc[jobs["group"] == 0, "demand_target_mb_s"] = 0.5  # no longer a control
    thr = analyse(jobs, 5.0)["threshold"]
    assert thr["basis"] == "raw degradation"
    assert thr["no_degradation_demand_mb_s"] is None  # the 30 % of the lowest group is raw


def test_control_note_when_stacking_costs_nothing():
    rows = [(0, 1, rep, 0, 10.0, 0.01) for rep in range(2)]
    rows += [(0, 2, rep, c, 10.0, 0.01) for rep in range(2) for c in range(2)]
    rows += [(1, 1, rep, 0, 10.0, 5.0) for rep in range(2)]
    rows += [(1, 2, rep, c, 15.0, 5.0) for rep in range(2) for c in range(2)]
    jobs = make_jobs(rows)
    jobs.loc[jobs["group"] == 0, "demand_target_mb_s"] = 0.0
    thr = analyse(jobs, 5.0)["threshold"]
    note = sens.control_note(thr)
    assert "degrades 0 %" in note and "not above the 5 % tolerance" in note
    assert sens.control_note(analyse(make_jobs(rows), 5.0)["threshold"]) is None


def test_control_without_degradation_at_k_excludes_groups(control_jobs):
    jobs = control_jobs.copy()
    jobs.loc[(jobs["group"] == 0) & (jobs["k"] == 2), "result_check"] = "mismatch"
    result = analyse(jobs, 5.0)
    t, thr = result["table"], result["threshold"]
    assert math.isnan(row(t, 3, 2)["excess_degradation_pct"])
    assert row(t, 3, 2)["reason"] == "control group 0 has no degradation at k=2: excess undefined"
    assert thr["groups"] == [] and len(thr["excluded_groups"]) == 4
    assert "excess over the control undefined at k = 2" in thr["excluded_groups"][0]["reason"]
    assert "has no degradation at k = 2 (no valid job at k=2)" in sens.control_note(thr)


def test_two_control_groups_are_an_error():
    jobs = pd.read_csv(CONTROL_FIXTURES / "jobs.csv")
    jobs.loc[jobs["group"] == 1, "demand_target_mb_s"] = 0
    with pytest.raises(AnalysisInputError, match=r"demand_target_mb_s: 0 in groups 0, 1 \(expected at most one"):
        m.check_jobs(jobs, "jobs.csv")


def test_control_is_a_dashed_black_curve(control_result, tmp_path, monkeypatch):
    drawn = []
    monkeypatch.setattr(figures.plt, "close", drawn.append)
    figures.plot_fig14(control_result["table"], tmp_path / "fig.png", 5.0)
    ax = drawn[0].axes[0]
    curves = {c.get_label(): c.lines[0] for c in ax.containers}
    line = curves["control (compute only)"]
    assert line.get_linestyle() == "--" and line.get_color() == "black"
    assert set(curves) == {"control (compute only)", "2", "4", "8", "12"}
    assert all(curves[d].get_linestyle() == "-" for d in ("2", "4", "8", "12"))


# ----------------------------------------------------------------------------- the claims' evidence


def test_slowdown_is_paired_by_rep_and_over_the_control(control_jobs):
    runs = control_jobs.drop_duplicates("run_id")[["run_id", "group", "k", "rep"]]
    table = m.degradation_table(control_jobs, 5.0)
    slow = m.slowdown(m.per_run(control_jobs, runs), table, 5.63).set_index("run_id")
    assert 0 not in set(slow["group"])  # the control is the reference, not a group of the claims
    # group 2, rep 2: 15.4 / 10 over the control's 13.2 / 10.1
    r = slow.loc["g2-k2-r2"]
    assert r["slowdown_ratio"] == pytest.approx(1.54)
    assert r["control_slowdown_ratio"] == pytest.approx(13.2 / 10.1)
    assert r["io_slowdown_ratio"] == pytest.approx(1.54 / (13.2 / 10.1))
    assert bool(r["below_paper_threshold"]) and not bool(slow.loc["g3-k2-r0", "below_paper_threshold"])


def test_a_failed_control_run_fails_the_groups_of_its_rep(control_jobs):
    jobs = control_jobs.copy()
    jobs.loc[jobs["run_id"] == "g0-k1-r1", "result_check"] = "mismatch"
    runs = jobs.drop_duplicates("run_id")[["run_id", "group", "k", "rep"]]
    slow = m.slowdown(m.per_run(jobs, runs), m.degradation_table(jobs, 5.0), 5.63).set_index("run_id")
    assert slow.loc["g3-k2-r1", "failed"] and not slow.loc["g3-k2-r0", "failed"]
    assert (
        "the control's run g0-k2-r1: its k = 1 run g0-k1-r1: 1 of 1 jobs failed"
        in slow.loc["g3-k2-r1", "failed_reason"]
    )


def test_without_a_control_the_slowdown_is_the_groups_own(control_jobs):
    jobs = control_jobs.copy()
    jobs.loc[jobs["group"] == 0, "demand_target_mb_s"] = 0.5  # no longer a control
    runs = jobs.drop_duplicates("run_id")[["run_id", "group", "k", "rep"]]
    slow = m.slowdown(m.per_run(jobs, runs), m.degradation_table(jobs, 5.0), 5.63)
    assert 0 in set(slow["group"]) and slow["control_slowdown_ratio"].isna().all()
    assert (slow["io_slowdown_ratio"] == slow["slowdown_ratio"]).all()

"""The verdict engine (analysis.verdicts, analysis.claims) on hand-made data: every outcome, the
attainable p, equivalence, failed runs, missing machine needs without runs, unknown metrics and
variants, claims over many points, and the sequential design's levels."""

import math
import re

import numpy as np
import pandas as pd
import pytest
from scipy import stats

from analysis import stats as st
from analysis.claims import ClaimSet, check_claims, complete_claim, load_claims, paper_on_effect_scale
from analysis.common import AnalysisInputError
from analysis.verdicts import Looks, Machine, counts, judge

VALUES = {
    "gain_pct": {"value": -20, "unit": "%", "source": "Sec. 5", "quote": "20% faster"},
    "range_pct": {"value": "10% to 30%", "unit": "%", "source": "Sec. 6", "quote": "10% to 30%"},
    "bw": {"value": 100, "unit": "MB/s", "source": "Sec. 2", "quote": "100 MB/s"},
}
MACHINE = Machine({"smt": False, "numa_nodes": 1, "pmu": False, "pmem": False, "cpus": 2},
                  {"smt": "one hardware thread per core", "pmu": "perf: instructions <not supported>"})  # fmt: skip


def claim(**kw) -> dict:
    c = {"says": "x is faster than y", "source": "Sec. 5", "quote": "faster", "paper_as": "same", "table": "runs",
         "pair_by": ["rep"], "aggregate": "mean", "min_reps": 2}  # fmt: skip
    c.update(kw)
    return complete_claim("claims.yaml", "c", c, VALUES)


def paired(head: list[float], base: list[float], **extra) -> pd.DataFrame:
    rows = []
    for rep, (h, b) in enumerate(zip(head, base)):
        rows.append({"run_id": f"x{rep}", "scheme": "x", "rep": rep, "t": h, **extra})
        rows.append({"run_id": f"y{rep}", "scheme": "y", "rep": rep, "t": b, **extra})
    return pd.DataFrame(rows)


RATIO = {"effect": "ratio", "metric": "t", "head": {"scheme": "x"}, "base": {"scheme": "y"}, "expect": "less"}
# 8 pairs: the fewest that decide at 95 % are 6 (the sign-flip test's smallest one-sided p is 1 / 2^n)
HEAD8 = [8.0, 8.2, 7.9, 8.1, 8.05, 7.95, 8.15, 7.85]
BASE8 = [10.0, 10.1, 9.9, 10.2, 10.0, 9.95, 10.05, 10.1]


def test_reproduced_when_the_interval_lies_on_the_paper_side():
    df = paired(HEAD8, BASE8)
    row = judge("c", claim(**RATIO), {"runs": df}, MACHINE)
    assert row["outcome"] == "reproduced" and row["n"] == 8
    logs = np.log(np.array(HEAD8) / np.array(BASE8))
    half = stats.t.ppf(0.975, 7) * logs.std(ddof=1) / math.sqrt(8)
    assert row["estimate"] == pytest.approx(math.exp(logs.mean()))
    assert (row["ci_low"], row["ci_high"]) == (pytest.approx(math.exp(logs.mean() - half)),
                                               pytest.approx(math.exp(logs.mean() + half)))  # fmt: skip
    assert row["ci_high"] < 1 and "below 1" in row["why"]
    assert row["runs"] == [f"x{i}" for i in range(8)] + [f"y{i}" for i in range(8)]


def test_in_magnitude_when_the_interval_lies_inside_the_declared_band():
    band = {"at_least": 0.75, "at_most": 0.85, "from": "20 % faster: 15 % to 25 %"}
    c = claim(**RATIO, value="gain_pct", paper_as="pct_change", magnitude=band)
    inside = judge("c", c, {"runs": paired(HEAD8, BASE8)}, MACHINE)
    assert inside["outcome"] == "reproduced" and inside["magnitude"] == "in magnitude"
    assert inside["in_magnitude"] is True and inside["paper_value"] == "-20 %"
    far = paired([v * 0.625 for v in HEAD8], BASE8)
    outside = judge("c", c, {"runs": far}, MACHINE)
    assert outside["outcome"] == "reproduced" and outside["magnitude"] == "not in magnitude"
    # the paper's value alone (no band) judges no magnitude
    plain = judge("c", claim(**RATIO, value="gain_pct", paper_as="pct_change"), {"runs": far}, MACHINE)
    assert plain["magnitude"] is None and plain["in_magnitude"] is None


def test_contradicted_when_the_interval_lies_on_the_other_side():
    df = paired([v * 1.5 for v in HEAD8], BASE8)
    row = judge("c", claim(**RATIO), {"runs": df}, MACHINE)
    assert row["outcome"] == "contradicted" and "against the paper's direction" in row["why"]


def test_inconclusive_says_n_the_interval_and_the_reps_that_would_decide():
    df = paired([9.0, 10.4, 9.3], [10.0, 9.9, 10.1])
    row = judge("c", claim(**RATIO), {"runs": df}, MACHINE)
    assert row["outcome"] == "inconclusive" and row["n"] == 3
    assert row["ci_low"] < 1 < row["ci_high"] and "n = 3" in row["measured"]
    logs = np.log(np.array([9.0, 10.4, 9.3]) / np.array([10.0, 9.9, 10.1]))
    assert row["reps_needed"] == st.reps_to_exclude(logs, 0.0, 0.95) and row["reps_needed"] > 3
    assert f"about {row['reps_needed']} reps would decide" in row["why"]


def test_one_rep_is_never_decided_by_its_direction():
    row = judge("c", claim(**RATIO), {"runs": paired([5.0], [10.0])}, MACHINE)
    assert row["outcome"] == "inconclusive" and "at least 2 pairs" in row["why"]


def test_a_test_that_cannot_reach_the_level_is_inconclusive():
    """The signed-rank test with 4 pairs: its smallest two-sided p is 2/16 = 0.125."""
    df = paired([5.0, 5.1, 4.9, 5.0], [10.0, 10.1, 9.9, 10.2])
    row = judge("c", claim(**RATIO, test="wilcoxon"), {"runs": df}, MACHINE)
    assert row["outcome"] == "inconclusive" and "smallest p is 0.125" in row["why"] and row["reps_needed"] == 6
    six = paired([5.0, 5.1, 4.9, 5.0, 5.2, 4.8], [10.0, 10.1, 9.9, 10.2, 10.0, 9.8])
    assert judge("c", claim(**RATIO, test="wilcoxon"), {"runs": six}, MACHINE)["outcome"] == "reproduced"


def test_a_trend_whose_perfect_ranking_cannot_reach_the_level_is_inconclusive():
    df = pd.DataFrame({"run_id": ["a", "b", "c"], "rep": [0, 0, 0], "demand": [1, 2, 3], "t": [1.0, 2.0, 3.0]})
    c = claim(effect="trend", metric="t", x="demand", expect="increasing")
    row = judge("c", c, {"runs": df}, MACHINE)
    assert row["outcome"] == "inconclusive" and "even a perfect ranking gives p = 0.167" in row["why"]
    many = pd.DataFrame({"run_id": [f"r{i}" for i in range(8)], "rep": 0, "demand": range(8),
                         "t": [1, 2, 2.5, 3, 4, 4.5, 6, 7.0]})  # fmt: skip
    assert judge("c", c, {"runs": many}, MACHINE)["outcome"] == "reproduced"
    falling = many.assign(t=many["t"][::-1].to_numpy())
    assert judge("c", c, {"runs": falling}, MACHINE)["outcome"] == "contradicted"


def test_no_change_is_an_equivalence_not_an_interval_containing_the_null():
    c = claim(**{**RATIO, "expect": "equivalent"}, margin=0.05)
    tight = paired([10.0, 10.1, 9.95, 10.05, 10.0], [10.0, 10.0, 10.0, 10.0, 10.0])
    assert judge("c", c, {"runs": tight}, MACHINE)["outcome"] == "reproduced"
    # wide: the interval contains 1, yet shows nothing (the old rule passed it)
    wide = paired([8.0, 12.5, 9.0], [10.0, 10.0, 10.0])
    row = judge("c", c, {"runs": wide}, MACHINE)
    assert row["ci_low"] < 1 < row["ci_high"] and row["outcome"] == "inconclusive"
    changed = paired([12.0, 12.1, 11.9, 12.0, 12.05, 11.95, 12.02, 11.98], [10.0] * 8)
    assert judge("c", c, {"runs": changed}, MACHINE)["outcome"] == "contradicted"


def test_failed_runs_give_failed_with_the_runs_named():
    df = paired([8.0, 8.2, 7.9], [10.0, 10.1, 9.9])
    df["failed"] = False
    df["failed_reason"] = ""
    df.loc[df["run_id"] == "x1", ["failed", "failed_reason"]] = [True, "1 of 8 jobs failed"]
    row = judge("c", claim(**RATIO), {"runs": df}, MACHINE)
    assert row["outcome"] == "failed" and row["runs"] == ["x1"] and "1 of 8 jobs failed" in row["why"]
    nan = paired([8.0, math.nan, 7.9], [10.0, 10.1, 9.9])
    row = judge("c", claim(**RATIO), {"runs": nan}, MACHINE)
    assert row["outcome"] == "failed" and row["runs"] == ["x1"] and "no value of t" in row["why"]
    # the analysis's reason for the missing value is named beside it (io_latency_split's growth
    # ratio over a base run whose serving time read 0)
    nan["reason"] = ""
    nan.loc[nan["run_id"] == "x1", "reason"] = "svc_ms 0.059 at k = 2, 0 at k = 1"
    row = judge("c", claim(**RATIO), {"runs": nan}, MACHINE)
    assert (
        row["outcome"] == "failed" and "no value of t (svc_ms 0.059 at k = 2, 0 at k = 1) in 1 run(s): x1" in row["why"]
    )


def test_a_missing_machine_need_is_not_measurable_without_any_run():
    c = claim(**RATIO, needs={"smt": True, "pmu": True})
    row = judge("c", c, {}, MACHINE)
    assert row["outcome"] == "not measurable here" and row["n"] == 0
    assert "SMT (two hardware threads per core) (this machine: one hardware thread per core)" in row["why"]
    assert "perf: instructions <not supported>" in row["why"]
    numa = judge("c", claim(**RATIO, needs={"numa_nodes": 2}), {}, MACHINE)
    assert "2 NUMA nodes" in numa["why"]
    # the configuration did not run a side: inconclusive with n = 0, never "not measurable"
    row = judge("c", claim(**RATIO), {"runs": paired([1.0], [2.0]).query("scheme == 'x'")}, MACHINE)
    assert row["outcome"] == "inconclusive" and row["n"] == 0 and "measured no scheme y" in row["why"]


def test_machine_specific_values_are_shown_not_judged():
    df = pd.DataFrame({"run_id": ["a", "b", "c"], "rep": [0, 1, 2], "bw_mb_s": [140.0, 143.0, 141.0]})
    row = judge("c", claim(effect="machine", metric="bw_mb_s", value="bw"), {"runs": df}, MACHINE)
    assert row["outcome"] == "differs (machine-specific)" and row["estimate"] == pytest.approx(141.333, abs=1e-3)
    assert "ours / paper's = 1.41" in row["why"] and row["paper_value"] == "100 MB/s"


def test_the_point_is_named_in_advance_never_the_best_of_many():
    rows = []
    for mpl, gain in ((2, 0.5), (3, 0.95), (5, 1.02)):  # the best point (2) is not the named one (5)
        for rep in range(8):
            rows.append({"run_id": f"x{mpl}{rep}", "scheme": "x", "rep": rep, "mpl": mpl, "t": 10 * gain + rep * 0.01})
            rows.append({"run_id": f"y{mpl}{rep}", "scheme": "y", "rep": rep, "mpl": mpl, "t": 10.0 + rep * 0.01})
    row = judge("c", claim(**RATIO, at={"mpl": "max"}), {"runs": pd.DataFrame(rows)}, MACHINE)
    assert "at mpl 5" in row["why"] and row["outcome"] == "contradicted"


def test_a_claim_on_every_point_needs_every_point():
    rows = []
    for point, gain in (("a", 0.8), ("b", 0.8), ("c", 1.0)):
        for rep, noise in enumerate((0.0, 0.01, -0.01, 0.02, -0.02, 0.015, -0.015, 0.005)):
            rows.append({"run_id": f"x{point}{rep}", "scheme": "x", "rep": rep, "job": point, "t": 10 * gain + noise})
            rows.append({"run_id": f"y{point}{rep}", "scheme": "y", "rep": rep, "job": point, "t": 10.0 + noise / 2})
    df = pd.DataFrame(rows)
    c = claim(**RATIO, over=["job"])
    row = judge("c", c, {"runs": df}, MACHINE)
    assert row["outcome"] == "inconclusive" and "1 of 3 points undecided" in row["why"]
    assert judge("c", c, {"runs": df[df["job"] != "c"]}, MACHINE)["outcome"] == "reproduced"


def test_a_point_against_the_paper_short_of_the_bonferroni_level_is_undecided_with_the_reps_it_needs():
    """Point b lies on the other side at 95 % but not at 97.5 % (Bonferroni over 2 points): the
    claim is inconclusive, says so at that level, and counts the reps that would decide b, so
    the sequential design can add them."""
    rows = []
    b = [-0.004, 0.136, 0.006, 0.106, 0.016, 0.076, -0.009, 0.096]  # t 2.62: above 2.36 (95 %), below 2.84
    for point, logs in (("a", [-0.22, -0.23, -0.21, -0.22, -0.225, -0.215, -0.22, -0.23]), ("b", b)):
        for rep, lg in enumerate(logs):
            rows.append({"run_id": f"x{point}{rep}", "scheme": "x", "rep": rep, "job": point, "t": 10 * math.exp(lg)})
            rows.append({"run_id": f"y{point}{rep}", "scheme": "y", "rep": rep, "job": point, "t": 10.0})
    c = claim(**RATIO, over=["job"])
    row = judge("c", c, {"runs": pd.DataFrame(rows)}, MACHINE)
    assert row["outcome"] == "inconclusive", row
    assert "1 of 2 points undecided, e.g. job b: at the Bonferroni level (0.025) the interval contains 1" in row["why"]
    assert row["reps_needed"] is not None and row["reps_needed"] > 8


def test_a_value_of_zero_has_no_ratio_and_no_other_scale_stands_in():
    df = paired([0.0, 0.0, 0.0, 0.0], [30.0, 25.0, 40.0, 35.0])
    row = judge("c", claim(**RATIO), {"runs": df}, MACHINE)
    assert row["outcome"] == "failed" and "a value <= 0 has no ratio" in row["why"]
    assert row["runs"] == ["x0", "x1", "x2", "x3"]


def test_rare_events_need_enough_of_them():
    df = paired([0.0, 0.001, 0.0], [0.002, 0.0, 0.001], events=1)
    c = claim(**RATIO, min_events={"column": "events", "at_least": 20})
    row = judge("c", c, {"runs": df}, MACHINE)
    assert row["outcome"] == "inconclusive" and "fewer than the 20" in row["why"] and row["reps_needed"] == 20


def test_ratio_of_ratios_compares_two_points_and_needs_two():
    rows = []
    for mpl, gain in ((3, 0.9), (5, 0.7)):
        for rep in range(8):
            rows.append({"run_id": f"x{mpl}{rep}", "scheme": "x", "rep": rep, "mpl": mpl, "t": 10 * gain + 0.01 * rep})
            rows.append({"run_id": f"y{mpl}{rep}", "scheme": "y", "rep": rep, "mpl": mpl, "t": 10.0})
    c = claim(**{**RATIO, "effect": "ratio_of_ratios"}, across={"mpl": ["min", "max"]})
    row = judge("c", c, {"runs": pd.DataFrame(rows)}, MACHINE)
    assert row["outcome"] == "reproduced" and row["estimate"] == pytest.approx(0.7 / 0.9, rel=0.01)
    one = pd.DataFrame(rows).query("mpl == 3")
    assert "measured one mpl (3) only" in judge("c", c, {"runs": one}, MACHINE)["why"]


def test_looks_judge_at_pococks_level():
    assert st.look_alpha(1) == 0.05 and st.look_alpha(3) == pytest.approx(0.0221)
    df = paired([9.3, 9.9, 9.5, 9.2, 9.8], [10.0, 10.1, 9.9, 10.0, 10.2])
    at_one = judge("c", claim(**RATIO), {"runs": df}, MACHINE, Looks(1, 1, 5))
    at_three = judge("c", claim(**RATIO), {"runs": df}, MACHINE, Looks(1, 3, 5))
    assert at_three["level"] == pytest.approx(0.9779) and at_three["ci_high"] > at_one["ci_high"]
    assert (at_three["look"], at_three["looks"]) == (1, 3)


def test_counts_list_every_outcome():
    rows = [{"outcome": "reproduced"}, {"outcome": "failed"}, {"outcome": "reproduced"}]
    assert counts(rows) == {"reproduced": 2, "contradicted": 0, "inconclusive": 0, "not measurable here": 0,
                            "not run in this profile": 0, "failed": 1, "differs (machine-specific)": 0}  # fmt: skip


# ----------------------------------------------------------------------------- declarations


def claim_set(**claims) -> ClaimSet:
    return ClaimSet("exp", "experiments/exp/claims.yaml", "001", "cite", "t", "f", claims=claims)


def test_an_unknown_metric_or_variant_is_one_line_naming_the_claim_and_the_key():
    tables = {"runs": {"t", "scheme", "rep", "mpl"}}
    with pytest.raises(AnalysisInputError) as e:
        check_claims(claim_set(fast=claim(**{**RATIO, "metric": "tt"})), tables)
    assert str(e.value) == ("experiments/exp/claims.yaml: claims.fast.metric: 'tt' "
                            "(expected a metric of table runs (nearest: t))")  # fmt: skip
    with pytest.raises(AnalysisInputError, match=r"claims.fast.head.scheme: 'xx' \(expected one of x, y"):
        check_claims(claim_set(fast=claim(**{**RATIO, "head": {"scheme": "xx"}})), tables, {"scheme": {"x", "y"}})
    with pytest.raises(AnalysisInputError, match="claims.fast.at.mpll"):
        check_claims(claim_set(fast=claim(**RATIO, at={"mpll": "max"})), tables)
    check_claims(claim_set(fast=claim(**RATIO, at={"mpl": "max"})), tables, {"scheme": {"x", "y"}})


@pytest.mark.parametrize(
    "extra, key",
    [
        ({"expect": "increasing"}, "claims.c.expect"),
        ({"expect": "equivalent"}, "claims.c.margin"),
        ({"margin": 0.1}, "claims.c.margin"),
        ({"test": "spearman"}, "claims.c.test"),
        ({"value": "nope"}, "claims.c.value"),
        ({"head": None}, "claims.c.head"),
    ],
)
def test_inconsistent_claims_are_one_line_errors(extra, key):
    c = {**RATIO, **extra}
    if c.get("head") is None:
        c.pop("head")
    with pytest.raises(AnalysisInputError, match=key.replace(".", r"\.")):
        claim(**c)


def test_every_experiments_claims_load(repo_root):
    for path in sorted((repo_root / "experiments").glob("*/claims.yaml")):
        cs = load_claims(path, path.parent.name, repo_root / "experiments" / "_papers")
        assert cs.citation and cs.title


def test_paper_values_on_the_effect_scale():
    assert paper_on_effect_scale(claim(**RATIO, value="gain_pct", paper_as="pct_change")) == (0.8, 0.8)
    assert paper_on_effect_scale(claim(**RATIO, value="gain_pct", paper_as="pct_reduction")) == (1.2, 1.2)
    assert paper_on_effect_scale(claim(**RATIO, value="range_pct", paper_as="pct_change")) == (1.1, 1.3)


def test_independent_sets_are_judged_on_welch_interval():
    df = pd.DataFrame(
        [{"run_id": f"x{i}", "scheme": "x", "t": v} for i, v in enumerate([8.0, 8.3, 7.8, 8.1])]
        + [{"run_id": f"y{i}", "scheme": "y", "t": v} for i, v in enumerate([10.0, 10.4, 9.7, 10.2, 9.9])]
    )
    c = claim(**RATIO, pair_by=[])
    row = judge("c", c, {"runs": df}, MACHINE)
    logs_x, logs_y = np.log([8.0, 8.3, 7.8, 8.1]), np.log([10.0, 10.4, 9.7, 10.2, 9.9])
    assert row["outcome"] == "reproduced" and "n = 4 + 5" in row["measured"]
    assert row["estimate"] == pytest.approx(math.exp(logs_x.mean() - logs_y.mean()))
    # 4 + 3 runs: the exact permutation test's smallest p, 1 / 35, cannot reach 0.025
    three = judge("c", c, {"runs": df[~df["run_id"].isin(["y3", "y4"])]}, MACHINE)
    assert three["outcome"] == "inconclusive" and three["reps_needed"] == 4


def test_a_family_level_given_by_the_caller():
    df = paired([9.0, 9.5, 9.2], [10.0, 10.1, 9.9])
    at_95 = judge("c", claim(**RATIO), {"runs": df}, MACHINE)
    at_99 = judge("c", claim(**RATIO), {"runs": df}, MACHINE, alpha=0.01)
    assert at_99["level"] == pytest.approx(0.99) and "99 %" in at_99["test"]
    assert at_99["ci_high"] > at_95["ci_high"]


def test_a_claim_on_named_points_counts_every_named_point():
    """#1-#6 improve: measured on #1 and #6 only, the claim cannot read reproduced for all six."""
    rows = []
    for point in ("w01", "w06"):
        for rep, noise in enumerate((0.0, 0.01, -0.01, 0.02, -0.02, 0.015, -0.015, 0.005)):
            rows.append({"run_id": f"x{point}{rep}", "scheme": "x", "rep": rep, "workload": point, "t": 8 + noise})
            rows.append({"run_id": f"y{point}{rep}", "scheme": "y", "rep": rep, "workload": point, "t": 10 + noise})
    df = pd.DataFrame(rows)
    named = claim(**RATIO, over=["workload"], where={"workload": ["w01", "w02", "w06"]})
    row = judge("c", named, {"runs": df}, MACHINE)
    assert row["outcome"] == "not run in this profile" and "does not run workload w02" in row["why"]
    measured = claim(**RATIO, over=["workload"], where={"workload": ["w01", "w06"]})
    assert judge("c", measured, {"runs": df}, MACHINE)["outcome"] == "reproduced"


def test_a_change_as_large_as_the_margin_says_the_reps_that_would_show_it():
    c = claim(**{**RATIO, "expect": "equivalent"}, margin=0.05)
    row = judge("c", c, {"runs": paired([11.0, 11.9, 10.5], [10.0, 10.0, 10.0])}, MACHINE)
    assert row["outcome"] == "inconclusive" and "at least the margin: about" in row["why"] and row["reps_needed"] > 3


def test_a_trend_too_short_to_reach_the_level_says_how_many_points_would():
    df = pd.DataFrame({"run_id": ["a", "b", "c"], "rep": [0, 0, 0], "demand": [1, 2, 3], "t": [1.0, 2.0, 3.0]})
    row = judge("c", claim(effect="trend", metric="t", x="demand", expect="increasing"), {"runs": df}, MACHINE)
    assert row["outcome"] == "inconclusive" and row["reps_needed"] == 2  # 4 points: 1/24 < 0.05; 3 a rep


def test_an_unquoted_null_key_reads_as_the_null(tmp_path):
    p = tmp_path / "claims.yaml"
    p.write_text(
        'paper: "001"\ncitation: c\ntitle: t\nfigure: f\nclaims:\n  g:\n    kind: finding\n    says: s\n    source: s\n'
        "    quote: q\n"
        "    effect: value\n    metric: t\n    expect: greater\n    null: 1.01\n    scale: log\n"
    )
    assert load_claims(p, "e").claims["g"]["null"] == 1.01


def test_no_claims_yaml_cuts_a_text_at_an_unquoted_hash(repo_root):
    """YAML reads ' #' as a comment: 'workload #1 (x264)' unquoted would say 'workload'."""
    cut = [
        f"{p.relative_to(repo_root)}:{i}"
        for p in sorted((repo_root / "experiments").glob("*/claims.yaml"))
        for i, line in enumerate(p.read_text().splitlines(), 1)
        if re.match(r"^\s+[a-z_]+: [^'\"#>|\[{].* #", line)
    ]
    assert not cut, cut


def test_every_judged_row_records_what_it_was_decided_against():
    """The row's basis (scale, null, direction, margin, alpha) lets `corun verdicts diff` put a
    number on the moves sampling alone gives; it must be the decision's own."""
    df = paired([8.0, 8.2, 7.9, 8.1], [10.0, 10.1, 9.9, 10.2])
    ratio = judge("c", claim(**RATIO), {"runs": df}, MACHINE)
    assert ratio["basis"] == {"scale": "log", "null": 1.0, "expect": "less", "margin": None, "alpha": 0.05}
    eq = judge("c", claim(**{**RATIO, "expect": "equivalent"}, margin=0.05), {"runs": df}, MACHINE)
    assert eq["basis"]["margin"] == 0.05 and eq["basis"]["expect"] == "equivalent"
    zero = judge("c", claim(**RATIO), {"runs": paired([0.0] * 4, [30.0, 25.0, 40.0, 35.0])}, MACHINE)
    assert zero["outcome"] == "failed" and "basis" not in zero  # no ratio, and no other scale stands in
    many = pd.DataFrame({"run_id": [f"r{i}" for i in range(8)], "rep": 0, "demand": range(8),
                         "t": [1, 2, 2.5, 3, 4, 4.5, 6, 7.0]})  # fmt: skip
    trend = judge("c", claim(effect="trend", metric="t", x="demand", expect="increasing"), {"runs": many}, MACHINE)
    assert trend["basis"]["scale"] == "rho" and trend["basis"]["null"] == 0.0
    looked = judge("c", claim(**RATIO), {"runs": df}, MACHINE, looks=Looks(look=1, of=3))
    assert looked["basis"]["alpha"] == pytest.approx(1 - looked["level"], abs=1e-4)

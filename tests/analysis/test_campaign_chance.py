"""The chance floor of `corun verdicts diff`: how many moves sampling alone gives, which claims
sit near their null or margin, and which vary between campaigns beyond their intervals."""

import math

import pytest

from analysis import campaign_chance as cc
from analysis import campaign_verdicts as cv

LOG_LESS = {"scale": "log", "null": 1.0, "expect": "less", "margin": None, "alpha": 0.05}


def row(estimate, half, outcome="inconclusive", basis=LOG_LESS, n=10, level=0.95):
    """A row whose interval on the log scale is estimate's log +- half."""
    g = math.log(estimate)
    return {
        "claim": "x",
        "outcome": outcome,
        "estimate": estimate,
        "ci_low": math.exp(g - half),
        "ci_high": math.exp(g + half),
        "level": level,
        "n": n,
        "basis": basis,
    }


def test_a_nil_effect_is_decided_at_the_level_and_a_large_one_always():
    pr, pc = cc.decided_chance(LOG_LESS, 0.0, 0.1)
    assert pr == pytest.approx(0.025, abs=1e-3) and pc == pytest.approx(0.025, abs=1e-3)
    pr, pc = cc.decided_chance(LOG_LESS, -1.0, 0.1)  # ten standard errors below the null
    assert pr > 0.999 and pc < 1e-6
    # a trend is one-sided at alpha / 2 a side, as its two-sided interval: a nil rho decided at 0.025 each way
    pr, pc = cc.decided_chance({**LOG_LESS, "scale": "rho", "expect": "increasing"}, 0.0, 0.2)
    assert pr == pytest.approx(0.025, abs=1e-3) and pc == pytest.approx(0.025, abs=1e-3)


def test_a_no_change_claim_inside_its_margin_is_reproduced_outside_contradicted():
    eq = {**LOG_LESS, "expect": "equivalent", "margin": 0.10}
    inside = cc.decided_chance(eq, 0.0, 0.01)
    outside = cc.decided_chance(eq, 0.5, 0.01)
    assert inside[0] > 0.999 and inside[1] < 1e-6
    assert outside[1] > 0.999 and outside[0] < 1e-6
    at_margin = cc.decided_chance(eq, math.log1p(0.10), 0.01)
    assert at_margin[0] < 0.06 and at_margin[1] < 0.06


def test_a_claim_at_its_boundary_moves_often_one_far_from_it_seldom():
    # an interval whose end sits on the null: decided about half the time
    edge = cc.claim_chance([row(math.exp(-0.196), 0.196)] * 3)
    far = cc.claim_chance([row(0.5, 0.05, "reproduced")] * 3)
    assert edge["p_decided"] == pytest.approx(0.5, abs=0.01)
    assert edge["p_move"] == pytest.approx(0.75, abs=0.01)
    assert far["p_move"] < 1e-6 and far["reps_stable"] is not None and far["reps_stable"] <= 10
    # the same effect and spread at more reps: the reps that bring the move to 10 %
    need = edge["reps_stable"]
    assert need > 10
    se = 0.196 / 1.959964 * math.sqrt(10 / need)
    p = sum(cc.decided_chance(LOG_LESS, -0.196, se))
    assert 1 - p**3 - (1 - p) ** 3 == pytest.approx(cc.STABLE_MOVE, abs=0.01)


def test_campaigns_further_apart_than_their_intervals_are_heterogeneous():
    same = cc.claim_chance([row(0.9, 0.05), row(0.9, 0.05), row(0.9, 0.05)])
    apart = cc.claim_chance([row(0.8, 0.05, "reproduced"), row(1.0, 0.05), row(1.2, 0.05, "contradicted")])
    assert same["q"] == pytest.approx(0.0) and same["q_p"] == pytest.approx(1.0)
    assert apart["q_p"] < 1e-6


def test_rows_without_an_interval_or_a_judged_outcome_are_left_out():
    assert cc.claim_chance([row(0.9, 0.05), {**row(0.9, 0.05), "ci_low": None}]) is None
    assert cc.claim_chance([row(0.9, 0.05), {**row(0.9, 0.05), "outcome": "failed"}]) is None
    assert cc.claim_chance([row(0.9, 0.05), None]) is None


def test_rows_from_before_the_basis_take_it_from_the_declared_claim():
    old = {k: v for k, v in row(0.9, 0.05).items() if k != "basis"}
    old["test"] = "97.79 % t-interval of the log ratios"
    filled = cc.with_basis([{("mpl_sweep", "blocking_beats_spinning"): old}])[0]
    basis = filled[("mpl_sweep", "blocking_beats_spinning")]["basis"]
    assert basis["scale"] == "log" and basis["expect"] == "less" and basis["null"] == 1.0
    assert basis["alpha"] == pytest.approx(0.05)
    # a claim this checkout does not declare stays without one (and is left out)
    unknown = cc.with_basis([{("no_such_experiment", "x"): old}])[0]
    assert "basis" not in unknown[("no_such_experiment", "x")]


def test_diff_text_ends_with_the_chance_floor(tmp_path):
    a = {("e", "x"): {**row(0.82, 0.196, "reproduced"), "paper": "001"}}
    b = {("e", "x"): {**row(0.9, 0.196), "paper": "001"}}
    text = cv.diff_text(["a", "b"], [a, b])
    assert "moved between a decided outcome and inconclusive: 1 of 1 (100.0 %)" in text
    assert "sampling alone (normal approximation from the rows' intervals, 1 of 1 claims have one)" in text
    assert "  e.x: " in text and "reps would bring it to 10 %" in text


def test_the_chance_of_as_many_moves_or_more_is_the_poisson_binomial_tail():
    assert cc.at_least([0.5, 0.5], 0) == pytest.approx(1.0)
    assert cc.at_least([0.5, 0.5], 1) == pytest.approx(0.75)
    assert cc.at_least([0.5, 0.5], 2) == pytest.approx(0.25)
    assert cc.at_least([0.1] * 10, 5) == pytest.approx(0.00163, abs=1e-5)  # binomial(10, 0.1) >= 5


def test_moves_beyond_what_sampling_gives_are_called_out():
    # ten claims far from their null, all reproduced in one campaign and inconclusive in the
    # other by their outcomes: sampling alone would hardly ever move them
    far = {("e", f"c{i}"): {**row(0.5, 0.05, "reproduced"), "paper": "001"} for i in range(10)}
    odd = {k: {**r, "outcome": "inconclusive"} for k, r in far.items()}
    c = cc.chance([far, odd], moved=cv.diff([far, odd])["moves"])
    assert c["observed"] == 10 and c["p_at_least"] < 1e-9
    assert "more moves than sampling explains" in cc.chance_text([far, odd], cv.diff([far, odd])["moves"])


def test_more_reps_shrink_the_spread_as_one_over_their_root():
    edge = [row(math.exp(-0.196), 0.196)] * 3
    at4 = cc.claim_chance(edge, factor=4)
    half_se = 0.196 / cc.sps.norm.ppf(0.975) / 2
    assert at4["n"] == 40 and at4["p_decided"] == pytest.approx(sum(cc.decided_chance(LOG_LESS, -0.196, half_se)))
    assert at4["reps_stable"] == cc.claim_chance(edge)["reps_stable"]  # the same effect needs the same reps

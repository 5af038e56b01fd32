"""Statistics for comparisons (analysis.stats), against hand-computed or scipy answers."""

import math

import numpy as np
import pytest
from scipy import stats as sst

from analysis import stats


def test_aggregations_by_hand():
    assert stats.aggregate([1, 2, 4], "arithmetic") == pytest.approx(7 / 3)
    assert stats.aggregate([1, 2, 4], "harmonic") == pytest.approx(3 / (1 + 1 / 2 + 1 / 4))
    assert stats.aggregate([1, 2, 4], "geometric") == pytest.approx(2.0)
    assert math.isnan(stats.aggregate([1, 0, 4], "geometric"))
    rows = stats.aggregate(np.array([[1.0, 4.0], [2.0, 8.0]]), "geometric", axis=1)
    assert rows == pytest.approx([2.0, 4.0])
    with pytest.raises(ValueError):
        stats.aggregate([1], "median")


def test_mann_whitney_exact_known_answer():
    # complete separation of 3 and 3 values: U = 9, exact two-sided p = 2 / C(6, 3) = 0.1
    res = stats.mann_whitney([1, 2, 3], [4, 5, 6])
    assert res["statistic"] == 9 and res["p"] == pytest.approx(0.1)
    # 6 and 6: p = 2 / C(12, 6)
    assert stats.mann_whitney(range(6), range(10, 16))["p"] == pytest.approx(2 / 924)
    assert stats.mann_whitney([1, 1], [1, 1])["p"] is None
    assert stats.mann_whitney([1], [2, 3])["p"] is None


def test_welch_by_hand():
    a, b = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 7.0])
    va, vb = a.var(ddof=1) / 3, b.var(ddof=1) / 3
    t = (b.mean() - a.mean()) / math.sqrt(va + vb)
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 2)
    res = stats.welch(a, b)
    assert res["statistic"] == pytest.approx(t)
    assert res["p"] == pytest.approx(2 * sst.t.sf(t, df))
    log = stats.welch(a, b, log=True)
    assert log["statistic"] == pytest.approx(sst.ttest_ind(np.log(b), np.log(a), equal_var=False).statistic)


def test_holm_by_hand():
    assert stats.holm([0.01, 0.04, 0.03]) == pytest.approx([0.03, 0.06, 0.06])
    assert stats.holm([0.5, None, 0.01]) == [pytest.approx(0.5), None, pytest.approx(0.02)]
    assert stats.holm([0.9, 0.8]) == pytest.approx([1.0, 1.0])  # 2 x 0.8 capped at 1, then monotone


def test_bootstrap_ratio_seeded_paired_unpaired():
    base = [10.0, 10.2, 9.8, 10.1, 9.9, 10.05]
    head = [x * 1.2 for x in base]
    r, lo, hi = stats.bootstrap_ratio(base, head, paired=True)
    assert r == pytest.approx(1.2) and lo == pytest.approx(1.2) and hi == pytest.approx(1.2)
    r, lo, hi = stats.bootstrap_ratio(base, head, seed=3)
    assert lo < 1.2 < hi and (r, lo, hi) == stats.bootstrap_ratio(base, head, seed=3)
    assert (lo, hi) != stats.bootstrap_ratio(base, head, seed=4)[1:]
    assert math.isnan(stats.bootstrap_ratio([1.0], [2.0])[1])
    with pytest.raises(ValueError):
        stats.bootstrap_ratio([1, 2], [1, 2, 3], paired=True)


def test_bootstrap_matches_scipy_percentile_interval():
    rng = np.random.default_rng(1)
    base, head = rng.normal(10, 1, 30), rng.normal(12, 1, 30)
    _, lo, hi = stats.bootstrap_ratio(base, head, n_resamples=20000, seed=1)
    ref = sst.bootstrap(
        (head, base),
        lambda h, b, axis=-1: h.mean(axis=axis) / b.mean(axis=axis),
        method="percentile",
        n_resamples=20000,
        rng=np.random.default_rng(2),
        paired=False,
        vectorized=True,
    ).confidence_interval
    assert lo == pytest.approx(ref.low, abs=0.01) and hi == pytest.approx(ref.high, abs=0.01)


def test_geometric_bootstrap_uses_geometric_mean():
    r, _, _ = stats.bootstrap_ratio([1.0, 4.0], [2.0, 8.0], "geometric")
    assert r == pytest.approx(2.0)


def test_robust_centres_and_mad_flags():
    assert stats.median([3, 1, 2, 100]) == 2.5
    assert stats.trimmed_mean([*range(1, 11), 100], 0.1) == pytest.approx(6.0)  # 2..10
    assert stats.mad_outliers([10, 10.1, 9.9, 10, 30]) == [False, False, False, False, True]
    assert stats.mad_outliers([5, 5, 5, 5, 9]) == [False, False, False, False, True]  # MAD = 0
    assert stats.mad_outliers([5, 5, 5]) == [False] * 3
    assert stats.mad_outliers([1, 100]) == [False, False]  # too few to judge


def test_relative_half_width_and_decision():
    v = [10.0, 10.2, 9.8]
    hw = sst.t.ppf(0.975, 2) * np.std(v, ddof=1) / math.sqrt(3) / 10.0
    assert stats.relative_half_width(v) == pytest.approx(hw)
    assert stats.repetition_decision(v, target=0.05, max_reps=10)["decision"] == "stop"
    more = stats.repetition_decision(v, target=0.01, max_reps=10)
    assert more["decision"] == "more" and "> target" in more["reason"]
    cap = stats.repetition_decision(v, target=0.01, max_reps=3)
    assert cap["decision"] == "stop" and "cap" in cap["reason"]
    assert stats.repetition_decision([10.0, 10.0], 0.5, 10)["decision"] == "more"  # below min_reps
    g = stats.relative_half_width([1.0, 2.0, 4.0], "geometric")
    lo, hi = stats.t_interval(np.log([1.0, 2.0, 4.0]))
    assert g == pytest.approx(math.expm1((hi - lo) / 2))

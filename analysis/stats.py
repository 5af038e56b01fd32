"""Statistics shared by the analysis modules: t-intervals and a rank-trend permutation test.

t_interval   two-sided t-interval of the mean (default 95%), NaN with fewer than 2 values.
rank_trend   Spearman rank correlation of y on x with a one-sided permutation p-value: exact up
             to 8 points (8! = 40320 pairings), otherwise 40320 resamples with a fixed seed, so
             a rerun gives the same p. `attainable_p` is the p-value a perfect ranking in the
             expected direction would get with these x and y values (ties included): when it is
             >= 0.05 the data cannot decide, whatever they show.
"""

from __future__ import annotations

import math

import numpy as np
from scipy import stats

CONFIDENCE = 0.95
ALPHA = 0.05
N_RESAMPLES = 40320  # 8!: exact permutation tests up to 8 points, seeded resampling beyond


def t_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """(low, high) of the t-interval of the mean of `values`; (NaN, NaN) for fewer than 2."""
    values = np.asarray(values, float)
    n = len(values)
    if n < 2:
        return math.nan, math.nan
    mean = float(np.mean(values))
    half = float(stats.t.ppf(0.5 + confidence / 2, n - 1) * np.std(values, ddof=1) / math.sqrt(n))
    return mean - half, mean + half


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rho of y (last axis may hold many permutations) on a fixed x."""
    rx = stats.rankdata(x) - (len(x) + 1) / 2
    ry = stats.rankdata(y, axis=-1)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    return (ry * rx).sum(axis=-1) / np.sqrt((rx**2).sum() * (ry**2).sum(axis=-1))


def rank_trend(x: list[float], y: list[float], alternative: str) -> dict:
    """Spearman rho of y on x and a one-sided permutation p-value ('greater' or 'less').

    `attainable_p` is the p-value a perfect ranking in the expected direction would get with
    these x and y values (ties included): when it is >= 0.05 the data cannot decide.
    """
    x, y = np.asarray(x, float), np.asarray(y, float)
    out = {"n": len(x), "rho": None, "p": None, "attainable_p": None, "alternative": alternative}
    if len(x) < 2 or len(np.unique(y)) < 2 or len(np.unique(x)) < 2:
        return out

    def test(values: np.ndarray) -> tuple[float, float]:
        res = stats.permutation_test(
            (values,),
            lambda v, axis=-1: spearman_rho(x, v),
            permutation_type="pairings",
            vectorized=True,
            n_resamples=N_RESAMPLES,
            alternative=alternative,
            rng=np.random.default_rng(0),
        )
        return float(res.statistic), float(res.pvalue)

    out["rho"], out["p"] = test(y)
    ranked = np.sort(y) if alternative == "greater" else np.sort(y)[::-1]
    ideal = ranked[np.argsort(np.argsort(x, kind="stable"), kind="stable")]  # best ordering
    out["attainable_p"] = test(ideal)[1]
    return out

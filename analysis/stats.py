"""Statistics shared by the analysis modules: t-intervals and a rank-trend permutation test.

t_interval   two-sided t-interval of the mean (default 95%), NaN with fewer than 2 values.
paired_ratio_t  geometric mean of the per-pair ratios with the t-interval of their logs: the CI
             for a few repetitions (mpl_sweep, sais, aioli), at the level the verdicts use.
rank_trend   Spearman rank correlation of y on x with a one-sided permutation p-value: exact up
             to 8 points (8! = 40320 pairings), otherwise 40320 resamples with a fixed seed, so
             a rerun gives the same p. `attainable_p` is the p-value a perfect ranking in the
             expected direction would get with these x and y values (ties included): when it is
             >= 0.05 the data cannot decide, whatever they show.

Comparing two sets of runs (corun compare; the metric registry is analysis/metrics.py):
aggregate         arithmetic mean (times), harmonic mean (rates) or geometric mean (ratios).
bootstrap_ratio   aggregate(head) / aggregate(base) with a seeded percentile bootstrap CI;
                  paired (resample pairs) or unpaired (resample each set on its own).
mann_whitney      two-sided Mann-Whitney U (exact for small samples without ties).
welch             Welch's t-test (unequal variances), on log values for geometric metrics.
holm              Holm step-down adjusted p-values across a family of tests (a sweep).
median, trimmed_mean, mad_outliers
                  outlier-robust centres; mad_outliers flags |modified z| > 3.5 (Iglewicz and
                  Hoaglin): flagged values are reported, never silently dropped.
relative_half_width, repetition_decision
                  adaptive repetition: stop when the CI half-width relative to the centre is
                  under a target, or when the repetition cap is reached.
"""

from __future__ import annotations

import functools
import itertools
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


def paired_ratio_t(base, head, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(ratio, low, high) for paired positive values: the geometric mean of the per-pair ratios
    head / base and the t-interval of the per-pair log ratios, exponentiated, so the estimate is
    the interval's own centre (NaN with fewer than 2 pairs or a value <= 0; the ratio alone with
    one pair).

    For a handful of repetitions: a percentile bootstrap of 3 pairs spans little more than the 3
    per-pair ratios, so 3 ratios below 1 read as a gain where a sign test gives p = 1/8; the
    t-interval with n - 1 degrees of freedom says how little they decide."""
    base, head = np.asarray(base, float), np.asarray(head, float)
    if len(base) != len(head):
        raise ValueError(f"paired ratio: {len(base)} and {len(head)} values (expected as many)")
    if len(base) == 0:
        return math.nan, math.nan, math.nan
    with np.errstate(divide="ignore", invalid="ignore"):
        logs = np.log(head / base)
    if not np.all(np.isfinite(logs)):
        return math.nan, math.nan, math.nan
    ratio = float(np.exp(np.mean(logs)))
    if len(base) < 2:
        return ratio, math.nan, math.nan
    low, high = t_interval(logs, confidence)
    return ratio, math.exp(low), math.exp(high)


def spearman_rho(x: np.ndarray, y: np.ndarray) -> float:
    """Spearman rho of y (last axis may hold many permutations) on a fixed x."""
    rx = stats.rankdata(x) - (len(x) + 1) / 2
    ry = stats.rankdata(y, axis=-1)
    ry = ry - ry.mean(axis=-1, keepdims=True)
    return (ry * rx).sum(axis=-1) / np.sqrt((rx**2).sum() * (ry**2).sum(axis=-1))


@functools.lru_cache(maxsize=64)
def _permutations(n: int) -> np.ndarray:
    """Every ordering of n items (n <= 8), or N_RESAMPLES seeded random ones, as index rows."""
    if math.factorial(n) <= N_RESAMPLES:
        return np.array(list(itertools.permutations(range(n))), dtype=np.intp)
    rng = np.random.default_rng(0)
    return np.argsort(rng.random((N_RESAMPLES, n)), axis=1)


def _rank_permutation(x: np.ndarray, y: np.ndarray, alternative: str) -> tuple[float, float]:
    """(rho, one-sided p) of y on x over the orderings of y: exact up to 8 points (the share of
    orderings at least as extreme), else (count + 1) / (N_RESAMPLES + 1) over seeded ones."""
    rho = float(spearman_rho(x, y))
    rx = stats.rankdata(x) - (len(x) + 1) / 2
    ry = stats.rankdata(y) - (len(y) + 1) / 2
    denom = math.sqrt(float((rx**2).sum() * (ry**2).sum()))
    perms = _permutations(len(y))
    null = np.take(ry, perms) @ rx / denom
    tol = 1e-12 * max(1.0, abs(rho))
    hits = float(np.sum(null >= rho - tol) if alternative == "greater" else np.sum(null <= rho + tol))
    exact = math.factorial(len(y)) <= N_RESAMPLES
    return rho, (hits / len(perms) if exact else (hits + 1) / (len(perms) + 1))


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
        return _rank_permutation(x, values, alternative)

    out["rho"], out["p"] = test(y)
    ranked = np.sort(y) if alternative == "greater" else np.sort(y)[::-1]
    ideal = ranked[np.argsort(np.argsort(x, kind="stable"), kind="stable")]  # best ordering
    out["attainable_p"] = test(ideal)[1]
    return out


# ----------------------------------------------------------------------------- two-set comparisons

AGGREGATIONS = ("arithmetic", "harmonic", "geometric")
BOOTSTRAP_RESAMPLES = 10000
MAD_Z = 3.5  # Iglewicz and Hoaglin's cut-off for the modified z-score
_CHUNK = 2_000_000  # resampled values held in memory at once


def aggregate(values, how: str = "arithmetic", axis: int = -1):
    """Arithmetic, harmonic or geometric mean along `axis` (NaN when empty; harmonic and
    geometric need positive values and give NaN otherwise)."""
    v = np.asarray(values, float)
    if v.shape[axis] == 0:
        return math.nan
    if how == "arithmetic":
        return np.mean(v, axis=axis)
    if how not in AGGREGATIONS:
        raise ValueError(f"aggregation: {how!r} (expected one of {', '.join(AGGREGATIONS)})")
    with np.errstate(divide="ignore", invalid="ignore"):
        bad = np.any(v <= 0, axis=axis)
        if how == "harmonic":
            out = v.shape[axis] / np.sum(1.0 / v, axis=axis)
        else:
            out = np.exp(np.mean(np.log(v), axis=axis))
    return np.where(bad, math.nan, out) if np.ndim(out) else (math.nan if bad else float(out))


def bootstrap_ratio(
    base,
    head,
    how: str = "arithmetic",
    *,
    paired: bool = False,
    confidence: float = CONFIDENCE,
    n_resamples: int = BOOTSTRAP_RESAMPLES,
    seed: int = 0,
) -> tuple[float, float, float]:
    """(ratio, low, high): aggregate(head) / aggregate(base) and its percentile bootstrap CI.

    Paired: base[i] and head[i] belong together (same rep, same block) and are resampled as
    pairs; both sets must have the same length. Unpaired: each set is resampled on its own.
    The generator is seeded, so a rerun gives the same interval. The CI is (NaN, NaN) with
    fewer than 2 values in a set.
    """
    base, head = np.asarray(base, float), np.asarray(head, float)
    if paired and len(base) != len(head):
        raise ValueError(f"paired bootstrap: {len(base)} and {len(head)} values (expected as many)")
    if len(base) == 0 or len(head) == 0:
        return math.nan, math.nan, math.nan
    ratio = float(aggregate(head, how) / aggregate(base, how))
    if len(base) < 2 or len(head) < 2:
        return ratio, math.nan, math.nan
    rng = np.random.default_rng(seed)
    n = max(len(base), len(head))
    per_chunk = max(1, _CHUNK // n)
    ratios = []
    done = 0
    while done < n_resamples:
        m = min(per_chunk, n_resamples - done)
        ib = rng.integers(0, len(base), size=(m, len(base)))
        ih = ib if paired else rng.integers(0, len(head), size=(m, len(head)))
        with np.errstate(divide="ignore", invalid="ignore"):
            ratios.append(aggregate(head[ih], how, axis=1) / aggregate(base[ib], how, axis=1))
        done += m
    r = np.concatenate(ratios)
    r = r[np.isfinite(r)]
    if len(r) == 0:
        return ratio, math.nan, math.nan
    tail = (1 - confidence) / 2 * 100
    low, high = np.percentile(r, [tail, 100 - tail])
    return ratio, float(low), float(high)


def mann_whitney(base, head) -> dict:
    """Two-sided Mann-Whitney U of head against base: {'test', 'statistic', 'p'} (p None when
    a set has fewer than 2 values or all values are equal)."""
    base, head = np.asarray(base, float), np.asarray(head, float)
    out = {"test": "mann-whitney", "statistic": None, "p": None}
    if len(base) < 2 or len(head) < 2 or len(np.unique(np.concatenate([base, head]))) < 2:
        return out
    res = stats.mannwhitneyu(head, base, alternative="two-sided", method="auto")
    out["statistic"], out["p"] = float(res.statistic), float(res.pvalue)
    return out


def welch(base, head, log: bool = False) -> dict:
    """Welch's two-sided t-test of head against base (on log values with `log`):
    {'test', 'statistic', 'p'}, p None with fewer than 2 values or no variance at all."""
    base, head = np.asarray(base, float), np.asarray(head, float)
    out = {"test": "welch-log" if log else "welch", "statistic": None, "p": None}
    if log:
        if np.any(base <= 0) or np.any(head <= 0):
            return out
        base, head = np.log(base), np.log(head)
    if len(base) < 2 or len(head) < 2 or (np.var(base) == 0 and np.var(head) == 0):
        return out
    res = stats.ttest_ind(head, base, equal_var=False)
    out["statistic"], out["p"] = float(res.statistic), float(res.pvalue)
    return out


def holm(pvalues) -> list[float | None]:
    """Holm step-down adjusted p-values, in the input order; None stays None (not counted)."""
    idx = [i for i, p in enumerate(pvalues) if p is not None and math.isfinite(p)]
    out: list[float | None] = [None] * len(pvalues)
    m = len(idx)
    running = 0.0
    for rank, i in enumerate(sorted(idx, key=lambda j: pvalues[j])):
        running = max(running, min(1.0, (m - rank) * pvalues[i]))
        out[i] = running
    return out


def median(values) -> float:
    v = np.asarray(values, float)
    return float(np.median(v)) if len(v) else math.nan


def trimmed_mean(values, proportion: float = 0.1) -> float:
    """Mean after cutting `proportion` of the values off each end (scipy.stats.trim_mean)."""
    v = np.asarray(values, float)
    return float(stats.trim_mean(v, proportion)) if len(v) else math.nan


def mad_outliers(values, z: float = MAD_Z) -> list[bool]:
    """True where the modified z-score 0.6745 (x - median) / MAD exceeds `z` in size.

    With MAD = 0 (more than half the values equal) the mean absolute deviation stands in
    (scaled by 1.2533); with no spread at all nothing is flagged.
    """
    v = np.asarray(values, float)
    if len(v) < 3:
        return [False] * len(v)
    med = np.median(v)
    dev = np.abs(v - med)
    mad = np.median(dev)
    if mad > 0:
        score = 0.6745 * dev / mad
    else:
        mean_ad = np.mean(dev)
        if mean_ad == 0:
            return [False] * len(v)
        score = dev / (1.253314 * mean_ad)
    return [bool(s > z) for s in score]


def relative_half_width(values, how: str = "arithmetic", confidence: float = CONFIDENCE) -> float:
    """Half-width of the t-interval of the centre, relative to the centre (0.02 = +-2%).

    Arithmetic: on the values; geometric: on their logs (exp(half) - 1); harmonic: on their
    reciprocals. NaN with fewer than 2 values.
    """
    v = np.asarray(values, float)
    if len(v) < 2:
        return math.nan
    if how == "geometric":
        if np.any(v <= 0):
            return math.nan
        low, high = t_interval(np.log(v), confidence)
        return float(math.expm1((high - low) / 2))
    if how == "harmonic":
        if np.any(v <= 0):
            return math.nan
        v = 1.0 / v
    low, high = t_interval(v, confidence)
    centre = float(np.mean(v))
    return float((high - low) / 2 / abs(centre)) if centre else math.nan


def repetition_decision(
    values, target: float, max_reps: int, min_reps: int = 3, how: str = "arithmetic", confidence: float = CONFIDENCE
) -> dict:
    """Whether a variant needs more repetitions: {'decision': 'more' | 'stop', 'reason', 'n',
    'rel_half_width'}. Stop when n >= min_reps and the relative CI half-width is <= target,
    or when n >= max_reps (the cap), whichever comes first."""
    n = len(values)
    hw = relative_half_width(values, how, confidence) if n >= 2 else math.nan
    out = {"n": n, "rel_half_width": None if math.isnan(hw) else hw, "target": target, "max_reps": max_reps}
    if n >= min_reps and math.isfinite(hw) and hw <= target:
        out.update(decision="stop", reason=f"CI half-width {hw:.2%} <= target {target:.2%} after {n} runs")
    elif n >= max_reps:
        shown = "undefined" if math.isnan(hw) else f"{hw:.2%}"
        out.update(
            decision="stop", reason=f"cap of {max_reps} runs reached (CI half-width {shown}, target {target:.2%})"
        )
    else:
        shown = "undefined" if math.isnan(hw) else f"{hw:.2%}"
        out.update(
            decision="more",
            reason=f"CI half-width {shown} > target {target:.2%} after {n} runs"
            if n >= min_reps
            else f"{n} of at least {min_reps} runs",
        )
    return out


# ----------------------------------------------------------------------------- deciding a claim
# (analysis.verdicts): intervals at any level, the signed-rank interval, looks and repetitions

# Pocock's nominal two-sided level per look for K equally spaced looks at an overall 0.05 (Pocock
# 1977, Table 1; Jennison and Turnbull 2000, Table 2.1): a sequential design that adds
# repetitions while a claim is undecided judges every look at this level, so that the chance of a
# false decision over all looks stays at 0.05.
POCOCK_ALPHA = {
    1: 0.05,
    2: 0.0294,
    3: 0.0221,
    4: 0.0182,
    5: 0.0158,
    6: 0.0142,
    7: 0.0130,
    8: 0.0120,
    9: 0.0112,
    10: 0.0106,
}
POWER = 0.8  # the chance a repetition estimate aims for: decide with 4 chances in 5
MAX_REPS_SHOWN = 1000


MAX_LOOKS = 100  # more looks than any design plans: a number beyond is a mistake, refused
_LOOK_PATHS = 200_000  # simulated paths of the null that set a plan's level (seeded: the same level each time)


def look_alpha(looks: int, plan: tuple[int, ...] | list[int] | None = None) -> float:
    """The nominal two-sided level of each look of a design with `looks` looks.

    With the plan (the pairs each look has, e.g. (3, 6, 9)): the level at which t-intervals with
    the degrees of freedom those looks have (n - 1) make a false decision at some look with chance
    0.05 under normal data (_t_looks_alpha). Without it: Pocock's z-based level for equally spaced
    looks (his table up to 10 looks, the same simulation with known variance beyond)."""
    if isinstance(looks, bool) or not isinstance(looks, (int, np.integer)) or not 1 <= looks <= MAX_LOOKS:
        raise ValueError(f"looks: {looks!r} (expected an integer from 1 to {MAX_LOOKS})")
    if plan is not None:
        plan = tuple(int(n) for n in plan)
        if len(plan) != looks or any(b <= a for a, b in zip(plan, plan[1:])) or plan[0] < 1:
            raise ValueError(f"plan: {plan!r} (expected {looks} increasing counts of pairs, one per look)")
        return 0.05 if looks == 1 else _t_looks_alpha(plan)
    if looks in POCOCK_ALPHA:
        return POCOCK_ALPHA[looks]
    return _z_looks_alpha(int(looks))


def _min_p_quantile(min_p: np.ndarray, level: float = ALPHA) -> float:
    """The level a at which P(min p <= a) = `level`, from simulated paths, taken one Monte Carlo
    standard error low (so that the level is not exceeded by the simulation's own error)."""
    se = math.sqrt(level * (1 - level) / len(min_p))
    return float(np.quantile(min_p, level - se))


@functools.lru_cache(maxsize=64)
def _t_looks_alpha(plan: tuple[int, ...]) -> float:
    """Per-look level for t-intervals at the looks of `plan` (a look with fewer than 2 pairs decides
    nothing), from seeded simulated null paths of normal pairs: the chance that any look's
    two-sided t-test rejects is 0.05."""
    rng = np.random.default_rng(20260)
    x = rng.standard_normal((_LOOK_PATHS, plan[-1]))
    csum, csq = np.cumsum(x, axis=1), np.cumsum(x * x, axis=1)
    min_p = np.ones(_LOOK_PATHS)
    for n in plan:
        if n < 2:
            continue
        mean = csum[:, n - 1] / n
        var = (csq[:, n - 1] - n * mean**2) / (n - 1)
        t = mean / np.sqrt(np.maximum(var, 1e-300) / n)
        min_p = np.minimum(min_p, 2 * stats.t.sf(np.abs(t), n - 1))
    return _min_p_quantile(min_p)


@functools.lru_cache(maxsize=64)
def _z_looks_alpha(looks: int) -> float:
    """Pocock's level for `looks` equally spaced looks with known variance, simulated (seeded)."""
    rng = np.random.default_rng(20261)
    z = np.cumsum(rng.standard_normal((_LOOK_PATHS, looks)), axis=1) / np.sqrt(np.arange(1, looks + 1))
    return _min_p_quantile(2 * stats.norm.sf(np.abs(z)).min(axis=1))


def sign_flip_p(values, alternative: str) -> float:
    """The exact one-sided p of the sign-flip (randomization) test of the values' sum: the share of
    the 2^n sign assignments whose sum is at least as large ('greater') or as small ('less') as the
    one measured; up to 16 values every assignment, beyond 2^16 seeded ones, (count + 1) /
    (2^16 + 1). Exact whenever each value is symmetric about 0 under the null: a pair's two members
    exchangeable, whatever the spread's shape across pairs (long tails, two machine states)."""
    v = np.asarray(values, float)
    n = len(v)
    if n == 0 or alternative not in ("greater", "less"):
        raise ValueError(f"sign flip: {n} values, alternative {alternative!r}")
    signs = _sign_patterns(n)
    sums = signs @ np.abs(v)
    obs = float(v.sum())
    tol = 1e-9 * max(1.0, float(np.abs(v).sum()))
    hits = float(np.sum(sums >= obs - tol) if alternative == "greater" else np.sum(sums <= obs + tol))
    return hits / len(signs) if n <= SIGN_FLIP_EXACT else (hits + 1) / (len(signs) + 1)


SIGN_FLIP_EXACT = 16


@functools.lru_cache(maxsize=64)
def _sign_patterns(n: int) -> np.ndarray:
    if n <= SIGN_FLIP_EXACT:
        bits = (np.arange(2**n)[:, None] >> np.arange(n)) & 1
    else:
        bits = np.random.default_rng(0).integers(0, 2, size=(2**SIGN_FLIP_EXACT, n))
    out = (1 - 2 * bits).astype(float)
    out.setflags(write=False)
    return out


def sign_flip_least_n(level: float) -> int:
    """The fewest values whose sign-flip test can reach a one-sided `level`: 1 / 2^n <= level."""
    return max(1, math.ceil(math.log2(1.0 / level) - 1e-12))


def permutation_attainable_p(m: int, n: int) -> float:
    """The smallest one-sided p of an exact permutation test of two independent sets of m and n."""
    return 1.0 / math.comb(m + n, n)


def permutation_least_n(level: float) -> int:
    """The fewest values per set whose permutation test can reach a one-sided `level`."""
    return next(k for k in range(1, 64) if permutation_attainable_p(k, k) <= level + 1e-15)


def signed_rank_pmf(n: int) -> np.ndarray:
    """The exact null distribution of Wilcoxon's W+ for n pairs without ties: P(W+ = w), w = 0..n(n+1)/2."""
    counts = np.zeros(n * (n + 1) // 2 + 1)
    counts[0] = 1.0
    for k in range(1, n + 1):
        shifted = np.zeros_like(counts)
        shifted[k:] = counts[:-k] if k < len(counts) else 0
        counts = counts + shifted
    return counts / 2.0**n


def signed_rank_interval(values, confidence: float = CONFIDENCE) -> tuple[float, float, float]:
    """(Hodges-Lehmann estimate, low, high): the median of the Walsh averages and the exact
    signed-rank interval (the test inverted). (estimate, NaN, NaN) when even the widest interval of
    the Walsh averages has less than `confidence` coverage: too few values for this level."""
    v = np.asarray(values, float)
    n = len(v)
    if n == 0:
        return math.nan, math.nan, math.nan
    i, j = np.triu_indices(n)
    walsh = np.sort((v[i] + v[j]) / 2.0)
    est = float(np.median(walsh))
    cdf = np.cumsum(signed_rank_pmf(n))
    alpha = 1.0 - confidence
    # the largest c with P(W+ <= c - 1) <= alpha / 2: the interval is [walsh[c - 1], walsh[M - c]]
    c = int(np.searchsorted(cdf, alpha / 2.0, side="right"))
    if c < 1:
        return est, math.nan, math.nan
    return est, float(walsh[c - 1]), float(walsh[len(walsh) - c])


def signed_rank_attainable_p(n: int) -> float:
    """The smallest two-sided p-value the exact signed-rank test can give with n pairs: 2 / 2^n."""
    return min(1.0, 2.0 / 2.0**n) if n > 0 else 1.0


def reps_to_exclude(
    effects, null: float = 0.0, confidence: float = CONFIDENCE, margin: float | None = None, power: float = POWER
) -> int | None:
    """How many pairs a t-interval needs, at the spread of `effects`, to lie clear of `null` on the
    side of their mean (or, with `margin`, inside null +- margin: an equivalence) with probability
    `power`; None when the spread or the distance is zero or unknown. At most MAX_REPS_SHOWN + 1
    (read: more than MAX_REPS_SHOWN)."""
    e = np.asarray(effects, float)
    if len(e) < 2:
        return None
    s = float(np.std(e, ddof=1))
    d = abs(float(np.mean(e)) - null)
    if margin is not None:
        d = margin - d
    if not (s > 0 and d > 0 and math.isfinite(s) and math.isfinite(d)):
        return None
    alpha = 1.0 - confidence
    tail = alpha if margin is not None else alpha / 2.0  # equivalence: two one-sided tests at alpha
    return _least_n(lambda n: (_t_ppf(1 - tail, 1) + _t_ppf(power, 1)) * s / np.sqrt(n) < d)


@functools.lru_cache(maxsize=256)
def _t_ppf(q: float, lost: int) -> np.ndarray:
    """stats.t.ppf(q, df) for n = 2..MAX_REPS_SHOWN, with df = n - lost (lost 1) or 2 n - 2 (lost 2)."""
    ns = np.arange(2, MAX_REPS_SHOWN + 1)
    out = stats.t.ppf(q, ns - 1 if lost == 1 else 2 * ns - 2)
    out.setflags(write=False)
    return out


def _least_n(enough) -> int:
    """The least n in 2..MAX_REPS_SHOWN for which `enough` (vectorized over n) holds, else
    MAX_REPS_SHOWN + 1."""
    ns = np.arange(2, MAX_REPS_SHOWN + 1)
    hit = np.flatnonzero(enough(ns))
    return int(ns[hit[0]]) if len(hit) else MAX_REPS_SHOWN + 1


def points_for_trend(rho: float, alpha: float = ALPHA, power: float = POWER) -> int | None:
    """How many points a one-sided rank-trend test needs to show a correlation of size |rho| with
    probability `power` (Fisher's z with Bonett and Wright's variance 1.06 / (n - 3))."""
    if rho is None or not math.isfinite(rho) or abs(rho) >= 1 or rho == 0:
        return None
    z = math.atanh(abs(rho))
    need = 1.06 * ((stats.norm.ppf(1 - alpha) + stats.norm.ppf(power)) / z) ** 2 + 3
    return min(MAX_REPS_SHOWN + 1, math.ceil(need))


def points_to_reach(alpha: float, n: int, attainable_p: float) -> int:
    """Points a rank trend needs before a perfect ranking's p can fall below alpha: with n points
    (ties as measured) the smallest p is attainable_p; without ties it is 1/n!, and each point
    more divides it by about the number of points."""
    m, p = n, attainable_p
    while p >= alpha and m < MAX_REPS_SHOWN:
        m += 1
        p /= m
    return m


def rho_interval(rho: float, n: int, confidence: float = CONFIDENCE) -> tuple[float, float]:
    """An approximate interval of Spearman's rho (Fisher's z, variance 1.06 / (n - 3)); NaN for n <= 3."""
    if rho is None or n <= 3 or not math.isfinite(rho):
        return math.nan, math.nan
    r = max(-0.999999, min(0.999999, rho))
    half = stats.norm.ppf(0.5 + confidence / 2) * math.sqrt(1.06 / (n - 3))
    return math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)


def welch_interval(base, head, confidence: float = CONFIDENCE) -> tuple[float, float, float, float]:
    """(mean(head) - mean(base), low, high, degrees of freedom): Welch's t-interval of the
    difference of two independent means (NaN with fewer than 2 values in a set)."""
    a, b = np.asarray(base, float), np.asarray(head, float)
    if len(a) < 1 or len(b) < 1:
        return math.nan, math.nan, math.nan, math.nan
    d = float(b.mean() - a.mean())
    if len(a) < 2 or len(b) < 2:
        return d, math.nan, math.nan, math.nan
    va, vb = a.var(ddof=1) / len(a), b.var(ddof=1) / len(b)
    se2 = va + vb
    if se2 == 0:
        return d, d, d, math.inf
    df = se2**2 / (va**2 / (len(a) - 1) + vb**2 / (len(b) - 1))
    half = float(stats.t.ppf(0.5 + confidence / 2, df) * math.sqrt(se2))
    return d, d - half, d + half, float(df)


def reps_unpaired(
    base, head, confidence: float = CONFIDENCE, margin: float | None = None, power: float = POWER
) -> int | None:
    """Runs per set that Welch's interval needs, at the two sets' spread, to lie clear of no change
    (or, with `margin`, inside +- margin) with probability `power`; None when unknown."""
    a, b = np.asarray(base, float), np.asarray(head, float)
    if len(a) < 2 or len(b) < 2:
        return None
    s2 = float(a.var(ddof=1) + b.var(ddof=1))
    d = abs(float(b.mean() - a.mean()))
    if margin is not None:
        d = margin - d
    if not (s2 > 0 and d > 0):
        return None
    alpha = 1.0 - confidence
    tail = alpha if margin is not None else alpha / 2.0
    return _least_n(lambda n: (_t_ppf(1 - tail, 2) + _t_ppf(power, 2)) * np.sqrt(s2 / n) < d)

"""The verdict engine's decisions from measured effects: the interval (paired), Welch's
(unpaired), the rank trend and the machine-specific value (analysis.verdicts calls them)."""

from __future__ import annotations

import math
from functools import partial

import numpy as np
import pandas as pd

from analysis import stats
from analysis.claims import paper_on_effect_scale
from analysis.common import fmt_num
from analysis.verdict_rows import (
    CONTRADICTED,
    FAILED,
    MACHINE,
    REPRODUCED,
    make_row,
)


def _interval(effects: np.ndarray, test: str, conf: float) -> tuple[float, float, float, float | None]:
    """(estimate, low, high, attainable p or None) on the effects' scale."""
    if test == "wilcoxon":
        est, lo, hi = stats.signed_rank_interval(effects, conf)
        return est, lo, hi, stats.signed_rank_attainable_p(len(effects))
    lo, hi = stats.t_interval(effects, conf)
    return float(np.mean(effects)), lo, hi, None


def row_basis(claim: dict, scale: str, null: float, alpha: float) -> dict:
    """What the outcome was decided against, as the row records it (analysis.campaign_chance reads
    it): the scale of the interval (log: of value / null; linear: value - null; rho: Fisher's z of
    a rank correlation, each side at alpha / 2), the null and margin as shown, the direction, alpha."""
    return {
        "scale": scale,
        "null": float(null),
        "expect": claim["expect"],
        "margin": claim.get("margin") if claim["expect"] == "equivalent" else None,
        "alpha": float(alpha),
    }


def no_spread(effects: np.ndarray) -> bool:
    """True when the effects do not vary beyond numerical noise (a relative 1e-9 of their size):
    an interval needs variation, and one of zero width decides on nothing."""
    e = np.asarray(effects, float)
    if len(e) < 2:
        return False
    size = max(float(np.max(np.abs(e))), 1e-300)
    return float(np.std(e, ddof=1)) <= 1e-9 * size


def sign_flip_ok(effects: np.ndarray, claim: dict, side: str, level: float) -> tuple[bool, float | None]:
    """(whether the exact sign-flip test of the effects rejects on `side` ('greater' or 'less') at
    one-sided `level`, its p): the t rule's guard at a few pairs. The signed-rank test is exact on
    its own (True, None)."""
    if claim["test"] == "wilcoxon":
        return True, None
    p = stats.sign_flip_p(effects, side)
    return p < level, p


def decide_interval(cid, claim, looks, effects, n, runs, at, alpha, conf, scale_log, note) -> dict:
    """Effects are centred on the null (0 = no change): log(ratio / null), or value - null. A side is
    decided when the interval at the level lies clear of the null on it and, for the t rule, the
    exact sign-flip test rejects on that side at half the level: each side's chance of a false
    decision is then at most alpha / 2 for normal pairs (the t-interval) and for any pairs whose
    effect is symmetric about the null (the sign-flip test), whatever their spread's shape."""
    expect = claim["expect"]
    null = 0.0
    shown_null = claim["null"]

    def shown(x):
        if scale_log:
            return math.exp(x) * claim["null"]
        return x + shown_null

    est, lo, hi, attainable = _interval(effects, claim["test"], conf)
    s_est, s_lo, s_hi = shown(est), shown(lo), shown(hi)
    word = {
        "ratio": "ratio",
        "ratio_of_ratios": "ratio of ratios",
        "difference": "difference",
        "value": claim["metric"],
    }[claim["effect"]]
    measured = (
        f"{word} {fmt_num(s_est)}"
        + (f" [{fmt_num(s_lo)}, {fmt_num(s_hi)}]" if math.isfinite(lo) else "")
        + f", n = {n}"
    )
    basis = row_basis(claim, "log" if scale_log else "linear", claim["null"], alpha)
    row = partial(make_row, cid, claim, looks, estimate=s_est, ci_low=s_lo, ci_high=s_hi, n=n, measured=measured)
    row = partial(row, runs=runs, basis=basis)
    if n < claim["min_reps"]:
        return row(
            reps_needed=claim["min_reps"],
            why=f"n = {n}{at}: the claim needs at least {claim['min_reps']} pairs.{note}",
        )
    if attainable is not None and attainable >= alpha:
        need = next((k for k in range(n + 1, 64) if stats.signed_rank_attainable_p(k) < alpha), None)
        return row(
            reps_needed=need,
            why=f"with n = {n} the signed-rank test's smallest p is {fmt_num(attainable)}, not below "
            f"{fmt_num(alpha)}: no data could decide.{note}",
        )
    if no_spread(effects):
        return row(
            reps_needed=None,
            why=f"no spread between pairs{at}: every one of the {n} pairs gives {word} {fmt_num(s_est)}, and an "
            f"interval needs variation; no number of reps decides on it.{note}",
        )
    if not math.isfinite(lo):
        return row(reps_needed=None, why=f"no interval from n = {n}{at}.{note}")
    least = stats.sign_flip_least_n(alpha / 2) if claim["test"] == "t" else 0
    if expect == "equivalent":
        return _equivalence(row, claim, effects, n, alpha, scale_log, shown, lo, hi, at, note, least)
    side_text = "below" if expect == "less" else "above"
    other_text = "above" if expect == "less" else "below"
    paper_side, other_side = ("less", "greater") if expect == "less" else ("greater", "less")
    clear_paper = hi < null if expect == "less" else lo > null
    clear_other = lo > null if expect == "less" else hi < null
    if clear_paper or clear_other:
        ok, p = sign_flip_ok(effects, claim, paper_side if clear_paper else other_side, alpha / 2)
        if ok and clear_paper:
            return row(
                outcome=REPRODUCED,
                why=f"the interval lies {side_text} {fmt_num(shown_null)}{at}.{note}",
            )
        if ok:
            return row(
                outcome=CONTRADICTED,
                why=f"the interval lies {other_text} {fmt_num(shown_null)}{at}, against the paper's direction.{note}",
            )
        need = max(least, stats.reps_to_exclude(effects, 0.0, 1 - alpha) or least)
        return row(
            reps_needed=need,
            why=f"the interval lies {side_text if clear_paper else other_text} {fmt_num(shown_null)}{at}, but the "
            f"exact sign-flip test of the {n} pairs gives p = {fmt_num(p)}, not below {fmt_num(alpha / 2)}: so few "
            f"pairs on one side also arise by chance when pairs vary between machine states; at least {least} "
            f"pairs can decide.{note}",
        )
    need = stats.reps_to_exclude(effects, 0.0, 1 - alpha)
    if need is not None:
        need = max(need, least)
    if claim["test"] == "wilcoxon" and need is not None:
        need = max(need, next((k for k in range(2, 64) if stats.signed_rank_attainable_p(k) < alpha), need))
    return row(
        reps_needed=need,
        why=f"the interval contains {fmt_num(shown_null)}{at}"
        + (
            f"; about {need if need <= stats.MAX_REPS_SHOWN else f'more than {stats.MAX_REPS_SHOWN}'} reps "
            "would decide at the measured spread"
            if need
            else "; the measured effect is nil: no number of reps would decide"
        )
        + f".{note}",
    )


def _equivalence(row, claim, effects, n, alpha, scale_log, shown, lo, hi, at, note, least) -> dict:
    """Two one-sided tests against the margin: the (1 - 2 alpha) interval inside it (and, for the t
    rule, each side's sign-flip test at alpha) reproduces; the (1 - alpha) interval wholly outside
    it (and the sign-flip test at alpha / 2) contradicts."""
    margin = claim["margin"]
    band = math.log1p(margin) if scale_log else margin
    lo2, hi2 = _interval(effects, claim["test"], 1 - 2 * alpha)[1:3]
    band_text = f"[{fmt_num(shown(-band))}, {fmt_num(shown(band))}]"
    t_rule = claim["test"] == "t"
    if math.isfinite(lo2) and -band < lo2 and hi2 < band:
        if not t_rule or (
            stats.sign_flip_p(effects + band, "greater") < alpha and stats.sign_flip_p(effects - band, "less") < alpha
        ):
            return row(
                outcome=REPRODUCED,
                why=f"the {fmt_num(100 * (1 - 2 * alpha))} % interval [{fmt_num(shown(lo2))}, "
                f"{fmt_num(shown(hi2))}] lies inside the margin {band_text}{at}.{note}",
            )
        least_eq = stats.sign_flip_least_n(alpha)
        return row(
            reps_needed=max(least_eq, n + 1),
            why=f"the {fmt_num(100 * (1 - 2 * alpha))} % interval lies inside the margin {band_text}{at}, but the "
            f"exact sign-flip tests of the {n} pairs against its ends do not reach {fmt_num(alpha)}: at least "
            f"{least_eq} pairs can show no change.{note}",
        )
    if lo > band or hi < -band:
        side = "greater" if lo > band else "less"
        shifted = effects - band if side == "greater" else effects + band
        if not t_rule or stats.sign_flip_p(shifted, side) < alpha / 2:
            return row(
                outcome=CONTRADICTED,
                why=f"the interval lies wholly outside the margin {band_text}{at}: a change.{note}",
            )
        return row(
            reps_needed=max(least, n + 1),
            why=f"the interval lies wholly outside the margin {band_text}{at}, but the exact sign-flip test of the "
            f"{n} pairs does not reach {fmt_num(alpha / 2)}: at least {least} pairs can show the change.{note}",
        )
    need = stats.reps_to_exclude(effects, 0.0, 1 - alpha, margin=band)
    if need is not None:
        need = max(need, stats.sign_flip_least_n(alpha) if t_rule else need)
        said = f"; about {need} reps would show no change at the measured spread"
    else:  # the change measured is the margin's size or more: how many reps would show the change
        mean = float(np.mean(effects))
        need = stats.reps_to_exclude(effects, band if mean > 0 else -band, 1 - alpha)
        if need is not None:
            need = max(need, least)
        said = (
            f"; the change measured is at least the margin: about {need} reps would show it"
            if need
            else "; the change measured sits at the margin: no number of reps would decide"
        )
    return row(
        reps_needed=need,
        why=f"the interval is not inside the margin {band_text}{at}{said}.{note}",
    )


def decide_unpaired(cid, claim, looks, sides, runs, at, alpha) -> dict:
    """Two independent sets: Welch's interval of the difference of the mean logs (a ratio of
    geometric means) or of the means. A ratio of a set with a value <= 0 is no ratio: failed, never
    judged on the means' difference instead."""
    hv, bv = sides
    expect = claim["expect"]
    log = claim["effect"] in ("ratio", "ratio_of_ratios")
    note = ""
    if log and not (np.all(hv > 0) and np.all(bv > 0)):
        return make_row(
            cid,
            claim,
            looks,
            outcome=FAILED,
            runs=runs,
            why=f"a value <= 0 has no ratio: the {claim['metric']} values{at} include "
            f"{int(np.sum(hv <= 0) + np.sum(bv <= 0))} at or below 0, and the claim is not judged on another scale.",
        )
    h, b = (np.log(hv), np.log(bv)) if log else (hv, bv)
    shift = math.log(claim["null"]) if log else (claim["null"] if claim["effect"] == "difference" else 0.0)
    est, lo, hi, _df = stats.welch_interval(b, h, 1 - alpha)
    est, lo, hi = est - shift, lo - shift, hi - shift
    null_shown = claim["null"] if log or claim["effect"] == "difference" else 0.0

    def shown(x):
        return math.exp(x) * claim["null"] if log else x + null_shown

    n = min(len(hv), len(bv))
    word = "ratio of geometric means" if log else "difference of means"
    measured = (
        f"{word} {fmt_num(shown(est))}"
        + (f" [{fmt_num(shown(lo))}, {fmt_num(shown(hi))}]" if math.isfinite(lo) else "")
        + f", n = {len(hv)} + {len(bv)}"
    )
    row = partial(
        make_row,
        cid,
        claim,
        looks,
        estimate=shown(est),
        ci_low=shown(lo),
        ci_high=shown(hi),
        n=n,
        measured=measured,
        runs=runs,
        basis=row_basis(claim, "log" if log else "linear", claim["null"] if log else null_shown, alpha),
    )
    if n < claim["min_reps"] or not math.isfinite(lo):
        return row(
            reps_needed=max(claim["min_reps"], n + 1),
            why=f"n = {len(hv)} and {len(bv)}{at}: each set needs at least {claim['min_reps']} runs.{note}",
        )
    # the exact permutation test's bound: with m and n runs its smallest one-sided p is 1 / C(m + n, n)
    attainable = stats.permutation_attainable_p(len(hv), len(bv))
    side_level = alpha if expect == "equivalent" else alpha / 2
    if attainable > side_level + 1e-15:
        least = stats.permutation_least_n(side_level)
        return row(
            reps_needed=least,
            why=f"n = {len(hv)} and {len(bv)}{at}: two sets this size have an exact permutation test whose "
            f"smallest p is {fmt_num(attainable)}, not below {fmt_num(side_level)}, so a few runs on one side "
            f"also arise by chance; at least {least} runs per set can decide.",
        )
    if no_spread(h) and no_spread(b):
        return row(
            reps_needed=None,
            why=f"no spread within either set{at}: an interval needs variation; no number of runs decides on it.",
        )
    if expect == "equivalent":
        band = math.log1p(claim["margin"]) if log else claim["margin"]
        lo2, hi2 = stats.welch_interval(b, h, 1 - 2 * alpha)[1:3]
        lo2, hi2 = lo2 - shift, hi2 - shift
        band_text = f"[{fmt_num(shown(-band))}, {fmt_num(shown(band))}]"
        if -band < lo2 and hi2 < band:
            return row(
                outcome=REPRODUCED,
                why=f"the {fmt_num(100 * (1 - 2 * alpha))} % interval lies inside the margin {band_text}{at}.{note}",
            )
        if (lo > band or hi < -band) and attainable > alpha / 2 + 1e-15:
            least = stats.permutation_least_n(alpha / 2)
            return row(
                reps_needed=least,
                why=f"the interval lies wholly outside the margin {band_text}{at}, but two sets of "
                f"{len(hv)} and {len(bv)} have an exact permutation test whose smallest p is "
                f"{fmt_num(attainable)}, not below {fmt_num(alpha / 2)}: at least {least} runs per set can "
                f"show the change.{note}",
            )
        if lo > band or hi < -band:
            return row(
                outcome=CONTRADICTED,
                why=f"the interval lies wholly outside the margin {band_text}{at}: a change.{note}",
            )
        need = stats.reps_unpaired(b - shift, h, 1 - alpha, margin=band)
        return row(
            reps_needed=need,
            why=f"the interval is not inside the margin {band_text}{at}"
            + (f"; about {need} runs per set would show it" if need else "")
            + f".{note}",
        )
    on_paper_side = hi < 0 if expect == "less" else lo > 0
    on_other_side = lo > 0 if expect == "less" else hi < 0
    side = "below" if expect == "less" else "above"
    if on_paper_side:
        return row(
            outcome=REPRODUCED,
            why=f"the interval lies {side} {fmt_num(null_shown)}{at}.{note}",
        )
    if on_other_side:
        return row(
            outcome=CONTRADICTED,
            why=f"the interval lies {'above' if expect == 'less' else 'below'} {fmt_num(null_shown)}{at}, "
            f"against the expected direction.{note}",
        )
    need = stats.reps_unpaired(b, h - shift, 1 - alpha) if not log else stats.reps_unpaired(b + shift, h, 1 - alpha)
    return row(
        reps_needed=need,
        why=f"the interval contains {fmt_num(null_shown)}{at}"
        + (
            f"; about {need} runs per set would decide at the measured spread"
            if need
            else "; the measured effect is nil: no number of runs would decide"
        )
        + f".{note}",
    )


def decide_trend(cid, claim, looks, info, runs, at, alpha) -> dict:
    v = info["values"]
    x_col = claim["x"]
    frame = v.reset_index()
    x = pd.to_numeric(frame[x_col], errors="coerce").to_numpy(float)
    y = frame[claim["metric"]].to_numpy(float)
    n = len(y)
    alt = "greater" if claim["expect"] == "increasing" else "less"
    other = "less" if alt == "greater" else "greater"
    t = stats.rank_trend(list(x), list(y), alt)
    row = partial(make_row, cid, claim, looks, n=n, runs=runs)
    if t["rho"] is None:
        return row(
            measured=f"no spread over {n} points",
            why=f"{n} points{at} with no spread in {x_col} or {claim['metric']}.",
        )
    rho = t["rho"]
    lo, hi = stats.rho_interval(rho, n, 1 - alpha)
    measured = f"rho {fmt_num(rho)}" + (f" [{fmt_num(lo)}, {fmt_num(hi)}]" if math.isfinite(lo) else "") + f", n = {n}"
    row = partial(
        row, estimate=rho, ci_low=lo, ci_high=hi, measured=measured, basis=row_basis(claim, "rho", 0.0, alpha)
    )
    # one-sided at alpha / 2 a side: the same level as the two-sided (1 - alpha) interval shown
    half = alpha / 2
    if t["attainable_p"] >= half:
        per_rep = _points_per_rep(frame, claim)
        # as many points as a perfect ranking needs to reach the level, or the power estimate's
        need = max(stats.points_for_trend(rho, half) or 0, stats.points_to_reach(half, n, t["attainable_p"]))
        return row(
            reps_needed=math.ceil(need / per_rep) if need and per_rep else None,
            why=f"with these {n} points even a perfect ranking gives p = {fmt_num(t['attainable_p'])}, "
            f"not below {fmt_num(half)}.",
        )
    # a decision needs the interval shown to agree (it does not exist below 4 points)
    clear_up = not math.isfinite(lo) or lo > 0
    clear_down = not math.isfinite(hi) or hi < 0
    if t["p"] < half and (clear_up if alt == "greater" else clear_down):
        return row(
            outcome=REPRODUCED,
            why=f"one-sided permutation p = {fmt_num(t['p'])} < {fmt_num(half)}{at}.",
        )
    t2 = stats.rank_trend(list(x), list(y), other)
    if t2["p"] is not None and t2["p"] < half and (clear_down if alt == "greater" else clear_up):
        return row(
            outcome=CONTRADICTED,
            why=f"the trend goes the other way: one-sided p = {fmt_num(t2['p'])} < {fmt_num(half)}{at}.",
        )
    per_rep = _points_per_rep(frame, claim)
    need = stats.points_for_trend(rho, half)
    reps = math.ceil(need / per_rep) if need and per_rep else None
    shown_p = t["p"] if t["p"] <= (t2["p"] if t2["p"] is not None else 1.0) else t2["p"]
    wide = shown_p < half  # the test decides, the interval of rho does not: wider
    return row(
        reps_needed=reps,
        why=(
            f"one-sided p = {fmt_num(shown_p)} < {fmt_num(half)}, but the {fmt_num(100 * (1 - alpha))} % "
            f"interval of rho contains 0{at}"
            if wide
            else f"one-sided p = {fmt_num(t['p'])}, not below {fmt_num(half)}{at}"
        )
        + (
            f"; about {reps} reps would decide at the measured rho"
            if reps
            else "; rho is nil: no number of reps would decide"
        )
        + ".",
    )


def _points_per_rep(frame: pd.DataFrame, claim: dict) -> int | None:
    reps = [c for c in claim["pair_by"] if c == "rep" and c in frame.columns]
    if not reps:
        return None
    k = frame[reps[0]].nunique()
    return max(1, len(frame) // max(1, k))


def decide_machine(cid, claim, looks, info, runs, at, conf) -> dict:
    v = info["values"].to_numpy(float) if hasattr(info["values"], "to_numpy") else np.asarray(info["values"], float)
    n = len(v)
    mean = float(np.mean(v))
    lo, hi = stats.t_interval(v, conf) if n >= 2 else (math.nan, math.nan)
    measured = f"{fmt_num(mean)}" + (f" [{fmt_num(lo)}, {fmt_num(hi)}]" if math.isfinite(lo) else "") + f", n = {n}"
    paper = paper_on_effect_scale(claim)
    ratio = f"; ours / paper's = {fmt_num(mean / paper[0])}" if paper and paper[0] == paper[1] and paper[0] else ""
    return make_row(
        cid,
        claim,
        looks,
        outcome=MACHINE,
        estimate=mean,
        ci_low=lo,
        ci_high=hi,
        n=n,
        measured=measured,
        runs=runs,
        why=f"a property of the machine and its device{at}: compared, not judged{ratio}.",
    )

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
    a rank correlation, one-sided at alpha), the null and margin as shown, the direction, alpha."""
    return {
        "scale": scale,
        "null": float(null),
        "expect": claim["expect"],
        "margin": claim.get("margin") if claim["expect"] == "equivalent" else None,
        "alpha": float(alpha),
    }


def decide_interval(cid, claim, looks, effects, n, runs, at, alpha, conf, scale_log, note) -> dict:
    """Effects are centred on the null (0 = no change): log(ratio / null), or value - null."""
    expect = claim["expect"]
    null = 0.0
    fallback = claim["effect"] in ("ratio", "ratio_of_ratios") and not scale_log  # a difference stands in
    shown_null = 0.0 if fallback else claim["null"]

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
    if not scale_log and claim["effect"] == "ratio":
        word = "difference"
    measured = (
        f"{word} {fmt_num(s_est)}"
        + (f" [{fmt_num(s_lo)}, {fmt_num(s_hi)}]" if math.isfinite(lo) else "")
        + f", n = {n}"
    )
    basis = row_basis(claim, "log" if scale_log else "linear", claim["null"] if scale_log else shown_null, alpha)
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
    if not math.isfinite(lo):
        return row(reps_needed=None, why=f"no interval from n = {n}{at}.{note}")
    mag = None
    paper = None if fallback else paper_on_effect_scale(claim)
    if paper is not None:
        mag = bool(paper[1] >= s_lo and paper[0] <= s_hi)
    side_text = "below" if expect == "less" else "above"
    if expect == "equivalent":
        margin = claim["margin"]
        band = math.log1p(margin) if scale_log else margin
        lo2, hi2 = _interval(effects, claim["test"], 1 - 2 * alpha)[1:3]
        band_text = f"[{fmt_num(shown(-band))}, {fmt_num(shown(band))}]"
        if math.isfinite(lo2) and -band < lo2 and hi2 < band:
            return row(
                outcome=REPRODUCED,
                in_magnitude=None,
                why=f"the {fmt_num(100 * (1 - 2 * alpha))} % interval [{fmt_num(shown(lo2))}, "
                f"{fmt_num(shown(hi2))}] lies inside the margin {band_text}{at}.{note}",
            )
        if lo > band or hi < -band:
            return row(
                outcome=CONTRADICTED,
                why=f"the interval lies wholly outside the margin {band_text}{at}: a change.{note}",
            )
        need = stats.reps_to_exclude(effects, 0.0, 1 - alpha, margin=band)
        if need is not None:
            said = f"; about {need} reps would show no change at the measured spread"
        else:  # the change measured is the margin's size or more: how many reps would show the change
            mean = float(np.mean(effects))
            need = stats.reps_to_exclude(effects, band if mean > 0 else -band, 1 - alpha)
            said = (
                f"; the change measured is at least the margin: about {need} reps would show it"
                if need
                else "; the change measured sits at the margin: no number of reps would decide"
            )
        return row(
            reps_needed=need,
            why=f"the interval is not inside the margin {band_text}{at}{said}.{note}",
        )
    on_paper_side = hi < null if expect == "less" else lo > null
    on_other_side = lo > null if expect == "less" else hi < null
    if on_paper_side:
        return row(
            outcome=REPRODUCED,
            in_magnitude=mag,
            why=f"the interval lies {side_text} {fmt_num(shown_null)}{at}"
            + (
                ""
                if mag is None
                else "; the paper's value lies inside it"
                if mag
                else "; the paper's value lies outside it"
            )
            + f".{note}",
        )
    if on_other_side:
        return row(
            outcome=CONTRADICTED,
            in_magnitude=False if mag is not None else None,
            why=f"the interval lies {'above' if expect == 'less' else 'below'} {fmt_num(shown_null)}{at}, "
            f"against the paper's direction.{note}",
        )
    need = stats.reps_to_exclude(effects, 0.0, 1 - alpha)
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


def decide_unpaired(cid, claim, looks, sides, runs, at, alpha) -> dict:
    """Two independent sets: Welch's interval of the difference of the mean logs (a ratio of
    geometric means) or of the means; a value <= 0 has no log, and the means' difference decides."""
    hv, bv = sides
    expect = claim["expect"]
    log = claim["effect"] in ("ratio", "ratio_of_ratios") and np.all(hv > 0) and np.all(bv > 0)
    note = "" if log or claim["effect"] == "difference" else " A value <= 0 has no log: the means' difference decides."
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
    if t["attainable_p"] >= alpha:
        per_rep = _points_per_rep(frame, claim)
        # as many points as a perfect ranking needs to reach the level, or the power estimate's
        need = max(stats.points_for_trend(rho, alpha) or 0, stats.points_to_reach(alpha, n, t["attainable_p"]))
        return row(
            reps_needed=math.ceil(need / per_rep) if need and per_rep else None,
            why=f"with these {n} points even a perfect ranking gives p = {fmt_num(t['attainable_p'])}, "
            f"not below {fmt_num(alpha)}.",
        )
    if t["p"] < alpha:
        return row(
            outcome=REPRODUCED,
            why=f"one-sided permutation p = {fmt_num(t['p'])} < {fmt_num(alpha)}{at}.",
        )
    t2 = stats.rank_trend(list(x), list(y), other)
    if t2["p"] is not None and t2["p"] < alpha:
        return row(
            outcome=CONTRADICTED,
            why=f"the trend goes the other way: one-sided p = {fmt_num(t2['p'])} < {fmt_num(alpha)}{at}.",
        )
    per_rep = _points_per_rep(frame, claim)
    need = stats.points_for_trend(rho, alpha)
    reps = math.ceil(need / per_rep) if need and per_rep else None
    return row(
        reps_needed=reps,
        why=f"one-sided p = {fmt_num(t['p'])}, not below {fmt_num(alpha)}{at}"
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

"""How many outcome moves between campaigns sampling alone would give, and which claims vary
from campaign to campaign more than their intervals allow.

Two campaigns of one commit can disagree on a claim without anything being wrong: a claim whose
effect lies near its null (or near its margin) is decided in some campaigns and not in others,
as often as its interval's level says. This module puts a number on that, from the campaigns'
own rows (their estimates, intervals and what each was decided against, the row's `basis`):

- the pooled effect of a claim is the mean of its campaigns' estimates on the interval's scale
  (log of value / null, value - null, or Fisher's z of rho), its spread the root mean square of
  their standard errors (each interval's half width over its normal quantile);
- a fresh campaign's estimate is taken as normal about the pooled effect with that spread; the
  chance that it is decided (reproduced or contradicted) follows from the claim's rule at the
  campaign's alpha: a two-sided interval against the null, two one-sided tests against the margin
  for a no-change claim, a one-sided test for a trend;
- over K campaigns a claim moves between a decided outcome and inconclusive with chance
  1 - p^K - (1 - p)^K; the sum over the claims is the number of moves sampling alone gives;
- Cochran's Q of the campaigns' estimates (K - 1 degrees of freedom) tells when they differ by
  more than their intervals allow: a level of variation (Kalibera & Jones: the machine, the
  boot, the disk's layout) that the repetitions within one campaign do not sample. Such a claim's
  interval is too narrow for a statement about any campaign but this one.

It is a normal approximation that ignores the looks (each row's own n and alpha are used), and it
estimates the effect from the same campaigns it judges; it says how large the chance floor is,
not which particular claim will move.
"""

from __future__ import annotations

import math
from pathlib import Path

from scipy import stats as sps

from analysis.claims import load_claims
from analysis.verdict_decide import row_basis

REPO = Path(__file__).resolve().parent.parent
MOVE_SHOWN = 0.2  # claims at or above this chance of moving are listed
STABLE_MOVE = 0.1  # the chance of moving that reps_stable aims at
MAX_REPS = 500
LEVEL = 0.05  # of the test of the moves observed and of each claim's Cochran's Q


def _g(scale: str, null: float, v: float) -> float | None:
    """A shown value on the interval's scale, centred on the null; None where it has none."""
    if v is None or not math.isfinite(v):
        return None
    if scale == "log":
        return math.log(v / null) if v > 0 and null > 0 else None
    if scale == "rho":
        return math.atanh(max(-0.999999, min(0.999999, v)))
    return v - null


def _sign(expect: str) -> float | None:
    return {"greater": 1.0, "increasing": 1.0, "less": -1.0, "decreasing": -1.0}.get(expect)


def _q(scale: str, alpha: float) -> float:
    """The decision's normal quantile: each side at alpha / 2 (a trend's one-sided test too, as its
    two-sided interval shown beside it)."""
    return sps.norm.ppf(1 - alpha / 2)


def _band(basis: dict) -> float:
    """A no-change claim's margin on the interval's scale."""
    return math.log1p(basis["margin"]) if basis["scale"] == "log" else basis["margin"]


def decided_chance(basis: dict, theta: float, se: float) -> tuple[float, float]:
    """(chance reproduced, chance contradicted) of one campaign whose estimate is
    normal(theta, se) on the interval's scale, under the claim's rule."""
    alpha = basis["alpha"]
    if se <= 0:
        return (float("nan"), float("nan"))
    norm = sps.norm
    if basis["expect"] == "equivalent":
        band = _band(basis)
        q2, q = norm.ppf(1 - alpha), _q(basis["scale"], alpha)
        inside = max(0.0, norm.cdf((band - q2 * se - theta) / se) - norm.cdf((-band + q2 * se - theta) / se))
        outside = norm.sf((band + q * se - theta) / se) + norm.cdf((-band - q * se - theta) / se)
        return inside, outside
    sign = _sign(basis["expect"])
    if sign is None:
        return (float("nan"), float("nan"))
    q = _q(basis["scale"], alpha)
    z = sign * theta / se
    return float(norm.cdf(z - q)), float(norm.cdf(-z - q))


def reps_stable(basis: dict, theta: float, se: float, n: float, alpha: float, k: int) -> int | None:
    """Reps per campaign at which a claim with this effect would move with a chance of STABLE_MOVE
    or less over k campaigns (its spread shrinking as 1 / sqrt(n)); None when its effect is too
    near the null (or, for a no-change claim, the margin) for any number up to MAX_REPS."""
    if basis["expect"] == "equivalent":
        band = _band(basis)
        inside = abs(theta) < band
        distance, q = abs(abs(theta) - band), sps.norm.ppf(1 - alpha if inside else 1 - alpha / 2)
    else:
        sign = _sign(basis["expect"])
        if sign is None:
            return None
        distance = abs(theta)
        q = _q(basis["scale"], alpha)
    if distance == 0:
        return None
    lo, hi = 0.5, 1.0  # the chance of a decision that gives STABLE_MOVE over k campaigns
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if 1 - mid**k - (1 - mid) ** k > STABLE_MOVE else (lo, mid)
    z = q + sps.norm.ppf(hi)
    need = math.ceil(n * (z * se / distance) ** 2)
    return need if need <= MAX_REPS else None


def _se(basis: dict, row: dict) -> float | None:
    lo = _g(basis["scale"], basis["null"], row.get("ci_low"))
    hi = _g(basis["scale"], basis["null"], row.get("ci_high"))
    if lo is None or hi is None or hi <= lo:
        return None
    # a rho interval is two-sided at the row's level; the others are the decision's own interval
    q = sps.norm.ppf(1 - (1 - row["level"]) / 2)
    return (hi - lo) / (2 * q)


def claim_chance(rows: list[dict], factor: float = 1.0) -> dict | None:
    """One claim over K campaigns: its chance of moving and of flipping, Cochran's Q and its p;
    None when a row has no interval or basis to estimate from (the claim is left out)."""
    if any(r is None or r.get("outcome") not in ("reproduced", "contradicted", "inconclusive") for r in rows):
        return None
    basis = rows[0].get("basis")
    if not basis or any(r.get("basis", {}).get("scale") != basis["scale"] for r in rows):
        return None
    gs, ses = [], []
    for r in rows:
        g, se = _g(basis["scale"], basis["null"], r.get("estimate")), _se(basis, r)
        if g is None or se is None:
            return None
        gs.append(g)
        ses.append(se)
    k = len(rows)
    theta = sum(gs) / k
    se = math.sqrt(sum(s * s for s in ses) / k / factor)
    alpha = sum(r["basis"]["alpha"] for r in rows) / k
    pr, pc = decided_chance({**basis, "alpha": alpha}, theta, se)
    if not (math.isfinite(pr) and math.isfinite(pc)):
        return None
    p = min(1.0, pr + pc)
    move = 1 - p**k - (1 - p) ** k
    flip = 1 - (1 - pr) ** k - (1 - pc) ** k + max(0.0, 1 - pr - pc) ** k
    w = [1 / s**2 for s in ses]
    mean_w = sum(wi * gi for wi, gi in zip(w, gs)) / sum(w)
    q_stat = sum(wi * (gi - mean_w) ** 2 for wi, gi in zip(w, gs))
    n = factor * sum(r["n"] for r in rows) / k
    return {
        "n": n,
        "reps_stable": reps_stable(basis, theta, se, n, alpha, k),
        "p_decided": p,
        "p_move": move,
        "p_flip": flip,
        "q": q_stat,
        "q_p": float(sps.chi2.sf(q_stat, k - 1)) if k > 1 else None,
    }


def _declared(experiment: str, cache: dict) -> dict:
    """This checkout's claims of one experiment ({} when it has none)."""
    if experiment not in cache:
        folder = REPO / "experiments" / experiment
        try:
            cache[experiment] = load_claims(folder / "claims.yaml", experiment, REPO / "experiments" / "_papers").claims
        except Exception:  # noqa: BLE001 - an experiment this checkout does not have: no basis
            cache[experiment] = {}
    return cache[experiment]


def with_basis(campaigns: list[dict[tuple[str, str], dict]]) -> list[dict]:
    """Rows written before they recorded their `basis` get it from this checkout's declaration of
    the claim (the same commit's claims.yaml when the campaigns are of this checkout)."""
    cache: dict = {}
    out = []
    for c in campaigns:
        filled = {}
        for (exp, cid), row in c.items():
            claim = _declared(exp, cache).get(cid) if row.get("basis") is None else None
            if claim is not None and row.get("level") and claim["expect"] != "none":
                if claim["effect"] == "trend":
                    scale, null = "rho", 0.0
                elif "log" in (row.get("test") or "") and not (row.get("measured") or "").startswith("difference"):
                    scale, null = "log", claim["null"]
                else:
                    scale = "linear"
                    null = 0.0 if claim["effect"] in ("ratio", "ratio_of_ratios") else claim["null"]
                row = {**row, "basis": row_basis(claim, scale, null, 1 - row["level"])}
            filled[(exp, cid)] = row
        out.append(filled)
    return out


def at_least(chances: list[float], observed: int) -> float:
    """The chance of `observed` or more moves when each claim moves independently with its own
    chance (the Poisson-binomial distribution, by convolution)."""
    dist = [1.0]
    for p in chances:
        nxt = [0.0] * (len(dist) + 1)
        for i, q in enumerate(dist):
            nxt[i] += q * (1 - p)
            nxt[i + 1] += q * p
        dist = nxt
    return float(min(1.0, sum(dist[observed:])))


def chance(campaigns: list[dict[tuple[str, str], dict]], factor: float = 1.0, moved=()) -> dict:
    """The claims estimated, the expected moves and flips from sampling alone, the claims most
    likely to move, and those whose campaigns differ beyond their intervals; MOVED: the claims
    that moved (campaign_verdicts.diff's), to count those observed among the estimated."""
    keys = sorted(set().union(*[set(c) for c in campaigns]))
    per = {}
    for key in keys:
        est = claim_chance([c.get(key) for c in campaigns], factor)
        if est is not None:
            per[key] = est
    moved = set(map(tuple, moved))
    observed = sum(1 for k in per if k in moved)
    return {
        "claims": len(keys),
        "estimated": len(per),
        "observed": observed,
        "unestimated_moves": sorted(moved - set(per)),
        "p_at_least": at_least([e["p_move"] for e in per.values()], observed),
        "moves": sum(e["p_move"] for e in per.values()),
        "flips": sum(e["p_flip"] for e in per.values()),
        "likely": sorted(((k, e) for k, e in per.items() if e["p_move"] >= MOVE_SHOWN), key=lambda x: -x[1]["p_move"]),
        "heterogeneous": sorted(
            ((k, e) for k, e in per.items() if e["q_p"] is not None and e["q_p"] < LEVEL),
            key=lambda x: x[1]["q_p"],
        ),
    }


def chance_text(campaigns: list[dict], moved=()) -> str:
    if len(campaigns) < 2:
        return ""
    c = chance(with_basis(campaigns), moved=moved)
    n = max(1, c["claims"])
    lines = [
        f"sampling alone (normal approximation from the rows' intervals, {c['estimated']} of {c['claims']} "
        f"claims have one): about {c['moves']:.1f} moves between a decided outcome and inconclusive "
        f"({100 * c['moves'] / n:.1f} % of the claims) and {c['flips']:.2f} flips over {len(campaigns)} campaigns"
    ]
    lines.append(
        f"observed among them: {c['observed']} moves; the chance of {c['observed']} or more from sampling "
        f"alone: {100 * c['p_at_least']:.0f} %"
        + (" (more moves than sampling explains: look for a cause)" if c["p_at_least"] < LEVEL else "")
    )
    if c["unestimated_moves"]:
        lines.append(
            "moved without an interval to estimate from (not in the figures above): "
            + ", ".join(".".join(k) for k in c["unestimated_moves"])
        )
    if c["likely"]:
        lines.append(
            f"claims with a {100 * MOVE_SHOWN:.0f} % chance or more of moving "
            "(their effect sits near the null or margin):"
        )
        lines += [
            f"  {'.'.join(k)}: {100 * e['p_move']:.0f} % at n {e['n']:.0f}"
            + (
                f"; about {e['reps_stable']} reps would bring it to {100 * STABLE_MOVE:.0f} %"
                if e["reps_stable"]
                else "; no number of reps up to "
                f"{MAX_REPS} would bring it to {100 * STABLE_MOVE:.0f} % (the effect is at the null or margin)"
            )
            for k, e in c["likely"]
        ]
    if c["heterogeneous"]:
        lines.append(
            f"claims whose campaigns differ more than their intervals allow (Cochran's Q, p < {LEVEL}): "
            "a level of variation one campaign's reps do not sample; by chance alone about "
            f"{LEVEL * c['estimated']:.1f} of the {c['estimated']} would be listed"
        )
        lines += [f"  {'.'.join(k)}: Q {e['q']:.1f}, p {e['q_p']:.3g}" for k, e in c["heterogeneous"]]
    return "\n".join(lines) + "\n"

"""How often does the verdict engine decide wrongly, and how often does it find a real effect?

Simulates every effect kind a claim can declare (ratio, difference, value, ratio_of_ratios,
trend, equivalent, and a ratio of two independent sets on Welch's interval: unpaired, also at 2
and 4 runs a set) on synthetic evidence tables and judges each with the real engine
(analysis.verdicts.judge), under the null and under a real effect, for three shapes of the
per-pair effects, at the repetitions and look plans the profiles use (experiments/*/profiles/
*.yaml: reps, max_reps, reps_step through experiments/looks.py). A sequential plan is run look by
look as the workflow runs it: the next look only while the claim is inconclusive, each look at
the level the engine gives the plan.

    .venv/bin/python bench/verdict_coverage.py            # every plan, 200 draws a cell (10 to 30 min)
    .venv/bin/python bench/verdict_coverage.py --quick    # two plans, 60 draws (about 30 s of CPU)
    .venv/bin/python bench/verdict_coverage.py --asymmetric  # and a null skewed about its mean

Shapes of the per-pair effects (spread 1 before the effect is added):
  normal     normal noise.
  skewed     the difference of two lognormal measurements (a long-tailed spread: most pairs close,
             a few far), and under a real effect a per-pair effect of lognormal size (some pairs
             gain much more than others).
  bimodal    two machine states: half the pairs +1, half -1, each with noise 0.3.
  asymmetric (--asymmetric only) a lognormal skewed about its mean of 0: outside the engine's
             null model (a pair's two members exchangeable under the null, so a per-pair effect
             symmetric about the null); no test of a mean holds its level at a few pairs for
             every such shape (Bahadur and Savage 1956), shown for information.

Columns: false > and false < are the rates of deciding on each side under the null (a ratio's
reproduced above its null, contradicted below it; an equivalence's reproduced when the true change
is the margin, and contradicted when it is the margin); power is the rate of reproducing under the
effect (a shift of 3 / sqrt(cap) spreads, a trend's slope 0.5, an equivalence at no change);
nominal is each side's level (2.5 %, an equivalence's reproduced 5 %); +- is the Monte Carlo
standard error of the larger false rate. A cell is flagged "over" when a false rate exceeds its
nominal level by more than two standard errors.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np
import pandas as pd
import yaml

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis.claims import complete_claim  # noqa: E402
from analysis.verdicts import Looks, Machine, decide_effects, judge  # noqa: E402
from experiments.looks import reps_per_look  # noqa: E402

KINDS = ("ratio", "difference", "value", "ratio_of_ratios", "trend", "equivalent", "unpaired")
UNPAIRED_PLANS = ((2,), (4,))  # beside the profiles' plans: two runs a set, and the least that decides
SHAPES = ("normal", "skewed", "bimodal")
MACHINE = Machine({}, {})
X_LEVELS = (1, 2, 4, 8)  # a trend's points per repetition
MARGIN = 0.5  # an equivalence's margin, in spreads of the per-pair effect
TREND_SLOPE = 0.5  # a trend's real effect: rank-scale slope per level, in spreads


def profile_plans(root: Path = REPO) -> list[tuple[int, ...]]:
    """Every look plan the profiles declare, e.g. (3,), (3, 6, 9); one-look plans below 2 reps left
    out (no claim can be judged with one pair)."""
    plans = set()
    for path in sorted(root.glob("experiments/*/profiles/*.yaml")):
        if path.parent.parent.name.startswith("_"):
            continue
        doc = yaml.safe_load(path.read_text()) or {}
        if not isinstance(doc.get("reps"), int):
            continue
        plan = tuple(reps_per_look({"x": doc}, "x"))
        if plan[-1] >= 2:
            plans.add(plan)
    return sorted(plans, key=lambda p: (len(p), p))


# ----------------------------------------------------------------------------- synthetic evidence


def noise(shape: str, rng: np.random.Generator, n: int) -> np.ndarray:
    if shape == "normal":
        return rng.standard_normal(n)
    if shape == "skewed":
        s = 1.0
        sd = math.sqrt(2 * (math.exp(s * s) - 1) * math.exp(s * s))
        return (rng.lognormal(0, s, n) - rng.lognormal(0, s, n)) / sd
    if shape == "bimodal":
        return (np.where(rng.random(n) < 0.5, -1.0, 1.0) + 0.3 * rng.standard_normal(n)) / math.sqrt(1.09)
    if shape == "asymmetric":
        s = 1.0
        return (rng.lognormal(0, s, n) - math.exp(s * s / 2)) / math.sqrt((math.exp(s * s) - 1) * math.exp(s * s))
    raise ValueError(shape)


def effect_sizes(shape: str, rng: np.random.Generator, n: int, delta: float) -> np.ndarray:
    """The real effect per pair: delta, or of lognormal size about delta for the skewed shape."""
    if delta == 0 or shape != "skewed":
        return np.full(n, delta)
    s = 0.75
    return delta * rng.lognormal(-s * s / 2, s, n)


TREND_COST = 5  # a trend's draw takes about 30 times a ratio's (its permutation tests): a fifth as many
CHECK_EVERY = 50  # every 50th draw is judged from its table by the engine's judge too
SPREAD = 0.1  # per-pair effects on the log (or metric) scale: a spread of 10 %


def claim_of(kind: str) -> dict:
    base = {"says": "x", "source": "s", "quote": "q", "paper_as": "same", "table": "runs", "pair_by": ["rep"],
            "aggregate": "mean", "min_reps": 2}  # fmt: skip
    sides = {"head": {"scheme": "h"}, "base": {"scheme": "b"}}
    spec = {
        "ratio": {"effect": "ratio", "metric": "t", **sides, "expect": "greater"},
        "difference": {"effect": "difference", "metric": "t", **sides, "expect": "greater"},
        "value": {"effect": "value", "metric": "t", "null": 10.0, "expect": "greater"},
        "ratio_of_ratios": {
            "effect": "ratio_of_ratios",
            "metric": "t",
            **sides,
            "across": {"k": [1, 2]},
            "expect": "greater",
        },  # fmt: skip
        "trend": {"effect": "trend", "metric": "t", "x": "k", "expect": "increasing"},
        "unpaired": {"effect": "ratio", "metric": "t", **sides, "expect": "greater", "pair_by": []},
        "equivalent": {
            "effect": "ratio",
            "metric": "t",
            **sides,
            "expect": "equivalent",
            "margin": math.expm1(MARGIN * SPREAD),
        },  # fmt: skip
    }[kind]
    return complete_claim("bench.yaml", kind, {**base, **spec}, {})


def table(kind: str, e: np.ndarray, rng: np.random.Generator, shape: str) -> pd.DataFrame:
    """The evidence table whose per-pair effects (in spreads) are `e`, one pair per rep."""
    n = len(e)
    reps = np.arange(n)
    if kind == "trend":  # e: the trend's slope per rep; each point its own noise
        x = np.tile(np.array(X_LEVELS, float), n)
        r = np.repeat(reps, len(X_LEVELS))
        y = 10 + e.repeat(len(X_LEVELS)) * np.log2(x) + noise(shape, rng, len(x))
        return pd.DataFrame({"rep": r, "k": x, "t": y, "run_id": [f"r{i}" for i in range(len(x))]})
    if kind == "value":
        return pd.DataFrame({"rep": reps, "t": 10 + e * SPREAD * 10, "run_id": [f"v{i}" for i in reps]})
    if kind == "difference":
        h, b = 10 + e * SPREAD * 10, np.full(n, 10.0)
    elif kind == "unpaired":  # each set its own runs: the base as noisy as the head
        h, b = 10 * np.exp(e * SPREAD), 10 * np.exp(noise(shape, rng, n) * SPREAD)
    else:
        h, b = 10 * np.exp(e * SPREAD), np.full(n, 10.0)
    rows = {"rep": np.concatenate([reps, reps]), "scheme": ["h"] * n + ["b"] * n, "t": np.concatenate([h, b])}
    df = pd.DataFrame(rows)
    if kind == "ratio_of_ratios":  # the first point without effect, the second with it
        first = df.copy()
        first["t"] = 10.0
        first["k"] = 1
        df["k"] = 2
        df = pd.concat([first, df], ignore_index=True)
    df["run_id"] = [f"r{i}" for i in range(len(df))]
    return df


def looks_at(look: int, plan: tuple[int, ...]) -> Looks:
    """The engine's Looks for this look of the plan (an engine without plans: the number of looks)."""
    try:
        return Looks(look, len(plan), plan[look - 1], plan=plan)
    except TypeError:
        return Looks(look, len(plan), plan[look - 1])


def info_of(kind: str, c: dict, df: pd.DataFrame, n: int) -> dict:
    """What analysis.verdict_rows.paired_effects gives for the first n reps of `df`, built from the
    table's columns without pandas' grouping (which would take most of the bench's time)."""
    rep = df["rep"].to_numpy()
    keep = rep < n
    t = df["t"].to_numpy(float)[keep]
    if kind == "trend":
        v = df[keep].set_index(["k", "rep"])["t"].sort_index()
        return {"values": v, "point": {}}
    if kind == "value":
        return {"values": pd.Series(t, index=pd.Index(rep[keep], name="rep")), "effects": t - c["null"],
                "raw_values": t, "point": {}}  # fmt: skip
    scheme = df["scheme"].to_numpy()[keep]
    if kind == "ratio_of_ratios":
        second = df["k"].to_numpy()[keep] == 2
        h, b = t[second & (scheme == "h")], t[second & (scheme == "b")]
        return {"effects": np.log(h / b) - math.log(c["null"]), "pairs": list(range(n)), "point": {"k": [1, 2]}}
    h, b = t[scheme == "h"], t[scheme == "b"]
    if kind == "unpaired":
        return {"unpaired": (h, b), "point": {}}
    eff = h - b - c["null"] if kind == "difference" else np.log(h / b) - math.log(c["null"])
    return {"effects": eff, "raw": (h, b), "pairs": list(range(n)), "point": {}}


def draw(kind: str, shape: str, plan: tuple[int, ...], real: bool, rng: np.random.Generator, check: bool) -> str:
    """One simulated claim run through its look plan: the side it was decided on ('>' or '<'; an
    equivalence: '=' reproduced, '!' contradicted), or '' when every look left it undecided. With
    `check`, each look is judged from the table by analysis.verdicts.judge as well, and the two
    outcomes must agree."""
    cap = plan[-1]
    c = claim_of(kind)
    if kind == "trend":
        e = np.full(cap, TREND_SLOPE if real else 0.0)
    elif kind == "equivalent":
        # the null: a true change of the margin (reproduced is then false); the effect: no change
        e = noise(shape, rng, cap) + (0.0 if real else MARGIN)
    else:
        e = noise(shape, rng, cap) + effect_sizes(shape, rng, cap, 3 / math.sqrt(cap) if real else 0.0)
    df = table(kind, e, rng, shape)
    for look, n in enumerate(plan, 1):
        lk = looks_at(look, plan)
        row = decide_effects(kind, c, lk, info_of(kind, c, df, n), [], df.iloc[0:0], lk.alpha)
        if check:
            full = judge(kind, c, {"runs": df[df["rep"] < n]}, MACHINE, lk)
            if (full["outcome"], full["why"]) != (row["outcome"], row["why"]):
                raise SystemExit(
                    f"verdict_coverage: {kind} at n = {n}: the engine's judge gave {full['outcome']} "
                    f"({full['why']}), the bench {row['outcome']} ({row['why']})"
                )
        if row["outcome"] == "reproduced":
            return ">" if kind != "equivalent" else "="
        if row["outcome"] == "contradicted":
            return "<" if kind != "equivalent" else "!"
    return ""


def cell(kind: str, shape: str, plan: tuple[int, ...], draws: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    null = [draw(kind, shape, plan, False, rng, i % CHECK_EVERY == 0) for i in range(draws)]
    alt = [draw(kind, shape, plan, True, rng, i % CHECK_EVERY == 0) for i in range(draws)]
    if kind == "equivalent":
        hi, lo = null.count("=") / draws, null.count("!") / draws
        power = alt.count("=") / draws
        nominal = (0.05, 0.025)
    else:
        hi, lo = null.count(">") / draws, null.count("<") / draws
        power = alt.count(">") / draws
        nominal = (0.025, 0.025)
    worst = max(hi, lo)
    se = math.sqrt(max(worst, 0.01) * (1 - max(worst, 0.01)) / draws)
    over = any(f - nom > 2 * math.sqrt(nom * (1 - nom) / draws) for f, nom in zip((hi, lo), nominal))
    return {"kind": kind, "shape": shape, "plan": plan, "hi": hi, "lo": lo, "power": power, "se": se,
            "nominal": nominal, "over": over}  # fmt: skip


def plan_text(plan: tuple[int, ...]) -> str:
    return "/".join(map(str, plan))


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="two plans, 60 draws a cell: well under a minute")
    ap.add_argument("--draws", type=int, default=None, help="draws per cell and hypothesis (default 200; quick 60)")
    ap.add_argument("--asymmetric", action="store_true", help="also a null skewed about its mean (information)")
    ap.add_argument("--kinds", nargs="*", default=list(KINDS), choices=KINDS)
    a = ap.parse_args(argv)
    plans = profile_plans()
    if a.quick:
        plans = [p for p in plans if p in {(3,), (3, 6, 9)}] or plans[:2]
    draws = a.draws or (60 if a.quick else 200)
    shapes = [*SHAPES, "asymmetric"] if a.asymmetric else list(SHAPES)
    t0 = time.monotonic()
    print(f"plans (reps per look): {', '.join(plan_text(p) for p in plans)}; {draws} draws per cell and "
          f"hypothesis (a trend's: a {TREND_COST}th as many)")  # fmt: skip
    print(f"{'kind':<16} {'shape':<10} {'plan':<9} {'false >':>8} {'false <':>8} {'+-':>6} {'nominal':>11} "
          f"{'power':>6}")  # fmt: skip
    overs = 0
    for i, kind in enumerate(a.kinds):
        for j, shape in enumerate(shapes):
            kind_plans = [*plans, *(p for p in UNPAIRED_PLANS if p not in plans)] if kind == "unpaired" else plans
            for k, plan in enumerate(kind_plans):
                n = max(20, draws // TREND_COST) if kind == "trend" else draws
                r = cell(kind, shape, plan, n, seed=1000 * i + 100 * j + k)
                overs += r["over"] and shape != "asymmetric"
                nom = "/".join(f"{100 * x:.1f}" for x in r["nominal"]) + " %"
                print(f"{kind:<16} {shape:<10} {plan_text(plan):<9} {100 * r['hi']:7.1f}% {100 * r['lo']:7.1f}% "
                      f"{100 * r['se']:5.1f}% {nom:>11} {100 * r['power']:5.0f}%"
                      + ("  over" if r["over"] else ""), flush=True)  # fmt: skip
    print(f"{overs} cell(s) over their nominal level by more than 2 standard errors (asymmetric not counted); "
          f"{time.monotonic() - t0:.0f} s")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())

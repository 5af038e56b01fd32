"""Which outcomes a claim can reach: evidence built from the claim's own declaration (its effect,
direction, null, margin, selectors, points, test and least repetitions) and judged by the real
engine (analysis.verdicts.judge), so a claim that no possible data could contradict is found
before any run.

A claim "can fail" when some evidence tables make it *contradicted* (for a "no change" claim:
a change beyond its margin). The values tried lie inside the metric's known range: an
experiment's claims file may declare, per metric, the range its definition gives it

    metric_bounds:
      avg_aggregation: [1, null]   # requests per dispatch: 1 or more (null: no bound)

(analysis/schemas/claims.schema.json, read by analysis.claims into ClaimSet.metric_bounds); a
metric without one may take any value (any positive value on a log scale). A claim of "more than
1" on a metric that is 1 or more by definition then has no data that contradicts it. Claims of
`effect: machine` are compared, never judged: they have no such outcome.
"""

from __future__ import annotations

import itertools
import json
import math
from dataclasses import dataclass, replace
from pathlib import Path

import pandas as pd

from analysis.claims import POINT_KEYWORDS, ClaimSet, load_claims
from analysis.common import AnalysisInputError
from analysis.verdict_rows import CONTRADICTED, Looks, Machine
from analysis.verdicts import judge

EXPERIMENTS_DIR = Path(__file__).resolve().parents[1] / "experiments"

OTHER = "__other__"  # a side's value of a column only the other side selects
REPS = 10  # repetitions of the built evidence (at least the claim's min_reps)
X_POINTS = 5  # points of a trend's x
TRIES = 12  # evidence tables judged per claim, the most contrary first
BAND_TRIES = 4  # and for a magnitude band, the farthest outside it first
_JITTER = (-1.0, 1.0, -0.5, 0.5, 0.0, -0.75, 0.75, -0.25, 0.25, 0.1)


@dataclass(frozen=True)
class Reach:
    """What the built evidence could make of one claim."""

    claim: str
    can_fail: bool
    judged: bool  # False: a machine-specific value (compared, not judged)
    tried: int  # evidence tables judged
    how: str  # the evidence that contradicted it, or why none could
    # a claim with a magnitude band: whether some evidence lies wholly outside it (None: no band)
    band_can_fail: bool | None = None
    band_how: str = ""


def bounds_for(claim: dict, bounds: dict) -> tuple[float, float]:
    lo, hi = bounds.get(claim["metric"], (-math.inf, math.inf))
    if claim.get("scale") == "log" or claim["effect"] in ("ratio", "ratio_of_ratios"):
        lo = max(lo, 0.0)  # a ratio's values have logs
    return float(lo), float(hi)


def _inside(v: float, lo: float, hi: float) -> float | None:
    """V moved strictly inside [lo, hi] by a margin that leaves room for the jitter."""
    if math.isfinite(lo) and math.isfinite(hi):
        w = 0.02 * (hi - lo)
    else:
        w = 0.02 * max(1.0, abs(lo) if math.isfinite(lo) else abs(hi) if math.isfinite(hi) else 1.0)
    if hi - lo <= 2 * w:
        return None
    return min(max(v, lo + w), hi - w)


def grid(claim: dict, lo: float, hi: float) -> list[float]:
    """Values of the metric to build evidence from, inside its range: around the null, far on
    either side, and the range's ends."""
    null = float(claim.get("null", 0.0))
    raw = [0.5, 1.0, 2.0, 10.0, 100.0, -1.0, -10.0, 0.0]
    raw += [null * f for f in (0.25, 0.5, 0.9, 1.0, 1.1, 2.0, 4.0)] + [null + d for d in (-10, -1, -0.5, 0.5, 1, 10)]
    for end in (lo, hi):
        if math.isfinite(end):
            raw.append(end)
    if math.isfinite(lo) and math.isfinite(hi):
        raw += [lo + (hi - lo) * q for q in (0.25, 0.5, 0.75)]
    out = []
    for v in raw:
        v = _inside(v, lo, hi)
        if v is not None and all(abs(v - o) > 1e-9 for o in out):
            out.append(v)
    return out


def _jittered(v: float, r: int, lo: float, hi: float) -> float:
    """V moved a little (rep R's share of a spread well inside the range's margin)."""
    room = min(v - lo if math.isfinite(lo) else math.inf, hi - v if math.isfinite(hi) else math.inf)
    amp = min(0.01 * max(abs(v), 1e-3), 0.25 * room)
    return v + amp * _JITTER[r % len(_JITTER)] * (1 + r // len(_JITTER))


def _levels(claim: dict) -> dict[str, list]:
    """Every column the claim selects on besides head/base: its values in the built table."""
    cols: dict[str, list] = {}
    for col, want in (claim.get("where") or {}).items():
        cols[col] = list(want) if isinstance(want, list) else [want]
    for col, want in (claim.get("at") or {}).items():
        if want in POINT_KEYWORDS:
            cols.setdefault(col, [1, 2])
        else:
            cols.setdefault(col, [want])
    for col in claim.get("over") or []:
        cols.setdefault(col, [f"{col}_a"])
    return cols


def _sides(claim: dict) -> list[dict]:
    """The column values of each side's rows: head and base (a column only one side selects is
    OTHER on the other), or one side for a value or trend."""
    if claim["effect"] not in ("ratio", "difference", "ratio_of_ratios"):
        return [{}]
    head = {k: (v[0] if isinstance(v, list) else v) for k, v in claim["head"].items()}
    base = {k: (v[0] if isinstance(v, list) else v) for k, v in claim["base"].items()}
    for k in set(head) | set(base):
        head.setdefault(k, OTHER)
        base.setdefault(k, OTHER)
    return [head, base]


def build(claim: dict, values: tuple[float, float], lo: float, hi: float, reps: int) -> pd.DataFrame:
    """Evidence for one claim: head value values[0] and base values[1] (a value claim: values[0];
    a trend: from values[0] at the first x to values[1] at the last; a ratio of ratios: the head at
    values[1] over the base at the second point, no change at the first)."""
    e = claim["effect"]
    levels = _levels(claim)
    across = None
    if e == "ratio_of_ratios":
        col, (a, b) = next(iter(claim["across"].items()))
        num = {"min": 1, "max": 2}
        across = (col, num.get(a, a) if isinstance(a, str) else a, num.get(b, b) if isinstance(b, str) else b)
        levels.pop(col, None)
    xs = list(range(1, X_POINTS + 1)) if e == "trend" else [None]
    rows = []
    names = list(levels)
    sides = _sides(claim)
    for point in itertools.product(*levels.values()):
        for s, side in enumerate(sides):
            for r in range(reps):
                for i, x in enumerate(xs):
                    for j, at in enumerate([across[1], across[2]] if across else [None]):
                        row = dict(zip(names, point))
                        row.update(side)
                        for col in claim.get("pair_by") or []:
                            row.setdefault(col, r if col == "rep" else f"{col}{r}")
                        if e == "trend":
                            row[claim["x"]] = x
                            v = values[0] + (values[1] - values[0]) * i / (X_POINTS - 1)
                        elif across:
                            row[across[0]] = at
                            v = values[1] if (s == 0 and j == 1) else values[0]
                        else:
                            v = values[s] if len(sides) == 2 else values[0]
                        # one side varies, so the per-pair effects spread (at one point of a ratio of ratios)
                        jitter = (s == 0 or len(sides) == 1) and (not across or j == 1)
                        row[claim["metric"]] = _jittered(v, r, lo, hi) if jitter else v
                        if "min_events" in claim:
                            row[claim["min_events"]["column"]] = claim["min_events"]["at_least"]
                        row["run_id"] = f"run{len(rows)}"
                        rows.append(row)
    return pd.DataFrame(rows)


def _score(claim: dict, values: tuple[float, float]) -> float:
    """The effect VALUES give on the claim's scale (centred on no change), to try the most
    contrary first."""
    a, b = values
    e = claim["effect"]
    log = claim.get("scale") == "log" or e in ("ratio", "ratio_of_ratios")
    if e == "value":
        null = claim.get("null", 0.0)
        return math.log(a / null) if log and a > 0 and null > 0 else a - null
    if e == "trend":
        return b - a
    if e == "ratio_of_ratios":
        a, b = b, a  # the head at the second point over the rest
    if log:
        return math.log(a / b) - math.log(claim.get("null", 1.0)) if a > 0 and b > 0 else a - b
    return a - b - claim.get("null", 0.0)


def ordered(claim: dict, pairs: list) -> list:
    """PAIRS, the evidence most against the claim's direction (or farthest from no change) first."""
    expect = claim["expect"]
    if expect == "equivalent":
        return sorted(pairs, key=lambda p: -abs(_score(claim, p)))
    sign = 1 if expect in ("greater", "increasing") else -1
    return sorted(pairs, key=lambda p: sign * _score(claim, p))


def machine_for(claim: dict) -> Machine:
    """A machine that has everything the claim needs."""
    facts = {k: (True if isinstance(v, bool) else v) for k, v in (claim.get("needs") or {}).items()}
    return Machine(facts, {k: "built" for k in facts})


_MEMO: dict[str, Reach] = {}


def reach(cid: str, claim: dict, bounds: dict | None = None) -> Reach:
    """Whether some evidence inside the metric's range makes the engine contradict the claim
    (remembered per declaration: the can-fail test and docs/claims.md ask about the same claims)."""
    key = json.dumps([cid, claim, sorted((bounds or {}).items())], sort_keys=True, default=str)
    if key not in _MEMO:
        _MEMO[key] = _reach(cid, claim, bounds)
    return _MEMO[key]


def _reach(cid: str, claim: dict, bounds: dict | None) -> Reach:
    if claim["effect"] == "machine":
        return Reach(cid, False, False, 0, "a machine-specific value: compared with the paper's, never judged")
    lo, hi = bounds_for(claim, bounds or {})
    g = grid(claim, lo, hi)
    reps = max(REPS, int(claim.get("min_reps") or 2))
    if claim["effect"] == "trend":
        reps = max(2, int(claim.get("min_reps") or 2))  # points enough: each x once per rep
    machine = machine_for(claim)
    pairs = [(v, v) for v in g] if claim["effect"] == "value" else list(itertools.permutations(g, 2))
    rng = f"{claim['metric']} in [{_num(lo)}, {_num(hi)}]"

    def first(candidates, hit, tries=TRIES):
        """(tables judged, the first evidence whose row HIT accepts, its row) of CANDIDATES."""
        for n, values in enumerate(candidates[:tries], 1):
            row = judge(cid, claim, {claim["table"]: build(claim, values, lo, hi, reps)}, machine, Looks())
            if hit(row):
                return n, values, row
        return min(tries, len(candidates)), None, None

    tried, values, row = first(ordered(claim, pairs), lambda r: r["outcome"] == CONTRADICTED)
    if values is not None:
        shown = values[0] if claim["effect"] == "value" else values
        out = Reach(cid, True, True, tried, f"contradicted by {_describe(claim, shown)}: {row['measured']}")
    else:
        out = Reach(cid, False, True, tried, f"no evidence with {rng} contradicts it ({tried} tables judged)")
    band = claim.get("magnitude")
    if not band:
        return out
    n, values, row = first(off_band(claim, pairs), lambda r: r.get("magnitude") == "not in magnitude", BAND_TRIES)
    if values is not None:
        shown = values[0] if claim["effect"] == "value" else values
        return replace(out, band_can_fail=True, band_how=f"not in magnitude with {_describe(claim, shown)}")
    return replace(out, band_can_fail=False, band_how=f"no evidence with {rng} lies outside the band ({n} judged)")


def _shown_effect(claim: dict, values: tuple[float, float]) -> float:
    """Roughly the effect VALUES give, on the scale the band is declared on."""
    a, b = values
    e = claim["effect"]
    if e == "value":
        return a
    if e == "trend":
        return 1.0 if b > a else -1.0
    if e == "ratio_of_ratios":
        return b / a if a else math.inf
    if e == "difference":
        return a - b
    return a / b if b else math.inf


def off_band(claim: dict, pairs: list) -> list:
    """PAIRS, the evidence farthest outside the claim's magnitude band first."""
    band = claim["magnitude"]
    least, most = band.get("at_least", -math.inf), band.get("at_most", math.inf)

    def outside(p):
        e = _shown_effect(claim, p)
        return max(least - e, e - most)

    return sorted(pairs, key=outside, reverse=True)


def _num(v: float) -> str:
    return "inf" if v == math.inf else "-inf" if v == -math.inf else f"{v:g}"


def _describe(claim: dict, values) -> str:
    e = claim["effect"]
    if e == "value":
        return f"{claim['metric']} near {values:.4g}"
    if e == "trend":
        return f"{claim['metric']} from {values[0]:.4g} to {values[1]:.4g} over {claim['x']}"
    if e == "ratio_of_ratios":
        return f"head {values[1]:.4g} over base {values[0]:.4g} at the second point only"
    return f"head {values[0]:.4g}, base {values[1]:.4g}"


def reach_all(cs: ClaimSet) -> list[Reach]:
    """The Reach of every claim of a claims file, inside the ranges it declares (metric_bounds)."""
    return [reach(cid, c, cs.metric_bounds) for cid, c in cs.claims.items()]


def check_all(experiments_dir: Path | None = None) -> tuple[list[tuple[str, Reach]], list[str]]:
    """(experiment, Reach) of every judged claim of the experiments' folder, and the claims files
    that do not load (one line each)."""
    root = Path(experiments_dir or EXPERIMENTS_DIR)
    reached, broken = [], []
    for path in sorted(root.glob("*/claims.yaml")):
        name = path.parent.name
        try:
            cs = load_claims(path, name, root / "_papers", shown=f"experiments/{name}/claims.yaml")
        except AnalysisInputError as exc:
            broken.append(str(exc))
            continue
        reached += [(name, r) for r in reach_all(cs) if r.judged]
    return reached, broken


def main(argv: list[str] | None = None) -> int:
    """python -m analysis.claim_reach: every claim no possible evidence could contradict."""
    reached, broken = check_all()
    stuck = [(name, r) for name, r in reached if not r.can_fail]
    bands = [(name, r) for name, r in reached if r.band_can_fail is False]
    for line in broken:
        print(line)
    for name, r in stuck:
        print(f"experiments/{name}/claims.yaml: claims.{r.claim}: cannot fail: {r.how}")
    for name, r in bands:
        print(f"experiments/{name}/claims.yaml: claims.{r.claim}.magnitude: never 'not in magnitude': {r.band_how}")
    print(f"{len(stuck)} claim(s) cannot fail; {len(bands)} magnitude band(s) no evidence lies outside")
    return 1 if stuck or broken else 0


if __name__ == "__main__":
    raise SystemExit(main())

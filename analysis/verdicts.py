"""The verdict engine: one rule, for every experiment, from a declared claim and the measured
evidence to one of six outcomes. No analysis module decides a verdict itself.

Outcomes
  reproduced            the interval of the paired effect (at the look's level) excludes the null on
                        the paper's side; "in magnitude" as well when the paper's value (or range)
                        lies inside (overlaps) the interval. A trend: the one-sided permutation test
                        in the paper's direction below the level.
  contradicted          the interval excludes the null on the other side (a trend: the other
                        direction's test below the level).
  inconclusive          neither: the row gives n, the interval and how many repetitions a power
                        estimate from the measured spread says would decide (80 % power). Also
                        when the configuration measured nothing for the claim (n = 0), when fewer
                        pairs than the claim's least, or too few rare events, were measured, and
                        when the test's smallest attainable p cannot reach the level.
  not measurable here   only when a declared machine need (SMT, NUMA nodes, a PMU, persistent
                        memory, physical NICs, hosts, CMPs, CPUs) is missing, named; decided from
                        the machine description, before and without runs.
  failed                runs failed or a selected run has no value of the metric: loud, the runs
                        named, never folded into another outcome.
  differs (machine-specific)
                        an absolute property of the hardware (a bandwidth, a time alone): both
                        values shown, not judged.

Effects (claims.schema.json)
  ratio                 per pair (head / base), on logs: a t-interval of the mean log ratio (or the
                        exact signed-rank interval), exponentiated; the estimate is the geometric
                        mean of the per-pair ratios. A pair with a value <= 0 has no log: the
                        paired difference decides instead, and the row says so.
  difference            per pair head - base; value: the metric itself (log or linear) against
                        the null; ratio_of_ratios: per pair (head/base at the second point) over
                        (head/base at the first); trend: Spearman's rho of the metric on x over the
                        points, with the one-sided permutation test (analysis.stats.rank_trend).
  equivalent            a "no change" claim: two one-sided tests against the declared margin; the
                        (1 - 2 alpha) interval inside the margin reproduces, the (1 - alpha)
                        interval wholly outside it contradicts; an interval that merely contains
                        the null shows nothing when it is wide.
  over                  a claim on every point: reproduced when every point is (an intersection-
                        union test needs no adjustment), contradicted when one point is at the
                        Bonferroni level (Holm's first step), failed when one point failed.

Looks: a design that adds repetitions while a claim is undecided judges every look at Pocock's
nominal level for its number of looks (analysis.stats.look_alpha); the row records the look.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import stats
from analysis.claims import POINT_KEYWORDS, paper_on_effect_scale
from analysis.common import fmt_num

REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
NOT_MEASURABLE = "not measurable here"
FAILED = "failed"
MACHINE = "differs (machine-specific)"
OUTCOMES = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_MEASURABLE, FAILED, MACHINE)
DECIDED = (REPRODUCED, CONTRADICTED)

NEED_WORDS = {
    "smt": "SMT (two hardware threads per core)",
    "numa_nodes": "NUMA nodes",
    "pmu": "hardware performance counters (a PMU perf can use)",
    "pmem": "persistent memory",
    "physical_nics": "physical NICs with their own interrupts",
    "hosts": "hosts",
    "cmps": "CMPs (sockets, or cores taken as CMPs)",
    "cpus": "CPUs",
}


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Looks:
    """Where a sequential design stands: this look of `of` planned ones, with `reps` repetitions."""

    look: int = 1
    of: int = 1
    reps: int | None = None

    @property
    def alpha(self) -> float:
        return stats.look_alpha(self.of)

    @property
    def confidence(self) -> float:
        return 1.0 - self.alpha


@dataclass
class Machine:
    """What the machine the runs ran on has: a value per need (None: not recorded) and, for each,
    a short text of what was seen."""

    facts: dict = field(default_factory=dict)
    seen: dict = field(default_factory=dict)

    def unmet(self, needs: dict) -> list[str]:
        """The needs this machine does not meet, each as "<what> (this machine: <seen>)"."""
        out = []
        for need, want in (needs or {}).items():
            have = self.facts.get(need)
            words = NEED_WORDS.get(need, need)
            seen = self.seen.get(need) or ("not recorded" if have is None else str(have))
            if have is None:
                out.append(f"{words}: needed, not recorded on this machine")
            elif isinstance(want, bool):
                if not have:
                    out.append(f"{words} (this machine: {seen})")
            elif have < want:
                out.append(f"{want} {words} (this machine: {seen})")
        return out


# ----------------------------------------------------------------------------- the row


def _row(cid: str, claim: dict, looks: Looks, **kw) -> dict:
    paper = claim.get("paper_value")
    unit = claim.get("paper_unit") or ""
    row = {
        "claim": cid,
        "says": " ".join(claim["says"].split()),
        "definition": " ".join(claim.get("definition", "").split()),
        "paper_value": None
        if paper is None
        else (f"{fmt_num(paper)} {unit}".strip() if isinstance(paper, (int, float)) else f"{paper} {unit}".strip()),
        "source": claim["source"],
        "quote": " ".join(claim["quote"].split()),
        "effect": describe_effect(claim),
        "test": describe_test(claim, looks),
        "estimate": None,
        "ci_low": None,
        "ci_high": None,
        "level": round(looks.confidence, 4),
        "n": 0,
        "measured": None,
        "outcome": INCONCLUSIVE,
        "in_magnitude": None,
        "why": "",
        "reps_needed": None,
        "look": looks.look,
        "looks": looks.of,
        "runs": [],
    }
    row.update(kw)
    for k in ("estimate", "ci_low", "ci_high"):
        v = row[k]
        row[k] = None if v is None or not math.isfinite(v) else float(v)
    return row


def _sel_text(sel: dict | None) -> str:
    if not sel:
        return ""
    return ", ".join(f"{k} {v if not isinstance(v, list) else '|'.join(map(str, v))}" for k, v in sel.items())


def describe_effect(c: dict) -> str:
    """The comparison in a few words: what over what, of which metric, where, paired by what."""
    where = _sel_text(c.get("where"))
    at = _sel_text(c.get("at"))
    ctx = "; ".join(x for x in (where, f"at {at}" if at else "") if x)
    pair = ", ".join(c.get("pair_by") or [])
    e = c["effect"]
    if e in ("ratio", "difference", "ratio_of_ratios"):
        op = " / " if e != "difference" else " - "
        text = f"{c['metric']}: {_sel_text(c['head'])}{op}{_sel_text(c['base'])}"
        if e == "ratio_of_ratios":
            col, (a, b) = next(iter(c["across"].items()))
            text += f", at {col} {b} over at {col} {a}"
    elif e == "trend":
        text = f"{c['metric']} against {c['x']}"
    else:
        text = c["metric"] + (f" against {fmt_num(c['null'])}" if e == "value" else "")
    if ctx:
        text += f" ({ctx})"
    if c.get("over"):
        text += f", at every {', '.join(c['over'])}"
    if pair and e != "machine":
        text += (
            f"; paired by {pair}"
            if e != "trend" and e != "value"
            else f"; one point per {c['x'] + ', ' if e == 'trend' else ''}{pair}"
        )
    return text


def describe_test(c: dict, looks: Looks) -> str:
    level = f"{100 * looks.confidence:.4g} %"
    if c["effect"] == "machine":
        return "none: a property of the hardware, compared"
    if c["effect"] == "trend":
        return f"Spearman's rho, one-sided permutation test at {fmt_num(looks.alpha)}"
    scale = "log " if c["scale"] == "log" else ""
    kind = "t-interval" if c["test"] == "t" else "signed-rank (Hodges-Lehmann) interval"
    if c["expect"] == "equivalent":
        return f"two one-sided tests ({scale}{kind}, margin {fmt_num(c['margin'])}) at {fmt_num(looks.alpha)}"
    return f"{level} {kind} of the {scale}{'ratios' if c['effect'] in ('ratio', 'ratio_of_ratios') else 'values'}"


# ----------------------------------------------------------------------------- selection


def _match(df: pd.DataFrame, sel: dict | None) -> pd.Series:
    mask = pd.Series(True, index=df.index)
    for col, want in (sel or {}).items():
        wanted = want if isinstance(want, list) else [want]
        col_values = df[col]
        hit = col_values.isin(wanted)
        if not hit.any():  # numbers written as text in a CSV, or the other way round
            hit = col_values.astype(str).isin([str(w) for w in wanted])
        mask &= hit
    return mask


def _plain(v):
    """A numpy scalar as the plain Python value (for text and JSON)."""
    return v.item() if isinstance(v, np.generic) else v


def _point_value(values: pd.Series, want):
    vals = values.dropna()
    if want in POINT_KEYWORDS:
        if vals.empty:
            return None
        return _plain(vals.max() if want == "max" else vals.min())
    return want


def _at(df: pd.DataFrame, at: dict | None) -> tuple[pd.DataFrame, dict]:
    """Rows at the named point; max / min resolved over the rows given. Returns the rows and the
    resolved point."""
    resolved = {}
    for col, want in (at or {}).items():
        v = _point_value(df[col], want)
        resolved[col] = v
        df = df[_match(df, {col: v})] if v is not None else df.iloc[0:0]
    return df, resolved


def _point_text(v) -> str:
    return " and ".join(str(_plain(x)) for x in v) if isinstance(v, list) else str(_plain(v))


def _run_names(rows: pd.DataFrame) -> list[str]:
    if "run_id" in rows.columns:
        return sorted({str(r) for r in rows["run_id"].dropna()})
    return [f"row {i}" for i in rows.index]


def _failed_rows(rows: pd.DataFrame, metric: str) -> tuple[list[str], str]:
    """Runs that failed, or have no value of the metric, among the rows a claim uses."""
    bad, why = [], []
    if "failed" in rows.columns:
        f = rows[rows["failed"].fillna(False).astype(bool)]
        if len(f):
            bad += _run_names(f)
            reasons = sorted({str(x) for x in f.get("failed_reason", pd.Series(dtype=str)).dropna() if str(x)})
            why.append("failed" + (f" ({'; '.join(reasons[:2])})" if reasons else ""))
    ok = rows[~rows["failed"].fillna(False).astype(bool)] if "failed" in rows.columns else rows
    values = pd.to_numeric(ok[metric], errors="coerce")
    nan = ok[~np.isfinite(values.to_numpy(float))]
    if len(nan):
        bad += _run_names(nan)
        why.append(f"no value of {metric}")
    return sorted(set(bad)), " and ".join(why)


def _named(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _side(df: pd.DataFrame, metric: str, pair_by: list[str], how: str) -> pd.Series:
    g = df.groupby(pair_by, sort=True)[metric]
    if how == "sum":
        return g.sum()
    if how == "median":
        return g.median()
    return g.mean()


def _effects(c: dict, df: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """(info, rows used) where info has 'effects' (per-pair effect values on the test's scale,
    log for ratios), 'raw' (head, base per pair when paired), 'pairs' (pair keys), 'empty' (why no
    pairs: the configuration measured nothing for a side)."""
    metric, pair_by, how = c["metric"], list(c["pair_by"]), c["aggregate"]
    e = c["effect"]
    df = df[_match(df, c.get("where"))]
    if df.empty and c.get("where"):
        return {"empty": f"this configuration measured no {_sel_text(c['where'])}", "point": {}}, df
    if e in ("ratio", "difference", "ratio_of_ratios"):
        sides = df[_match(df, c["head"]) | _match(df, c["base"])]
        if e == "ratio_of_ratios":
            col, (a, b) = next(iter(c["across"].items()))
            sides, point = _at(sides, c.get("at"))
            a_v, b_v = _point_value(sides[col], a), _point_value(sides[col], b)
            if a_v is not None and a_v == b_v:
                why = f"this configuration measured one {col} ({a_v}) only: the claim compares two"
                return {"empty": why, "point": point}, sides.iloc[0:0]
            parts = {}
            for name, v in (("first", a_v), ("second", b_v)):
                rows = sides[_match(sides, {col: v})] if v is not None else sides.iloc[0:0]
                h = _side(rows[_match(rows, c["head"])], metric, pair_by, how)
                bb = _side(rows[_match(rows, c["base"])], metric, pair_by, how)
                parts[name] = (h, bb)
            keys = sorted(set.intersection(*[set(s.index) for pair in parts.values() for s in pair]))
            used = sides[sides[col].isin([a_v, b_v]) | sides[col].astype(str).isin([str(a_v), str(b_v)])]
            if not keys:
                return {"empty": _empty_text(c, used, pair_by), "point": {**point, col: [a_v, b_v]}}, used
            h1, b1 = (parts["first"][0].loc[keys].to_numpy(float), parts["first"][1].loc[keys].to_numpy(float))
            h2, b2 = (parts["second"][0].loc[keys].to_numpy(float), parts["second"][1].loc[keys].to_numpy(float))
            with np.errstate(divide="ignore", invalid="ignore"):
                eff = np.log(h2 / b2) - np.log(h1 / b1) - math.log(c["null"])
            return {"effects": eff, "pairs": keys, "point": {**point, col: [a_v, b_v]}}, used
        sides, point = _at(sides, c.get("at"))
        if not pair_by:  # independent sets: every row a value
            hv = pd.to_numeric(sides[_match(sides, c["head"])][metric], errors="coerce").to_numpy(float)
            bv = pd.to_numeric(sides[_match(sides, c["base"])][metric], errors="coerce").to_numpy(float)
            if not len(hv) or not len(bv):
                return {"empty": _empty_text(c, sides, ["run"]), "point": point}, sides
            return {"unpaired": (hv, bv), "point": point}, sides
        h = _side(sides[_match(sides, c["head"])], metric, pair_by, how)
        b = _side(sides[_match(sides, c["base"])], metric, pair_by, how)
        keys = sorted(set(h.index) & set(b.index))
        if not keys:
            return {"empty": _empty_text(c, sides, pair_by), "point": point}, sides
        hv, bv = h.loc[keys].to_numpy(float), b.loc[keys].to_numpy(float)
        info = {"raw": (hv, bv), "pairs": keys, "point": point}
        if e == "difference":
            info["effects"] = hv - bv - c["null"]
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                info["effects"] = np.log(hv / bv) - math.log(c["null"])
        return info, sides
    rows, point = _at(df, c.get("at"))
    keys_cols = ([c["x"]] if e == "trend" else []) + pair_by
    keys_cols = [k for k in dict.fromkeys(keys_cols) if k in rows.columns]
    if rows.empty:
        return {"empty": _empty_text(c, rows, pair_by), "point": point}, rows
    v = _side(rows, metric, keys_cols, how) if keys_cols else rows[metric].astype(float)
    info = {"values": v, "point": point}
    if e == "value":
        vals = v.to_numpy(float)
        with np.errstate(divide="ignore", invalid="ignore"):
            info["effects"] = np.log(vals) - math.log(c["null"]) if c["scale"] == "log" else vals - c["null"]
        info["raw_values"] = vals
    return info, rows


def _empty_text(c: dict, rows: pd.DataFrame, pair_by: list[str]) -> str:
    """Why a claim has nothing to compare: the side (or selection) this configuration did not measure."""
    if c["effect"] in ("ratio", "difference", "ratio_of_ratios"):
        where = f" ({_sel_text(c['where'])})" if c.get("where") else ""
        missing = [side for side in ("head", "base") if rows.empty or not _match(rows, c[side]).any()]
        if missing:
            return "this configuration measured no " + " and no ".join(_sel_text(c[s]) for s in missing) + where
        both = f"{_sel_text(c['head'])} and {_sel_text(c['base'])}"
        return f"this configuration measured no {'/'.join(pair_by)} with both {both}{where}"
    return "this configuration measured nothing the claim selects (" + (_sel_text(c.get("where")) or "any row") + ")"


# ----------------------------------------------------------------------------- judging


def judge(
    cid: str,
    claim: dict,
    tables: dict[str, pd.DataFrame],
    machine: Machine,
    looks: Looks = Looks(),
    alpha: float | None = None,
) -> dict:
    """One claim's row: its outcome, the measured effect with its interval and n, why. `alpha`:
    a level of the caller's own (a family of comparisons, Bonferroni), instead of the look's."""
    unmet = machine.unmet(claim.get("needs") or {})
    if unmet:
        return _row(cid, claim, looks, outcome=NOT_MEASURABLE, why="needs " + "; ".join(unmet) + ".")
    table = tables.get(claim["table"])
    if table is None:
        return _row(cid, claim, looks, outcome=FAILED, why=f"the analysis produced no table {claim['table']}.")
    if claim.get("over"):
        return _judge_over(cid, claim, table, looks)
    row = _judge_one(cid, claim, table, looks, alpha=alpha)
    if alpha is not None:
        row["level"] = round(1 - alpha, 6)
        row["test"] = row["test"].replace(f"{100 * looks.confidence:.4g} %", f"{100 * (1 - alpha):.4g} %")
    return row


def _judge_over(cid: str, claim: dict, table: pd.DataFrame, looks: Looks) -> dict:
    cols = claim["over"]
    base = table[_match(table, claim.get("where"))]
    where = claim.get("where") or {}
    declared = [where.get(c) for c in cols]
    if all(isinstance(d, list) for d in declared):
        # the points the claim names: one not measured is undecided, never left out
        points = sorted(itertools.product(*[[str(v) for v in d] for d in declared]))
    else:
        points = sorted({tuple(r) for r in base[cols].astype(str).itertuples(index=False)})
    if not points:
        return _row(cid, claim, looks, why="this configuration measured nothing the claim selects.")
    sub = {k: v for k, v in claim.items() if k != "over"}
    rows = []
    m = len(points)
    strict = Looks(looks.look, looks.of, looks.reps)
    for p in points:
        where = {**(claim.get("where") or {}), **dict(zip(cols, p))}
        one = _judge_one(cid, {**sub, "where": where}, table, looks)
        # Bonferroni for "one point contradicts": its interval at alpha / m
        strict_one = _judge_one(cid, {**sub, "where": where}, table, strict, alpha=looks.alpha / m)
        rows.append((p, one, strict_one))
    label = ", ".join(cols)
    failed = [(p, r) for p, r, _ in rows if r["outcome"] == FAILED]
    contra = [(p, s) for p, _, s in rows if s["outcome"] == CONTRADICTED]
    repro = [p for p, r, _ in rows if r["outcome"] == REPRODUCED]
    estimates = [r["estimate"] for _, r, _ in rows if r["estimate"] is not None]
    n = min((r["n"] for _, r, _ in rows), default=0)
    common = {
        "n": n,
        "measured": f"{len(repro)} of {m} {label} points reproduced"
        + (f"; estimates {fmt_num(min(estimates))} to {fmt_num(max(estimates))}" if estimates else ""),
        "runs": sorted({x for _, r, _ in rows for x in r["runs"]}),
    }
    if failed:
        names = sorted({x for _, r in failed for x in r["runs"]})
        common.pop("runs")
        return _row(
            cid,
            claim,
            looks,
            outcome=FAILED,
            **common,
            why=f"{len(failed)} of {m} points failed ({'; '.join('/'.join(p) for p, _ in failed[:3])}): "
            + failed[0][1]["why"],
            runs=names,
        )
    if contra:
        p, r = contra[0]
        return _row(
            cid,
            claim,
            looks,
            outcome=CONTRADICTED,
            **common,
            why=f"at {label} {'/'.join(p)} the interval at the Bonferroni level ({fmt_num(looks.alpha / m)}) "
            f"lies on the other side: {r['measured']}.",
        )
    if len(repro) == m:
        return _row(
            cid,
            claim,
            looks,
            outcome=REPRODUCED,
            **common,
            why=f"every one of the {m} points shows the paper's direction with its interval.",
        )
    undecided = [(p, r) for p, r, _ in rows if r["outcome"] != REPRODUCED]
    need = [r["reps_needed"] for _, r in undecided if r["reps_needed"]]
    p, r = undecided[0]
    return _row(
        cid,
        claim,
        looks,
        outcome=INCONCLUSIVE,
        reps_needed=max(need) if need else None,
        **common,
        why=f"{len(undecided)} of {m} points undecided, e.g. {label} {'/'.join(p)}: {r['why']}",
    )


def _judge_one(cid: str, claim: dict, table: pd.DataFrame, looks: Looks, alpha: float | None = None) -> dict:
    alpha = looks.alpha if alpha is None else alpha
    conf = 1.0 - alpha
    info, used = _effects(claim, table)
    failed, failed_why = _failed_rows(used, claim["metric"]) if len(used) else ([], "")
    if failed:
        return _row(
            cid,
            claim,
            looks,
            outcome=FAILED,
            runs=failed,
            why=f"{failed_why} in {len(failed)} run(s): {_named(failed)}.",
        )
    runs = _run_names(used) if len(used) else []
    if "empty" in info:
        return _row(cid, claim, looks, runs=runs, why=f"n = 0: {info['empty']}.")
    point = info.get("point") or {}
    at = (" at " + ", ".join(f"{k} {_point_text(v)}" for k, v in point.items())) if point else ""
    if claim["effect"] == "machine":
        return _machine(cid, claim, looks, info, runs, at, conf)
    if claim["effect"] == "trend":
        return _trend(cid, claim, looks, info, runs, at, alpha)
    if "unpaired" in info:
        return _unpaired_decision(cid, claim, looks, info["unpaired"], runs, at, alpha)
    effects = np.asarray(info["effects"], float)
    n = len(effects)
    note = ""
    scale_log = claim["scale"] == "log"
    if not np.all(np.isfinite(effects)):
        if claim["effect"] == "ratio" and "raw" in info:  # a value <= 0 has no log: decide on the difference
            hv, bv = info["raw"]
            effects = hv - bv  # a ratio's null of 1 is a difference of 0
            scale_log = False
            note = " A value <= 0 has no log ratio: the paired difference decides."
        else:
            return _row(
                cid,
                claim,
                looks,
                outcome=FAILED,
                runs=runs,
                why=f"the {claim['metric']} values give no finite effect (a value <= 0 on a log scale).",
            )
    if "min_events" in claim and claim["effect"] in ("ratio", "difference"):
        me = claim["min_events"]
        rows = used[_match(used, claim["base"])]
        count = float(pd.to_numeric(rows[me["column"]], errors="coerce").fillna(0).sum())
        if count < me["at_least"]:
            per_rep = count / max(1, n)
            need = math.ceil(me["at_least"] / per_rep) if per_rep > 0 else None
            return _row(
                cid,
                claim,
                looks,
                n=n,
                runs=runs,
                reps_needed=need,
                why=f"the base counted {int(count)} {me['column']} over {n} reps{at}, fewer than the "
                f"{me['at_least']} a comparison of rare events needs.",
            )
    return _interval_decision(cid, claim, looks, effects, n, runs, at, alpha, conf, scale_log, note)


def _interval(effects: np.ndarray, test: str, conf: float) -> tuple[float, float, float, float | None]:
    """(estimate, low, high, attainable p or None) on the effects' scale."""
    if test == "wilcoxon":
        est, lo, hi = stats.signed_rank_interval(effects, conf)
        return est, lo, hi, stats.signed_rank_attainable_p(len(effects))
    lo, hi = stats.t_interval(effects, conf)
    return float(np.mean(effects)), lo, hi, None


def _interval_decision(cid, claim, looks, effects, n, runs, at, alpha, conf, scale_log, note) -> dict:
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
    base = dict(estimate=s_est, ci_low=s_lo, ci_high=s_hi, n=n, measured=measured, runs=runs)
    if n < claim["min_reps"]:
        return _row(
            cid,
            claim,
            looks,
            **base,
            reps_needed=claim["min_reps"],
            why=f"n = {n}{at}: the claim needs at least {claim['min_reps']} pairs.{note}",
        )
    if attainable is not None and attainable >= alpha:
        need = next((k for k in range(n + 1, 64) if stats.signed_rank_attainable_p(k) < alpha), None)
        return _row(
            cid,
            claim,
            looks,
            **base,
            reps_needed=need,
            why=f"with n = {n} the signed-rank test's smallest p is {fmt_num(attainable)}, not below "
            f"{fmt_num(alpha)}: no data could decide.{note}",
        )
    if not math.isfinite(lo):
        return _row(cid, claim, looks, **base, reps_needed=None, why=f"no interval from n = {n}{at}.{note}")
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
            return _row(
                cid,
                claim,
                looks,
                **base,
                outcome=REPRODUCED,
                in_magnitude=None,
                why=f"the {fmt_num(100 * (1 - 2 * alpha))} % interval [{fmt_num(shown(lo2))}, "
                f"{fmt_num(shown(hi2))}] lies inside the margin {band_text}{at}.{note}",
            )
        if lo > band or hi < -band:
            return _row(
                cid,
                claim,
                looks,
                **base,
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
        return _row(
            cid,
            claim,
            looks,
            **base,
            reps_needed=need,
            why=f"the interval is not inside the margin {band_text}{at}{said}.{note}",
        )
    on_paper_side = hi < null if expect == "less" else lo > null
    on_other_side = lo > null if expect == "less" else hi < null
    if on_paper_side:
        return _row(
            cid,
            claim,
            looks,
            **base,
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
        return _row(
            cid,
            claim,
            looks,
            **base,
            outcome=CONTRADICTED,
            in_magnitude=False if mag is not None else None,
            why=f"the interval lies {'above' if expect == 'less' else 'below'} {fmt_num(shown_null)}{at}, "
            f"against the paper's direction.{note}",
        )
    need = stats.reps_to_exclude(effects, 0.0, 1 - alpha)
    if claim["test"] == "wilcoxon" and need is not None:
        need = max(need, next((k for k in range(2, 64) if stats.signed_rank_attainable_p(k) < alpha), need))
    return _row(
        cid,
        claim,
        looks,
        **base,
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


def _unpaired_decision(cid, claim, looks, sides, runs, at, alpha) -> dict:
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
    base = dict(estimate=shown(est), ci_low=shown(lo), ci_high=shown(hi), n=n, measured=measured, runs=runs)
    if n < claim["min_reps"] or not math.isfinite(lo):
        return _row(
            cid,
            claim,
            looks,
            **base,
            reps_needed=max(claim["min_reps"], n + 1),
            why=f"n = {len(hv)} and {len(bv)}{at}: each set needs at least {claim['min_reps']} runs.{note}",
        )
    if expect == "equivalent":
        band = math.log1p(claim["margin"]) if log else claim["margin"]
        lo2, hi2 = stats.welch_interval(b, h, 1 - 2 * alpha)[1:3]
        lo2, hi2 = lo2 - shift, hi2 - shift
        band_text = f"[{fmt_num(shown(-band))}, {fmt_num(shown(band))}]"
        if -band < lo2 and hi2 < band:
            return _row(
                cid,
                claim,
                looks,
                **base,
                outcome=REPRODUCED,
                why=f"the {fmt_num(100 * (1 - 2 * alpha))} % interval lies inside the margin {band_text}{at}.{note}",
            )
        if lo > band or hi < -band:
            return _row(
                cid,
                claim,
                looks,
                **base,
                outcome=CONTRADICTED,
                why=f"the interval lies wholly outside the margin {band_text}{at}: a change.{note}",
            )
        need = stats.reps_unpaired(b - shift, h, 1 - alpha, margin=band)
        return _row(
            cid,
            claim,
            looks,
            **base,
            reps_needed=need,
            why=f"the interval is not inside the margin {band_text}{at}"
            + (f"; about {need} runs per set would show it" if need else "")
            + f".{note}",
        )
    on_paper_side = hi < 0 if expect == "less" else lo > 0
    on_other_side = lo > 0 if expect == "less" else hi < 0
    side = "below" if expect == "less" else "above"
    if on_paper_side:
        return _row(
            cid,
            claim,
            looks,
            **base,
            outcome=REPRODUCED,
            why=f"the interval lies {side} {fmt_num(null_shown)}{at}.{note}",
        )
    if on_other_side:
        return _row(
            cid,
            claim,
            looks,
            **base,
            outcome=CONTRADICTED,
            why=f"the interval lies {'above' if expect == 'less' else 'below'} {fmt_num(null_shown)}{at}, "
            f"against the expected direction.{note}",
        )
    need = stats.reps_unpaired(b, h - shift, 1 - alpha) if not log else stats.reps_unpaired(b + shift, h, 1 - alpha)
    return _row(
        cid,
        claim,
        looks,
        **base,
        reps_needed=need,
        why=f"the interval contains {fmt_num(null_shown)}{at}"
        + (
            f"; about {need} runs per set would decide at the measured spread"
            if need
            else "; the measured effect is nil: no number of runs would decide"
        )
        + f".{note}",
    )


def _trend(cid, claim, looks, info, runs, at, alpha) -> dict:
    v = info["values"]
    x_col = claim["x"]
    frame = v.reset_index()
    x = pd.to_numeric(frame[x_col], errors="coerce").to_numpy(float)
    y = frame[claim["metric"]].to_numpy(float)
    n = len(y)
    alt = "greater" if claim["expect"] == "increasing" else "less"
    other = "less" if alt == "greater" else "greater"
    t = stats.rank_trend(list(x), list(y), alt)
    base = dict(n=n, runs=runs)
    if t["rho"] is None:
        return _row(
            cid,
            claim,
            looks,
            **base,
            measured=f"no spread over {n} points",
            why=f"{n} points{at} with no spread in {x_col} or {claim['metric']}.",
        )
    rho = t["rho"]
    lo, hi = stats.rho_interval(rho, n, 1 - alpha)
    measured = f"rho {fmt_num(rho)}" + (f" [{fmt_num(lo)}, {fmt_num(hi)}]" if math.isfinite(lo) else "") + f", n = {n}"
    base.update(estimate=rho, ci_low=lo, ci_high=hi, measured=measured)
    if t["attainable_p"] >= alpha:
        per_rep = _points_per_rep(frame, claim)
        # as many points as a perfect ranking needs to reach the level, or the power estimate's
        need = max(stats.points_for_trend(rho, alpha) or 0, stats.points_to_reach(alpha, n, t["attainable_p"]))
        return _row(
            cid,
            claim,
            looks,
            **base,
            reps_needed=math.ceil(need / per_rep) if need and per_rep else None,
            why=f"with these {n} points even a perfect ranking gives p = {fmt_num(t['attainable_p'])}, "
            f"not below {fmt_num(alpha)}.",
        )
    if t["p"] < alpha:
        return _row(
            cid,
            claim,
            looks,
            **base,
            outcome=REPRODUCED,
            why=f"one-sided permutation p = {fmt_num(t['p'])} < {fmt_num(alpha)}{at}.",
        )
    t2 = stats.rank_trend(list(x), list(y), other)
    if t2["p"] is not None and t2["p"] < alpha:
        return _row(
            cid,
            claim,
            looks,
            **base,
            outcome=CONTRADICTED,
            why=f"the trend goes the other way: one-sided p = {fmt_num(t2['p'])} < {fmt_num(alpha)}{at}.",
        )
    per_rep = _points_per_rep(frame, claim)
    need = stats.points_for_trend(rho, alpha)
    reps = math.ceil(need / per_rep) if need and per_rep else None
    return _row(
        cid,
        claim,
        looks,
        **base,
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


def _machine(cid, claim, looks, info, runs, at, conf) -> dict:
    v = info["values"].to_numpy(float) if hasattr(info["values"], "to_numpy") else np.asarray(info["values"], float)
    n = len(v)
    mean = float(np.mean(v))
    lo, hi = stats.t_interval(v, conf) if n >= 2 else (math.nan, math.nan)
    measured = f"{fmt_num(mean)}" + (f" [{fmt_num(lo)}, {fmt_num(hi)}]" if math.isfinite(lo) else "") + f", n = {n}"
    paper = paper_on_effect_scale(claim)
    ratio = f"; ours / paper's = {fmt_num(mean / paper[0])}" if paper and paper[0] == paper[1] and paper[0] else ""
    return _row(
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


# ----------------------------------------------------------------------------- many claims


def judge_all(claims: dict, tables: dict[str, pd.DataFrame], machine: Machine, looks: Looks = Looks()) -> list[dict]:
    """Every declared claim's row, in declaration order."""
    return [judge(cid, c, tables, machine, looks) for cid, c in claims.items()]


def counts(rows: list[dict]) -> dict[str, int]:
    """How many rows per outcome, every outcome listed."""
    out = dict.fromkeys(OUTCOMES, 0)
    for r in rows:
        out[r["outcome"]] += 1
    return out

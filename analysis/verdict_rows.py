"""The verdict engine's parts that every decision shares: the outcomes, the machine and the
looks a claim is judged on, the row it yields, the selection of its points and the paired effects
(analysis.verdicts judges; analysis.verdict_decide forms the decisions)."""

from __future__ import annotations

import math
from dataclasses import dataclass, field

import numpy as np
import pandas as pd

from analysis import stats
from analysis.claims import POINT_KEYWORDS, stand_in_texts
from analysis.common import fmt_num

REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
INCONCLUSIVE = "inconclusive"
NOT_MEASURABLE = "not measurable here"
FAILED = "failed"
MACHINE = "differs (machine-specific)"
NOT_RUN = "not run in this profile"
OUTCOMES = (REPRODUCED, CONTRADICTED, INCONCLUSIVE, NOT_MEASURABLE, NOT_RUN, FAILED, MACHINE)
IN_MAGNITUDE, NOT_IN_MAGNITUDE, MAGNITUDE_UNDECIDED = "in magnitude", "not in magnitude", "magnitude undecided"
DECIDED = (REPRODUCED, CONTRADICTED)

NEED_WORDS = {
    "smt": "SMT (two hardware threads per core)",
    "numa_nodes": "NUMA nodes",
    "sockets": "sockets",
    "pmu": "hardware performance counters (a PMU perf can use)",
    "pmem": "persistent memory",
    "physical_nics": "physical NICs with their own interrupts",
    "rfs_flow_table": "RFS's flow table (/proc/sys/net/core/rps_sock_flow_entries) where the runs steer",
    "hosts": "hosts",
    "cmps": "CMPs (sockets, or cores taken as CMPs)",
    "cpus": "CPUs",
}


# ----------------------------------------------------------------------------- inputs


@dataclass(frozen=True)
class Looks:
    """Where a sequential design stands: this look of `of` planned ones, with `reps` repetitions;
    `plan`, the repetitions of every planned look (e.g. (3, 6, 9)), sets the level for t-intervals
    with the degrees of freedom those looks have (analysis.stats.look_alpha)."""

    look: int = 1
    of: int = 1
    reps: int | None = None
    plan: tuple[int, ...] | None = None

    @property
    def alpha(self) -> float:
        return stats.look_alpha(self.of, self.plan)

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


def make_row(cid: str, claim: dict, looks: Looks, **kw) -> dict:
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
        "stand_ins": stand_in_texts(claim.get("stand_ins")),
        "effect": describe_effect(claim),
        "test": describe_test(claim, looks),
        "estimate": None,
        "ci_low": None,
        "ci_high": None,
        "level": round(looks.confidence, 4),
        "n": 0,
        "measured": None,
        "outcome": INCONCLUSIVE,
        "kind": claim.get("kind") or "finding",
        "magnitude": None,
        "magnitude_at": None,
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
    if "magnitude" not in kw:
        row["magnitude"] = magnitude(claim, row)
    # the old key, derived: True in magnitude, False not in magnitude, None otherwise
    row["in_magnitude"] = {IN_MAGNITUDE: True, NOT_IN_MAGNITUDE: False}.get(row["magnitude"])
    return row


def magnitude(claim: dict, row: dict) -> str | None:
    """The declared magnitude band against the row's interval (on the effect's scale as shown),
    apart from the direction: in magnitude (inside the band), not in magnitude (wholly outside it),
    magnitude undecided (else, no interval, or one of zero width: pairs without spread decide no
    more a magnitude than a direction); None without a band or without a measurement."""
    band = claim.get("magnitude")
    if not band or row["outcome"] in (NOT_MEASURABLE, NOT_RUN, FAILED):
        return None
    lo, hi = row["ci_low"], row["ci_high"]
    if lo is None or hi is None or lo == hi:
        return MAGNITUDE_UNDECIDED
    least, most = band.get("at_least", -math.inf), band.get("at_most", math.inf)
    if least <= lo and hi <= most:
        return IN_MAGNITUDE
    if hi < least or lo > most:
        return NOT_IN_MAGNITUDE
    return MAGNITUDE_UNDECIDED


def band_text(band: dict) -> str:
    least, most = band.get("at_least"), band.get("at_most")
    if least is not None and most is not None:
        return f"{fmt_num(least)} to {fmt_num(most)}"
    return f"at least {fmt_num(least)}" if least is not None else f"at most {fmt_num(most)}"


def over_magnitude(claim: dict, label: str, members: list, strict_alpha: float) -> dict:
    """The magnitude of a claim over every point (`over:`), which has no interval of its own, from
    its points' rows: MEMBERS are (point, row at the look's level, row at the Bonferroni level
    STRICT_ALPHA), a point a dict of its columns' values. In magnitude when every point's interval
    lies inside the band (an intersection-union rule needs no adjustment); not in magnitude when
    one point's interval at the Bonferroni level lies wholly outside it, as a point contradicts
    the direction; undecided otherwise. Returns the row's magnitude, magnitude_at (the point that
    decided: the one outside, the first undecided, or the one nearest an edge) and a sentence for
    its why; nothing without a band."""
    band = claim.get("magnitude")
    if not band or not members:
        return {}
    shown = band_text(band)

    def at(point: dict) -> str:
        return f"{label} {'/'.join(str(v) for v in point.values())}"

    def said(row: dict) -> str:
        return row["measured"] or row["why"].rstrip(".")

    out = [(p, s) for p, _, s in members if s["magnitude"] == NOT_IN_MAGNITUDE]
    if out:
        p, s = out[0]
        also = f" (and {len(out) - 1} more of the {len(members)} points)" if len(out) > 1 else ""
        return {
            "magnitude": NOT_IN_MAGNITUDE,
            "magnitude_at": p,
            "magnitude_why": f"Not in magnitude at {at(p)}{also}: its interval at the Bonferroni level "
            f"({fmt_num(strict_alpha)}) lies wholly outside the band {shown}: {said(s)}.",
        }
    open_ = [(p, r, s) for p, r, s in members if r["magnitude"] != IN_MAGNITUDE]
    if open_:
        p, r, s = open_[0]
        eg = (
            f"{at(p)}, wholly outside at the look's level only: {said(s)} at the Bonferroni level"
            if r["magnitude"] == NOT_IN_MAGNITUDE
            else f"{at(p)}: {said(r)}"
        )
        return {
            "magnitude": MAGNITUDE_UNDECIDED,
            "magnitude_at": p,
            "magnitude_why": f"Magnitude undecided: {len(open_)} of {len(members)} points not inside the band "
            f"{shown} and none wholly outside it at the Bonferroni level ({fmt_num(strict_alpha)}), e.g. {eg}.",
        }
    least, most = band.get("at_least", -math.inf), band.get("at_most", math.inf)
    p, r, _ = min(members, key=lambda m: min(m[1]["ci_low"] - least, most - m[1]["ci_high"]))
    return {
        "magnitude": IN_MAGNITUDE,
        "magnitude_at": p,
        "magnitude_why": f"In magnitude: every one of the {len(members)} {label} points' interval lies inside "
        f"the band {shown}; nearest an edge, {at(p)}: {said(r)}.",
    }


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
        return f"Spearman's rho, one-sided permutation test at {fmt_num(looks.alpha / 2)} a side"
    scale = "log " if c["scale"] == "log" else ""
    kind = "t-interval" if c["test"] == "t" else "signed-rank (Hodges-Lehmann) interval"
    if c["expect"] == "equivalent":
        return f"two one-sided tests ({scale}{kind}, margin {fmt_num(c['margin'])}) at {fmt_num(looks.alpha)}"
    guard = " with the exact sign-flip test" if c["test"] == "t" else ""
    return (
        f"{level} {kind} of the {scale}{'ratios' if c['effect'] in ('ratio', 'ratio_of_ratios') else 'values'}" + guard
    )


# ----------------------------------------------------------------------------- selection


def match_rows(df: pd.DataFrame, sel: dict | None) -> pd.Series:
    mask = pd.Series(True, index=df.index)
    for col, want in (sel or {}).items():
        wanted = want if isinstance(want, list) else [want]
        col_values = df[col]
        hit = col_values.isin(wanted)
        if not hit.any():  # numbers written as text in a CSV, or the other way round
            hit = col_values.astype(str).isin([str(w) for w in wanted])
        mask &= hit
    return mask


def unrun_points(claim: dict, table: pd.DataFrame) -> list[tuple[str, object]]:
    """(column, value) of each point the claim declares (a `where:` value, listed or not, and an
    `at:` value other than max / min) that no row of the evidence table has: the configuration did
    not run it (a run that ran and failed has its row). None checked on an empty table."""
    if table.empty:
        return []
    out = []
    for col, want in (claim.get("where") or {}).items():
        for v in want if isinstance(want, list) else [want]:
            if col in table.columns and not match_rows(table, {col: v}).any():
                out.append((col, v))
    rows = table[match_rows(table, {c: w for c, w in (claim.get("where") or {}).items() if c in table.columns})]
    for col, want in (claim.get("at") or {}).items():
        if want in POINT_KEYWORDS or col not in table.columns:
            continue
        for v in want if isinstance(want, list) else [want]:
            if not match_rows(rows, {col: v}).any():
                out.append((col, v))
    return out


def points_text(points: list[tuple[str, object]]) -> str:
    return ", ".join(f"{col} {point_text(v)}" for col, v in points)


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
        df = df[match_rows(df, {col: v})] if v is not None else df.iloc[0:0]
    return df, resolved


def point_text(v) -> str:
    return " and ".join(str(_plain(x)) for x in v) if isinstance(v, list) else str(_plain(v))


def run_names(rows: pd.DataFrame) -> list[str]:
    if "run_id" in rows.columns:
        return sorted({str(r) for r in rows["run_id"].dropna()})
    return [f"row {i}" for i in rows.index]


def failed_rows(rows: pd.DataFrame, metric: str) -> tuple[list[str], str]:
    """Runs that failed, or have no value of the metric, among the rows a claim uses."""
    bad, why = [], []
    if "failed" in rows.columns:
        f = rows[rows["failed"].fillna(False).astype(bool)]
        if len(f):
            bad += run_names(f)
            reasons = sorted({str(x) for x in f.get("failed_reason", pd.Series(dtype=str)).dropna() if str(x)})
            why.append("failed" + (f" ({'; '.join(reasons[:2])})" if reasons else ""))
    ok = rows[~rows["failed"].fillna(False).astype(bool)] if "failed" in rows.columns else rows
    values = pd.to_numeric(ok[metric], errors="coerce")
    nan = ok[~np.isfinite(values.to_numpy(float))]
    if len(nan):
        bad += run_names(nan)
        # the analysis's own reason for a missing value, where its table gives one (`reason`)
        said = (str(x).removeprefix(f"no {metric}: ") for x in nan.get("reason", pd.Series(dtype=str)).dropna())
        reasons = sorted({x for x in said if x})
        why.append(f"no value of {metric}" + (f" ({'; '.join(reasons[:2])})" if reasons else ""))
    return sorted(set(bad)), " and ".join(why)


def named_runs(names: list[str]) -> str:
    return ", ".join(names[:4]) + (f" and {len(names) - 4} more" if len(names) > 4 else "")


def _side(df: pd.DataFrame, metric: str, pair_by: list[str], how: str) -> pd.Series:
    g = df.groupby(pair_by, sort=True)[metric]
    if how == "sum":
        return g.sum()
    if how == "median":
        return g.median()
    return g.mean()


def paired_effects(c: dict, df: pd.DataFrame) -> tuple[dict, pd.DataFrame]:
    """(info, rows used) where info has 'effects' (per-pair effect values on the test's scale,
    log for ratios), 'raw' (head, base per pair when paired), 'pairs' (pair keys), 'empty' (why no
    pairs: the configuration measured nothing for a side)."""
    metric, pair_by, how = c["metric"], list(c["pair_by"]), c["aggregate"]
    e = c["effect"]
    df = df[match_rows(df, c.get("where"))]
    if df.empty and c.get("where"):
        return {"empty": f"this configuration measured no {_sel_text(c['where'])}", "point": {}}, df
    if e in ("ratio", "difference", "ratio_of_ratios"):
        sides = df[match_rows(df, c["head"]) | match_rows(df, c["base"])]
        if e == "ratio_of_ratios":
            col, (a, b) = next(iter(c["across"].items()))
            sides, point = _at(sides, c.get("at"))
            a_v, b_v = _point_value(sides[col], a), _point_value(sides[col], b)
            if a_v is not None and a_v == b_v:
                why = f"this configuration measured one {col} ({a_v}) only: the claim compares two"
                return {"empty": why, "point": point}, sides.iloc[0:0]
            parts = {}
            for name, v in (("first", a_v), ("second", b_v)):
                rows = sides[match_rows(sides, {col: v})] if v is not None else sides.iloc[0:0]
                h = _side(rows[match_rows(rows, c["head"])], metric, pair_by, how)
                bb = _side(rows[match_rows(rows, c["base"])], metric, pair_by, how)
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
            hv = pd.to_numeric(sides[match_rows(sides, c["head"])][metric], errors="coerce").to_numpy(float)
            bv = pd.to_numeric(sides[match_rows(sides, c["base"])][metric], errors="coerce").to_numpy(float)
            if not len(hv) or not len(bv):
                return {"empty": _empty_text(c, sides, ["run"]), "point": point}, sides
            return {"unpaired": (hv, bv), "point": point}, sides
        h = _side(sides[match_rows(sides, c["head"])], metric, pair_by, how)
        b = _side(sides[match_rows(sides, c["base"])], metric, pair_by, how)
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
        missing = [side for side in ("head", "base") if rows.empty or not match_rows(rows, c[side]).any()]
        if missing:
            return "this configuration measured no " + " and no ".join(_sel_text(c[s]) for s in missing) + where
        both = f"{_sel_text(c['head'])} and {_sel_text(c['base'])}"
        return f"this configuration measured no {'/'.join(pair_by)} with both {both}{where}"
    return "this configuration measured nothing the claim selects (" + (_sel_text(c.get("where")) or "any row") + ")"

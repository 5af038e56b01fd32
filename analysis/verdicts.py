"""The verdict engine: one rule, for every experiment, from a declared claim and the measured
evidence to one of seven outcomes. No analysis module decides a verdict itself.

Outcomes
  reproduced            the interval of the paired effect (at the look's level) excludes the null on
                        the paper's side and, for the t rule, the exact sign-flip test rejects on
                        that side at half the level. A trend: the one-sided permutation test in the
                        paper's direction below half the level, its interval of rho agreeing.
  contradicted          the same on the other side.
  inconclusive          neither: the row gives n, the interval and how many repetitions a power
                        estimate from the measured spread says would decide (80 % power). Also
                        when the configuration measured nothing for the claim (n = 0), when fewer
                        pairs than the claim's least (or than the sign-flip test needs), or too few
                        rare events, were measured, when the pairs have no spread at all, and when
                        the test's smallest attainable p cannot reach the level.
  not measurable here   only when a declared machine need (SMT, NUMA nodes, a PMU, persistent
                        memory, physical NICs, RFS's flow table, hosts, CMPs, CPUs) is missing,
                        named; decided from the machine description, before and without runs.
  not run in this profile
                        the claim names a point (an `at:` value, a `where:` value) that no row of
                        the evidence table has: the configuration does not run it, named.
  failed                runs failed, a selected run has no value of the metric, or a ratio has a
                        value <= 0: loud, the runs named, never folded into another outcome.
  differs (machine-specific)
                        an absolute property of the hardware (a bandwidth, a time alone): both
                        values shown, not judged.

Apart from the outcome, the row's `magnitude` judges a declared band (claims' `magnitude:`): in
magnitude, not in magnitude, magnitude undecided, or None without a band (verdict_rows.magnitude).

Effects (claims.schema.json)
  ratio                 per pair (head / base), on logs: a t-interval of the mean log ratio (or the
                        exact signed-rank interval), exponentiated; the estimate is the geometric
                        mean of the per-pair ratios. A value <= 0 has no log ratio: failed (a
                        claim never changes scale silently).
  difference            per pair head - base; value: the metric itself (log or linear) against
                        the null; ratio_of_ratios: per pair (head/base at the second point) over
                        (head/base at the first); trend: Spearman's rho of the metric on x over the
                        points, with the one-sided permutation test (analysis.stats.rank_trend).
  equivalent            a "no change" claim: two one-sided tests against the declared margin; the
                        (1 - 2 alpha) interval inside the margin reproduces, the (1 - alpha)
                        interval wholly outside it contradicts (each with the sign-flip tests
                        against the margin's ends for the t rule); an interval that merely contains
                        the null shows nothing when it is wide.
  over                  a claim on every point: reproduced when every point is (an intersection-
                        union test needs no adjustment), contradicted when one point is at the
                        Bonferroni level (Holm's first step), failed when one point failed. Its
                        magnitude the same way: in magnitude when every point's interval lies
                        inside the band, not in magnitude when one point's interval at the
                        Bonferroni level lies wholly outside it, the row naming the point
                        (magnitude_at; verdict_rows.over_magnitude).

Looks: a design that adds repetitions while a claim is undecided judges every look at the level
its plan keeps at 5 % over all looks for t-intervals with the looks' degrees of freedom
(analysis.stats.look_alpha; Pocock's z-based level when no plan is given); the row records the look.
"""

from __future__ import annotations

import itertools
import math

import numpy as np
import pandas as pd

from analysis.common import fmt_num
from analysis.verdict_decide import (
    decide_interval,
    decide_machine,
    decide_trend,
    decide_unpaired,
)
from analysis.verdict_rows import (
    CONTRADICTED,
    DECIDED,
    FAILED,
    IN_MAGNITUDE,
    INCONCLUSIVE,
    MACHINE,
    MAGNITUDE_UNDECIDED,
    NEED_WORDS,
    NOT_IN_MAGNITUDE,
    NOT_MEASURABLE,
    NOT_RUN,
    OUTCOMES,
    REPRODUCED,
    Looks,
    Machine,
    describe_effect,
    describe_test,
    failed_rows,
    make_row,
    match_rows,
    named_runs,
    over_magnitude,
    paired_effects,
    point_text,
    points_text,
    run_names,
    unrun_points,
)

# one look of one: the design without added repetitions
ONE_LOOK = Looks()

__all__ = [
    "REPRODUCED",
    "CONTRADICTED",
    "INCONCLUSIVE",
    "NOT_MEASURABLE",
    "NOT_RUN",
    "IN_MAGNITUDE",
    "NOT_IN_MAGNITUDE",
    "MAGNITUDE_UNDECIDED",
    "FAILED",
    "MACHINE",
    "OUTCOMES",
    "DECIDED",
    "NEED_WORDS",
    "Looks",
    "Machine",
    "describe_effect",
    "describe_test",
    "judge",
    "judge_all",
    "decide_effects",
    "counts",
]

# ----------------------------------------------------------------------------- judging


def judge(
    cid: str,
    claim: dict,
    tables: dict[str, pd.DataFrame],
    machine: Machine,
    looks: Looks = ONE_LOOK,
    alpha: float | None = None,
) -> dict:
    """One claim's row: its outcome, the measured effect with its interval and n, why. `alpha`:
    a level of the caller's own (a family of comparisons, Bonferroni), instead of the look's."""
    unmet = machine.unmet(claim.get("needs") or {})
    if unmet:
        return make_row(cid, claim, looks, outcome=NOT_MEASURABLE, why="needs " + "; ".join(unmet) + ".")
    table = tables.get(claim["table"])
    if table is None:
        return make_row(cid, claim, looks, outcome=FAILED, why=f"the analysis produced no table {claim['table']}.")
    unrun = unrun_points(claim, table)
    if unrun:
        return _not_run(cid, claim, table, looks, unrun)
    if claim.get("over"):
        return _judge_over(cid, claim, table, looks)
    row = _judge_one(cid, claim, table, looks, alpha=alpha)
    if alpha is not None:
        row["level"] = round(1 - alpha, 6)
        row["test"] = row["test"].replace(f"{100 * looks.confidence:.4g} %", f"{100 * (1 - alpha):.4g} %")
    return row


def _not_run(cid: str, claim: dict, table: pd.DataFrame, looks: Looks, unrun: list) -> dict:
    """A claim whose declared point the configuration did not run. On every point (`over`), the
    points that did run are judged: a failed or contradicted one stands, named beside what was not
    run; otherwise the claim is not run in this profile, with what the points run showed."""
    text = points_text(unrun)
    over = claim.get("over") or []
    missing = {(c, str(v)) for c, v in unrun}
    where = claim.get("where") or {}
    kept = {
        c: [v for v in w if (c, str(v)) not in missing] for c, w in where.items() if c in over and isinstance(w, list)
    }
    only_over = all(c in over for c, _ in unrun) and all(kept.get(c) for c in over if c in kept)
    if over and only_over:
        row = _judge_over(cid, {**claim, "where": {**where, **kept}}, table, looks)
        if row["outcome"] in (FAILED, CONTRADICTED):
            row["why"] += f" Not run in this profile: {text}."
            return row
        return make_row(
            cid,
            claim,
            looks,
            outcome=NOT_RUN,
            why=f"this profile does not run {text}; the points it runs: {row['measured'] or row['why']}.",
            runs=row["runs"],
        )
    return make_row(cid, claim, looks, outcome=NOT_RUN, why=f"this profile does not run {text}, the claim's point.")


def _judge_over(cid: str, claim: dict, table: pd.DataFrame, looks: Looks) -> dict:
    cols = claim["over"]
    base = table[match_rows(table, claim.get("where"))]
    where = claim.get("where") or {}
    declared = [where.get(c) for c in cols]
    if all(isinstance(d, list) for d in declared):
        # the points the claim names: one not measured is undecided, never left out
        points = sorted(itertools.product(*[[str(v) for v in d] for d in declared]))
    else:
        points = sorted({tuple(r) for r in base[cols].astype(str).itertuples(index=False)})
    if not points:
        return make_row(cid, claim, looks, why="this configuration measured nothing the claim selects.")
    sub = {k: v for k, v in claim.items() if k != "over"}
    rows = []
    m = len(points)
    strict = Looks(looks.look, looks.of, looks.reps, looks.plan)
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
    # the band against every point's interval: the row has none of its own
    mag = over_magnitude(claim, label, [(dict(zip(cols, p)), r, s) for p, r, s in rows], looks.alpha / m)
    judged = {"magnitude": mag.get("magnitude"), "magnitude_at": mag.get("magnitude_at")}
    tail = f" {mag['magnitude_why']}" if mag else ""
    if failed:
        names = sorted({x for _, r in failed for x in r["runs"]})
        common.pop("runs")
        return make_row(
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
        return make_row(
            cid,
            claim,
            looks,
            outcome=CONTRADICTED,
            **common,
            **judged,
            why=f"at {label} {'/'.join(p)} the interval at the Bonferroni level ({fmt_num(looks.alpha / m)}) "
            f"lies on the other side: {r['measured']}.{tail}",
        )
    if len(repro) == m:
        return make_row(
            cid,
            claim,
            looks,
            outcome=REPRODUCED,
            **common,
            **judged,
            why=f"every one of the {m} points shows the paper's direction with its interval.{tail}",
        )
    # A point on the other side at the look's level but not at the Bonferroni level is undecided
    # at that level: its row there says so, and how many reps would decide it.
    undecided = [(p, s if r["outcome"] == CONTRADICTED else r, r["outcome"] == CONTRADICTED)
                 for p, r, s in rows if r["outcome"] != REPRODUCED]  # fmt: skip
    need = [r["reps_needed"] for _, r, _ in undecided if r["reps_needed"]]
    p, r, strict = undecided[0]
    level = f"at the Bonferroni level ({fmt_num(looks.alpha / m)}) " if strict else ""
    return make_row(
        cid,
        claim,
        looks,
        outcome=INCONCLUSIVE,
        reps_needed=max(need) if need else None,
        **common,
        **judged,
        why=f"{len(undecided)} of {m} points undecided, e.g. {label} {'/'.join(p)}: {level}{r['why']}{tail}",
    )


def _judge_one(cid: str, claim: dict, table: pd.DataFrame, looks: Looks, alpha: float | None = None) -> dict:
    alpha = looks.alpha if alpha is None else alpha
    info, used = paired_effects(claim, table)
    failed, failed_why = failed_rows(used, claim["metric"]) if len(used) else ([], "")
    if failed:
        return make_row(
            cid,
            claim,
            looks,
            outcome=FAILED,
            runs=failed,
            why=f"{failed_why} in {len(failed)} run(s): {named_runs(failed)}.",
        )
    runs = run_names(used) if len(used) else []
    if "empty" in info:
        return make_row(cid, claim, looks, runs=runs, why=f"n = 0: {info['empty']}.")
    return decide_effects(cid, claim, looks, info, runs, used, alpha)


def decide_effects(
    cid: str, claim: dict, looks: Looks, info: dict, runs: list[str], used: pd.DataFrame, alpha: float
) -> dict:
    """A claim's row from its measured effects (analysis.verdict_rows.paired_effects' info) once no
    run failed and something was measured; bench/verdict_coverage.py feeds it simulated effects."""
    conf = 1.0 - alpha
    point = info.get("point") or {}
    at = (" at " + ", ".join(f"{k} {point_text(v)}" for k, v in point.items())) if point else ""
    if claim["effect"] == "machine":
        return decide_machine(cid, claim, looks, info, runs, at, conf)
    if claim["effect"] == "trend":
        return decide_trend(cid, claim, looks, info, runs, at, alpha)
    if "unpaired" in info:
        return decide_unpaired(cid, claim, looks, info["unpaired"], runs, at, alpha)
    effects = np.asarray(info["effects"], float)
    n = len(effects)
    note = ""
    scale_log = claim["scale"] == "log"
    if "min_events" in claim and claim["effect"] in ("ratio", "difference"):
        me = claim["min_events"]
        rows = used[match_rows(used, claim["base"])]
        count = float(pd.to_numeric(rows[me["column"]], errors="coerce").fillna(0).sum())
        if count < me["at_least"]:
            per_rep = count / max(1, n)
            need = math.ceil(me["at_least"] / per_rep) if per_rep > 0 else None
            return make_row(
                cid,
                claim,
                looks,
                n=n,
                runs=runs,
                reps_needed=need,
                why=f"the base counted {int(count)} {me['column']} over {n} reps{at}, fewer than the "
                f"{me['at_least']} a comparison of rare events needs.",
            )
    bad = _bad_pairs(info, used, claim) if claim["effect"] in ("ratio", "ratio_of_ratios") else []
    if bad or not np.all(np.isfinite(effects)):
        # a claim never changes scale silently: a ratio of a value <= 0 is no ratio, and its null
        # and margin mean nothing in the metric's own units
        bad = bad or _bad_pairs(info, used, claim)
        what = (
            "a value <= 0 has no ratio"
            if claim["effect"] in ("ratio", "ratio_of_ratios")
            else "a value <= 0 has no log"
        )
        return make_row(
            cid,
            claim,
            looks,
            outcome=FAILED,
            runs=bad or runs,
            why=f"{what}: the {claim['metric']} values of {len(bad) or 'some'} run(s){at} "
            f"({named_runs(bad) if bad else 'a pair'}) give no finite effect on the claim's {claim['scale']} scale.",
        )
    return decide_interval(cid, claim, looks, effects, n, runs, at, alpha, conf, scale_log, note)


def _bad_pairs(info: dict, used: pd.DataFrame, claim: dict) -> list[str]:
    """The runs among `used` whose metric value is <= 0 (no log), named."""
    if used is None or used.empty or claim["metric"] not in used.columns:
        return []
    v = pd.to_numeric(used[claim["metric"]], errors="coerce")
    return run_names(used[v <= 0])


# ----------------------------------------------------------------------------- many claims


def judge_all(claims: dict, tables: dict[str, pd.DataFrame], machine: Machine, looks: Looks = ONE_LOOK) -> list[dict]:
    """Every declared claim's row, in declaration order."""
    return [judge(cid, c, tables, machine, looks) for cid, c in claims.items()]


def counts(rows: list[dict]) -> dict[str, int]:
    """How many rows per outcome, every outcome listed."""
    out = dict.fromkeys(OUTCOMES, 0)
    for r in rows:
        out[r["outcome"]] += 1
    return out

"""`corun compare`: two or more sets of runs, per-metric ratios with confidence intervals,
significance and a verdict per metric.

Sets are selected from run folders, campaign folders, extracted archives or a run index by any
recorded key (analysis.runindex): `--set NAME:SELECTOR` (repeatable; the first set is the
baseline) or `--by KEY` (one set per value of KEY; `--baseline VALUE` picks the baseline),
after an optional `--where SELECTOR` applied to every run.

Runs that do not count are excluded and listed, never silently dropped:
  warm-up      labels.warmup is true (corun.results.campaign marks them)
  T_alone      labels.kind is alone (a job type run alone on the machine, eq. 4 of paper 000):
               not a run of the variant under load; --include-alone counts them
  unverified   the variant was not verified in effect at the start (variant_verified_at_start,
               else scheduler.verified) or at the end (variant_verified_at_end, else
               scheduler.verified_at_end) of the run, or this was not recorded
  failed       status is not 'ok' (a job failed)

Per metric (analysis.metrics) and per set against the baseline, decided by the verdict engine
(analysis.verdicts), as the report's claims are:
  ratio        set / baseline. Paired (--pair-by KEY, e.g. labels.rep: the runs of one repetition
               of a campaign belong together; two runs of one set with the same key are an
               error): the geometric mean of the per-pair ratios with the t-interval of the log
               ratios (--test wilcoxon: the signed-rank interval). Unpaired: the ratio of the
               geometric means with Welch's interval of the mean logs.
  level        95 % for one comparison; with m comparisons (sets x metrics) each interval is at
               1 - 0.05/m (Bonferroni), so that a call of "better" or "worse" anywhere in the
               table is wrong with a chance of 5 % at most.
  outcome      better / worse: the interval lies wholly on that side of 1 (by the metric's
               direction); no change (with --margin P): the (1 - 2 alpha) interval lies inside
               1 +- P (two one-sided tests); inconclusive: neither, with the runs per set a power
               estimate from the measured spread says would decide; missing: no values.
  outliers     runs whose value has |modified z| > 3.5 within their set: listed, kept
  gate         with --fail-if-worse P: failed when the interval lies wholly beyond 1 +- P on the
               worse side (surely worse by P or more); passed when it lies wholly on the better
               side of it (surely not worse by P); undecided otherwise, and the command exits 5.

Outputs (--out DIR): comparison.md, comparison.html (self-contained), comparison.json,
comparison.csv (one row per set and metric), runs.csv (one row per run), figures/ratios.png,
figures/values.png. The Markdown summary is printed to stdout. Exit status: 0; 1 when the gate
failed; 5 when the gate cannot decide with these runs; bad input is one line on stderr and exit 2.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import pandas as pd  # noqa: E402

from analysis import metrics as metrics_mod  # noqa: E402
from analysis import runindex, stats  # noqa: E402
from analysis.claims import complete_claim  # noqa: E402
from analysis.compare_output import (  # noqa: E402
    RunSet,
    ratio_text,
    set_values,
    to_markdown,
    write_outputs,
)
from analysis.verdicts import Machine, judge  # noqa: E402
from corun.errors import ConfigError  # noqa: E402

TESTS = ("t", "wilcoxon")
GATE_UNDECIDED_EXIT = 5
EXCLUSION_KEYS = {
    "labels.warmup",
    "variant_verified_at_start",
    "variant_verified_at_end",
    "scheduler.verified",
    "scheduler.verified_at_end",
    "status",
    "run_id",
    "run",
    "campaign",
    "labels.kind",
}


HERE = Machine()  # a comparison declares no machine need


def _truthy(value: object) -> bool:
    if isinstance(value, str):
        return value.strip().lower() in ("true", "1", "yes")
    return bool(value) if value is not None else False


def exclusion(rec: runindex.RunRecord, include_alone: bool = False) -> str | None:
    """Why a run does not count in a comparison, or None."""
    if _truthy(rec.keys.get("labels.warmup")):
        return "warm-up run"
    if not include_alone and str(rec.keys.get("labels.kind")) == "alone":
        return "a T_alone run (labels.kind alone), not a run of the variant under load"
    for when, key, alt_key in (
        ("start", "variant_verified_at_start", "scheduler.verified"),
        ("end", "variant_verified_at_end", "scheduler.verified_at_end"),
    ):
        verified = rec.keys.get(key, rec.keys.get(alt_key))
        if verified is not True:
            if verified is False:
                return f"variant not verified in effect at the {when}"
            return f"variant verification at the {when} not recorded"
    status = rec.keys.get("status")
    if status not in (None, "ok"):
        return f"status {status}"
    return None


def parse_percent(text: str, source: str = "command line", key: str = "--fail-if-worse") -> float:
    """'5%' or '0.05' as a fraction; one-line error otherwise."""
    m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*(%?)\s*", str(text))
    if not m:
        raise ConfigError(source, key, text, "a percentage such as 5% or a fraction such as 0.05")
    x = float(m.group(1)) / (100 if m.group(2) else 1)
    if not 0 <= x < 10:
        raise ConfigError(source, key, text, "a percentage between 0% and 1000%")
    return x


def parse_set(text: str) -> tuple[str, str]:
    """'name:selector' or 'selector' -> (name, selector)."""
    head, sep, tail = text.partition(":")
    if sep and head and "=" not in head and not re.search(r"\s", head):
        return head, tail
    return text, text


def build_sets(
    records: list,
    set_args: list[str],
    by: str | None,
    baseline: str | None,
    where: str | None,
    include_alone: bool = False,
) -> list[RunSet]:
    if where:
        records = runindex.select(records, runindex.parse_selector(where, what="--where"), what="--where")
        if not records:
            raise ConfigError("command line", "--where", where, "a selector matching at least one run")
    if by and set_args:
        raise ConfigError("command line", "--by", by, "either --by or --set, not both")
    sets: list[RunSet] = []
    if by:
        if not any(r.has(by) for r in records):
            raise ConfigError("command line", "--by", by, "a key recorded by the runs (variant, host, labels.k ...)")
        values = sorted({runindex.as_text(r.get(by)) for r in records if r.has(by)})
        if baseline is not None:
            if baseline not in values:
                raise ConfigError("command line", "--baseline", baseline, f"one of {', '.join(values)}")
            values = [baseline] + [v for v in values if v != baseline]
        for v in values:
            sets.append(RunSet(v, f"{by}={v}", [r for r in records if r.has(by) and runindex.as_text(r.get(by)) == v]))
    else:
        if baseline is not None:
            raise ConfigError(
                "command line", "--baseline", baseline, "used with --by (with --set the first set is the baseline)"
            )
        for text in set_args:
            name, sel = parse_set(text)
            terms = runindex.parse_selector(sel, what="--set")
            sets.append(RunSet(name, sel, runindex.select(records, terms, what="--set")))
    if len(sets) < 2:
        raise ConfigError(
            "command line", "sets", len(sets), "at least 2 sets (--set twice or more, or --by KEY with 2+ values)"
        )
    names = [s.name for s in sets]
    if len(set(names)) != len(names):
        raise ConfigError("command line", "--set", names, "distinct set names")
    for s in sets:
        if not s.runs:
            raise ConfigError("command line", f"set {s.name!r}", s.selector, "a selector matching at least one run")
        chosen = s.runs
        s.runs = []
        for r in chosen:
            why = exclusion(r, include_alone)
            if why:
                s.excluded.append((r, why))
            else:
                s.runs.append(r)
    return sets


def _worse_by(ratio: float, better: str) -> float:
    return ratio - 1 if better == "lower" else 1 - ratio


def _paired_table(rs: RunSet, metric: str, pair_by: str | None, role: str) -> pd.DataFrame:
    """The set's runs with a value of the metric, one row each; with pair_by, its key (a key twice
    in one set is a one-line error: which runs would pair is not known)."""
    recs, vals = set_values(rs, metric)
    rows = [{"run_id": r.run, "set": role, "value": v} for r, v in zip(recs, vals)]
    if pair_by:
        seen: dict[str, str] = {}
        for row, r in zip(rows, recs):
            if not r.has(pair_by):
                raise ConfigError("command line", "--pair-by", pair_by, f"a key every run records ({r.run} has none)")
            key = runindex.as_text(r.get(pair_by))
            if key in seen:
                raise ConfigError(
                    "command line",
                    "--pair-by",
                    pair_by,
                    f"one run per {pair_by} in set {rs.name!r} ({seen[key]} and {r.run} share {key!r})",
                )
            seen[key] = r.run
            row["pair"] = key
    return pd.DataFrame(rows, columns=["run_id", "set", "value", *(["pair"] if pair_by else [])])


def _claim(m, pair_by: str | None, test: str, expect: str, margin: float | None) -> dict:
    c = {
        "says": f"{m.name}: set against baseline",
        "source": "corun compare",
        "quote": "-",
        "paper_as": "same",
        "effect": "ratio",
        "metric": "value",
        "table": "runs",
        "head": {"set": "head"},
        "base": {"set": "base"},
        "pair_by": ["pair"] if pair_by else [],
        "aggregate": "mean",
        "min_reps": 2,
        "expect": expect,
        "test": test,
    }
    if expect == "equivalent":
        c["margin"] = margin
    return complete_claim("corun compare", m.name, c, {})


def _decide(row: dict, m, table: pd.DataFrame, pair_by, test, alpha, margin) -> None:
    """Fill row with the engine's ratio, interval and outcome for one metric of one set."""
    direction = "less" if m.better == "lower" else "greater"
    r = judge(m.name, _claim(m, pair_by, test, direction, None), {"runs": table}, HERE, alpha=alpha)
    row.update(
        ratio=r["estimate"],
        ci_low=r["ci_low"],
        ci_high=r["ci_high"],
        n_pairs=r["n"],
        level=r["level"],
        reps_needed=r["reps_needed"],
        why=r["why"],
    )
    row["verdict"] = {"reproduced": "better", "contradicted": "worse"}.get(r["outcome"], "inconclusive")
    if r["outcome"] == "failed":
        row["verdict"] = "missing"
    if row["verdict"] == "inconclusive" and margin is not None:
        eq = judge(m.name, _claim(m, pair_by, test, "equivalent", margin), {"runs": table}, HERE, alpha=alpha)
        if eq["outcome"] == "reproduced":
            row["verdict"], row["why"] = "no change", eq["why"]
        elif eq["reps_needed"] and (row["reps_needed"] is None or eq["reps_needed"] < row["reps_needed"]):
            row["reps_needed"] = eq["reps_needed"]


def _gate(row: dict, threshold: float) -> str:
    """failed / passed / undecided: where the interval lies against 1 +- threshold on the worse side."""
    lo, hi = row["ci_low"], row["ci_high"]
    if lo is None or hi is None or not (math.isfinite(lo) and math.isfinite(hi)):
        return "undecided"
    if row["better"] == "lower":
        limit = 1 + threshold
        return "failed" if lo > limit else "passed" if hi < limit else "undecided"
    limit = 1 - threshold
    return "failed" if hi < limit else "passed" if lo > limit else "undecided"


def compare_sets(
    sets: list[RunSet],
    metrics: list,
    *,
    test: str = "t",
    alpha: float = stats.ALPHA,
    pair_by: str | None = None,
    margin: float | None = None,
    fail_if_worse: float | None = None,
) -> dict:
    """The comparison as plain data: rows (one per set and metric), gate and exclusions."""
    base = sets[0]
    rows = []
    for s in sets[1:]:
        for m in metrics:
            rb, vb = set_values(base, m.name)
            rh, vh = set_values(s, m.name)
            rows.append(
                {
                    "baseline": base.name,
                    "set": s.name,
                    "metric": m.name,
                    "unit": m.unit,
                    "better": m.better,
                    "aggregation": m.aggregation,
                    "n_baseline": len(vb),
                    "n_set": len(vh),
                    "baseline_value": float(stats.aggregate(vb, m.aggregation)) if vb else math.nan,
                    "set_value": float(stats.aggregate(vh, m.aggregation)) if vh else math.nan,
                    "baseline_median": stats.median(vb),
                    "set_median": stats.median(vh),
                    "ratio": math.nan,
                    "ci_low": math.nan,
                    "ci_high": math.nan,
                    "level": None,
                    "change_pct": math.nan,
                    "paired": bool(pair_by),
                    "n_pairs": None,
                    "verdict": "missing",
                    "reps_needed": None,
                    "why": "no values" if not vb or not vh else "",
                    "gate": "",
                    "baseline_outliers": " ".join(r.run for r, f in zip(rb, stats.mad_outliers(vb)) if f),
                    "set_outliers": " ".join(r.run for r, f in zip(rh, stats.mad_outliers(vh)) if f),
                    "missing_runs": " ".join(r.run for r in [*base.runs, *s.runs] if r.metrics.get(m.name) is None),
                    "_metric": m,
                    "_tables": (base, s),
                }
            )
    family = max(1, sum(1 for r in rows if r["n_baseline"] and r["n_set"]))
    level_alpha = alpha / family
    gate_failed, gate_undecided = [], []
    for row in rows:
        m = row.pop("_metric")
        b, s = row.pop("_tables")
        if row["n_baseline"] and row["n_set"]:
            table = pd.concat(
                [_paired_table(b, m.name, pair_by, "base"), _paired_table(s, m.name, pair_by, "head")],
                ignore_index=True,
            )
            _decide(row, m, table, pair_by, test, level_alpha, margin)
            if row["ratio"] is not None and math.isfinite(row["ratio"]):
                row["change_pct"] = (row["ratio"] - 1) * 100
        for k in ("ratio", "ci_low", "ci_high"):
            row[k] = math.nan if row[k] is None else row[k]
        if fail_if_worse is not None:
            row["gate"] = _gate(row, fail_if_worse) if row["verdict"] != "missing" else "undecided"
            what = f"{row['set']} {row['metric']}"
            if row["gate"] == "failed":
                gate_failed.append(f"{what}: {ratio_text(row)}")
            elif row["gate"] == "undecided":
                gate_undecided.append(
                    what + (f" (about {row['reps_needed']} runs per set would decide)" if row["reps_needed"] else "")
                )
    status = None
    if fail_if_worse is not None:
        status = "failed" if gate_failed else "undecided" if gate_undecided else "passed"
    return {
        "settings": {
            "test": test,
            "alpha": alpha,
            "family": family,
            "level": 1 - level_alpha,
            "pair_by": pair_by,
            "margin": margin,
            "fail_if_worse": fail_if_worse,
        },
        "metrics": [m.describe() for m in metrics],
        "sets": [
            {"name": s.name, "selector": s.selector, "runs": len(s.runs), "excluded": len(s.excluded)} for s in sets
        ],
        "excluded": [
            {"set": s.name, "run": r.run, "run_id": runindex.as_text(r.keys.get("run_id")), "reason": why}
            for s in sets
            for r, why in s.excluded
        ],
        "rows": rows,
        "gate": {
            "threshold": fail_if_worse,
            "failed": gate_failed,
            "undecided": gate_undecided,
            "status": status,
        },
    }


def run(
    sources: list[Path],
    *,
    sets: list[str] = (),
    by: str | None = None,
    baseline: str | None = None,
    where: str | None = None,
    metric_names: list[str] | None = None,
    test: str = "t",
    alpha: float = stats.ALPHA,
    pair_by: str | None = None,
    margin: float | None = None,
    fail_if_worse: float | None = None,
    include_alone: bool = False,
    out: Path | None = None,
    plots: bool = True,
) -> tuple[dict, list[RunSet], str]:
    """Load, select, compare and (with `out`) write; returns (result, sets, markdown)."""
    if test not in TESTS:
        raise ConfigError("command line", "--test", test, f"one of {', '.join(TESTS)}")
    if not 0 < alpha < 1:
        raise ConfigError("command line", "--alpha", alpha, "a number between 0 and 1")
    metrics = metrics_mod.select(metric_names)
    keys = set(EXCLUSION_KEYS) | {k for k in (by, pair_by) if k}
    for text, what in [*((t, "--set") for t in sets), *([(where, "--where")] if where else [])]:
        keys |= {t.key for t in runindex.parse_selector(parse_set(text)[1], what=what)}
    records = runindex.load_runs(sources, keys=keys)
    run_sets = build_sets(records, list(sets), by, baseline, where, include_alone)
    result = compare_sets(
        run_sets, metrics, test=test, alpha=alpha, pair_by=pair_by, margin=margin, fail_if_worse=fail_if_worse
    )
    md = to_markdown(result)
    if out is not None:
        write_outputs(result, run_sets, metrics, out, plots=plots)
    return result, run_sets, md

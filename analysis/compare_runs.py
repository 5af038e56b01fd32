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

import base64
import html
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import metrics as metrics_mod  # noqa: E402
from analysis import runindex, stats  # noqa: E402
from analysis.claims import complete_claim  # noqa: E402
from analysis.common import dumps_json, fmt_num, table_to_csv, write_atomic  # noqa: E402
from analysis.verdicts import Machine, judge  # noqa: E402
from corun.errors import ConfigError  # noqa: E402
from corun.util import atomic_path  # noqa: E402

TESTS = ("t", "wilcoxon")
OUTCOME_STYLE = {
    "better": "#1b7a2f",
    "worse": "#b3261e",
    "no change": "#3a5fa5",
    "inconclusive": "#6b4fa0",
    "missing": "#7a5b00",
}
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


@dataclass
class RunSet:
    name: str
    selector: str
    runs: list = field(default_factory=list)  # included RunRecords
    excluded: list = field(default_factory=list)  # (RunRecord, reason)


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
    start = rec.keys.get("variant_verified_at_start", rec.keys.get("scheduler.verified"))
    if start is not True:
        return (
            "variant not verified in effect at the start"
            if start is False
            else "variant verification at the start not recorded"
        )
    end = rec.keys.get("variant_verified_at_end", rec.keys.get("scheduler.verified_at_end"))
    if end is not True:
        return (
            "variant not verified in effect at the end"
            if end is False
            else "variant verification at the end not recorded"
        )
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


def _values(rs: RunSet, metric: str) -> tuple[list, list[float]]:
    recs = [r for r in rs.runs if r.metrics.get(metric) is not None]
    return recs, [float(r.metrics[metric]) for r in recs]


def _worse_by(ratio: float, better: str) -> float:
    return ratio - 1 if better == "lower" else 1 - ratio


def _paired_table(rs: RunSet, metric: str, pair_by: str | None, role: str) -> pd.DataFrame:
    """The set's runs with a value of the metric, one row each; with pair_by, its key (a key twice
    in one set is a one-line error: which runs would pair is not known)."""
    recs, vals = _values(rs, metric)
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
            rb, vb = _values(base, m.name)
            rh, vh = _values(s, m.name)
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
                gate_failed.append(f"{what}: {_ratio(row)}")
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


# ----------------------------------------------------------------------------- tables and figures


def rows_table(result: dict) -> pd.DataFrame:
    return pd.DataFrame(result["rows"])


def runs_table(sets: list[RunSet], metrics: list) -> pd.DataFrame:
    rows = []
    for s in sets:
        for r, why in [*((r, "") for r in s.runs), *s.excluded]:
            rows.append(
                {
                    "set": s.name,
                    "run": r.run,
                    "run_id": runindex.as_text(r.keys.get("run_id")),
                    "included": not why,
                    "excluded_reason": why,
                    **{m.name: r.metrics.get(m.name) for m in metrics},
                }
            )
    df = pd.DataFrame(rows)
    for m in metrics:
        df[m.name] = pd.to_numeric(df[m.name], errors="coerce").astype("float64")
    return df.sort_values(["set", "run"], kind="stable").reset_index(drop=True)


def plot_ratios(result: dict, path: Path) -> None:
    rows = [r for r in result["rows"] if math.isfinite(r["ratio"])]
    fig, ax = plt.subplots(figsize=(7.5, 0.45 * max(len(rows), 2) + 1.2))
    for i, r in enumerate(rows):
        color = OUTCOME_STYLE.get(r["verdict"], "#555555")
        lo, hi = r["ci_low"], r["ci_high"]
        if math.isfinite(lo) and math.isfinite(hi):
            ax.plot([lo, hi], [i, i], color=color, lw=2)
        ax.plot([r["ratio"]], [i], "o", color=color)
    ax.axvline(1.0, color="black", lw=0.8, ls="--")
    ax.set_yticks(range(len(rows)))
    ax.set_yticklabels(
        [f"{r['set']} / {r['baseline']}: {r['metric']} ({r['better']} is better)" for r in rows], fontsize=8
    )
    ax.set_ylim(-0.7, max(len(rows), 1) - 0.3)
    ax.invert_yaxis()
    level = result["settings"]["level"]
    ax.set_xlabel(f"ratio to the baseline, {100 * level:.4g}% interval (colour: outcome)")
    fig.tight_layout()
    _save(fig, path)


def plot_values(sets: list[RunSet], metrics: list, path: Path) -> None:
    n = max(len(metrics), 1)
    cols = min(3, n)
    nrows = math.ceil(n / cols)
    fig, axes = plt.subplots(nrows, cols, figsize=(4.2 * cols, 3.2 * nrows), squeeze=False)
    for ax, m in zip(axes.flat, metrics):
        data, labels = [], []
        for s in sets:
            recs, vals = _values(s, m.name)
            data.append(vals)
            labels.append(s.name)
        for i, vals in enumerate(data):
            if not vals:
                continue
            ax.boxplot([vals], positions=[i], widths=0.5, showfliers=False)
            flags = np.asarray(stats.mad_outliers(vals))
            x = i + (np.random.default_rng(i).random(len(vals)) - 0.5) * 0.25
            v = np.asarray(vals)
            ax.plot(x[~flags], v[~flags], ".", color="#3a6ea5", alpha=0.6, ms=4)
            if flags.any():
                ax.plot(x[flags], v[flags], "x", color="#b3261e", ms=6)
        ax.set_xticks(range(len(labels)))
        ax.set_xticklabels(labels, fontsize=8, rotation=15)
        ax.set_title(f"{m.name} ({m.better} is better)", fontsize=9)
        ax.set_ylabel(m.unit, fontsize=8)
    for ax in list(axes.flat)[len(metrics) :]:
        ax.axis("off")
    fig.suptitle("per-run values (x: MAD outlier, reported and kept)", fontsize=9)
    fig.tight_layout()
    _save(fig, path)


def _save(fig, path: Path) -> None:
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", dpi=100, metadata={"Software": None})
    plt.close(fig)


# ----------------------------------------------------------------------------- Markdown and HTML


def _ratio(r: dict) -> str:
    if not math.isfinite(r["ratio"]):
        return "missing"
    ci = f" [{fmt_num(r['ci_low'])}, {fmt_num(r['ci_high'])}]" if math.isfinite(r["ci_low"]) else " [no interval]"
    return f"{fmt_num(r['ratio'])}{ci}"


def _outcome(r: dict) -> str:
    text = r["verdict"]
    if r["verdict"] == "inconclusive" and r.get("reps_needed"):
        text += f" (about {r['reps_needed']} runs per set would decide)"
    return text


def _table_rows(result: dict) -> tuple[list[str], list[list[str]]]:
    level = f"{100 * result['settings']['level']:.4g}%"
    head = ["set", "metric", "better", "baseline", "set value", f"ratio [{level} interval]", "change", "outcome"]
    body = []
    for r in result["rows"]:
        change = f"{r['change_pct']:+.1f}%" if math.isfinite(r["change_pct"]) else "missing"
        body.append(
            [
                r["set"],
                f"{r['metric']} ({r['unit']})",
                r["better"],
                f"{fmt_num(r['baseline_value'])} (n={r['n_baseline']})",
                f"{fmt_num(r['set_value'])} (n={r['n_set']})",
                _ratio(r) + (" paired" if r["paired"] else ""),
                change,
                _outcome(r) + (" GATE FAILED" if r["gate"] == "failed" else ""),
            ]
        )
    return head, body


def _notes(result: dict) -> list[str]:
    st = result["settings"]
    kind = "signed-rank (Hodges-Lehmann)" if st["test"] == "wilcoxon" else "t"
    notes = [
        (
            f"Ratios paired by {st['pair_by']}: the geometric mean of the per-pair ratios, the {kind} interval "
            "of the log ratios"
            if st["pair_by"]
            else "Ratios unpaired: the ratio of the geometric means, Welch's interval of the mean logs"
        )
        + f", at {100 * st['level']:.4g}% ({st['family']} comparison(s), Bonferroni at alpha {st['alpha']}); "
        "decided by the verdict engine (analysis/verdicts.py). The baseline and set values are each "
        "metric's own aggregate (arithmetic mean for times, harmonic for rates, geometric for ratios).",
    ]
    if st["margin"] is not None:
        notes.append(
            f"No change: the interval at twice alpha lies inside 1 +- {st['margin']:.1%} (two one-sided tests)."
        )
    gate = result["gate"]
    if gate["status"] == "failed":
        notes.append(
            f"Gate FAILED (surely worse by {gate['threshold']:.1%} or more): " + "; ".join(gate["failed"]) + "."
        )
    elif gate["status"] == "undecided":
        notes.append(
            f"Gate UNDECIDED: these runs cannot say whether worse by {gate['threshold']:.1%}: "
            + "; ".join(gate["undecided"])
            + "."
        )
    elif gate["status"] == "passed":
        notes.append(f"Gate passed: every metric surely less than {gate['threshold']:.1%} worse.")
    return notes


def _outlier_lines(result: dict) -> list[str]:
    out = []
    for r in result["rows"]:
        for which, runs in ((r["baseline"], r["baseline_outliers"]), (r["set"], r["set_outliers"])):
            if runs:
                out.append(f"{r['metric']} in {which}: {runs}")
    return sorted(set(out))


def to_markdown(result: dict) -> str:
    base = result["sets"][0]["name"]
    lines = [f"# corun compare: baseline {base}", ""]
    lines += ["| set | selector | runs used | excluded |", "| --- | --- | --- | --- |"]
    lines += [f"| {s['name']} | `{s['selector']}` | {s['runs']} | {s['excluded']} |" for s in result["sets"]]
    head, body = _table_rows(result)
    lines += ["", "| " + " | ".join(head) + " |", "|" + " --- |" * len(head)]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in body]
    lines += [""] + [f"- {n}" for n in _notes(result)]
    if result["excluded"]:
        lines += ["", "## Excluded runs", ""]
        lines += [f"- {e['set']}: {e['run']}: {e['reason']}" for e in result["excluded"]]
    outl = _outlier_lines(result)
    if outl:
        lines += ["", "## Outliers (|modified z| > 3.5; reported, kept)", ""] + [f"- {o}" for o in outl]
    return "\n".join(lines) + "\n"


CSS = """body{font-family:system-ui,sans-serif;margin:0 auto;max-width:75rem;padding:1rem 2rem;color:#1d232a}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.86rem}
th,td{border:1px solid #c8ced6;padding:.25rem .5rem;text-align:left}th{background:#eef2f7}
img{max-width:100%;border:1px solid #ddd}.failed{color:#b3261e;font-weight:700}"""


def to_html(result: dict, figures: list[Path]) -> str:
    e = html.escape
    base = result["sets"][0]["name"]
    parts = [
        f"<!DOCTYPE html><html lang='en'><head><meta charset='utf-8'><title>corun compare: {e(base)}</title>",
        f"<style>{CSS}</style></head><body><h1>corun compare: baseline {e(base)}</h1>",
        "<table><tr><th>set</th><th>selector</th><th>runs used</th><th>excluded</th></tr>",
    ]
    parts += [
        f"<tr><td>{e(s['name'])}</td><td><code>{e(s['selector'])}</code></td><td>{s['runs']}</td>"
        f"<td>{s['excluded']}</td></tr>"
        for s in result["sets"]
    ]
    parts.append("</table>")
    head, body = _table_rows(result)
    parts.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in head) + "</tr>")
    for r, row in zip(result["rows"], body):
        color = OUTCOME_STYLE.get(r["verdict"], "#555")
        cells = "".join(f"<td>{e(c)}</td>" for c in row[:-1])
        parts.append(f"<tr>{cells}<td style='color:{color};font-weight:600'>{e(row[-1])}</td></tr>")
    parts.append(
        "</table><ul>"
        + "".join(
            f"<li{' class=failed' if n.startswith(('Gate FAILED', 'Gate UNDECIDED')) else ''}>{e(n)}</li>"
            for n in _notes(result)
        )
        + "</ul>"
    )
    for fig in figures:
        data = base64.b64encode(fig.read_bytes()).decode("ascii")
        parts.append(f"<figure><img alt='{e(fig.stem)}' src='data:image/png;base64,{data}'></figure>")
    if result["excluded"]:
        parts.append(
            "<h2>Excluded runs</h2><ul>"
            + "".join(f"<li>{e(x['set'])}: {e(x['run'])}: {e(x['reason'])}</li>" for x in result["excluded"])
            + "</ul>"
        )
    outl = _outlier_lines(result)
    if outl:
        parts.append(
            "<h2>Outliers (|modified z| &gt; 3.5; reported, kept)</h2><ul>"
            + "".join(f"<li>{e(o)}</li>" for o in outl)
            + "</ul>"
        )
    parts.append("</body></html>\n")
    return "".join(parts)


def _json_safe(obj: object) -> object:
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    if isinstance(obj, dict):
        return {k: _json_safe(v) for k, v in obj.items()}
    if isinstance(obj, list):
        return [_json_safe(v) for v in obj]
    return obj


def write_outputs(result: dict, sets: list[RunSet], metrics: list, out: Path, plots: bool = True) -> list[Path]:
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    figures = []
    if plots:
        figures = [out / "figures" / "ratios.png", out / "figures" / "values.png"]
        plot_ratios(result, figures[0])
        plot_values(sets, metrics, figures[1])
    write_atomic(out / "comparison.csv", table_to_csv(rows_table(result)))
    write_atomic(out / "runs.csv", table_to_csv(runs_table(sets, metrics)))
    write_atomic(out / "comparison.json", dumps_json(_json_safe(result)))
    write_atomic(out / "comparison.md", to_markdown(result))
    write_atomic(out / "comparison.html", to_html(result, figures))
    return [
        out / "comparison.md",
        out / "comparison.html",
        out / "comparison.json",
        out / "comparison.csv",
        out / "runs.csv",
        *figures,
    ]


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

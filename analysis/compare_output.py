"""`corun compare`'s outputs: the tables, figures, Markdown and self-contained HTML of a comparison
(analysis.compare_runs decides; this module writes what it decided)."""

from __future__ import annotations

import base64
import html
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
from dataclasses import dataclass, field  # noqa: E402

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import runindex, stats  # noqa: E402
from analysis.common import dumps_json, fmt_num, table_to_csv, write_atomic  # noqa: E402
from corun.util import atomic_path  # noqa: E402


@dataclass
class RunSet:
    name: str
    selector: str
    runs: list = field(default_factory=list)  # included RunRecords
    excluded: list = field(default_factory=list)  # (RunRecord, reason)


def set_values(rs: RunSet, metric: str) -> tuple[list, list[float]]:
    recs = [r for r in rs.runs if r.metrics.get(metric) is not None]
    return recs, [float(r.metrics[metric]) for r in recs]


OUTCOME_COLOUR = {
    "better": "#1b7a2f",
    "worse": "#b3261e",
    "no change": "#3a5fa5",
    "inconclusive": "#6b4fa0",
    "missing": "#7a5b00",
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
        color = OUTCOME_COLOUR.get(r["verdict"], "#555555")
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
            recs, vals = set_values(s, m.name)
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


def ratio_text(r: dict) -> str:
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
                ratio_text(r) + (" paired" if r["paired"] else ""),
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
        color = OUTCOME_COLOUR.get(r["verdict"], "#555")
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

"""The corun report: one self-contained HTML file from the experiments' section.json files.

Every experiment's analysis step writes a section.json (analysis/schemas/section.schema.json)
next to its figures (PNG) and tables (CSV); paths inside it are relative to the section.json.
`write_report` validates each section, then writes one HTML file with inline CSS and the figures
embedded as base64 PNG, so it opens anywhere without network access. All text is HTML-escaped.

The report leads with the verdicts (analysis.report_verdicts): the papers' headline results per
outcome, apart from their findings, premises and conjectures, direction and magnitude counted
apart; then per experiment: its claims (the claim in words with its kind, the paper's value and
words, the stand-ins it rests on, ours with its interval and n, the test, the outcome and one line
of why; analysis.verdicts decides them all), the summary, missing
measurements (always, with the word "missing"), figures with captions, a device's calibration
checks (pass or fail against their tolerance, not paper verdicts), the tables, the runs'
metadata (runs that share every field but id and time are shown as one row with a count) and
notes.

CLI: python -m analysis.report --sections S1 [S2 ...] --out report.html --title T
"""

from __future__ import annotations

import argparse
import base64
import csv
import html
import json
import os
import statistics
import sys
from datetime import UTC, datetime
from pathlib import Path

from analysis.common import AnalysisInputError, fmt_num, read_json, validate, write_atomic
from analysis.report_verdicts import (  # noqa: F401 - the report's verdict parts, as they were named here
    OUTCOMES,
    PAPER_NAMES,
    VERDICT_CSS,
    kinds_text,
    legend,
    outcome_cell,
    render_claims,
    rollup,
)
from corun import __version__ as CORUN_VERSION
from corun.errors import one_line_errors

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"
NOT_RECORDED = "not recorded"
# a run whose CPUs lost more than this share of their time to the VM's host is pointed out
STEAL_NOTE_PCT = 5.0

CSS = """
body{font-family:system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;margin:0 auto;
max-width:75rem;padding:1rem 2rem;color:#1d232a;line-height:1.45}
h1{margin-bottom:.2rem}h2{border-bottom:2px solid #3a6ea5;padding-bottom:.2rem;margin-top:2.5rem}
h3{margin-top:1.6rem}
.meta,.paper{color:#555;font-size:.92rem}
table{border-collapse:collapse;margin:.5rem 0 1rem;font-size:.86rem}
th,td{border:1px solid #c8ced6;padding:.25rem .5rem;text-align:left;vertical-align:top}
th{background:#eef2f7}td.num{text-align:right;font-variant-numeric:tabular-nums}
td.na{color:#888;font-style:italic}
figure{margin:1rem 0}figure img{max-width:100%;border:1px solid #ddd}
figcaption{font-size:.88rem;color:#333;max-width:60rem}
.verdict{font-weight:600;white-space:nowrap}.v-ok{color:#1b7a2f}.v-bad{color:#b3261e}
.v-na{color:#7a5b00}.v-machine{color:#3a5fa5}.v-open{color:#6b4fa0}.v-fail{color:#b3261e;text-decoration:underline}
table.rollup td,table.rollup th{text-align:center}table.rollup td:first-child{text-align:left}
.why{color:#333}.quote{color:#666;font-size:.8rem}
.missing{border:2px solid #b3261e;background:#fff4f2;padding:.4rem .9rem;margin:1rem 0}
.missing h3{color:#b3261e;margin-top:.4rem}
.missing-none{border:1px solid #9ab79f;background:#f3faf4;padding:.4rem .9rem}
.advice{color:#7a5b00}ul.compact{margin:0;padding-left:1.1rem}
nav ul{columns:2}
"""


# ----------------------------------------------------------------------------- loading


def load_section(path: str | os.PathLike) -> dict:
    """Read and validate one section.json; one-line errors name the file and the key."""
    path = Path(path)
    section = read_json(path, "not found (expected a section.json)")
    validate(section, "section.schema.json", str(path))
    base = path.parent
    for i, fig in enumerate(section["figures"]):
        file = base / fig["path"]
        if not file.is_file() or file.read_bytes()[:8] != PNG_MAGIC:
            raise AnalysisInputError(
                f"{path}: figures[{i}].path: {fig['path']!r} (expected a PNG file next to the section)"
            )
    for i, table in enumerate(section["tables"]):
        if not (base / table["csv"]).is_file():
            raise AnalysisInputError(
                f"{path}: tables[{i}].csv: {table['csv']!r} (expected a CSV file next to the section)"
            )
    return section


# ----------------------------------------------------------------------------- rendering helpers


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def fmt_value(value: object) -> str:
    """A cell value for people; None reads "missing", never 0."""
    if value is None:
        return "missing"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, (int, float)):
        return fmt_num(value, 4)
    return str(value)


def _cell(value: object, *, missing_word: str = "missing") -> str:
    if value is None or value == "":
        return f'<td class="na">{esc(missing_word)}</td>'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="num">{esc(fmt_value(value))}</td>'
    return f"<td>{esc(fmt_value(value))}</td>"


def _table(headers: list[str], rows: list[str], cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    klass = f' class="{cls}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _csv_cell(text: str) -> str:
    if text == "":
        return '<td class="na">n/a</td>'
    try:
        number = float(text)
    except ValueError:
        return f"<td>{esc(text)}</td>"
    return f'<td class="num">{esc(fmt_num(number, 4))}</td>'


def render_csv(path: Path) -> str:
    with path.open(newline="", encoding="utf-8") as f:
        rows = list(csv.reader(f))
    if not rows:
        return '<p class="na">(empty table)</p>'
    body = ["<tr>" + "".join(_csv_cell(c) for c in r) + "</tr>" for r in rows[1:]]
    return _table(rows[0], body)


def _png_data_uri(path: Path) -> str:
    return "data:image/png;base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def _params(params: object) -> str | None:
    if params is None:
        return None
    if not params:
        return "none"
    return "; ".join(f"{k}={v}" for k, v in params.items())


PER_RUN = ("run_id", "start", "end", "steal_pct", "foreign_pct", "corun_pct", "remeasured")


def _grouped_runs(runs: list[dict]) -> list[dict]:
    """Runs that agree on everything but run_id, start, end, steal and foreign CPU, merged into one row."""
    groups: dict[str, dict] = {}
    for run in runs:
        key = json.dumps({k: v for k, v in run.items() if k not in PER_RUN}, sort_keys=True)
        g = groups.setdefault(key, {**run, "run_ids": [], "starts": [], "ends": [], "steals": [], "foreigns": []})
        g["run_ids"].append(run["run_id"])
        g["starts"].append(run["start"])
        g["ends"].append(run["end"])
        if run.get("steal_pct") is not None:
            g["steals"].append(run["steal_pct"])
        if run.get("foreign_pct") is not None:
            g["foreigns"].append(run["foreign_pct"])
    for g in groups.values():
        starts = [s for s in g["starts"] if s]
        ends = [e for e in g["ends"] if e]
        g["start"] = min(starts) if starts else None
        g["end"] = max(ends) if ends else None
    return list(groups.values())


def _steal_cell(steals: list[float]) -> str | None:
    """'median / max' of the runs' steal, or None when no run recorded it."""
    if not steals:
        return None
    return f"{statistics.median(steals):.1f} / {max(steals):.1f}"


def steal_note(runs: list[dict]) -> str | None:
    """One sentence on the CPU time the VM's host took during the runs, or None when no run
    recorded it (runs from before it was recorded, or a machine without the counter)."""
    steals = [r["steal_pct"] for r in runs if r.get("steal_pct") is not None]
    if not steals:
        return None
    above = sum(1 for v in steals if v > STEAL_NOTE_PCT)
    again = [r["remeasured"] for r in runs if r.get("remeasured")]
    text = (
        f"CPU time the VM's host took from this machine while the jobs ran (steal): median "
        f"{statistics.median(steals):.1f} %, at most {max(steals):.1f} %, over {len(steals)} runs"
    )
    if above:
        text += (
            f"; {above} of them above {STEAL_NOTE_PCT:g} %: their timings carry noise that no "
            "scheduler caused, and a verdict resting on small differences may not hold on a quieter machine"
        )
    if again:
        text += (
            f". {len(again)} runs were measured again because of their steal or foreign CPU "
            f"({sum(again)} attempts set aside, kept in each run's remeasured/ folder)"
        )
    return text + "."


def foreign_note(runs: list[dict]) -> str | None:
    """One sentence on the CPU time processes that were not the runs' own took while their jobs
    ran (corun.machine.foreign_cpu), corun's runner and monitors apart; None when no run recorded it."""
    shares = [r["foreign_pct"] for r in runs if r.get("foreign_pct") is not None]
    if not shares:
        return None
    text = (
        f"CPU time processes that were not the run's own took while its jobs ran (foreign): median "
        f"{statistics.median(shares):.1f} %, at most {max(shares):.1f} %, over {len(shares)} runs"
    )
    corun = [r["corun_pct"] for r in runs if r.get("corun_pct") is not None]
    if corun:
        text += (
            f"; of it corun's runner and monitors: median {statistics.median(corun):.1f} %, at most {max(corun):.1f} %"
        )
    return text + "."


def _run_ids(ids: list[str]) -> str:
    shown = ", ".join(ids[:3])
    return shown + (f" ... {ids[-1]}" if len(ids) > 3 else "")


# ----------------------------------------------------------------------------- checks


def render_checks(checks: list[dict]) -> str:
    rows = [
        f"<tr><td>{esc(c['check'])}</td>{_cell(c['expected'])}{_cell(c['measured'])}<td>{esc(c['tolerance'])}</td>"
        + (
            '<td class="verdict v-na">not checked</td>'
            if c["passed"] is None
            else f'<td class="verdict v-{"ok" if c["passed"] else "fail"}">{"pass" if c["passed"] else "fail"}</td>'
        )
        + f"<td>{esc(c['note'])}</td></tr>"
        for c in checks
    ]
    return "<h3>Calibration checks</h3>" + _table(
        ["check", "expected", "measured", "tolerance", "result", "note"], rows
    )


# ----------------------------------------------------------------------------- sections


def render_section(section: dict, base: Path, anchor: str) -> str:
    out = [
        f'<section id="{esc(anchor)}">',
        f"<h2>{esc(section['title'])}</h2>",
        f'<p class="paper">Experiment <code>{esc(section["experiment"])}</code>. Paper: {esc(section["paper"])}</p>',
    ]
    if "claims" in section:
        looks = section.get("looks") or {}
        seq = (
            f" Look {looks['look']} of {looks['of']} planned ({looks.get('reps')} reps): every interval at Pocock's "
            "level for that many looks."
            if looks.get("of", 1) > 1
            else ""
        )
        out.append(f'<h3>Claims</h3><p class="meta">{esc(kinds_text(section["claims"]))}{esc(seq)}</p>')
        out.append(render_claims(section["claims"]) if section["claims"] else "<p>No claims declared.</p>")
    if section.get("checks"):
        out.append(render_checks(section["checks"]))
    out += ["<h3>Summary</h3>", f"<p>{esc(section['summary'])}</p>"]

    missing = section["missing"]
    if missing:
        rows = [
            f"<tr><td>{esc(m['metric'])}</td><td><strong>missing</strong>: {esc(m['reason'])}</td>"
            f'<td>{esc(m["source"] or NOT_RECORDED)}</td><td class="num">{m["runs"]}</td></tr>'
            for m in missing
        ]
        out.append(
            f'<div class="missing"><h3>Missing measurements ({len(missing)})</h3>'
            "<p>These metrics could not be measured on this machine; they are left out, "
            "never filled in.</p>" + _table(["metric", "reason", "source", "runs"], rows) + "</div>"
        )
    else:
        out.append(
            '<div class="missing-none"><h3>Missing measurements</h3>'
            "<p>None: the runs recorded no missing measurement.</p></div>"
        )

    if section["figures"]:
        out.append("<h3>Figures</h3>")
    for i, fig in enumerate(section["figures"], 1):
        out.append(
            f'<figure><img src="{_png_data_uri(base / fig["path"])}" '
            f'alt="{esc(fig["caption"])}"><figcaption><strong>Figure {i}.</strong> '
            f"{esc(fig['caption'])}</figcaption></figure>"
        )

    for table in section["tables"]:
        out.append(f"<h3>{esc(table['title'])}</h3>")
        out.append(render_csv(base / table["csv"]))

    out.append(f"<h3>Runs ({len(section['runs'])})</h3>")
    rows = []
    for g in _grouped_runs(section["runs"]):
        advice = "".join(f"<li>{esc(a)}</li>" for a in g["advice"])
        advice_cell = (
            f'<td class="advice"><ul class="compact">{advice}</ul></td>' if advice else '<td class="na">none</td>'
        )
        version = " ".join(v for v in (g.get("corun_version"), g.get("git_describe")) if v) or None
        rows.append(
            f"<tr><td>{len(g['run_ids'])}</td><td>{esc(_run_ids(g['run_ids']))}</td>"
            + "".join(
                _cell(g[k], missing_word=NOT_RECORDED)
                for k in (
                    "host",
                    "kernel_release",
                    "cpu_model",
                    "device",
                    "elevator",
                    "throttle",
                    "scheduler",
                )
            )
            + _cell(_params(g["params"]), missing_word=NOT_RECORDED)
            + _cell(g["start"], missing_word=NOT_RECORDED)
            + _cell(g["end"], missing_word=NOT_RECORDED)
            + _cell(version, missing_word=NOT_RECORDED)
            + _cell(_steal_cell(g["steals"]), missing_word=NOT_RECORDED)
            + _cell(_steal_cell(g["foreigns"]), missing_word=NOT_RECORDED)
            + advice_cell
            + "</tr>"
        )
    if rows:
        out.append(
            _table(
                [
                    "runs",
                    "run ids",
                    "host",
                    "kernel",
                    "CPU",
                    "device",
                    "elevator",
                    "throttle",
                    "scheduler",
                    "params",
                    "first start (UTC)",
                    "last end (UTC)",
                    "corun",
                    "CPU steal % (median / max)",
                    "foreign CPU % (median / max)",
                    "advice",
                ],
                rows,
            )
        )
        note = steal_note(section["runs"])
        if note:
            out.append(f'<p class="steal">{esc(note)}</p>')
        note = foreign_note(section["runs"])
        if note:
            out.append(f'<p class="steal">{esc(note)}</p>')
    else:
        out.append('<p class="na">No run metadata.</p>')

    if section["notes"]:
        out.append("<h3>Notes</h3><ul>" + "".join(f"<li>{esc(n)}</li>" for n in section["notes"]) + "</ul>")
    out.append("</section>")
    return "\n".join(out)


def render_report(sections: list[tuple[dict, Path]], title: str, generated: datetime) -> str:
    versions = sorted(
        {
            " ".join(v for v in (r.get("corun_version"), r.get("git_describe")) if v)
            for s, _ in sections
            for r in s["runs"]
        }
        - {""}
    )
    recorded = f" Runs recorded with corun {esc(', '.join(versions))}." if versions else ""
    anchors = [f"exp-{i}-{s['experiment']}" for i, (s, _) in enumerate(sections, 1)]
    toc = "".join(f'<li><a href="#{esc(a)}">{esc(s["title"])}</a></li>' for a, (s, _) in zip(anchors, sections))
    roll = rollup(sections, anchors)
    stamp = generated.strftime("%Y-%m-%d %H:%M:%S UTC")
    body = "\n".join(render_section(s, base, a) for a, (s, base) in zip(anchors, sections))
    return f"""<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{esc(title)}</title>
<style>{CSS}{VERDICT_CSS}</style>
</head>
<body>
<header>
<h1>{esc(title)}</h1>
<p class="meta">Generated {esc(stamp)} by corun {esc(CORUN_VERSION)}.{recorded}</p>
<nav><ul>{toc}</ul></nav>
{roll}
{legend()}
</header>
{body}
</body>
</html>
"""


def write_report(section_paths: list[str | os.PathLike], out_html: str | os.PathLike, title: str) -> Path:
    """Validate the sections and write one self-contained HTML report to out_html."""
    if not section_paths:
        raise AnalysisInputError("--sections: none given (expected at least one section.json)")
    sections = [(load_section(p), Path(p).parent) for p in section_paths]
    text = render_report(sections, title, datetime.now(UTC))
    write_atomic(out_html, text)
    return Path(out_html)


@one_line_errors(prefix="analysis.report")
def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m analysis.report",
        description="Write one self-contained HTML report from experiments' section.json files.",
    )
    parser.add_argument(
        "--sections",
        nargs="+",
        required=True,
        metavar="JSON",
        help="section.json files, in report order",
    )
    parser.add_argument("--out", required=True, metavar="HTML", help="report file to write")
    parser.add_argument("--title", default="corun report", help="report title (default: corun report)")
    args = parser.parse_args(argv)
    write_report(args.sections, args.out, args.title)
    return 0


if __name__ == "__main__":
    sys.exit(main())

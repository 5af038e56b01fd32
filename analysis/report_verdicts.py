"""The report's verdicts (analysis.report renders the rest): the legend, the roll-up per paper and
each experiment's table of claims.

The roll-up leads with the papers' headline results, counted apart from their other findings,
premises and conjectures (a claim's `kind`): a premise the machine meets or a finding in passing
is not a reproduced result. Direction and magnitude are counted apart: "reproduced in direction"
is the outcome, "in magnitude" / "not in magnitude" / "magnitude undecided" the row's `magnitude`
where its claim declares the paper's magnitude as a band. A claim whose named point the
configuration does not run reads "not run in this profile", never inconclusive. Each row names
the stand-ins and emulations its evidence rests on.
"""

from __future__ import annotations

import html

from analysis.common import fmt_num

NOT_RUN = "not run in this profile"
OUTCOMES = {
    "reproduced": (
        "ok",
        "the interval of the paired effect, at the look's level, excludes the null on the paper's side "
        "(a trend: the one-sided permutation test in the paper's direction; a no-change claim: the "
        "interval inside its margin)",
    ),
    "contradicted": (
        "bad",
        "the interval excludes the null on the other side (a trend: the other direction's test; a no-change "
        "claim: the interval wholly outside its margin)",
    ),
    "inconclusive": ("open", "the evidence cannot decide; the row says n and how many reps would"),
    NOT_RUN: (
        "notrun",
        "the configuration does not run the point the claim names (its at: value, or a value its where: or "
        "over: lists); a profile that runs it judges it",
    ),
    "not measurable here": (
        "na",
        "this machine lacks a mechanism the claim needs, named (SMT, NUMA nodes, sockets, a PMU, persistent "
        "memory, physical NICs with their own interrupts, RFS's flow table, hosts, CMPs, CPUs); decided from "
        "the runs' machine description",
    ),
    "failed": ("fail", "runs failed or data is missing (named)"),
    "differs (machine-specific)": ("machine", "a property of the hardware; both values shown, not judged"),
}
MAGNITUDES = {
    "in magnitude": "the interval lies inside the magnitude band the claim declares from the paper's words "
    "(a claim on every point: every point's interval)",
    "not in magnitude": "the interval lies wholly outside that band (a claim on every point: one point's "
    "interval at the Bonferroni level, the point named)",
    "magnitude undecided": "the interval and the band overlap, or there is no interval",
}
KINDS = {
    "headline": "a result the paper states as its contribution (abstract, conclusion, a headline figure)",
    "finding": "another measured result of the paper",
    "premise": "a fact the paper builds on, measured to show the machine behaves as the paper assumes",
    "conjecture": "the paper's own expectation, which it did not measure",
}
NO_KIND = "no kind declared"
PAPER_NAMES = {
    "000": "dynamic I/O-aware batch scheduling",
    "001": "contention-aware MPI coscheduling",
    "002": "aIOLi, server-side I/O scheduling",
    "003": "noisy neighbours from persistent-memory I/O",
    "004": "SAIs, source-aware interrupt scheduling",
}
# the roll-up's columns: claims, the direction, its magnitude apart, then the other outcomes
COLUMNS = (
    "claims",
    "reproduced in direction",
    *MAGNITUDES,
    "contradicted",
    "inconclusive",
    NOT_RUN,
    "not measurable here",
    "failed",
    "differs (machine-specific)",
)
VERDICT_CSS = """
.v-notrun{color:#666}.kind{font-size:.75rem;font-weight:600;text-transform:uppercase;color:#3a6ea5;
margin-right:.3rem}.kind-headline{color:#1d232a}.restson{color:#7a5b00;font-size:.8rem}
.mag-in{color:#1b7a2f}.mag-out{color:#b3261e}.mag-open{color:#6b4fa0}
"""


def esc(value: object) -> str:
    return html.escape(str(value), quote=True)


def _table(headers: list[str], rows: list[str], cls: str = "") -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    klass = f' class="{cls}"' if cls else ""
    return f"<table{klass}><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


def _cell(value: object, missing_word: str) -> str:
    if value is None or value == "":
        return f'<td class="na">{esc(missing_word)}</td>'
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return f'<td class="num">{esc(fmt_num(value, 4))}</td>'
    return f"<td>{esc(value)}</td>"


def kind_of(row: dict) -> str:
    return row.get("kind") or NO_KIND


def tally(rows: list[dict]) -> dict[str, int]:
    """The roll-up's counts of ROWS: claims, each outcome (reproduced as "reproduced in direction")
    and each magnitude, apart."""
    out = dict.fromkeys(COLUMNS, 0)
    for r in rows:
        out["claims"] += 1
        outcome = "reproduced in direction" if r["outcome"] == "reproduced" else r["outcome"]
        out[outcome] = out.get(outcome, 0) + 1
        if r.get("magnitude") in MAGNITUDES:
            out[r["magnitude"]] += 1
    return out


def kinds_text(rows: list[dict]) -> str:
    """'12 claims: 3 headline, 8 finding, 1 premise.' (the kinds present, in the legend's order)."""
    counts = {k: sum(1 for r in rows if kind_of(r) == k) for k in [*KINDS, NO_KIND]}
    parts = [f"{n} {k}" for k, n in counts.items() if n]
    return f"{len(rows)} claim{'s' if len(rows) != 1 else ''}" + (f": {', '.join(parts)}." if parts else ".")


# ----------------------------------------------------------------------------- one row


def outcome_text(row: dict) -> str:
    text = "reproduced in direction" if row["outcome"] == "reproduced" else row["outcome"]
    return text + (f"; {row['magnitude']}" if row.get("magnitude") in MAGNITUDES else "")


def outcome_cell(row: dict) -> str:
    cls = OUTCOMES.get(row["outcome"], ("open", ""))[0]
    text = "reproduced in direction" if row["outcome"] == "reproduced" else row["outcome"]
    mag = row.get("magnitude")
    if mag in MAGNITUDES:
        mcls = {"in magnitude": "mag-in", "not in magnitude": "mag-out"}.get(mag, "mag-open")
        return f'<td class="verdict v-{cls}">{esc(text)}<br><span class="{mcls}">{esc(mag)}</span></td>'
    return f'<td class="verdict v-{cls}">{esc(text)}</td>'


def claim_cell(r: dict) -> str:
    kind = r.get("kind")
    tag = f'<span class="kind kind-{esc(kind)}">{esc(kind)}</span>' if kind else ""
    out = f'<td>{tag}{esc(r["says"])}<div class="quote">{esc(r["source"])}: \u201c{esc(r["quote"])}\u201d</div>'
    if r.get("definition"):
        out += f'<div class="quote">Measured as: {esc(r["definition"])}</div>'
    if r.get("stand_ins"):
        out += f'<div class="restson">Rests on: {esc("; ".join(r["stand_ins"]))}</div>'
    return out + "</td>"


def render_claims(rows: list[dict]) -> str:
    out = []
    for r in rows:
        why = r["why"]
        if r["outcome"] == "inconclusive" and r.get("reps_needed"):
            why += f" (look {r['look']} of {r['looks']})" if r.get("looks", 1) > 1 else ""
        out.append(
            "<tr>"
            + claim_cell(r)
            + _cell(r["paper_value"], "a direction")
            + _cell(r["measured"], "none")
            + f"<td>{esc(r['effect'])}; {esc(r['test'])}</td>"
            + outcome_cell(r)
            + f'<td class="why">{esc(why)}</td></tr>'
        )
    return _table(["claim", "paper", "ours (interval, n)", "comparison and test", "outcome", "why"], out, "claims")


# ----------------------------------------------------------------------------- the roll-up


def _count_cells(counts: dict, tag: str = "td") -> str:
    return "".join(f'<{tag} class="num">{counts[c] or ("0" if tag == "th" else "")}</{tag}>' for c in COLUMNS)


def rollup(sections: list[tuple[dict, object]], anchors: list[str]) -> str:
    """The papers' headline results first (claims per outcome, magnitude apart), then their other
    claims per kind; each paper's experiments linked."""
    papers: dict[str, dict] = {}
    for (s, _), anchor in zip(sections, anchors):
        if not s.get("claims"):
            continue
        p = papers.setdefault(s.get("paper_id") or "", {"rows": [], "links": []})
        p["rows"] += s["claims"]
        p["links"].append(f'<a href="#{esc(anchor)}">{esc(s["experiment"])}</a>')
    if not papers:
        return ""

    def name(pid: str) -> str:
        return f"{pid}: {PAPER_NAMES.get(pid, '')}".strip(": ")

    head_rows, other_rows = [], []
    all_head, all_other = [], []
    for pid in sorted(papers):
        p = papers[pid]
        heads = [r for r in p["rows"] if kind_of(r) == "headline"]
        all_head += heads
        label = f"<td>{esc(name(pid))}<br>{' '.join(p['links'])}</td>"
        head_rows.append(f"<tr>{label}{_count_cells(tally(heads))}</tr>")
        for kind in [*[k for k in KINDS if k != "headline"], NO_KIND]:
            rows = [r for r in p["rows"] if kind_of(r) == kind]
            if rows:
                all_other += rows
                other_rows.append(f"<tr><td>{esc(name(pid))}: {esc(kind)}</td>{_count_cells(tally(rows))}</tr>")
    head_rows.append(f"<tr><th>all papers</th>{_count_cells(tally(all_head), 'th')}</tr>")
    other_rows.append(f"<tr><th>all papers</th>{_count_cells(tally(all_other), 'th')}</tr>")
    return (
        "<h2>Headline results by paper</h2>"
        '<p class="meta">The results each paper states as its contribution. "In magnitude" counts the rows whose '
        "interval (on every point, for a claim on every point) lies inside the magnitude band the claim "
        "declares, apart from the direction.</p>"
        + _table(["paper", *COLUMNS], head_rows, "rollup")
        + "<h3>Findings, premises and conjectures by paper</h3>"
        '<p class="meta">Counted apart from the headline results: a premise the machine meets is not a reproduced '
        "result.</p>" + _table(["paper: kind", *COLUMNS], other_rows, "rollup")
    )


def legend() -> str:
    outcomes = "".join(
        f'<li><span class="verdict v-{cls}">{esc("reproduced in direction" if v == "reproduced" else v)}</span>: '
        f"{esc(text)}</li>"
        for v, (cls, text) in OUTCOMES.items()
    )
    mags = "".join(f"<li><strong>{esc(m)}</strong>: {esc(t)}</li>" for m, t in MAGNITUDES.items())
    kinds = "".join(f"<li><strong>{esc(k)}</strong>: {esc(t)}</li>" for k, t in KINDS.items())
    return (
        '<p class="meta">Outcomes (one engine decides every claim: analysis/verdicts.py; docs/verdicts.md):</p>'
        f'<ul class="meta">{outcomes}</ul>'
        '<p class="meta">Magnitude, judged apart from the direction where a claim declares the paper\'s '
        f'magnitude as a band:</p><ul class="meta">{mags}</ul>'
        f'<p class="meta">Kinds of claim:</p><ul class="meta">{kinds}</ul>'
    )

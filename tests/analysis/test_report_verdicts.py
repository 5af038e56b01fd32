"""The report's verdicts on hand-made rows (analysis.report_verdicts): headline results counted
apart from findings, premises and conjectures; reproduced in direction and in magnitude apart;
not run in this profile its own count; each row's kind and stand-ins shown; the legend."""

import json
import re

from analysis import report
from analysis import report_verdicts as rv


def row(cid, outcome, kind=None, magnitude=None, stand_ins=()):
    return {
        "claim": cid,
        "paper": "001",
        "says": f"claim {cid}",
        "definition": "",
        "paper_value": None,
        "source": "Sec. 5",
        "quote": "the paper's words",
        "stand_ins": list(stand_ins),
        "kind": kind,
        "magnitude": magnitude,
        "effect": "m: a / b",
        "test": "95 % t-interval",
        "estimate": None,
        "ci_low": None,
        "ci_high": None,
        "level": 0.95,
        "n": 3,
        "measured": "ratio 0.9 [0.8, 0.95], n = 3",
        "outcome": outcome,
        "in_magnitude": None,
        "why": "because",
        "reps_needed": None,
        "look": 1,
        "looks": 1,
        "runs": [],
    }


ROWS = [
    row("h1", "reproduced", "headline", "in magnitude"),
    row("h2", "reproduced", "headline", "not in magnitude"),
    row("h3", "reproduced", "headline"),
    row("h4", "contradicted", "headline", "not in magnitude"),
    row("h5", rv.NOT_RUN, "headline"),
    row("f1", "reproduced", "finding", "magnitude undecided"),
    row("f2", "inconclusive", "finding"),
    row("p1", "reproduced", "premise"),
    row("c1", "not measurable here", "conjecture"),
    row("x1", "failed"),
]


def section(rows, pid="001", name="mpl_sweep"):
    return {"experiment": name, "paper_id": pid, "claims": rows}


def test_tally_counts_direction_and_magnitude_apart():
    t = rv.tally([r for r in ROWS if r["kind"] == "headline"])
    assert t["claims"] == 5
    assert t["reproduced in direction"] == 3
    assert t["in magnitude"] == 1 and t["not in magnitude"] == 2 and t["magnitude undecided"] == 0
    assert t["contradicted"] == 1 and t[rv.NOT_RUN] == 1 and t["inconclusive"] == 0


def test_not_run_has_its_own_count_never_inconclusive():
    t = rv.tally([row("a", rv.NOT_RUN), row("b", "inconclusive")])
    assert t[rv.NOT_RUN] == 1 and t["inconclusive"] == 1


def rollup_rows(html, title):
    """{first cell: [counts]} of the roll-up table after TITLE."""
    table = html.split(title, 1)[1].split("</table>", 1)[0]
    out = {}
    for tr in re.findall(r"<tr>(.*?)</tr>", table, re.S)[1:]:
        cells = re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", tr, re.S)
        out[re.sub(r"<br>.*", "", cells[0])] = [int(c) if c else 0 for c in cells[1:]]
    return out


def test_the_rollup_leads_with_headline_results_per_paper():
    html = rv.rollup([(section(ROWS), None), (section([row("a", "reproduced", "headline")], "002", "aioli"), None)],
                     ["a1", "a2"])  # fmt: skip
    assert html.index("Headline results by paper") < html.index("Findings, premises and conjectures")
    heads = rollup_rows(html, "Headline results by paper")
    col = {c: i for i, c in enumerate(rv.COLUMNS)}
    p1 = heads["001: contention-aware MPI coscheduling"]
    assert p1[col["claims"]] == 5 and p1[col["reproduced in direction"]] == 3 and p1[col["in magnitude"]] == 1
    assert p1[col[rv.NOT_RUN]] == 1
    assert heads["all papers"][col["claims"]] == 6 and heads["all papers"][col["reproduced in direction"]] == 4
    others = rollup_rows(html, "Findings, premises and conjectures by paper")
    assert others["001: contention-aware MPI coscheduling: finding"][col["claims"]] == 2
    assert others["001: contention-aware MPI coscheduling: premise"][col["reproduced in direction"]] == 1
    assert others["001: contention-aware MPI coscheduling: conjecture"][col["not measurable here"]] == 1
    assert others["001: contention-aware MPI coscheduling: " + rv.NO_KIND][col["failed"]] == 1
    # a premise reproduced is not a headline result reproduced
    assert others["all papers"][col["reproduced in direction"]] == 2
    assert '<a href="#a1">mpl_sweep</a>' in html


def test_a_row_shows_its_kind_stand_ins_and_magnitude():
    r = row("h1", "reproduced", "headline", "in magnitude", ["network namespaces joined by veth links"])
    html = rv.render_claims([r])
    assert '<span class="kind kind-headline">headline</span>claim h1' in html
    assert "Rests on: network namespaces joined by veth links" in html
    assert 'reproduced in direction<br><span class="mag-in">in magnitude</span>' in html
    assert rv.outcome_text(r) == "reproduced in direction; in magnitude"
    assert "Rests on" not in rv.render_claims([row("f2", "inconclusive")])


def test_the_legend_names_every_outcome_magnitude_and_kind():
    text = rv.legend()
    for word in [*rv.OUTCOMES, *rv.MAGNITUDES, *rv.KINDS]:
        assert (word if word != "reproduced" else "reproduced in direction") in text
    assert "physical NICs with their own interrupts" in text and "sockets" in text


def write_section(folder, rows):
    folder.mkdir(parents=True)
    doc = {
        "experiment": "demo",
        "paper_id": "001",
        "title": "Demo",
        "paper": "A paper.",
        "summary": "s",
        "figures": [],
        "claims": rows,
        "tables": [],
        "missing": [],
        "runs": [],
        "notes": [],
    }
    (folder / "section.json").write_text(json.dumps(doc))
    return folder / "section.json"


def test_a_report_of_such_rows_validates_and_renders(tmp_path):
    rows = [
        row("h1", "reproduced", "headline", "in magnitude", ["tmpfs standing in for persistent memory"]),
        row("n1", rv.NOT_RUN, "finding"),
    ]
    path = write_section(tmp_path / "s", rows)
    out = report.write_report([path], tmp_path / "r.html", "T")
    html = out.read_text()
    assert "Headline results by paper" in html and "tmpfs standing in for persistent memory" in html
    assert '<td class="verdict v-notrun">not run in this profile</td>' in html
    assert json.loads(path.read_text())["claims"][1]["outcome"] == rv.NOT_RUN


def test_a_section_counts_its_claims_by_kind():
    assert rv.kinds_text(ROWS) == "10 claims: 5 headline, 2 finding, 1 premise, 1 conjecture, 1 no kind declared."
    assert rv.kinds_text([]) == "0 claims."

"""corun verdicts show / diff on hand-made campaigns: results folders and an archive file."""

import io
import json
import subprocess
import tarfile

import pytest

from analysis import campaign_verdicts as cv
from corun.errors import ConfigError


def row(claim, outcome, estimate=None, paper="001"):
    return {
        "claim": claim,
        "outcome": outcome,
        "estimate": estimate,
        "ci_low": None if estimate is None else estimate * 0.9,
        "ci_high": None if estimate is None else estimate * 1.1,
        "n": 3,
        "paper": paper,
    }


def campaign(root, rows_by_exp):
    for exp, rows in rows_by_exp.items():
        d = root / exp / "analysis"
        d.mkdir(parents=True)
        (d / "section.json").write_text(json.dumps({"experiment": exp, "claims": rows}))
        look = root / exp / "looks" / "1" / "analysis"  # a look's section is not the campaign's
        look.mkdir(parents=True)
        (look / "section.json").write_text(json.dumps({"experiment": exp, "claims": [row("zz", "failed")]}))
    return root


def test_show_counts_claims_per_outcome_per_paper(tmp_path):
    a = campaign(
        tmp_path / "a",
        {
            "mpl_sweep": [row("x", "reproduced", 0.8), row("y", "inconclusive")],
            "sais": [row("z", "not measurable here", paper="004")],
        },
    )
    c = cv.load(a)
    assert set(c) == {("mpl_sweep", "x"), ("mpl_sweep", "y"), ("sais", "z")}
    assert cv.counts(c)["001"]["reproduced"] == 1 and cv.counts(c)["004"]["not measurable here"] == 1
    text = cv.show_text(["a"], [c])
    assert "paper 001: reproduced 1, inconclusive 1" in text and "paper 004: not measurable here 1" in text


def test_diff_lists_changed_claims_flips_and_moves(tmp_path):
    a = campaign(
        tmp_path / "a",
        {"e": [row("x", "reproduced", 0.8), row("y", "inconclusive", 1.0), row("same", "contradicted", 1.3)]},
    )
    b = campaign(
        tmp_path / "b",
        {"e": [row("x", "contradicted", 1.2), row("y", "reproduced", 0.9), row("same", "contradicted", 1.31)]},
    )
    d = cv.diff([cv.load(a), cv.load(b)])
    assert d["claims"] == 3 and [k for k, _ in d["changed"]] == [("e", "x"), ("e", "y")]
    assert d["flips"] == [("e", "x")] and d["moves"] == [("e", "y")]
    text = cv.diff_text(["a", "b"], [cv.load(a), cv.load(b)])
    assert "e.x:\n  a: reproduced (0.8 [0.72, 0.88], n 3)\n  b: contradicted" in text
    assert "flipped between reproduced and contradicted: 1 (e.x)" in text
    assert "moved between a decided outcome and inconclusive: 1 of 3 (33.3 %)" in text


def test_an_archive_file_is_a_campaign(tmp_path):
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        data = json.dumps({"experiment": "e", "claims": [row("x", "reproduced", 0.8)]}).encode()
        ti = tarfile.TarInfo("campaign-1/results/e/analysis/section.json")
        ti.size = len(data)
        tar.addfile(ti, io.BytesIO(data))
    path = tmp_path / "campaign-1.tar.gz"
    path.write_bytes(buf.getvalue())
    assert cv.load(path)[("e", "x")]["outcome"] == "reproduced"


def test_bad_campaigns_are_one_line(tmp_path, repo_root):
    with pytest.raises(ConfigError, match="expected a results folder, an extracted archive or an archive"):
        cv.load(tmp_path / "nope")
    (tmp_path / "empty").mkdir()
    with pytest.raises(ConfigError, match="a campaign whose sections judge claims"):
        cv.load(tmp_path / "empty")
    res = subprocess.run(
        [str(repo_root / ".venv/bin/corun"), "verdicts", "diff", str(tmp_path / "empty")],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 2 and res.stderr.count("\n") == 1 and "CAMPAIGN" in res.stderr


def test_show_puts_headline_results_first_with_magnitude_apart(tmp_path):
    rows = [
        {**row("h1", "reproduced", 0.8), "kind": "headline", "magnitude": "in magnitude"},
        {**row("h2", "reproduced", 0.9), "kind": "headline", "magnitude": "not in magnitude"},
        {**row("h3", "not run in this profile"), "kind": "headline"},
        {**row("p1", "reproduced", 0.7), "kind": "premise"},
    ]
    text = cv.show_text(["a"], [cv.load(campaign(tmp_path / "a", {"mpl_sweep": rows}))])
    lines = text.splitlines()
    assert lines[1] == "  paper 001: reproduced 3, not run in this profile 1"
    assert lines[2] == (
        "    headline (3): reproduced in direction 2, in magnitude 1, not in magnitude 1, not run in this profile 1"
    )
    assert lines[3] == "    premise (1): reproduced in direction 1"

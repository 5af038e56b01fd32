"""The paper profile measures the papers' figure points: every run it plans names a figure (or
section) of its paper that it serves (the campaign plan's `figures`, from each experiment's
`figures` in profiles/paper.yaml; corun/plan/figures.py), and every figure named is one the paper
has. The papers' figure lists are their captions (paper 000: "Fig.1." to "Fig.24.", Tables 1-3;
paper 001: "Fig. 1" to "Fig. 11", Tables 1-3; paper 004: Figures 1-14, its captions and the
text's "In Figure 9" and "Figure 14 shows"); where the papers' texts are beside the repository
(analysis.claim_quotes.PAPERS_TEXT) each named figure is also found in its paper's text."""

import re
from pathlib import Path

import pytest
import yaml

from analysis import claim_quotes
from experiments import campaign, registry
from experiments.config import experiments_with_runs, validate_config

REPO = Path(__file__).resolve().parent.parent

FIGURES = {
    "000": {*(f"Fig. {i}" for i in range(1, 25)), "Table 1", "Table 2", "Table 3"},
    "001": {*(f"Fig. {i}" for i in range(1, 12)), "Table 1", "Table 2", "Table 3"},
    "004": {f"Fig. {i}" for i in range(1, 15)},
}
# results the papers state in the text of a numbered section, with no figure: the heading
SECTIONS = {
    "000": {"Sec. 3.5": "3.5 Scheduling Overheads"},
    "004": {"Sec. 5.3": "5.3 Bandwidth Comparison"},
}
# papers with no numbered figures: 002 is slides (titles only), 003 an extended abstract
NO_FIGURES = {"002", "003"}


def paper_of(name: str) -> str:
    return str(yaml.safe_load((REPO / "experiments" / name / "claims.yaml").read_text())["paper"])


def paper_config(**sections) -> dict:
    raw = yaml.safe_load((REPO / "workflows" / "config" / "paper.yaml").read_text())
    raw.update(plan_for="2x8", nodes=16)
    for name, over in sections.items():
        raw[name] = over
    return validate_config(raw, "workflows/config/paper.yaml")


@pytest.fixture(scope="module")
def plan() -> dict:
    cfg = paper_config()
    return campaign.build(cfg, registry(), experiments_with_runs(cfg))


def test_every_paper_run_names_a_figure_of_its_paper(plan):
    assert plan["runs"], "the paper profile plans no runs"
    campaign.text(plan)  # the plan's schema holds each run's figures
    for name, exp_plan in plan["runs"].items():
        paper = paper_of(name)
        known = FIGURES.get(paper, set()) | set(SECTIONS.get(paper, {}))
        for run in exp_plan["runs"]:
            if paper in NO_FIGURES:
                assert run["figures"] == [], (name, run["name"])
                continue
            assert run["figures"], f"{name}: run {run['name']} names no figure"
            assert set(run["figures"]) <= known, (name, run["name"], run["figures"])


def test_every_figure_of_the_profile_serves_a_run(plan):
    """Except sais's Fig. 12, whose matrix is a file of its own (below)."""
    for name, exp_plan in plan["runs"].items():
        named = set(plan["config"][name].get("figures") or {})
        served = {f for r in exp_plan["runs"] for f in r["figures"]}
        assert named - served <= ({"Fig. 12"} if name == "sais" else set()), (name, named - served)


def test_the_paper_profile_cuts_the_matrix_to_the_figures(plan):
    """The points the figures show, not the crossing of the axes: mpl_sweep runs MPL 3 for WL6
    under heavy load only (Figs. 10-11), WL1-WL5 at MPL 5 only (Fig. 9)."""
    runs = [r["name"] for r in plan["runs"]["mpl_sweep"]["runs"]]
    assert not [r for r in runs if "_mpl3_" in r and not r.startswith("wl6_heavy_")]
    assert not [r for r in runs if r.startswith(("wl1", "wl2", "wl3", "wl4", "wl5")) and "_mpl5_" not in r]
    assert {r for r in runs if "_mpl3_" in r}, "Fig. 10's MPL 3 runs"


def test_sais_fig12_matrix_names_fig12():
    cfg = paper_config(
        sais={
            "servers": [8],
            "client_hosts": [4, 8, 16, 32, 56],
            "client_links": [3],
            "transfer_sizes_bytes": [1048576],
            "clients": [1],
        }
    )
    figures = registry()["sais"].run_figures(cfg)
    reads = {r: f for r, f in figures.items() if not r.startswith("pm_")}
    assert reads and all(f == ["Fig. 12"] for f in reads.values()), reads
    assert all(f == ["Fig. 14"] for r, f in figures.items() if r.startswith("pm_"))


def found_in(text: str, figure: str) -> bool:
    kind, num = figure.split(" ")
    if kind == "Table":
        return re.search(rf"Table {num}\b", text) is not None
    return re.search(rf"(Fig\.|Figure) ?{num}\b", text) is not None


@pytest.mark.skipif(not claim_quotes.PAPERS_TEXT.is_dir(), reason="no papers' texts beside the repository")
@pytest.mark.parametrize("paper", sorted(FIGURES))
def test_the_figure_lists_are_the_papers(paper):
    text = claim_quotes.paper_text(paper)
    assert text is not None
    assert not [f for f in FIGURES[paper] if not found_in(text, f)]
    assert not [h for h in SECTIONS.get(paper, {}).values() if h not in text]
    later = int(max(FIGURES[paper] - {"Table 1", "Table 2", "Table 3"}, key=lambda f: int(f.split()[1])).split()[1])
    assert not found_in(text, f"Fig. {later + 1}"), "the list misses a figure"

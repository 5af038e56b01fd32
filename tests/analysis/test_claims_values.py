"""The papers' values as the claims files declare them (experiments/<name>/claims.yaml, the papers'
citations in experiments/_papers/): loaded, checked, one-line errors."""

from pathlib import Path

import pytest

from analysis.claims import load_claims
from analysis.common import AnalysisInputError

REPO = Path(__file__).resolve().parents[2]
PAPERS = REPO / "experiments" / "_papers"


def test_paper_000_sensitivity_values():
    cs = load_claims(REPO / "experiments/sensitivity_ranking/claims.yaml", "sensitivity_ranking", PAPERS)
    assert {name: item["value"] for name, item in cs.values.items()} == {
        "n_groups": 12,
        "demand_min_mb_s": 1.5,
        "demand_max_mb_s": 26.4,
        "no_degradation_below_mb_s": 5.63,
        "highest_group_onset_k": 2,
        "k_max": 8,
        "io_bound_interval_mb_s": 40,
    }
    for item in [*cs.values.values(), *cs.claims.values()]:
        assert item["source"].startswith("Sec. ") and len(item["quote"]) > 20
    assert "40Mbytes/s" in cs.values["io_bound_interval_mb_s"]["quote"]
    assert cs.values["io_bound_interval_mb_s"]["source"] == "Sec. 3.4.2"
    assert cs.paper == "000" and cs.citation.startswith("Lu F")


def test_a_claims_value_is_what_its_claim_shows():
    cs = load_claims(REPO / "experiments/sais/claims.yaml", "sais", PAPERS)
    c = cs.claims["speedup_3gbe_mark"]
    assert c["paper_value"] == 23.57 and "48 servers" in c["paper_unit"] and "23.57%" in c["quote"]


def claims_error(tmp_path, text):
    """The error load_claims raises on a claims file holding TEXT (shown as experiments/e/claims.yaml)."""
    p = tmp_path / "claims.yaml"
    p.write_text(text)
    with pytest.raises(AnalysisInputError) as err:
        load_claims(p, "e", PAPERS, shown="experiments/e/claims.yaml")
    return str(err.value)


def test_unknown_paper_is_one_line_error(tmp_path):
    msg = claims_error(tmp_path, 'paper: "999"\ntitle: t\nfigure: f\n')
    assert "\n" not in msg and msg.startswith("experiments/e/claims.yaml: paper: '999' (expected a paper of _papers/")
    assert "000" in msg and "004" in msg


def test_value_without_quote_names_the_key(tmp_path):
    msg = claims_error(
        tmp_path, 'paper: "000"\ntitle: T\nfigure: F\nvalues:\n  v:\n    value: 1\n    unit: s\n    source: Sec. 1\n'
    )
    assert "\n" not in msg and msg.startswith("experiments/e/claims.yaml: values.v") and "quote" in msg

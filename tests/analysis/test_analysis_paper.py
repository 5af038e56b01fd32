"""The paper's published values file and its loader."""

import pytest

from analysis import paper as paper_mod
from analysis.common import AnalysisInputError
from analysis.paper import experiment_values, load_paper_values


def test_paper_000_sensitivity_values():
    exp = experiment_values(load_paper_values("000"), "sensitivity_ranking")
    got = {name: item["value"] for name, item in exp["values"].items()}
    assert got == {
        "n_groups": 12,
        "demand_min_mb_s": 1.5,
        "demand_max_mb_s": 26.4,
        "no_degradation_below_mb_s": 5.63,
        "highest_group_onset_k": 2,
        "k_max": 8,
        "io_bound_interval_mb_s": 40,
    }
    for item in [*exp["values"].values(), *exp["claims"].values()]:
        assert item["source"].startswith("Sec. ") and len(item["quote"]) > 20
    assert "40Mbytes/s" in exp["values"]["io_bound_interval_mb_s"]["quote"]
    assert exp["values"]["io_bound_interval_mb_s"]["source"] == "Sec. 3.4.2"


def test_unknown_paper_is_one_line_error():
    with pytest.raises(AnalysisInputError, match=r"paper_id: '999' \(expected one of .*000"):
        load_paper_values("999")


def test_unknown_experiment_is_one_line_error():
    with pytest.raises(AnalysisInputError, match=r"experiments\.nope: absent"):
        experiment_values(load_paper_values("000"), "nope")


def test_value_without_quote_names_the_key(tmp_path, monkeypatch):
    (tmp_path / "000.yaml").write_text(
        'paper_id: "000"\ncitation: X\nexperiments:\n  e:\n    title: T\n    figure: F\n'
        "    values:\n      v:\n        value: 1\n        unit: s\n        source: Sec. 1\n"
    )
    monkeypatch.setattr(paper_mod, "PAPER_VALUES_DIR", tmp_path)
    with pytest.raises(AnalysisInputError) as err:
        load_paper_values("000")
    assert str(err.value) == (
        "analysis/paper_values/000.yaml: experiments.e.values.v.quote: 'missing' "
        "(expected a value for this required key)"
    )

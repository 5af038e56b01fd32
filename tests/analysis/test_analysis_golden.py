"""The sensitivity analysis of the fixture data, pinned against checked-in output."""

import json
from pathlib import Path

from analysis import report, sensitivity

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "analysis" / "sensitivity"


def test_fixture_analysis_matches_golden(tmp_path):
    out = tmp_path / "out"
    code = sensitivity.main(
        [
            "--jobs",
            str(FIXTURES / "jobs.csv"),
            "--runs",
            str(FIXTURES / "runs.csv"),
            "--tol-pct",
            "5",
            "--out-dir",
            str(out),
        ]
    )
    assert code == 0
    assert (out / "degradation.csv").read_bytes() == (
        FIXTURES / "golden" / "degradation.csv"
    ).read_bytes()
    assert (out / "fig14_degradation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    thr = json.loads((out / "threshold.json").read_text())
    assert thr["no_degradation_demand_mb_s"] == 2.1
    assert thr["suggested_io_bound_interval_mb_s"] == 4.2
    assert thr["expected_threshold_from_cap_mb_s"] == 5.0
    assert thr["onset_k"] == {"0": None, "1": 2, "2": 2, "3": None, "4": 2}

    section = report.load_section(out / "section.json")  # valid against the schema
    assert section["figures"][0]["path"] == "fig14_degradation.png"
    assert [m["runs"] for m in section["missing"]] == [20, 10]
    assert len(section["runs"]) == 20
    text = (out / "section.json").read_text() + (out / "threshold.json").read_text()
    assert str(tmp_path) not in text and str(FIXTURES) not in text  # no machine paths

    html = tmp_path / "report.html"
    report.write_report([out / "section.json"], html, "Fixture report")
    assert "data:image/png;base64," in html.read_text()

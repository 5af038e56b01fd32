"""The sensitivity analysis of the fixture data, pinned against checked-in output."""

import json
from pathlib import Path

import pytest

from analysis import report
from experiments.sensitivity_ranking import analysis as sensitivity

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sensitivity"
CONTROL_FIXTURES = FIXTURES.parent / "sensitivity_control"
EXCESS_COLUMNS = [
    "control_degradation_pct",
    "excess_degradation_pct",
    "excess_ci95_low_pct",
    "excess_ci95_high_pct",
    "excess_ci_method",
    "degraded_excess",
]


def run_cli(fixtures: Path, out: Path) -> int:
    return sensitivity.main(
        [
            "--jobs",
            str(fixtures / "jobs.csv"),
            "--runs",
            str(fixtures / "runs.csv"),
            "--tol-pct",
            "5",
            "--out-dir",
            str(out),
        ]
    )


def test_fixture_analysis_matches_golden(tmp_path):
    out = tmp_path / "out"
    code = run_cli(FIXTURES, out)
    assert code == 0
    assert (out / "degradation.csv").read_bytes() == (FIXTURES / "golden" / "degradation.csv").read_bytes()
    assert (out / "fig14_degradation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    thr = json.loads((out / "threshold.json").read_text())
    assert thr["no_degradation_demand_mb_s"] == 2.1
    assert thr["suggested_io_bound_interval_mb_s"] == 4.2
    assert thr["expected_threshold_from_cap_mb_s"] == 5.0
    assert thr["onset_k"] == {"0": None, "1": 2, "2": 2, "3": None, "4": 2}
    # no compute-only control: raw basis, the control and excess columns stay empty
    assert (thr["basis"], thr["control_group"], thr["control"]) == ("raw degradation", None, None)
    lines = (out / "degradation.csv").read_text().splitlines()
    assert lines[0].split(",")[-7:-1] == EXCESS_COLUMNS
    assert all(line.split(",")[-7:-1] == [""] * 6 for line in lines[1:3])

    section = report.load_section(out / "section.json")  # valid against the schema
    assert section["figures"][0]["path"] == "fig14_degradation.png"
    assert [m["runs"] for m in section["missing"]] == [20, 10]
    assert len(section["runs"]) == 20
    text = (out / "section.json").read_text() + (out / "threshold.json").read_text()
    assert str(tmp_path) not in text and str(FIXTURES) not in text  # no machine paths
    assert "control" not in section["summary"] and "Basis:" not in text

    html = tmp_path / "report.html"
    report.write_report([out / "section.json"], html, "Fixture report")
    assert "data:image/png;base64," in html.read_text()


def test_control_fixture_matches_golden(tmp_path):
    out = tmp_path / "out"
    assert run_cli(CONTROL_FIXTURES, out) == 0
    assert (out / "degradation.csv").read_bytes() == (CONTROL_FIXTURES / "golden" / "degradation.csv").read_bytes()

    thr = json.loads((out / "threshold.json").read_text())
    assert (thr["basis"], thr["control_group"]) == ("excess over control", 0)
    assert thr["no_degradation_demand_mb_s"] == 4.0
    assert thr["suggested_io_bound_interval_mb_s"] == 8.0
    assert thr["onset_k"] == {"1": None, "2": None, "3": 2, "4": 2}
    assert thr["control"]["by_k"][1]["degradation_pct"] == pytest.approx(30.0)

    section = report.load_section(out / "section.json")
    stacking = "degrades 30 % (95% CI 25 to 35 %) at k = 2: stacking CMPs on this machine costs"
    assert stacking in section["summary"] and any(stacking in n for n in section["notes"])
    assert "basis: excess over control" in section["summary"]
    assert all("Basis: excess over control" in row["note"] for row in section["comparison"])
    assert "Dashed black curve: control (compute only)" in section["figures"][0]["caption"]

    html = tmp_path / "report.html"
    report.write_report([out / "section.json"], html, "Fixture report")
    assert "stacking CMPs on this machine costs" in html.read_text()

"""The sensitivity analysis of the fixture runs end to end (read_inputs, analyse, write), pinned
against checked-in output, its claims judged by the engine."""

import json
from pathlib import Path

import pandas as pd
import pytest

from analysis import report
from analysis.common import AnalysisInputError
from analysis.experiment import read_inputs, write
from experiments import PAPERS_DIR
from experiments.sensitivity_ranking import analysis as sensitivity
from experiments.sensitivity_ranking import metrics

FOLDER = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "sensitivity"
CONTROL_FIXTURES = FIXTURES.parent / "sensitivity_control"
# The control fixture has 3 reps: its value claims' intervals exclude the null (or lie inside the
# margin), but 3 pairs are too few for the engine's exact sign-flip test (6 at 2.5 %): such rows
# are inconclusive, the side their interval shows in the comments.


def analyse_dir(fixtures: Path, out: Path, runs_csv: Path | None = None, config: dict | None = None):
    runs_csv = runs_csv or fixtures / "runs.csv"
    inputs = read_inputs("sensitivity_ranking", FOLDER, PAPERS_DIR, fixtures / "jobs.csv", runs_csv,
                         job_text=sensitivity.JOB_TEXT, run_text=sensitivity.RUN_TEXT, config=config)  # fmt: skip
    return write(out, inputs, sensitivity.analyse(inputs))


def test_fixture_analysis_matches_golden(tmp_path):
    out = tmp_path / "out"
    section = analyse_dir(FIXTURES, out)
    assert (out / "degradation.csv").read_bytes() == (FIXTURES / "golden" / "degradation.csv").read_bytes()
    assert (out / "fig14_degradation.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"

    thr = json.loads((out / "threshold.json").read_text())
    assert thr["no_degradation_demand_mb_s"] == 2.1
    assert thr["suggested_io_bound_interval_mb_s"] == 4.2
    assert thr["expected_threshold_from_cap_mb_s"] == 5.0
    assert thr["onset_k"] == {"0": None, "1": 2, "2": 2, "3": None, "4": 2}
    assert "trends" not in thr  # the engine judges the trends
    # no compute-only control: raw basis, the control and excess columns stay empty
    assert (thr["basis"], thr["control_group"], thr["control"]) == ("raw degradation", None, None)
    lines = (out / "degradation.csv").read_text().splitlines()
    assert lines[0].split(",")[-7:-1] == metrics.EXCESS_COLUMNS
    assert all(line.split(",")[-7:-1] == [""] * 6 for line in lines[1:3])

    loaded = report.load_section(out / "section.json")  # valid against the schema
    assert loaded["figures"][0]["path"] == "fig14_degradation.png"
    assert [m["runs"] for m in loaded["missing"]] == [20, 10]
    assert len(loaded["runs"]) == 20
    text = (out / "section.json").read_text() + (out / "threshold.json").read_text()
    assert str(tmp_path) not in text and str(FIXTURES) not in text  # no machine paths
    assert "control" not in loaded["summary"]
    # a job failed in runs of groups 2, 3 and 4 (and group 3 has no valid k = 1 run): failed, named
    rows = {c["claim"]: c for c in section["claims"]}
    got = {cid: r["outcome"] for cid, r in rows.items()}
    assert got == {
        "degradation_rises_with_demand": "failed",
        "onset_falls_with_demand": "failed",
        "low_demand_not_degraded": "inconclusive",  # group 0 (2.1 MB/s), 2 reps: 1.01 [0.94, 1.09]
        "highest_demand_degrades_at_2c": "failed",
        "compute_only_not_degraded": "inconclusive",  # no control group: nothing measured
    }
    assert rows["degradation_rises_with_demand"]["runs"] == ["g2-k2-r1", "g3-k2-r0", "g3-k2-r1", "g4-k2-r1"]
    assert "its k = 1 run g3-k1-r0" in rows["degradation_rises_with_demand"]["why"]
    assert rows["low_demand_not_degraded"]["reps_needed"] == 5

    html = tmp_path / "report.html"
    report.write_report([out / "section.json"], html, "Fixture report")
    assert "data:image/png;base64," in html.read_text()


def test_control_fixture_matches_golden(tmp_path):
    out = tmp_path / "out"
    section = analyse_dir(CONTROL_FIXTURES, out)
    assert (out / "degradation.csv").read_bytes() == (CONTROL_FIXTURES / "golden" / "degradation.csv").read_bytes()

    thr = json.loads((out / "threshold.json").read_text())
    assert (thr["basis"], thr["control_group"]) == ("excess over control", 0)
    assert thr["no_degradation_demand_mb_s"] == 4.0
    assert thr["suggested_io_bound_interval_mb_s"] == 8.0
    assert thr["onset_k"] == {"1": None, "2": None, "3": 2, "4": 2}
    assert thr["control"]["by_k"][1]["degradation_pct"] == pytest.approx(30.0)

    loaded = report.load_section(out / "section.json")
    stacking = "degrades 30 % (95% CI 25 to 35 %) at k = 2, its interval above the 5 % tolerance"
    assert stacking in loaded["summary"] and any(stacking in n for n in loaded["notes"])
    assert "basis: excess over control" in loaded["summary"]
    assert "Dashed black curve: control (compute only)" in loaded["figures"][0]["caption"]

    rows = {c["claim"]: c for c in section["claims"]}
    got = {cid: r["outcome"] for cid, r in rows.items()}
    expected = {
        # per rep over the control's: groups 2, 4, 8, 12 MB/s at 1.0, 1.0-1.18, 1.38, 1.62
        "degradation_rises_with_demand": "reproduced",
        "onset_falls_with_demand": "reproduced",  # K = 2: the same trend at k = 2
        # the lowest-demand group (1, 2 MB/s) within 5 %; group 2 (4 MB/s, 1.07 [0.875, 1.32])
        # lies below the paper's 5.63 MB/s too, but that number is its disk's: not read
        "low_demand_not_degraded": "inconclusive",  # inside the margin, on 3 pairs
        "highest_demand_degrades_at_2c": "inconclusive",  # 1.62, above 1.05, on 3 pairs
        # the control itself slows down by 1.3 [1.28, 1.32] at k = 2: outside the margin, on 3 pairs
        "compute_only_not_degraded": "inconclusive",
    }
    assert got == expected
    assert rows["highest_demand_degrades_at_2c"]["estimate"] == pytest.approx(21 / 13, abs=0.001)
    setup = pd.read_csv(out / "setup.csv").set_index("quantity")
    assert setup.filter(like="IO_BOUND_INTERVAL", axis=0)["this_run_value"].iloc[0] == 8.0

    html = tmp_path / "report.html"
    report.write_report([out / "section.json"], html, "Fixture report")
    assert "stacking CMPs on this machine costs time without any I/O" in html.read_text()


def test_tolerance_comes_from_the_configuration(tmp_path):
    section = analyse_dir(CONTROL_FIXTURES, tmp_path / "out", config={"sensitivity_ranking": {"tol_pct": 60}})
    thr = json.loads((tmp_path / "out" / "threshold.json").read_text())
    assert thr["tol_pct"] == 60 and thr["onset_k"] == {"1": None, "2": None, "3": None, "4": 2}
    # the claims keep their declared null and margin
    got = {c["claim"]: c for c in section["claims"]}["highest_demand_degrades_at_2c"]
    assert got["outcome"] == "inconclusive" and got["estimate"] == pytest.approx(21 / 13, abs=0.001)  # 3 pairs


def test_two_variants_are_one_line(tmp_path):
    runs = pd.read_csv(FIXTURES / "runs.csv")
    runs.loc[0, "variant"] = "io_aware"
    runs["metadata_path"] = [str(FIXTURES / p) for p in runs["metadata_path"]]
    runs.to_csv(tmp_path / "runs.csv", index=False)
    with pytest.raises(AnalysisInputError) as err:
        analyse_dir(FIXTURES, tmp_path / "out", runs_csv=tmp_path / "runs.csv")
    assert "\n" not in str(err.value) and "expected exactly one scheduler variant" in str(err.value)


def test_missing_metadata_is_one_line(tmp_path):
    runs = pd.read_csv(FIXTURES / "runs.csv")
    runs.loc[0, "metadata_path"] = "runs/nowhere/metadata.json"
    runs.to_csv(tmp_path / "runs.csv", index=False)
    with pytest.raises(AnalysisInputError) as err:
        analyse_dir(FIXTURES, tmp_path / "out", runs_csv=tmp_path / "runs.csv")
    assert "\n" not in str(err.value) and "expected a run's metadata.json" in str(err.value)

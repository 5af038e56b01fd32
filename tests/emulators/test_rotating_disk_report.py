"""The report section "the device" from a calibration JSON (fixture data, no disk needed)."""

import json
import subprocess
import sys
from pathlib import Path

import pandas as pd
import yaml

from analysis import rotating_disk as sec
from analysis.common import validate
from analysis.experiment import Result, mark_disk_failures
from tests.emulators.disk_helpers import calibration_check, qd1_latency_pass

REPO = Path(__file__).resolve().parents[2]


def calibration() -> dict:
    checks = [
        qd1_latency_pass(),
        calibration_check("completion lateness max", 5.0, None, "ms", "", "info"),
        calibration_check("4 readers aggregate", 49.0, 50.0, "MB/s", "below 1 reader", "PASS"),
        calibration_check("qd32 / qd1 random IOPS", 2.7, "1.5-2.5", "x", "1.5-2.5", "FAIL"),
    ]
    return {
        "preset": "sata_7200_2010",
        "loadavg_before": [1.0, 1, 1],
        "loadavg_after": [2.0, 1, 1],
        "device": {
            "preset": "sata_7200_2010",
            "model": {
                "params": {"seek_avg_ms": 8.5, "rate_outer_mb_s": 125.0},
                "derived": {"avg_rotational_latency_ms": 4.1667},
            },
        },
        "measured": {
            "qd1_random_4k": {"mean_latency_ms": 13.1, "iops": 76.0},
            "qd32_random_4k": {"iops": 160.0},
            "sequential_read": {"mb_s": 118.0},
            "readers": {"1": {"aggregate_mb_s": 106.0}, "2": {"aggregate_mb_s": 57.0}, "4": {"aggregate_mb_s": 49.0}},
            "counters": {"lateness_p99_ms": 0.8},
        },
        "checks": checks,
    }


def test_section_is_valid_and_has_the_curve(tmp_path):
    s = sec.analyse(calibration(), tmp_path)
    validate(s, "section.schema.json", "section.json")
    assert (tmp_path / "device.png").stat().st_size > 1000
    assert "1: 106 MB/s, 2: 57 MB/s, 4: 49 MB/s" in s["summary"]
    assert (tmp_path / "device.csv").read_text().startswith("check,")


def test_a_failed_check_fails_and_is_no_paper_verdict(tmp_path):
    """The old section called a check out of tolerance 'differs (machine-specific)', a paper
    verdict: a calibration check passes or fails against its tolerance, and the device has no
    claims."""
    s = sec.analyse(calibration(), tmp_path)
    assert "comparison" not in s and "claims" not in s
    passed = {c["check"]: c["passed"] for c in s["checks"]}
    assert passed == {"qd1 random 4k latency": True, "4 readers aggregate": True, "qd32 / qd1 random IOPS": False}
    qd1 = s["checks"][0]
    assert (qd1["measured"], qd1["expected"], qd1["tolerance"]) == ("13.1 ms", "12.7 ms", "+-10 %")
    assert "the prototype's figure" in s["checks"][1]["note"]
    assert "FAILED 1 of 3 checks: qd32 / qd1 random IOPS: measured 2.7 x" in s["summary"]
    assert sec.failures(calibration()) == ["qd32 / qd1 random IOPS: measured 2.7 x, expected 1.5-2.5 x (1.5-2.5)"]


def test_runs_on_a_disk_that_failed_its_calibration_are_named():
    metas = {
        "on_it": {"device_setup": {"kind": "rotating_disk", "preset": "sata_7200_2010"}},
        "other_preset": {"device_setup": {"kind": "rotating_disk", "preset": "sas_15k_2010"}},
        "plain_disk": {"device": {"name": "vda"}},
    }
    named = sec.failed_runs(calibration(), metas)
    assert list(named) == ["on_it"] and "failed its calibration: qd32 / qd1 random IOPS" in named["on_it"]
    good = calibration()
    good["checks"][3]["verdict"] = "PASS"
    assert sec.failed_runs(good, metas) == {}
    assert sec.failed_runs({"skipped": "needs root and fio"}, metas) == {}
    assert sec.failed_runs(None, metas) == {}


def test_bad_input_is_one_line(tmp_path):
    bad = tmp_path / "cal.json"
    bad.write_text(json.dumps({"measured": {}}))
    res = subprocess.run(
        [sys.executable, "-m", "analysis.rotating_disk", "--calibration", str(bad), "--out-dir", str(tmp_path / "o")],
        capture_output=True,
        text=True,
        cwd=REPO,
    )
    assert res.returncode == 2
    assert res.stderr.count("\n") == 1 and res.stderr.startswith("analysis.rotating_disk: calibration: missing")


def test_a_skipped_calibration_is_a_section_that_says_why(tmp_path):
    cal = {"bench": "rotating_disk_calibration", "skipped": "needs root and fio"}
    s = sec.analyse(cal, tmp_path)
    validate(s, "section.schema.json", "test")
    assert s["checks"] == [] and s["figures"] == []
    assert s["missing"][0]["reason"] == "needs root and fio"
    assert json.loads((tmp_path / "section.json").read_text())["summary"].startswith("Not measured")


def test_the_workflow_shows_the_device_section_only_when_asked(tmp_path):
    def plan(enabled):
        cfg = yaml.safe_load((REPO / "workflows" / "config" / "smoke.yaml").read_text())
        cfg.setdefault("report", {})["device"] = {"enabled": enabled}
        f = tmp_path / f"device_{enabled}.yaml"
        f.write_text(yaml.safe_dump(cfg))
        res = subprocess.run(
            [str(Path(sys.executable).parent / "snakemake"), "-n", "--profile", "workflows/profiles/smoke"]
            + ["all", "--configfile", str(f)],
            cwd=REPO,
            capture_output=True,
            text=True,
        )
        assert res.returncode == 0, res.stderr[-2000:]
        return res.stdout

    assert "calibrate_device" not in plan(False)
    assert "calibrate_device" in plan(True)


def test_every_experiment_fails_its_runs_on_a_disk_that_failed_calibration(tmp_path):
    """analysis.experiment marks them in every evidence table that names its runs, whatever the
    experiment: their claims say failed, the runs named."""
    path = tmp_path / "calibration.json"
    path.write_text(json.dumps(calibration()))
    runs = pd.DataFrame({"run_id": ["on_it", "plain_disk"], "t": [1.0, 2.0]})

    class Inputs:
        files = {"device_calibration": str(path)}
        metas = {
            "on_it": {"device_setup": {"kind": "rotating_disk", "preset": "sata_7200_2010"}},
            "plain_disk": {"device": {"name": "vda"}},
        }

    result = Result(summary=[], evidence={"runs": runs, "points": pd.DataFrame({"k": [1]})})
    mark_disk_failures(Inputs, result)
    table = result.evidence["runs"].set_index("run_id")
    assert bool(table.loc["on_it", "failed"]) and not bool(table.loc["plain_disk", "failed"])
    assert "failed its calibration" in table.loc["on_it", "failed_reason"]
    assert "failed" not in result.evidence["points"].columns  # no run named: left as it is
    assert result.notes[0].startswith("1 run(s) ran on an emulated disk that failed its calibration")

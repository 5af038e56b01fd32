"""docs/sample-report/: the committed sample report is what this code renders from the campaign
kept beside it (make sample-report makes both again)."""

import importlib.util
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "sample_report.py"
_spec = importlib.util.spec_from_file_location("sample_report", SCRIPT)
sample_report = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(sample_report)


def test_the_sample_is_small_and_keeps_no_raw_monitor_files():
    files = [p for p in (ROOT / "docs" / "sample-report").rglob("*") if p.is_file()]
    assert ROOT / "docs" / "sample-report" / "report.html" in files
    assert (ROOT / "docs" / "sample-report" / "campaign" / "plan.json") in files
    assert sum(p.stat().st_size for p in files) < 8 * 2**20
    assert not [p for p in files if "/monitors/" in str(p)]


def test_every_run_folder_the_kept_tables_name_is_kept_so_nothing_is_read_from_results():
    import csv

    kept = ROOT / "docs" / "sample-report" / "campaign"
    for runs_csv in kept.rglob("runs.csv"):
        with runs_csv.open(newline="") as fh:
            for row in csv.DictReader(fh):
                rel = row["run_dir"].split("/", 2)[2]  # results/smoke/<experiment>/runs/<run>
                assert (kept / rel / "metadata.json").is_file(), (runs_csv, rel)


def test_time_stamps_and_versions_are_set_aside():
    a = '<p class="meta">Generated 2026-01-01 10:00:00 UTC by corun 0.1.0.</p><dc:date>2026</dc:date>'
    b = '<p class="meta">Generated 2026-12-01 23:00:00 UTC by corun 0.2.0.</p><dc:date>2027</dc:date>'
    assert sample_report.normalised(a) == sample_report.normalised(b)
    assert sample_report.normalised(a) != sample_report.normalised(a.replace("<p", "<div"))


def test_the_committed_report_is_what_this_code_renders():
    res = subprocess.run([sys.executable, str(SCRIPT), "check"], cwd=ROOT, capture_output=True, text=True, timeout=900)
    assert res.returncode == 0, res.stdout[-3000:] + res.stderr[-2000:]

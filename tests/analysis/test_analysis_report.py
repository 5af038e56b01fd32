"""The generic HTML report, section schema and run metadata helpers."""

import base64
import json
import re
import shutil
from pathlib import Path

import pytest

from analysis import report, runmeta
from analysis.claims import load_claims
from analysis.common import AnalysisInputError
from analysis.verdicts import Machine, judge

REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "experiments/sensitivity_ranking/tests/fixtures/sensitivity"
CLAIMS = load_claims(
    REPO / "experiments/sensitivity_ranking/claims.yaml", "sensitivity_ranking", REPO / "experiments/_papers"
)
META = sorted((FIXTURES / "runs").glob("*/metadata.json"))
# the smallest valid PNG: 1 x 1 pixel
PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def write_section(folder: Path, **overrides) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "fig.png").write_bytes(PNG)
    (folder / "table.csv").write_text("name,value_s,reason\na,1.5,\nb,,no data\n")
    # a claim judged by the engine on one CMP: not measurable here, named, before any run
    row = judge("low_demand_not_degraded", CLAIMS.claims["low_demand_not_degraded"], {}, Machine({"cmps": 1}, {}))
    section = {
        "experiment": "demo",
        "paper_id": "000",
        "title": "Demo experiment",
        "paper": CLAIMS.citation,
        "summary": "A summary with <b>markup</b> & ampersand.",
        "figures": [{"path": "fig.png", "caption": "A figure caption."}],
        "claims": [{**row, "paper": "000"}],
        "tables": [{"title": "A table", "csv": "table.csv"}],
        "missing": runmeta.collect_missing(META),
        "runs": [runmeta.summarize_metadata(p) for p in META],
        "notes": ["<script>alert('x')</script>"],
    }
    section.update(overrides)
    path = folder / "section.json"
    path.write_text(json.dumps(section))
    return path


# ----------------------------------------------------------------------------- runmeta


def test_summarize_metadata():
    s = runmeta.summarize_metadata(FIXTURES / "runs" / "g1-k2-r0" / "metadata.json")
    assert s["run_id"] == "g1-k2-r0"
    assert (s["host"], s["kernel_release"], s["device"], s["elevator"]) == (
        "fixture-host",
        "6.1.0-fixture-amd64",
        "vdb",
        "mq-deadline",
    )
    assert s["throttle"] == "read 10 MB/s (10000000 B/s)"
    assert (s["scheduler"], s["params"]) == ("baseline", {})
    assert re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ", s["start"])
    assert s["advice"] == ["cpu governor is 'powersave' (expected 'performance')"]


def test_summarize_metadata_keeps_unrecorded_as_none(tmp_path):
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps({"run_id": "r1", "throttle": None}))
    s = runmeta.summarize_metadata(path)
    assert s["host"] is None and s["start"] is None and s["throttle"] == "none"


def test_summarize_metadata_takes_the_runs_cpu_steal(tmp_path):
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps({"run_id": "r1", "machine_cpu": {"interval_s": 2.0, "steal_pct": 7.25}}))
    assert runmeta.summarize_metadata(path)["steal_pct"] == 7.25
    path.write_text(json.dumps({"run_id": "r1", "machine_cpu": {"steal_pct": None, "reason": "no steal column"}}))
    assert runmeta.summarize_metadata(path)["steal_pct"] is None
    assert runmeta.summarize_metadata(path)["remeasured"] == 0


def test_summarize_metadata_counts_the_attempts_set_aside_for_steal(tmp_path):
    path = tmp_path / "metadata.json"
    earlier = [{"attempt": 1, "steal_pct": 30.0}, {"attempt": 2, "steal_pct": 12.0}]
    path.write_text(json.dumps({"run_id": "r1", "remeasured": {"max_steal_pct": 10, "earlier": earlier}}))
    assert runmeta.summarize_metadata(path)["remeasured"] == 2


def test_collect_missing_counts_runs():
    assert runmeta.collect_missing(META) == [
        {
            "metric": "llc_misses_per_kcycle",
            "reason": "perf_event_paranoid=3: PMU counters not readable",
            "source": "perf stat",
            "runs": 20,
        },
        {"metric": "numa_remote_mb_s", "reason": "one NUMA node", "source": "numastat", "runs": 10},
    ]


def test_collect_missing_counts_a_run_once(tmp_path):
    entry = {"metric": "m", "reason": "r", "source": "s"}
    path = tmp_path / "metadata.json"
    path.write_text(json.dumps({"missing": [entry, entry]}))
    assert runmeta.collect_missing([path, path]) == [{**entry, "runs": 2}]


# ----------------------------------------------------------------------------- HTML


@pytest.fixture()
def html_text(tmp_path):
    out = tmp_path / "report.html"
    report.write_report([write_section(tmp_path / "demo")], out, "Report <title>")
    return out.read_text()


def test_report_shows_missing_measurements(html_text):
    assert "Missing measurements (2)" in html_text
    for name, reason in [
        ("llc_misses_per_kcycle", "perf_event_paranoid=3: PMU counters not readable"),
        ("numa_remote_mb_s", "one NUMA node"),
    ]:
        assert re.search(rf"<td>{name}</td><td><strong>missing</strong>: {re.escape(reason)}</td>", html_text)
    # a measured value the analysis could not produce reads "none", not 0
    assert '<td class="na">none</td>' in html_text


def test_report_shows_paper_values_from_the_claims(html_text):
    value = CLAIMS.values["no_degradation_below_mb_s"]
    assert f"{value['value']} {value['unit']}" in html_text
    assert "lower bandwidth than 5.63Mbytes/s" in html_text
    assert "Dynamic I/O-Aware Scheduling for Batch-" in html_text
    assert '<td class="verdict v-na">not measurable here</td>' in html_text
    assert "Paper vs measured" not in html_text  # the legacy table is gone


def test_report_embeds_figure_and_is_self_contained(html_text):
    uris = re.findall(r'src="data:image/png;base64,([A-Za-z0-9+/=]+)"', html_text)
    assert [base64.b64decode(u) for u in uris] == [PNG]
    assert not re.search(r'(src|href)="(https?:)?//', html_text)
    assert "<link" not in html_text and "@import" not in html_text


def test_report_escapes_text(html_text):
    assert "<script>" not in html_text
    assert "&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;" in html_text
    assert "A summary with &lt;b&gt;markup&lt;/b&gt; &amp; ampersand." in html_text
    assert "<title>Report &lt;title&gt;</title>" in html_text


def test_report_header_and_runs(html_text):
    assert re.search(r"Generated \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC by corun \S+", html_text)
    assert "v0.1.0-3-gabc1234" in html_text
    assert "<h3>Runs (20)</h3>" in html_text  # 20 identical runs shown as one row with a count
    assert "cpu governor is &#x27;powersave&#x27;" in html_text


def test_report_tables_show_empty_cells_as_na(html_text):
    assert '<td>b</td><td class="na">n/a</td><td>no data</td>' in html_text


# ----------------------------------------------------------------------------- schema errors


@pytest.mark.parametrize(
    "overrides, key, expected",
    [
        (
            {
                "claims": [
                    {
                        **judge("g", CLAIMS.claims["low_demand_not_degraded"], {}, Machine()),
                        "paper": "000",
                        "outcome": "maybe",
                    }
                ]
            },  # fmt: skip
            "claims[0].outcome: 'maybe'",
            "expected one of reproduced,",
        ),
        # a section written before the verdict engine: analysed again, never shown
        ({"comparison": []}, "comparison: 'unknown key'", "expected one of checks, claims, experiment"),
        ({"figures": [{"path": "fig.png"}]}, "figures[0].caption: 'missing'", "expected a value"),
        (
            {"figures": [{"path": "/etc/fig.png", "caption": "c"}]},
            "figures[0].path: '/etc/fig.png'",
            "expected a relative path",
        ),
        (
            {"missing": [{"metric": "m", "reason": "r", "source": "s", "runs": 0}]},
            "missing[0].runs: 0",
            "expected an integer >= 1",
        ),
        ({"colour": "red"}, "colour: 'unknown key'", "expected one of checks, claims, experiment"),
    ],
)
def test_bad_section_is_one_line_error(tmp_path, overrides, key, expected):
    path = write_section(tmp_path / "bad", **overrides)
    with pytest.raises(AnalysisInputError) as err:
        report.load_section(path)
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith(f"{path}: {key}") and expected in msg


def test_section_without_a_required_key_is_one_line_error(tmp_path):
    path = write_section(tmp_path / "bad")
    data = json.loads(path.read_text())
    del data["notes"]
    path.write_text(json.dumps(data))
    with pytest.raises(AnalysisInputError, match=r"section\.json: notes: 'missing'"):
        report.load_section(path)


def test_figure_file_must_exist(tmp_path):
    path = write_section(tmp_path / "bad", figures=[{"path": "nope.png", "caption": "c"}])
    with pytest.raises(AnalysisInputError, match=r"figures\[0\]\.path: 'nope.png' \(expected a PNG"):
        report.load_section(path)


def test_cli_writes_report_and_reports_errors(tmp_path, capsys):
    good = write_section(tmp_path / "good")
    assert report.main(["--sections", str(good), "--out", str(tmp_path / "r.html"), "--title", "T"]) == 0
    assert (tmp_path / "r.html").read_text().startswith("<!DOCTYPE html>")
    bad = write_section(tmp_path / "bad", experiment="Not Snake")
    code = report.main(["--sections", str(good), str(bad), "--out", str(tmp_path / "r2.html")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "experiment: 'Not Snake'" in err
    assert not (tmp_path / "r2.html").exists()


def test_sections_keep_their_own_folders(tmp_path):
    a = write_section(tmp_path / "a")
    b = write_section(tmp_path / "b", experiment="other", title="Other")
    shutil.copy(FIXTURES / "golden" / "degradation.csv", tmp_path / "b" / "table.csv")
    out = tmp_path / "r.html"
    report.write_report([a, b], out, "T")
    text = out.read_text()
    assert text.count("<section ") == 2 and "no valid k=1 job: T_1-c undefined" in text


def _runs_with_steal(steals):
    base = runmeta.summarize_metadata(META[0])
    return [{**base, "run_id": f"r{i}", "steal_pct": v} for i, v in enumerate(steals)]


def test_report_runs_keep_one_row_and_show_steal_median_and_max(tmp_path):
    # runs that differ in steal alone are still one row; the cell is median / max
    path = write_section(tmp_path / "demo", runs=_runs_with_steal([1.0, 2.0, 12.5, None]))
    out = tmp_path / "report.html"
    report.write_report([path], out, "T")
    text = out.read_text()
    assert "<h3>Runs (4)</h3>" in text
    assert "<td>4</td>" in text  # one row of four runs
    assert "<td>2.0 / 12.5</td>" in text
    assert "over 3 runs; 1 of them above 5 %" in text


def test_steal_note_only_when_recorded_and_quiet_runs_are_not_flagged():
    assert report.steal_note(_runs_with_steal([None, None])) is None
    note = report.steal_note(_runs_with_steal([0.5, 4.9, 5.0]))
    assert note.endswith("median 4.9 %, at most 5.0 %, over 3 runs.")
    assert "above" not in note


def test_steal_note_counts_the_runs_measured_again():
    runs = _runs_with_steal([0.5, 12.0, 3.0])
    runs[0]["remeasured"], runs[2]["remeasured"] = 1, 2
    note = report.steal_note(runs)
    assert "1 of them above 5 %" in note
    assert note.endswith(
        "2 runs were measured again because of their steal or foreign CPU (3 attempts set aside, "
        "kept in each run's remeasured/ folder)."
    )


def test_section_with_a_non_number_steal_is_one_line_error(tmp_path):
    path = write_section(tmp_path / "demo", runs=_runs_with_steal(["high"]))
    with pytest.raises(AnalysisInputError) as err:
        report.load_section(path)
    assert "steal_pct" in str(err.value) and "\n" not in str(err.value)

"""Memory utilization against I/O contention (paper 000, Fig. 8): the metrics counted by hand on
fixture runs, the declared claims judged by the engine on hand-made tables, failed runs (a failed
job, missing data, an emulated disk that failed its calibration) and the section end to end."""

import json
import math
import shutil
from pathlib import Path

import pandas as pd
import pytest

from analysis import report
from analysis.claims import load_claims
from analysis.common import AnalysisInputError
from analysis.experiment import write
from analysis.machine import here
from analysis.verdicts import judge
from experiments import PAPERS_DIR, registry
from experiments.implicit_io import analysis as imp
from experiments.implicit_io import metrics as m
from tests.emulators.disk_helpers import calibration_check, qd1_latency_pass
from tests.experiment_helpers import read_tables

FOLDER = Path(__file__).resolve().parents[1]
FIXTURES = Path(__file__).resolve().parent / "fixtures" / "implicit_io"
CLAIMS = load_claims(FOLDER / "claims.yaml", "implicit_io", PAPERS_DIR).claims


def inputs_of(fixtures=FIXTURES, criterion=m.DEFAULT_CRITERION, files=None):
    return read_tables("implicit_io", fixtures, files=files or {}, config={"implicit_io": {"criterion": criterion}})


def analysed(tmp_path, **kw):
    inputs = inputs_of(**kw)
    result = imp.analyse(inputs)
    section = write(tmp_path / "out", inputs, result)
    return result, section, tmp_path / "out"


@pytest.fixture(scope="module")
def default(tmp_path_factory):
    return analysed(tmp_path_factory.mktemp("default"))


def at(table, key, column):
    hit = table.loc[table["level"] == key, column] if "/" in key else table.loc[table["run_id"] == key, column]
    assert len(hit) >= 1, key
    return hit.iloc[0]


def levels_of(result):
    return pd.read_csv(result[2] / "implicit_io.csv")


# ----------------------------------------------------------------------------- metrics by hand


def test_per_run_values_by_hand(default):
    runs = default[0].evidence["runs"]
    # cg_used_pct 70, 74, 76, 76 inside the run (the row after the run, 99 %, is left out)
    assert at(runs, "s18_e16_k2_r1", "memory_basis") == "cgroup cap (cg_used_pct)"
    assert at(runs, "s18_e16_k2_r1", "mem_util_pct") == pytest.approx(74.0)
    assert at(runs, "s18_e16_k2_r1", "mem_util_peak_pct") == pytest.approx(76.0)
    # PSI io some 20, 25, 50, 10: all four >= 10 (10 counts); t_s 0 and 5.5 lie outside
    assert (at(runs, "s18_e16_k2_r1", "n_intervals"), at(runs, "s18_e16_k2_r1", "n_contended")) == (4, 4)
    assert at(runs, "s18_e16_k2_r1", "majfault_per_s") == pytest.approx(900.0)
    # 4 jobs x 96 MiB of storage over a 512 MiB cap
    assert at(runs, "s18_e16_k2_r1", "storage_pct_of_memory") == pytest.approx(75.0)
    assert at(runs, "s17_e16_k2_r0", "contention_share") == pytest.approx(0.25)  # 5, 12, 8, 3 -> 1 of 4
    assert at(runs, "s18_e16_k2_r1", "graph_edges") == 16 * 2**18
    assert not runs["failed"].any()


def test_levels_by_hand(default):
    t = levels_of(default)
    assert at(t, "s16/e8", "mem_util_pct") == pytest.approx((25 + 30) / 2)
    assert at(t, "s16/e16", "mem_util_pct") == pytest.approx((40 + 44) / 2)
    assert at(t, "s17/e16", "contention_share") == pytest.approx(3 / 8)
    assert at(t, "s18/e16", "contention_share") == pytest.approx(7 / 8)
    assert at(t, "s18/e16", "teps_harmonic_mean") == pytest.approx(4 / (2 / 2e6 + 2 / 4e6))
    assert at(t, "s18/e16", "storage_bytes_per_job") == 100663296
    # below half: the level's mean utilization under the paper's onset (50 %)
    assert t.set_index("level")["below_half"].to_dict() == {
        "s16/e8": True,
        "s16/e16": True,
        "s17/e16": False,
        "s18/e16": False,
    }


def test_iostat_util_criterion_by_hand(tmp_path):
    t = levels_of(analysed(tmp_path, criterion="iostat_util_pct>=80"))
    # util >= 80: s16/e16 85 once in 8 intervals; s17/e16 90, 80 | 95, 95; s18/e16 3 | 4
    assert at(t, "s16/e8", "contention_share") == 0.0
    assert at(t, "s16/e16", "contention_share") == pytest.approx(1 / 8)
    assert at(t, "s17/e16", "contention_share") == pytest.approx(4 / 8)
    assert at(t, "s18/e16", "contention_share") == pytest.approx(7 / 8)


def test_await_without_io_counts_as_not_contended(tmp_path):
    t = levels_of(analysed(tmp_path, criterion="iostat_await_ms>=4"))
    # s16/e16: rep 0 has I/O in all 4 intervals (await 4 ms), rep 1 none (await NaN)
    assert (at(t, "s16/e16", "n_contended"), at(t, "s16/e16", "n_intervals")) == (4, 8)


def test_system_basis_without_a_cap(tmp_path):
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    runs = pd.read_csv(copy / "runs.csv")
    runs["memory_limit_bytes"] = None
    runs.to_csv(copy / "runs.csv", index=False)
    result = analysed(tmp_path, fixtures=copy)
    t = levels_of(result)
    assert set(result[0].evidence["runs"]["memory_basis"]) == {"system (mem_used_pct)"}
    assert at(t, "s18/e16", "mem_util_pct") == pytest.approx(62.0)  # mem_used_pct = cg_used_pct - 10
    assert at(t, "s18/e16", "majfault_per_s") == pytest.approx(905.0)  # pgmajfault_per_s
    assert at(t, "s18/e16", "storage_pct_of_memory") == pytest.approx(100 * 4 * 100663296 / (4_000_000 * 1024))


def test_missing_memory_and_psi_tables_make_the_run_failed_not_left_out(tmp_path):
    """The old rule dropped a run without data from the trend (and pooled the rest): its claims
    now say failed, naming the run and what is missing."""
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    (copy / "runs" / "s16_e8_k2_r0" / "tidy" / "memory.csv").unlink()
    (copy / "runs" / "s16_e8_k2_r0" / "tidy" / "psi.csv").unlink()
    result, section, _ = analysed(tmp_path, fixtures=copy)
    r = result.evidence["runs"].set_index("run_id").loc["s16_e8_k2_r0"]
    assert math.isnan(r["mem_util_pct"]) and math.isnan(r["contention_share"]) and r["failed"]
    assert "tidy/memory.csv absent" in r["failed_reason"] and "tidy/psi.csv absent" in r["failed_reason"]
    trend = next(c for c in section["claims"] if c["claim"] == "share_rises_with_mem_util")
    assert trend["outcome"] == "failed" and trend["runs"] == ["s16_e8_k2_r0"]
    metrics = {x["metric"] for x in result.log.records()}
    assert metrics == {"memory utilization (cgroup cap (cg_used_pct))", "contention share (psi_io_some_pct>=10)"}


def test_a_run_shorter_than_the_monitor_interval_is_failed_with_that_reason(tmp_path):
    """A fresh machine ran the lower levels in 0.6 to 0.9 s, inside the first 1 s interval: the run
    has no memory utilization and no share, so the trend says failed and names it, never ranks the
    runs that remain (the runs are sized to a measured length elsewhere: the claim stays as it is)."""
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    runs = pd.read_csv(copy / "runs.csv")
    runs.loc[runs["run_id"] == "s16_e8_k2_r0", "duration_s"] = 0.7
    runs.to_csv(copy / "runs.csv", index=False)
    result, section, _ = analysed(tmp_path, fixtures=copy)
    r = result.evidence["runs"].set_index("run_id").loc["s16_e8_k2_r0"]
    assert r["failed"] and "no memory interval inside the run" in r["failed_reason"]
    rows = {c["claim"]: c for c in section["claims"]}
    for cid in ("share_rises_with_mem_util", "paging_rises_with_mem_util"):
        assert rows[cid]["outcome"] == "failed" and rows[cid]["runs"] == ["s16_e8_k2_r0"], cid


def test_a_run_with_a_failed_graph_job_is_failed(tmp_path):
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    jobs = pd.read_csv(copy / "jobs.csv")
    jobs.loc[(jobs["run_id"] == "s18_e16_k2_r0") & (jobs["job_id"] == "graph-1"), "exit_code"] = 137
    jobs.to_csv(copy / "jobs.csv", index=False)
    _, section, _ = analysed(tmp_path, fixtures=copy)
    top = next(c for c in section["claims"] if c["claim"] == "frequent_at_top")
    assert top["outcome"] == "failed" and "exit code 137" in top["why"] and top["runs"] == ["s18_e16_k2_r0"]


@pytest.mark.parametrize("text", ["psi_io_some_pct>10", "foo>=1", "psi_io_some_pct>=abc", "", "psi_io_some_pct>=1>=2"])
def test_bad_criterion_is_one_line_naming_the_key(text):
    with pytest.raises(AnalysisInputError) as exc:
        imp.analyse(inputs_of(criterion=text))
    msg = str(exc.value)
    assert msg.startswith(f"implicit_io.criterion: {text!r} (expected METRIC>=NUMBER") and "\n" not in msg


def test_criterion_forms():
    c = m.parse_criterion(" iostat_wait_ms >= 2e1 ")
    assert (c.metric, c.threshold, c.table, c.column, c.text) == (
        "iostat_wait_ms",
        20.0,
        "iostat",
        "wait_ms",
        "iostat_wait_ms>=20",
    )
    assert m.parse_criterion("psi_io_some_pct>=10").resource == "io"


# ----------------------------------------------------------------------------- the claims


def run_rows(levels: dict[tuple[int, int], dict]) -> pd.DataFrame:
    """runs rows: (scale, edgefactor) -> {util, share[, faults]: [per rep], intervals: per run}."""
    rows = []
    for (scale, ef), v in levels.items():
        below = sum(v["util"]) / len(v["util"]) < 50
        for rep, (u, s) in enumerate(zip(v["util"], v["share"])):
            rows.append(
                {
                    "run_id": f"s{scale}_e{ef}_r{rep}",
                    "scale": scale,
                    "edgefactor": ef,
                    "k": 2,
                    "rep": rep,
                    "level": m.label(scale, ef),
                    "graph_edges": ef * 2**scale,
                    "mem_util_pct": u,
                    "contention_share": s,
                    "majfault_per_s": v["faults"][rep] if "faults" in v else 0.0,
                    "n_intervals": v.get("intervals", 400),
                    "below_half": below,
                    "resolves_rare": v.get("intervals", 400) * len(v["util"]) >= m.RARE_TRIALS,
                    "failed": False,
                    "failed_reason": "",
                }
            )
    return pd.DataFrame(rows)


def judged(cid, table):
    return judge(cid, CLAIMS[cid], {"runs": table}, here())


def test_the_rare_claim_s_null_is_the_one_its_guard_is_sized_for():
    assert CLAIMS["rare_below_half"]["null"] == m.RARE and m.RARE_TRIALS == 299


def test_rare_needs_enough_intervals_to_tell_rare_from_none_seen(default):
    """The old rule called 0 contended intervals of 8 'rare (< 1 %)': a 1 % share would show none
    in 8 intervals 92 times in 100. The claim is judged only where the runs had 299 or more."""
    rare = next(c for c in default[1]["claims"] if c["claim"] == "rare_below_half")
    assert rare["outcome"] == "not run in this profile" and rare["n"] == 0
    assert "fewer than 299" in default[1]["summary"]
    long = run_rows(
        {
            (16, 8): {
                "util": [25, 30, 28, 25, 30, 28, 25, 30],
                "share": [0.0, 0.002, 0.001, 0.0, 0.002, 0.001, 0.0, 0.002],
            },
            (16, 16): {
                "util": [40, 44, 42, 40, 44, 42, 40, 44],
                "share": [0.003, 0.0, 0.004, 0.003, 0.0, 0.004, 0.003, 0.0],
            },
            (18, 16): {"util": [70, 74, 72, 70, 74, 72, 70, 74], "share": [0.8, 0.9, 0.85, 0.8, 0.9, 0.85, 0.8, 0.9]},
        }
    )
    row = judged("rare_below_half", long)
    assert row["outcome"] == "reproduced" and "2 of 2 level points reproduced" in row["measured"]
    short = judged("rare_below_half", long.assign(intervals=8, resolves_rare=False))
    assert short["outcome"] == "not run in this profile" and short["n"] == 0


def test_rare_is_contradicted_when_a_level_below_half_is_often_contended():
    table = run_rows(
        {
            (16, 8): {
                "util": [25, 30, 28, 25, 30, 28, 25, 30],
                "share": [0.0, 0.002, 0.001, 0.0, 0.002, 0.001, 0.0, 0.002],
            },
            (16, 16): {
                "util": [40, 44, 42, 40, 44, 42, 40, 44],
                "share": [0.12, 0.10, 0.11, 0.12, 0.10, 0.11, 0.12, 0.10],
            },
        }
    )
    row = judged("rare_below_half", table)
    assert row["outcome"] == "contradicted" and "s16/e16" in row["why"]


def test_frequent_is_judged_at_the_largest_graph_named_in_advance():
    """Not the most contended level: s17/e16 has the larger share here, the claim reads s18/e16."""
    table = run_rows(
        {
            (17, 16): {
                "util": [55, 57, 56, 55, 57, 56, 55, 57],
                "share": [0.9, 0.95, 0.92, 0.9, 0.95, 0.92, 0.9, 0.95],
            },
            (18, 16): {
                "util": [70, 74, 72, 70, 74, 72, 70, 74],
                "share": [0.3, 0.35, 0.32, 0.3, 0.35, 0.32, 0.3, 0.35],
            },
        }
    )
    row = judged("frequent_at_top", table)
    assert row["outcome"] == "contradicted" and "graph_edges 4194304" in row["why"]
    assert row["paper_value"] == "0.75 share of sampling intervals"


def test_frequent_needs_the_top_level_above_half_and_more_than_one_rep():
    low = run_rows({(16, 16): {"util": [40, 44], "share": [0.9, 0.95]}})
    row = judged("frequent_at_top", low)
    assert row["outcome"] == "not run in this profile" and row["n"] == 0  # below 50 %
    one = run_rows({(18, 16): {"util": [72], "share": [1.0]}})
    assert judged("frequent_at_top", one)["outcome"] == "inconclusive"  # one rep never decides


def test_frequent_at_top_is_judged_in_magnitude_apart_from_its_direction():
    """ "nearly 3/4 of our sampling period": a declared band, apart from "more than half"."""
    mag = CLAIMS["frequent_at_top"]["magnitude"]
    assert mag["at_least"] < 0.75 < mag["at_most"]
    near = run_rows({(18, 16): {"util": [70, 74, 72, 71] * 2, "share": [0.74, 0.76, 0.75, 0.75] * 2}})
    row = judged("frequent_at_top", near)
    assert row["outcome"] == "reproduced" and row["in_magnitude"] is True
    always = run_rows({(18, 16): {"util": [70, 74, 72, 71] * 2, "share": [0.97, 0.98, 0.99, 0.98] * 2}})
    row = judged("frequent_at_top", always)
    assert row["outcome"] == "reproduced" and row["in_magnitude"] is False


def paging(per_level: dict[tuple[int, int], tuple[list[float], list[float]]]) -> pd.DataFrame:
    """(scale, edgefactor) -> (memory utilization per rep, major faults per second per rep)."""
    return run_rows({key: {"util": u, "share": [0.0] * len(u), "faults": f} for key, (u, f) in per_level.items()})


def test_paging_rises_with_memory_used():
    """ "the more memory we use, the more I/O quantities would be generated": major faults per
    second, the pages the jobs' mappings read back, against memory utilization per run."""
    rising = paging({(16, 8): ([25, 30], [0, 1]), (16, 16): ([40, 44], [5, 8]), (17, 16): ([55, 57], [200, 260]),
                     (18, 16): ([70, 74], [900, 950])})  # fmt: skip
    row = judged("paging_rises_with_mem_util", rising)
    assert row["outcome"] == "reproduced" and row["n"] == 8
    falling = paging({(16, 8): ([25, 30], [950, 900]), (16, 16): ([40, 44], [260, 200]), (17, 16): ([55, 57], [8, 5]),
                      (18, 16): ([70, 74], [1, 0])})  # fmt: skip
    assert judged("paging_rises_with_mem_util", falling)["outcome"] == "contradicted"
    two = paging({(16, 8): ([25], [0]), (18, 16): ([74], [900])})
    row = judged("paging_rises_with_mem_util", two)
    assert row["outcome"] == "inconclusive" and "even a perfect ranking" in row["why"]
    failed = rising.copy()
    failed.loc[3, ["failed", "failed_reason"]] = [True, "no memory utilization: no memory interval inside the run"]
    row = judged("paging_rises_with_mem_util", failed)
    assert row["outcome"] == "failed" and row["runs"] == ["s16_e16_r1"]


def test_the_trend_is_reproduced_on_the_fixture_runs(default):
    rows = {c["claim"]: c for c in default[1]["claims"]}
    trend = rows["share_rises_with_mem_util"]
    assert trend["outcome"] == "reproduced" and trend["n"] == 8
    paged = rows["paging_rises_with_mem_util"]  # 0, 0, 10, 10, 200, 200, 900, 900 faults/s
    assert paged["outcome"] == "reproduced" and paged["n"] == 8
    top = rows["frequent_at_top"]  # s18/e16: 0.75 and 1.0 in 2 reps
    assert top["outcome"] == "inconclusive" and top["n"] == 2 and top["reps_needed"]


# ----------------------------------------------------------------------------- the emulated disk


def on_emulated_disk(tmp_path) -> Path:
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    for p in sorted((copy / "runs").glob("*/metadata.json")):
        meta = json.loads(p.read_text())
        meta["device_setup"] = {"kind": "rotating_disk", "preset": "sata_7200_2010"}
        p.write_text(json.dumps(meta))
    return copy


def calibration(tmp_path, verdict: str) -> Path:
    cal = {
        "preset": "sata_7200_2010",
        "checks": [
            qd1_latency_pass(),
            calibration_check("completion lateness p99", 5.63, "< 2", "ms", "p99 < 2 ms", verdict),
        ],
    }
    path = tmp_path / f"calibration_{verdict}.json"
    path.write_text(json.dumps(cal))
    return path


def test_runs_on_an_emulated_disk_that_failed_its_calibration_are_failed(tmp_path):
    """The old workflow went on measuring on a disk that failed its calibration and the claims read
    the runs as if it had passed: they now say failed, naming the check."""
    copy = on_emulated_disk(tmp_path)
    _, section, _ = analysed(tmp_path / "f", fixtures=copy, files={"device_calibration": calibration(tmp_path, "FAIL")})
    rows = {c["claim"]: c for c in section["claims"]}
    assert rows["share_rises_with_mem_util"]["outcome"] == "failed"
    assert "completion lateness p99: measured 5.63 ms" in rows["share_rises_with_mem_util"]["why"]
    assert "8 run(s) on an emulated disk that failed its calibration" in section["summary"]
    _, passed, _ = analysed(tmp_path / "p", fixtures=copy, files={"device_calibration": calibration(tmp_path, "PASS")})
    assert {c["claim"]: c["outcome"] for c in passed["claims"]}["share_rises_with_mem_util"] == "reproduced"


def test_the_workflow_passes_the_calibration_only_for_runs_on_the_calibrated_disk():
    exp = registry()["implicit_io"]
    disk = {"kind": "rotating_disk", "rotating_disk": {"preset": "sata_7200_2010"}}
    cfg = {"implicit_io": {"device": disk}, "report": {"device": {"enabled": True, "preset": "sata_7200_2010"}}}
    assert exp.analysis_inputs(cfg, "r")["device_calibration"] == "r/device/calibration.json"
    for changed in (
        {"implicit_io": {"device": {"kind": "throttle"}}},
        {"report": {"device": {"enabled": False, "preset": "sata_7200_2010"}}},
        {"report": {"device": {"enabled": True, "preset": "sas_15k_2010"}}},
    ):
        assert "device_calibration" not in exp.analysis_inputs({**cfg, **changed}, "r")


# ----------------------------------------------------------------------------- end to end


def test_fixture_matches_golden_and_section_is_valid(default):
    _, section, out = default
    assert (out / "implicit_io.csv").read_bytes() == (FIXTURES / "golden" / "implicit_io.csv").read_bytes()
    report.load_section(out / "section.json")
    assert [c["claim"] for c in section["claims"]] == list(CLAIMS)
    assert "psi_io_some_pct>=10" in section["figures"][0]["caption"]
    assert "8 run(s) cgroup cap (cg_used_pct)" in section["summary"]
    assert any("page cache was dropped" in n for n in section["notes"])
    assert [x["metric"] for x in section["missing"]] == ["psi_cpu_full"]
    setup = pd.read_csv(out / "setup.csv", dtype=str)
    assert setup["this_run_value"].tolist() == ["27.5", "72", "50", "4", "4", "9.2"]
    text = (out / "section.json").read_text()
    assert str(out) not in text and str(FIXTURES) not in text
    assert (out / imp.FIG_NAME).read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_labels_name_k_when_levels_differ_in_k(tmp_path):
    copy = tmp_path / "implicit_io"
    shutil.copytree(FIXTURES, copy)
    for name in ("jobs.csv", "runs.csv"):
        df = pd.read_csv(copy / name)
        df.loc[df["scale"] == 18, "k"] = 1
        df.to_csv(copy / name, index=False)
    t = levels_of(analysed(tmp_path, fixtures=copy))
    assert t["level"].tolist() == ["s16/e8, k=2", "s16/e16, k=2", "s17/e16, k=2", "s18/e16, k=1"]


def test_more_roots_than_the_kernel_takes_is_a_config_error():
    from corun.errors import ConfigError
    from experiments.config import validate_config

    with pytest.raises(ConfigError, match=r"implicit_io.roots: 65 \(expected"):
        validate_config({"plan_for": "2x1", "experiments": ["implicit_io"], "implicit_io": {"roots": 65}}, "t.yaml")

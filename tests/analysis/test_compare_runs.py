"""corun compare on synthetic run folders with known answers, and the run index."""

import json
import os
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import compare_runs, runindex
from analysis.synthetic import write_run

PY = sys.executable
BASE = [10.0, 10.2, 9.8, 10.1, 9.9, 10.05]


def corun(*args, cwd=None):
    return subprocess.run([PY, "-m", "corun", *args], capture_output=True, text=True, cwd=cwd)


@pytest.fixture
def campaign(tmp_path) -> Path:
    """linux (baseline), slow (x1.25), fast (x0.8), same (shuffled copy + one outlier), with a
    warm-up, an unverified and a failed run that must be excluded and listed."""
    runs = tmp_path / "camp" / "runs"
    for i, b in enumerate(BASE):
        lab = {"rep": i, "block": i, "warmup": False, "k": 2}
        write_run(runs / f"linux_r{i}", "linux", [b, b], labels=lab, build_id="b1")
        write_run(runs / f"slow_r{i}", "slow", [b * 1.25, b * 1.25], labels=lab, build_id="b2")
        write_run(runs / f"fast_r{i}", "fast", [b * 0.8, b * 0.8], labels=lab, host="other-host")
        same = BASE[(i + 3) % 6] if i else 10.9  # one high value: an outlier, kept
        write_run(runs / f"same_r{i}", "same", [same, same], labels=lab)
    write_run(runs / "linux_w0", "linux", [50.0, 50.0], labels={"rep": 0, "warmup": True})
    write_run(runs / "slow_unverified", "slow", [1.0, 1.0], labels={"rep": 7}, verified_at_end=False)
    write_run(runs / "fast_failed", "fast", [1.0, 1.0], labels={"rep": 8}, status="jobs_failed")
    (runs / "linux_r9.incomplete").mkdir()  # unfinished: never a run
    return tmp_path / "camp"


def rows_by(result, set_name):
    return {r["metric"]: r for r in result["rows"] if r["set"] == set_name}


def test_outcomes_known_answers(campaign):
    result, sets, md = compare_runs.run([campaign], by="variant", baseline="linux")
    slow, fast, same = rows_by(result, "slow"), rows_by(result, "fast"), rows_by(result, "same")
    assert slow["runtime_s"]["ratio"] == pytest.approx(1.25)
    assert 1 < slow["runtime_s"]["ci_low"] < 1.25 < slow["runtime_s"]["ci_high"]  # unpaired: Welch on the logs
    assert slow["runtime_s"]["verdict"] == "worse"
    assert slow["throughput_jobs_per_s"]["ratio"] == pytest.approx(0.8)  # higher is better: worse
    assert slow["throughput_jobs_per_s"]["verdict"] == "worse"
    assert fast["runtime_s"]["verdict"] == "better" and fast["io_read_mb_s"]["verdict"] == "better"
    assert fast["runtime_s"]["ratio"] == pytest.approx(0.8)
    # identical values: the interval is 1 exactly, nil effect: inconclusive, never "no significant change"
    assert slow["unfairness_ratio"]["verdict"] == "inconclusive"
    assert same["runtime_s"]["verdict"] == "inconclusive" and same["runtime_s"]["reps_needed"] > 100
    assert same["runtime_s"]["set_outliers"] == "runs/same_r0" and same["runtime_s"]["n_set"] == 6
    assert slow["runtime_s"]["n_baseline"] == 6 and slow["runtime_s"]["n_set"] == 6
    # 3 sets x 6 metrics with values: each interval at 1 - 0.05 / 18
    assert result["settings"]["family"] == 18 and result["settings"]["level"] == pytest.approx(1 - 0.05 / 18)
    excluded = {(e["run"], e["reason"]) for e in result["excluded"]}
    assert excluded == {
        ("runs/linux_w0", "warm-up run"),
        ("runs/slow_unverified", "variant not verified in effect at the end"),
        ("runs/fast_failed", "status jobs_failed"),
    }
    assert "## Excluded runs" in md and "runs/slow_unverified" in md


def three_reps(tmp_path, ratio_runtime: float, noise=(0.0, 0.01, -0.01)) -> Path:
    """Three reps of linux and new; new's runtime ratio_runtime x linux's, paired by rep."""
    runs = tmp_path / "three" / "runs"
    for i, n in enumerate(noise):
        base = 10.0 * (1 + n)
        write_run(runs / f"linux_r{i}", "linux", [base, base * 1.02], labels={"rep": i})
        new = base * ratio_runtime * (1 + n / 2)
        write_run(runs / f"new_r{i}", "new", [new, new * 1.02], labels={"rep": i})
    return tmp_path / "three"


NINE = (0.0, 0.01, -0.01, 0.02, -0.02, 0.015, -0.015, 0.005, -0.005)


def test_paired_reps_decide_a_large_change_from_enough_pairs(tmp_path):
    """Mann-Whitney with Holm could not reach 0.05 below 5 reps and called a 42 % change 'no
    significant change'; the paired interval decides it, once there are pairs enough for the
    exact sign-flip test at the family's level (3 pairs on one side arise by chance 1 time in 4)."""
    camp = three_reps(tmp_path / "nine", 0.58, noise=NINE)
    result, _, md = compare_runs.run([camp], by="variant", baseline="linux", pair_by="labels.rep")
    row = rows_by(result, "new")["runtime_s"]
    assert row["verdict"] == "better" and row["paired"] and row["n_pairs"] == 9
    assert row["ratio"] == pytest.approx(0.58, rel=0.02) and row["ci_high"] < 0.7
    unpaired, _, _ = compare_runs.run([camp], by="variant", baseline="linux")
    assert rows_by(unpaired, "new")["runtime_s"]["verdict"] == "better"
    three = three_reps(tmp_path, 0.58)
    result, _, md = compare_runs.run([three], by="variant", baseline="linux", pair_by="labels.rep")
    row = rows_by(result, "new")["runtime_s"]
    assert row["verdict"] == "inconclusive" and "sign-flip" in row["why"] and row["n_pairs"] == 3


def test_the_gate_fails_passes_or_cannot_decide(tmp_path):
    worse = three_reps(tmp_path / "w", 1.76)  # a 76 % regression: the old gate passed one like it
    result, _, _ = compare_runs.run(
        [worse], by="variant", baseline="linux", pair_by="labels.rep", metric_names=["runtime_s"], fail_if_worse=0.05
    )
    assert result["gate"]["status"] == "failed"
    fine = three_reps(tmp_path / "f", 0.9)
    result, _, _ = compare_runs.run(
        [fine], by="variant", baseline="linux", pair_by="labels.rep", metric_names=["runtime_s"], fail_if_worse=0.05
    )
    assert result["gate"]["status"] == "passed"
    noisy = three_reps(tmp_path / "n", 1.03, noise=(0.0, 0.08, -0.07))
    result, _, md = compare_runs.run(
        [noisy], by="variant", baseline="linux", metric_names=["runtime_s"], fail_if_worse=0.05
    )
    assert result["gate"]["status"] == "undecided" and "Gate UNDECIDED" in md
    assert "runs per set would decide" in md


def test_no_change_needs_a_margin_and_an_interval_inside_it(tmp_path):
    camp = three_reps(tmp_path, 1.001, noise=(0.0, 0.001, -0.001, 0.002, -0.002, 0.0015))
    result, _, _ = compare_runs.run(
        [camp], by="variant", baseline="linux", pair_by="labels.rep", metric_names=["runtime_s"], margin=0.02
    )
    assert rows_by(result, "new")["runtime_s"]["verdict"] == "no change"
    result, _, _ = compare_runs.run(
        [camp], by="variant", baseline="linux", pair_by="labels.rep", metric_names=["runtime_s"]
    )
    assert rows_by(result, "new")["runtime_s"]["verdict"] == "inconclusive"


def test_alone_runs_are_not_baseline_runs(tmp_path):
    camp = three_reps(tmp_path, 0.58)
    write_run(camp / "runs" / "alone_x264", "linux", [1.0, 1.0], labels={"kind": "alone", "rep": 9})
    result, _, _ = compare_runs.run([camp], by="variant", baseline="linux")
    assert ("runs/alone_x264", "a T_alone run (labels.kind alone), not a run of the variant under load") in {
        (e["run"], e["reason"]) for e in result["excluded"]
    }
    assert rows_by(result, "new")["runtime_s"]["n_baseline"] == 3
    counted, _, _ = compare_runs.run([camp], by="variant", baseline="linux", include_alone=True)
    assert rows_by(counted, "new")["runtime_s"]["n_baseline"] == 4


def test_runs_sharing_a_pair_key_are_one_line_not_overwritten(campaign):
    with pytest.raises(Exception, match=r"--pair-by: 'labels.k' \(expected one run per labels.k in set 'linux'"):
        compare_runs.run([campaign], by="variant", baseline="linux", pair_by="labels.k")


def test_sets_by_any_key_and_paired(campaign):
    result, _, _ = compare_runs.run(
        [campaign],
        sets=["base:build=b1", "other:host=other-host labels.k=2"],
        metric_names=["runtime_s"],
        pair_by="block",
    )
    row = result["rows"][0]
    assert (row["baseline"], row["set"], row["paired"]) == ("base", "other", True)
    assert row["ratio"] == pytest.approx(0.8) and row["ci_low"] == pytest.approx(0.8)  # exact pairs
    result, _, _ = compare_runs.run(
        [campaign], sets=["variant=linux", "variant=slow,fast"], metric_names=["makespan_s"]
    )
    assert result["sets"][1]["runs"] == 12


def test_wilcoxon_option_and_its_attainable_level(campaign):
    one = dict(
        sets=["variant=linux", "variant=slow"], metric_names=["runtime_s"], test="wilcoxon", pair_by="labels.rep"
    )
    result, _, _ = compare_runs.run([campaign], **one)
    # 6 pairs of one ratio exactly (1.25): no spread between pairs, and so no interval to decide on
    assert result["rows"][0]["verdict"] == "inconclusive" and "no spread between pairs" in result["rows"][0]["why"]
    assert result["settings"]["test"] == "wilcoxon"
    # with 15 comparisons each is judged at 0.05/15: 6 pairs can never reach it, and it says so
    result, _, _ = compare_runs.run([campaign], by="variant", baseline="linux", test="wilcoxon", pair_by="labels.rep")
    row = rows_by(result, "slow")["runtime_s"]
    assert row["verdict"] == "inconclusive" and "smallest p" in row["why"] and row["reps_needed"] == 10


def test_cli_gate_outputs_and_exit_codes(campaign, tmp_path, repo_root):
    out = tmp_path / "cmp"
    args = ["compare", str(campaign), "--set", "variant=linux", "--set"]
    res = corun(*args, "variant=slow", "--fail-if-worse", "5%", "--out", str(out), cwd=repo_root)
    assert res.returncode == 1, res.stderr
    assert "Gate FAILED" in res.stdout
    for name in (
        "comparison.md",
        "comparison.html",
        "comparison.json",
        "comparison.csv",
        "runs.csv",
        "figures/ratios.png",
        "figures/values.png",
    ):
        assert (out / name).is_file(), name
    assert (out / "figures/ratios.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    page = (out / "comparison.html").read_text()
    assert "data:image/png;base64," in page and "<script" not in page and "src='http" not in page
    res = corun(*args, "variant=slow", "--fail-if-worse", "30%", "--no-plots", "--metrics", "runtime_s", cwd=repo_root)
    assert res.returncode == 0, res.stdout  # surely worse by 25 %, surely less than 30 %
    res = corun(*args, "variant=same", "--fail-if-worse", "1%", "--no-plots", "--metrics", "runtime_s", cwd=repo_root)
    assert res.returncode == 5, res.stdout  # the same values reshuffled: cannot tell 1 %
    assert "Gate UNDECIDED" in res.stdout


BAD = [
    (["--set", "variant=linux", "--set", "variant=nope"], "set 'variant=nope'", "matching at least one run"),
    (["--set", "varient=linux", "--set", "variant=slow"], "varient", "a key recorded by the runs"),
    (["--set", "variant=linux"], "sets: 1", "at least 2 sets"),
    (["--by", "variant", "--baseline", "cfs"], "--baseline: 'cfs'", "one of fast, linux, same, slow"),
    (["--by", "variant", "--metrics", "speed"], "metric: 'speed'", "one of"),
    (["--by", "variant", "--fail-if-worse", "lots"], "--fail-if-worse: 'lots'", "a percentage"),
    (["--set", "variant", "--set", "variant=slow"], "--set: 'variant'", "key=value"),
    (["--by", "variant", "--margin", "much"], "--margin: 'much'", "a percentage"),
]


@pytest.mark.parametrize("args, key, expected", BAD, ids=[b[1] for b in BAD])
def test_cli_bad_input_one_line_exit_2(campaign, repo_root, args, key, expected):
    res = corun("compare", str(campaign), *args, "--no-plots", cwd=repo_root)
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and key in lines[0] and expected in lines[0], res.stderr


def test_missing_source_exit_2(tmp_path, repo_root):
    res = corun("compare", str(tmp_path / "nope"), "--by", "variant", cwd=repo_root)
    assert res.returncode == 2 and "source" in res.stderr and "Traceback" not in res.stderr


def test_index_build_incremental_and_select(campaign, tmp_path):
    db = tmp_path / "idx" / "runs.sqlite"
    counts = runindex.build_index([campaign], db)
    assert counts == {"added": 27, "updated": 0, "unchanged": 0, "removed": 0, "total": 27}
    assert runindex.build_index([campaign], db)["unchanged"] == 27
    meta = campaign / "runs" / "linux_r0" / "metadata.json"
    m = json.loads(meta.read_text())
    m["labels"]["note"] = "re-tagged"
    meta.write_text(json.dumps(m))
    os.utime(meta, ns=(1, 1))
    write_run(campaign / "runs" / "linux_r6", "linux", [10.0, 10.0], labels={"rep": 6})
    import shutil

    shutil.rmtree(campaign / "runs" / "fast_failed")
    counts = runindex.build_index([campaign], db)
    assert (counts["added"], counts["updated"], counts["removed"], counts["total"]) == (1, 1, 1, 27)
    recs = runindex.load_index(db)
    assert len(recs) == 27
    sel = runindex.select(recs, runindex.parse_selector("variant=linux note=re-tagged"))
    assert [r.run for r in sel] == ["runs/linux_r0"]
    sel = runindex.select(recs, runindex.parse_selector("host.hostname=other-* labels.rep!=0,1"))
    assert sorted(r.run for r in sel) == ["runs/fast_r2", "runs/fast_r3", "runs/fast_r4", "runs/fast_r5"]
    assert all(r.metrics["runtime_s"] is not None for r in recs)
    assert {r.keys["campaign"] for r in recs} == {"camp"}


def test_compare_from_index_equals_folders(campaign, tmp_path):
    db = tmp_path / "runs.sqlite"
    runindex.build_index([campaign], db)
    a, b = tmp_path / "a", tmp_path / "b"
    compare_runs.run([campaign], by="variant", baseline="linux", out=a, plots=False)
    compare_runs.run([db], by="variant", baseline="linux", out=b, plots=False)
    assert (a / "comparison.csv").read_text() == (b / "comparison.csv").read_text()
    ra, rb = pd.read_csv(a / "runs.csv"), pd.read_csv(b / "runs.csv")
    assert ra.equals(rb)


def test_index_several_folders_and_cli(campaign, tmp_path, repo_root):
    other = tmp_path / "other"
    write_run(other / "runs" / "x_r0", "x", [1.0, 1.0], labels={"campaign": "second"})
    db = tmp_path / "runs.sqlite"
    res = corun("index", "build", str(campaign), str(other), "--db", str(db), cwd=repo_root)
    assert res.returncode == 0 and "28 runs indexed (28 added" in res.stdout, res.stderr
    res = corun("index", "build", str(other), "--db", str(db), cwd=repo_root)  # the campaign's runs stay
    assert "1 runs indexed (0 added, 0 updated, 1 unchanged, 0 removed)" in res.stdout
    assert len(runindex.load_index(db)) == 28
    res = corun("index", "list", "--db", str(db), "--where", "campaign=second", "--keys", "run,variant", cwd=repo_root)
    assert res.stdout.splitlines() == ["run\tvariant", "runs/x_r0\tx"]
    res = corun("index", "build", str(tmp_path / "nope"), "--db", str(db), cwd=repo_root)
    assert res.returncode == 2 and "nope" in res.stderr

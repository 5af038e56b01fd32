"""The dynamic_io analysis (paper 000 section 4) on a hand-made campaign with hand-computed answers.

The fixture campaign: workload w01 (two x264 jobs), variants linux and dynamic_io, reps 0-2, and
two alone runs of x264 (1.9 s and 2.1 s: T_alone = 2.0 s).

  run                  runtimes (s)  T_wl  thr     avg  x = T/T_alone  sum 1/x  mean x  Jain
  linux r0             4, 5          5     0.4     4.5  2, 2.5         0.9      2.25    20.25/20.5
  linux r1             4, 4          4     0.5     4.0  2, 2           1.0      2.0     1
  linux r2             6, 4          6     1/3     5.0  3, 2           5/6      2.5     25/26
  dynamic_io r0        3, 3          3     2/3     3.0  1.5, 1.5       4/3      1.5     1
  dynamic_io r1        2, 4          4     0.5     3.0  1, 2           1.5      1.5     0.9
  dynamic_io r2        4, 4          4     0.5     4.0  2, 2           1.0      2.0     1
"""

import json
import math

import numpy as np
import pandas as pd
import pytest

from analysis import runtables as rt
from analysis.paper import load_paper_values
from experiments.dynamic_io import analysis as dio

RUNTIMES = {
    ("linux", 0): [4, 5],
    ("linux", 1): [4, 4],
    ("linux", 2): [6, 4],
    ("dynamic_io", 0): [3, 3],
    ("dynamic_io", 1): [2, 4],
    ("dynamic_io", 2): [4, 4],
}
WAIT = {"linux": (100.0, 200.0), "dynamic_io": (50.0, 50.0)}  # at 10 and 30 requests/s


def write_campaign(root, decisions_for=("r0", "r1")):
    jobs, runs = [], []

    def run_dir(rid, variant, kind, rep, duration):
        d = root / "runs" / rid
        (d / "tidy").mkdir(parents=True)
        (d / "metadata.json").write_text(
            json.dumps(
                {"run_id": rid, "scheduler": {"name": variant}, "missing": [], "start_epoch_s": 1000.0 + 10 * len(runs)}
            )
        )
        runs.append(
            {
                "run_id": rid,
                "experiment": "dynamic_io",
                "run_kind": kind,
                "workload": "w01" if kind == "campaign" else "alone",
                "variant": variant,
                "rep": rep,
                "order": len(runs),
                "duration_s": duration,
                "device": "vda",
                "throttle_read_bps": 8000000,
                "metadata_path": f"runs/{rid}/metadata.json",
                "run_dir": f"runs/{rid}",
            }
        )
        return d

    for rep, t in ((0, 1.9), (1, 2.1)):
        rid = f"alone-x264-r{rep}"
        run_dir(rid, "linux", "alone", rep, t)
        jobs.append(
            {
                "run_id": rid,
                "job_id": "0000-x",
                "runtime_s": t,
                "exit_code": 0,
                "start_s": 0.0,
                "end_s": t,
                "app": "x264",
                "job_index": 0,
                "workload": "alone",
                "variant": "linux",
                "experiment": "dynamic_io",
                "binary": "debian x264",
                "stands_in_for": "PARSEC x264 simlarge",
                "scale_note": "scaled down",
                "threads": 1,
            }
        )
    for (variant, rep), times in RUNTIMES.items():
        rid = f"w01-{variant}-r{rep}"
        d = run_dir(rid, variant, "campaign", rep, max(times))
        for i, t in enumerate(times):
            jobs.append(
                {
                    "run_id": rid,
                    "job_id": f"000{i}-j",
                    "runtime_s": float(t),
                    "exit_code": 0,
                    "start_s": 0.0,
                    "end_s": float(t),
                    "app": "x264",
                    "job_index": i,
                    "workload": "w01",
                    "wtype": "D",
                    "variant": variant,
                    "experiment": "dynamic_io",
                    "binary": "debian x264",
                    "stands_in_for": "PARSEC x264 simlarge",
                    "scale_note": "scaled down",
                    "threads": 1,
                }
            )
        w1, w2 = WAIT[variant]
        pd.DataFrame(
            {
                "time_epoch_s": [1.0, 2.0, 3.0, 9.0],
                "t_s": [1.0, 2.0, 2.5, 99.0],
                "device": ["vda", "vda", "vdb", "vda"],
                "r_per_s": [10.0, 30.0, 50.0, 50.0],
                "w_per_s": [0.0, 0.0, 0.0, 0.0],
                "await_ms": [w1 + 1, w2 + 2, 9.0, 9.0],
                "svc_ms": [1.0, 2.0, 9.0, 9.0],
                "wait_ms": [w1, w2, 0.0, 0.0],
                "util_pct": [1.0, 6.0, 1.0, 1.0],
            }
        ).to_csv(d / "tidy" / "iostat.csv", index=False)
        if variant == "dynamic_io" and f"r{rep}" in decisions_for:
            state = d / "sched" / "state"
            state.mkdir(parents=True)
            lines = [
                {"q": 1, "t_s": None, "suspended": 0, "running": 0, "throttled": 0, "actions": []},
                {"note": "refused", "job_id": "x", "reason": "process gone"},
                {
                    "q": 2,
                    "t_s": 0.5,
                    "suspended": 1,
                    "running": 1,
                    "throttled": 0,
                    "actions": [{"job_id": "0000-j", "action": "suspend"}],
                },
                {"q": 3, "t_s": 1.0, "suspended": 0, "running": 2, "throttled": 0, "actions": []},
            ]
            (state / "decisions.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
            (state / "summary.json").write_text(
                json.dumps(
                    {
                        "quanta": 3,
                        "suspends": 1,
                        "resumes": 1,
                        "forced_resumes": 0,
                        "throttles": 0,
                        "cpu_user_s": 0.01,
                        "cpu_sys_s": 0.01,
                        "wall_s": 4.0,
                        "jobs": {},
                    }
                )
            )
    pd.DataFrame(jobs).to_csv(root / "jobs.csv", index=False)
    pd.DataFrame(runs).to_csv(root / "runs.csv", index=False)
    return root / "jobs.csv", root / "runs.csv"


@pytest.fixture
def campaign(tmp_path):
    return write_campaign(tmp_path)


@pytest.fixture
def result(campaign):
    jobs_csv, runs_csv = campaign
    jobs, runs = dio.read_jobs(jobs_csv), dio.read_runs(runs_csv)
    log = rt.MissingLog()
    res = dio.analyse(jobs, runs, rt.run_dirs(runs, runs_csv), log, "linux")
    res["log"] = log
    return res


def metric(res, variant, rep, name):
    r = res["runs"]
    return float(r.loc[(r["variant"] == variant) & (r["rep"] == rep), name].iloc[0])


def imp(res, name, variant="dynamic_io"):
    t = res["improvement"]
    return t[(t["variant"] == variant) & (t["metric"] == name)].iloc[0]


def test_jain_and_improvement_forms():
    assert dio.jain([1, 1, 1]) == 1.0
    assert dio.jain([1, 3]) == pytest.approx(16 / 20)
    assert math.isnan(dio.jain([]))
    assert dio.improvement_pct(1.2, higher=True) == pytest.approx(20.0)
    assert dio.improvement_pct(0.75, higher=False) == pytest.approx(25.0)
    # the paper's own example (Sec. 4.2.2): waiting 696 ms -> 286 ms "improved by 59%"
    assert round(dio.improvement_pct(286 / 696, higher=False)) == 59
    assert round(dio.improvement_pct(3.9 / 4.95, higher=False)) == 21


def test_paired_ratio_is_a_t_interval_of_the_per_rep_log_ratios():
    # a constant ratio in every rep: the interval is that ratio
    r = dio.paired_ratio({0: 2.0, 1: 4.0, 2: 6.0}, {0: 1.0, 1: 2.0, 2: 3.0})
    assert (r["n_pairs"], r["ratio"]) == (3, 2.0)
    assert (r["ci95_low"], r["ci95_high"]) == (pytest.approx(2.0), pytest.approx(2.0))
    # only reps both have are paired; one pair gives a ratio but no interval
    r = dio.paired_ratio({0: 3.0, 5: 1.0}, {0: 2.0, 1: 9.0})
    assert r["n_pairs"] == 1 and r["ratio"] == 1.5 and math.isnan(r["ci95_low"])
    # per-rep ratios 0.5, 1.5, 1, 1.25: with 3 degrees of freedom the interval reaches beyond
    # them (a percentile bootstrap would stay inside [0.5, 1.5])
    r = dio.paired_ratio({0: 1.0, 1: 3.0, 2: 2.0, 3: 2.5}, {0: 2.0, 1: 2.0, 2: 2.0, 3: 2.0})
    logs = [math.log(x) for x in (0.5, 1.5, 1.0, 1.25)]
    mean = sum(logs) / 4
    half = 3.182446305284263 * math.sqrt(sum((x - mean) ** 2 for x in logs) / 3) / 2
    assert r["ratio"] == pytest.approx(8.5 / 8)
    assert (r["ci95_low"], r["ci95_high"]) == (
        pytest.approx(math.exp(mean - half)),
        pytest.approx(math.exp(mean + half)),
    )
    assert r["ci95_low"] < 0.5 and r["ci95_high"] > 1.5
    # a per-rep value <= 0 has no log: the t-interval of the per-rep ratios (-0.5, 1.5, 1)
    r = dio.paired_ratio({0: -1.0, 1: 3.0, 2: 2.0}, {0: 2.0, 1: 2.0, 2: 2.0})
    half = 4.302652729911275 * math.sqrt(((-0.5 - 2 / 3) ** 2 + (1.5 - 2 / 3) ** 2 + (1 / 3) ** 2) / 2) / math.sqrt(3)
    assert (r["ci95_low"], r["ci95_high"]) == (pytest.approx(2 / 3 - half), pytest.approx(2 / 3 + half))


def test_t_alone_is_the_mean_of_the_alone_runs(result):
    t = result["t_alone"].set_index("app")
    assert t.loc["x264", "t_alone_s"] == pytest.approx(2.0)
    assert t.loc["x264", "n_runs"] == 2


@pytest.mark.parametrize(
    "variant, rep, name, value",
    [
        ("linux", 0, "t_workload_s", 5.0),
        ("linux", 0, "throughput_jobs_per_s", 0.4),
        ("linux", 0, "avg_runtime_s", 4.5),
        ("linux", 0, "slowdown_sum", 0.9),  # eq. 4: 2/4 + 2/5
        ("linux", 0, "mean_slowdown", 2.25),
        ("linux", 0, "jain_fairness", 20.25 / 20.5),
        ("linux", 2, "slowdown_sum", 1 / 3 + 1 / 2),
        ("linux", 2, "jain_fairness", 25 / 26),
        ("dynamic_io", 1, "slowdown_sum", 1.5),
        ("dynamic_io", 1, "jain_fairness", 0.9),
        ("dynamic_io", 0, "throughput_jobs_per_s", 2 / 3),
    ],
)
def test_run_metrics_by_hand(result, variant, rep, name, value):
    assert metric(result, variant, rep, name) == pytest.approx(value)


def test_request_weighted_latency_inside_the_run(result):
    # linux: (10 x 100 + 30 x 200) / 40 = 175 ms; the vdb row and the row after the run do not count
    assert metric(result, "linux", 0, "wait_ms") == pytest.approx(175.0)
    assert metric(result, "linux", 0, "svc_ms") == pytest.approx((10 * 1 + 30 * 2) / 40)
    assert metric(result, "dynamic_io", 0, "wait_ms") == pytest.approx(50.0)


def test_means_with_t_intervals(result):
    s = result["summary"].set_index("variant")
    avg = np.array([4.5, 4.0, 5.0])
    half = 4.302652729911275 * avg.std(ddof=1) / math.sqrt(3)  # t(0.975, 2)
    assert s.loc["linux", "avg_runtime_s"] == pytest.approx(4.5)
    assert s.loc["linux", "avg_runtime_s_ci95_low"] == pytest.approx(4.5 - half)
    assert s.loc["linux", "avg_runtime_s_ci95_high"] == pytest.approx(4.5 + half)


def test_improvement_in_the_papers_form(result):
    r = imp(result, "avg_runtime_s")  # lower is better: (old - new) / old
    assert r["ratio"] == pytest.approx((10 / 3) / 4.5)
    assert r["improvement_pct"] == pytest.approx((1 - (10 / 3) / 4.5) * 100)
    assert r["improvement_ci95_low"] <= r["improvement_pct"] <= r["improvement_ci95_high"]
    r = imp(result, "throughput_jobs_per_s")  # higher is better: (new - old) / old
    new, old = (2 / 3 + 0.5 + 0.5) / 3, (0.4 + 0.5 + 1 / 3) / 3
    assert r["improvement_pct"] == pytest.approx((new / old - 1) * 100)
    r = imp(result, "slowdown_sum")
    assert r["improvement_pct"] == pytest.approx(((4 / 3 + 1.5 + 1.0) / (0.9 + 1.0 + 5 / 6) - 1) * 100)
    r = imp(result, "wait_ms")
    assert r["improvement_pct"] == pytest.approx((1 - 50 / 175) * 100)
    assert r["n_pairs"] == 3


def test_decisions_and_missing_summary(result):
    r = result["runs"].set_index("run_id")
    assert r.loc["w01-dynamic_io-r0", "max_suspended_jobs"] == 1.0
    assert r.loc["w01-dynamic_io-r0", "suspends"] == 1.0
    assert r.loc["w01-dynamic_io-r0", "daemon_cpu_pct"] == pytest.approx(0.5)
    assert math.isnan(r.loc["w01-dynamic_io-r2", "suspends"])  # absent: missing, never 0
    assert math.isnan(r.loc["w01-linux-r0", "suspends"])  # linux has no daemon and is not missing
    missing = {(m["metric"], m["runs"]) for m in result["log"].records()}
    assert ("scheduler decisions (suspended jobs over time)", 1) in missing
    assert ("scheduler summary (suspends, daemon CPU time)", 1) in missing


def test_missing_t_alone_leaves_slowdown_missing(tmp_path):
    jobs_csv, runs_csv = write_campaign(tmp_path)
    jobs = pd.read_csv(jobs_csv)
    jobs.loc[jobs["run_id"].str.startswith("alone"), "exit_code"] = 1
    jobs.to_csv(jobs_csv, index=False)
    j, r = dio.read_jobs(jobs_csv), dio.read_runs(runs_csv)
    log = rt.MissingLog()
    res = dio.analyse(j, r, rt.run_dirs(r, runs_csv), log, "linux")
    assert res["runs"]["slowdown_sum"].isna().all() and res["runs"]["avg_runtime_s"].notna().all()
    assert any("no T_alone for job type(s) x264" in m["reason"] for m in log.records())


def test_section_verdicts_and_outputs(campaign, tmp_path):
    jobs_csv, runs_csv = campaign
    out = tmp_path / "out"
    dio.run(str(jobs_csv), str(runs_csv), str(out))
    section = json.loads((out / "section.json").read_text())
    rows = {r["quantity"]: r for r in section["comparison"]}
    row = rows["#1 average runtime (eq. 5): improvement of dynamic_io over linux"]
    assert row["paper_value"] == "6.7% to 67.9%"
    assert row["verdict"] in ("reproduced in direction", "not reproduced")
    assert rows["#1 I/O waiting time improves (Fig. 18)"]["verdict"] == "reproduced in direction"
    assert rows["#1 mean I/O waiting time under linux"]["verdict"] == "differs (machine-specific)"
    assert rows["#1 mean I/O waiting time under linux"]["measured_value"] == pytest.approx(175.0)
    graph = rows["D-TYPE graph (#7-#9, Fig. 17): throughput (eq. 3) improves"]
    assert graph["verdict"] == "not measurable here"
    assert "none of #7, #8, #9 is in this campaign" in graph["note"]
    assert rows["#8 per-job runtimes (Fig. 23)"]["verdict"] == "not measurable here"
    assert rows["CPU time of the dynamic_io daemon, share of its wall time"]["verdict"] == "reproduced in direction"
    for f in section["figures"]:
        assert (out / f["path"]).stat().st_size > 0
    assert {f["path"] for f in section["figures"]} >= {
        "fig16_17_20_improvement.png",
        "latency_w01.png",
        "per_job_w01.png",
        "suspended_jobs.png",
    }
    assert any(m["metric"].startswith("scheduler decisions") for m in section["missing"])
    assert "All 8 runs were measured in campaign order" in " ".join(section["notes"])
    apps = pd.read_csv(out / "apps.csv")
    assert apps.loc[0, "stands_in_for"] == "PARSEC x264 simlarge"


def test_bad_baseline_is_one_line(campaign, tmp_path, capsys):
    jobs_csv, runs_csv = campaign
    code = dio.main(
        ["--jobs", str(jobs_csv), "--runs", str(runs_csv), "--baseline", "cfs", "--out-dir", str(tmp_path / "o")]
    )
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1
    assert "--baseline: 'cfs' (expected one of dynamic_io, linux)" in err


def test_bad_run_kind_is_one_line(campaign):
    _, runs_csv = campaign
    runs = pd.read_csv(runs_csv)
    runs.loc[0, "run_kind"] = "solo"
    runs.to_csv(runs_csv, index=False)
    with pytest.raises(dio.AnalysisInputError, match="row 2: run_kind: 'solo'"):
        dio.read_runs(runs_csv)


def test_paper_values_have_section_4():
    vals = load_paper_values("000")["experiments"]["dynamic_io"]["values"]
    assert vals["w01_wait_linux_ms"]["value"] == 696 and vals["w08_throughput_pct"]["value"] == 431


def test_runs_measured_out_of_order_are_noted(campaign):
    _, runs_csv = campaign
    runs = pd.read_csv(runs_csv)
    paths = [runs_csv.parent / p for p in runs["metadata_path"]]
    meta = json.loads(paths[3].read_text())
    meta["start_epoch_s"] = 5000.0  # run 3 measured last
    paths[3].write_text(json.dumps(meta))
    note = dio.order_note(runs, paths)
    assert note.startswith("1 of 8 runs were measured after a run that comes later") and "w01-linux-r1" in note


def test_the_device_note_names_the_disk_and_each_variants_elevator(tmp_path):
    import json

    from analysis import runtables as rt

    paths = []
    for i, (variant, elevator) in enumerate(
        [("linux", "mq-deadline"), ("elevator_bfq", "bfq"), ("dynamic_io", "mq-deadline")]
    ):
        p = tmp_path / f"r{i}" / "metadata.json"
        p.parent.mkdir()
        meta = {
            "device_kind": "rotating_disk",
            "device_setup": {"preset": "sata_7200_2010"},
            "device": {"elevator": elevator},
            "scheduler": {"name": variant},
        }
        p.write_text(json.dumps(meta))
        paths.append(p)
    note = rt.device_note(paths)
    assert "emulated rotating disk built for each run (preset sata_7200_2010)" in note
    assert "dynamic_io: mq-deadline; elevator_bfq: bfq; linux: mq-deadline" in note and "CFQ" in note
    # a throttled run: the disk holding the data folder
    meta = {"device": {"elevator": "none"}, "scheduler": {"name": "linux"}}
    paths[0].write_text(json.dumps(meta))
    assert "the disk holding the data folder" in rt.device_note(paths[:1])
    assert rt.device_note([]).startswith("No run metadata")

"""experiments.noisy_neighbour.analysis on hand-made runs: normalisation, gains, pairing, verdicts."""

import json
import math

import pandas as pd
import pytest

from analysis.common import AnalysisInputError
from experiments.noisy_neighbour import analysis as nn

FIO = '{{"jobs": [{{"jobname": "w", "write": {{"bw_bytes": {bw}}}}}]}}\n'


def make_run(root, run_id, kind, variant, workload, rep, tasks, domain="smt", samples=None):
    """tasks: [(job_id, type, value)] with value the CPU time (s) or the fio bandwidth (MB/s)."""
    d = root / "runs" / run_id
    (d / "jobs").mkdir(parents=True)
    (d / "metadata.json").write_text(json.dumps({"run_id": run_id, "missing": []}))
    rows = []
    for job_id, t, value in tasks:
        row = {
            "run_id": run_id,
            "job_id": job_id,
            "name": job_id,
            "kind": kind,
            "domain": domain if kind == "pair" else "",
            "variant": variant,
            "workload": workload,
            "rep": rep,
            "task_type": t,
            "exit_code": 0,
            "runtime_s": 9.0,
            "end_s": 9.0,
            "result_elapsed_s": value if t == "cpu" else None,
            "result_check": "ok" if t == "cpu" else None,
        }
        if t == "io":
            (d / "jobs" / f"{job_id}.out").write_text("fio: a warning first\n" + FIO.format(bw=value * 1e6))
        rows.append(row)
    if samples is not None:
        (d / "sched" / "state").mkdir(parents=True)
        pd.DataFrame(samples, columns=["t_s", "job", "cpu"]).to_csv(
            d / "sched" / "state" / "cpu_samples.csv", index=False
        )
    run = {"run_id": run_id, "variant": variant, "metadata_path": str(d / "metadata.json"), "run_dir": str(d)}
    return rows, run


@pytest.fixture
def campaign(tmp_path):
    jobs, runs = [], []

    def add(*a, **k):
        j, r = make_run(tmp_path, *a, **k)
        jobs.extend(j)
        runs.append(r)

    add("alone_w_r0", "alone_cpu", "linux", "w", 0, [("c0", "cpu", 2.0)])
    add("alone_w_r1", "alone_cpu", "linux", "w", 1, [("c0", "cpu", 2.0)])
    add("alone_io_r0", "alone_io", "linux", "fio", 0, [("i0", "io", 100.0)])
    # same-type: CPU at half speed, fio at half bandwidth -> overall 0.5; mixed: 0.75 and 0.75
    for rep in (0, 1):
        add(f"smt_same_r{rep}", "pair", "smt_same_type", "w", rep, [("c0", "cpu", 4.0), ("i0", "io", 50.0)])
        add(f"smt_mixed_r{rep}", "pair", "smt_mixed", "w", rep, [("c0", "cpu", 2.0 / 0.75), ("i0", "io", 75.0)])
    # cfs: two cpu + two io tasks on two CPUs; at t=0.5 the CPUs hold (cpu, cpu) and (io, io),
    # at t=1.0 (cpu, io) twice: 2 same-type and 2 mixed CPU-instants
    samples = [
        (0.5, "c0", 0),
        (0.5, "c1", 0),
        (0.5, "i0", 1),
        (0.5, "i1", 1),
        (1.0, "c0", 0),
        (1.0, "i0", 0),
        (1.0, "c1", 1),
        (1.0, "i1", 1),
    ]
    add(
        "smt_cfs_r0",
        "pair",
        "cfs",
        "w",
        0,
        [("c0", "cpu", 2.0), ("c1", "cpu", 2.0), ("i0", "io", 100.0), ("i1", "io", 100.0)],
        samples=samples,
    )
    pd.DataFrame(jobs).to_csv(tmp_path / "jobs.csv", index=False)
    pd.DataFrame(runs).to_csv(tmp_path / "runs.csv", index=False)
    plan = {
        "rows": [
            {"domain": "smt", "variant": v, "workload": "w", "not_measurable": None}
            for v in ("cfs", "smt_same_type", "smt_mixed")
        ]
        + [
            {"domain": "numa", "variant": v, "workload": "w", "not_measurable": "one NUMA node (0-1)"}
            for v in ("numa_concentrate", "numa_spread")
        ]
    }
    (tmp_path / "plan.json").write_text(json.dumps(plan))
    prem = tmp_path / "premise"
    prem.mkdir()
    (prem / "summary.json").write_text(
        json.dumps(
            {
                "layout": "alone",
                "store_medium": "memory",
                "comparisons": {"store_util_over_cpu_util": 0.9, "store_util_over_psync_util": 2.0},
                "missing": [],
            }
        )
    )
    return tmp_path


def analyse(root, premise=True):
    return nn.run(
        str(root / "jobs.csv"),
        str(root / "runs.csv"),
        str(root / "plan.json"),
        [str(root / "premise")] if premise else [],
        str(root / "out"),
        "003",
    )


def test_normalised_performance_and_the_smt_gain(campaign):
    res = analyse(campaign)
    t = res["table"].set_index("variant")
    assert t.loc["smt_same_type", "overall"] == pytest.approx(0.5)
    assert t.loc["smt_mixed", "overall"] == pytest.approx(0.75)
    assert t.loc["smt_mixed", "n_reps"] == 2 and math.isfinite(t.loc["smt_mixed", "ci95_low"])
    assert t.loc["cfs", "overall"] == pytest.approx(1.0)
    rows = res["comparison"].set_index("quantity")
    smt = rows.loc["SMT: overall performance, mixed pairs over same-type pairs"]
    assert smt["measured_value"] == pytest.approx(50.0) and smt["verdict"] == "reproduced in direction"


def test_rows_this_machine_cannot_express_are_not_measurable_with_the_reason(campaign):
    res = analyse(campaign)
    t = res["table"]
    numa = t[t["domain"] == "numa"]
    assert len(numa) == 2 and (numa["n_reps"] == 0).all() and (numa["not_measurable"] == "one NUMA node (0-1)").all()
    row = res["comparison"].iloc[1]
    assert row["verdict"] == "not measurable here" and row["note"] == "one NUMA node (0-1)"
    section = json.loads((campaign / "out" / "section.json").read_text())
    assert any(m["metric"] == "numa numa_spread" for m in section["missing"])
    assert (campaign / "out" / nn.FIG_NAME).stat().st_size > 0


def test_a_worse_mixed_pairing_is_not_reproduced(campaign):
    jobs = pd.read_csv(campaign / "jobs.csv")
    jobs.loc[(jobs["variant"] == "smt_mixed") & (jobs["task_type"] == "cpu"), "result_elapsed_s"] = 8.0
    jobs.to_csv(campaign / "jobs.csv", index=False)
    for d in (campaign / "runs").glob("smt_mixed_r*"):
        (d / "jobs" / "i0.out").write_text(FIO.format(bw=10e6))
    res = analyse(campaign)
    smt = res["comparison"].iloc[0]
    assert smt["measured_value"] < 0 and smt["verdict"] == "not reproduced"


def test_cfs_pairing_share_against_chance(campaign):
    res = analyse(campaign)
    p = res["pairing"]
    assert p["cpu_instants_shared"] == 4 and p["same_type_share"] == pytest.approx(0.5)
    assert p["random_share"] == pytest.approx(1 / 3)  # 2 same-type pairs of the 6 possible
    row = res["comparison"].iloc[3]
    assert row["verdict"] == "reproduced in direction"


def test_premise_verdict_and_its_absence(campaign):
    res = analyse(campaign)
    assert res["comparison"].iloc[2]["verdict"] == "reproduced in direction"
    res = analyse(campaign, premise=False)
    assert res["comparison"].iloc[2]["verdict"] == "not measurable here"


def test_a_missing_fio_output_is_a_recorded_missing_metric(campaign):
    (campaign / "runs" / "smt_mixed_r0" / "jobs" / "i0.out").write_text("fio: crashed\n")
    analyse(campaign)
    section = json.loads((campaign / "out" / "section.json").read_text())
    fio = [m for m in section["missing"] if m["metric"] == "fio write bandwidth"]
    assert fio and fio[0]["runs"] == 1


def test_an_unreadable_plan_is_one_line(campaign):
    (campaign / "plan.json").write_text("{")
    with pytest.raises(AnalysisInputError, match="plan.json: not readable"):
        analyse(campaign)

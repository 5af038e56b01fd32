"""The MPL sweep's discrete-event model (experiments.mpl_sweep.des, experiments.mpl_sweep.model) on hand-made inputs."""

import json
import math
import os
import random
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest

from analysis import report
from experiments.mpl_sweep import des
from experiments.mpl_sweep import model as mm

BENCHES = {
    "bt": des.Bench(iters=40, compute_s=0.002, lat_s=0.0002, halo=True, allreduce_every=10),
    "cg": des.Bench(iters=40, compute_s=0.0003, lat_s=0.0002, halo=True, allreduce_every=1),
    "is": des.Bench(iters=40, compute_s=0.0005, lat_s=0.0001, halo=False, allreduce_every=1, alltoall_every=1),
}
STAND_IN = {
    "bt": {"halo_bytes": 16384, "allreduce_every": 10, "alltoall_every": 0},
    "cg": {"halo_bytes": 8192, "allreduce_every": 1, "alltoall_every": 0},
    "is": {"halo_bytes": 0, "allreduce_every": 1, "alltoall_every": 1},
}


def stream(n, gap, seed=3, ranks=(2,)):
    rng = random.Random(seed)
    return [des.JobIn(f"j{i}", rng.choice(sorted(BENCHES)), rng.choice(ranks), round(i * gap, 3)) for i in range(n)]


@pytest.mark.parametrize("bench", sorted(BENCHES))
@pytest.mark.parametrize("scheme", des.SCHEMES)
def test_one_job_alone_is_its_compute_plus_its_messages(bench, scheme):
    p = des.Params(ctx_switch_s=0.0, startup_s=0.5, startup_cpu_frac=0.4)
    res = des.simulate(scheme, 3, 2, p, BENCHES, [des.JobIn("a", bench, 2, 1.0)])
    b = BENCHES[bench]
    expect = 0.5 + b.iters * b.compute_s + b.alone_s(2) - b.iters * b.compute_s
    assert res["jobs"][0]["start_s"] == pytest.approx(1.0)
    assert res["jobs"][0]["exec_s"] == pytest.approx(expect, rel=1e-9)
    assert res["jobs"][0]["exec_s"] == pytest.approx(0.5 + b.iters * b.compute_s + b.iters * b.lat_s * (
        (1 if b.halo else 0) + (1 if b.allreduce_every else 0) / max(1, b.allreduce_every)
        + (1 if b.alltoall_every else 0) / max(1, b.alltoall_every)), rel=1e-9)  # fmt: skip
    assert res["md_us"] >= 0


def test_collective_latency_grows_with_ranks():
    b = BENCHES["is"]
    assert b.alone_s(16) - b.iters * b.compute_s == pytest.approx(b.iters * b.lat_s * (4 + 15))


def test_batch_at_mpl_1_has_no_conflicts_and_queues_fifo():
    jobs = stream(6, 0.0)
    res = des.simulate("batch", 5, 2, des.Params(), BENCHES, jobs)
    assert res["bcr"] == 0.0 and res["conflict_context_switches"] == 0
    starts = [j["start_s"] for j in res["jobs"]]
    ends = [j["end_s"] for j in res["jobs"]]
    assert starts == sorted(starts)
    for i in range(1, len(jobs)):  # one job at a time on the two nodes: each starts when the last ends
        assert starts[i] == pytest.approx(ends[i - 1])


def test_fifo_allocation_does_not_backfill():
    # a 4-rank job at the head waits for all four nodes; the 1-rank job behind it waits too
    jobs = [des.JobIn("a", "bt", 3, 0.0), des.JobIn("b", "bt", 4, 0.01), des.JobIn("c", "cg", 1, 0.02)]
    res = des.simulate("batch", 1, 4, des.Params(), BENCHES, jobs)
    a, b, c = res["jobs"]
    assert b["start_s"] == pytest.approx(a["end_s"])
    assert c["start_s"] >= b["start_s"]


def test_multiprogramming_shares_the_cpu():
    jobs = [des.JobIn(f"j{i}", "bt", 2, 0.0) for i in range(3)]
    alone = des.simulate("batch", 1, 2, des.Params(), BENCHES, jobs[:1])["jobs"][0]["exec_s"]
    res = des.simulate("ib", 3, 2, des.Params(), BENCHES, jobs)
    assert all(j["start_s"] == 0.0 for j in res["jobs"])
    assert max(j["end_s"] for j in res["jobs"]) > 2.5 * alone


def test_cc_picks_the_rank_whose_correspondents_have_the_lowest_erl():
    m = des.Model("cc_b", 5, 1, des.Params(), BENCHES, [])
    n = m.nodes[0]
    jobs = [des.Job(des.JobIn(f"j{i}", "bt", 2, 0.0), BENCHES["bt"], i) for i in range(3)]
    ranks = [des.Rank(j, 0, n, state="wait") for j in jobs]
    m.now = 1.0
    ranks[0].pending = [(0.150, 1.0)]  # its correspondent's node will reschedule it in 150 ms
    ranks[1].pending = [(0.010, 1.0)]  # 10 ms: runs first
    ranks[2].pending = []  # nothing pending: last
    for r in ranks:
        n.ranks.append(r)
        n.runq.append(r)
        r.queued = True
    assert m.best_candidate(n) is ranks[1]
    assert sorted(ranks, key=m.prio) == [ranks[1], ranks[0], ranks[2]]
    # eq. 3: an old message's ERL has aged; 150 ms less 145 ms is 5 ms, below 10 ms
    ranks[0].pending = [(0.150, 0.855)]
    assert m.best_candidate(n) is ranks[0]


def test_cc_orders_only_on_a_conflict():
    m = des.Model("cc_b", 5, 1, des.Params(), BENCHES, [])
    n = m.nodes[0]
    j = des.Job(des.JobIn("j", "bt", 2, 0.0), BENCHES["bt"], 0)
    r = des.Rank(j, 0, n, state="wait", pending=[(0.01, 0.0)])
    n.ranks.append(r)
    assert not m.is_boosted(r)  # one rank with pending messages: no boost conflict


def test_erl_is_eq_1():
    m = des.Model("cc_b", 5, 1, des.Params(cost_switch_s=6e-6), BENCHES, [])
    n = m.nodes[0]
    n.ed_s = 0.002
    j = des.Job(des.JobIn("j", "bt", 2, 0.0), BENCHES["bt"], 0)
    for i in range(3):
        n.ranks.append(des.Rank(j, i, n, pending=[(0.0, 0.0)] if i < 2 else []))
    assert m.erl(n) == pytest.approx(0.002 * 2 + 3 * 6e-6)


def test_runs_are_deterministic_and_blocking_frees_the_cpu_under_load():
    jobs = stream(8, 0.05)
    p = des.Params(startup_s=0.05, startup_cpu_frac=0.5)
    a = des.simulate("cc_b", 3, 2, p, BENCHES, jobs)
    assert a == des.simulate("cc_b", 3, 2, p, BENCHES, jobs)
    spin = des.simulate("local", 3, 2, p, BENCHES, jobs)
    block = des.simulate("ib", 3, 2, p, BENCHES, jobs)
    mean = lambda r: sum(j["response_s"] for j in r["jobs"]) / len(r["jobs"])  # noqa: E731
    assert mean(block) < mean(spin)


def plan(jobs=6, nodes=(4,), mpl=(2,), seed=1, schemes=None):
    return {
        "hosts": 2,
        "cores_per_node": 1,
        "ranks_per_node": 1,
        "scheduler_params": {},
        "loads": {"heavy": 0.586, "light": 1.011},
        "workloads": {"wl6": {"apps": ["bt", "cg", "is"], "ranks": [2], "arrival": "exponential", "jobs": 4}},
        "stand_in": {k: {**v, "iters": 40} for k, v in STAND_IN.items()},
        "model": {
            "enabled": True,
            "tolerance_pct": 10,
            "fit": {"startup_cpu_frac": [0, 0.5, 1], "ctx_switch_us": [5, 40], "quantum_ms": [1, 4]},
            "projection": {
                "nodes": list(nodes),
                "mpl_levels": list(mpl),
                "workload": "wl6",
                "load": "heavy",
                "jobs": jobs,
                "ranks": [2, 4],
                "schemes": schemes,
                "seed": seed,
            },
        },
    }


def test_projection_is_deterministic_for_a_seed():
    p = des.Params(startup_s=0.05, startup_cpu_frac=0.5)
    a = mm.project(plan(seed=1), BENCHES, p, ["sb", "cc_b"])
    b = mm.project(plan(seed=1), BENCHES, p, ["sb", "cc_b"])
    c = mm.project(plan(seed=2), BENCHES, p, ["sb", "cc_b"])
    pd.testing.assert_frame_equal(a, b)
    assert not a["model_response_s"].equals(c["model_response_s"])
    assert set(a["nodes"]) == {4} and all(c.startswith("model_") for c in a.columns if "_s" in c or "bcr" in c)


def synthetic(truth: dict, reps: int = 2):
    """Collected tables of runs made by the model itself with known parameters, `reps` reps of
    each point (each rep its own job stream): BATCH jobs carry the stand-in's result fields
    (compute and communication of a job alone)."""
    pl = plan()
    startup = 0.3
    params = mm.params_for(pl, startup, truth)
    rows, runs = [], []
    points = [("batch", 1), ("local", 2), ("ib", 2), ("sb", 3), ("cc_b", 3)]
    for rid, (scheme, mpl, rep) in enumerate((s, m, r) for r in range(reps) for s, m in points):
        js = stream(6, 0.1, seed=rid)
        res = des.simulate(scheme, mpl, 2, params, BENCHES, js)
        for j in res["jobs"]:
            b = BENCHES[j["bench"]]
            kern = b.alone_s(2)
            rows.append(
                {
                    "run_id": f"r{rid}",
                    "name": j["name"],
                    "bench": j["bench"],
                    "ranks": j["ranks"],
                    "scheme": scheme,
                    "exit_code": 0,
                    "submit_s": j["submit_s"],
                    "runtime_s": j["exec_s"] if scheme != "batch" else startup + kern,
                    "result_runtime_s": kern,
                    "result_comm_share": 1 - b.iters * b.compute_s / kern,
                    "result_iters": b.iters,
                    "hosts": "n1:1 n2:1",
                }
            )
        n = len(res["jobs"])
        runs.append(
            {
                "run_id": f"r{rid}",
                "workload": "wl6",
                "load": "heavy",
                "scheme": scheme,
                "mpl": mpl,
                "rep": rep,
                "response_s": sum(j["response_s"] for j in res["jobs"]) / n,
                "exec_s": sum(j["exec_s"] for j in res["jobs"]) / n,
                "wait_s": sum(j["wait_s"] for j in res["jobs"]) / n,
                "bcr": res["bcr"],
                "md_us": res["md_us"],
            }
        )
    return pd.DataFrame(rows), pd.DataFrame(runs), pl


def test_calibration_reads_the_alone_jobs():
    jobs, _, pl = synthetic({"startup_cpu_frac": 0.5, "ctx_switch_us": 5, "quantum_ms": 4})
    benches, startup, note = mm.calibrate_benches(jobs, pl["stand_in"])
    assert startup == pytest.approx(0.3)
    assert "BATCH" in note
    for k, b in BENCHES.items():
        assert benches[k].compute_s == pytest.approx(b.compute_s)
        assert benches[k].lat_s == pytest.approx(b.lat_s)
        assert benches[k].iters == b.iters


def test_calibration_without_result_fields_says_why():
    jobs, _, pl = synthetic({"startup_cpu_frac": 0.5, "ctx_switch_us": 5, "quantum_ms": 4})
    with pytest.raises(mm.ModelInputError, match="result_comm_share"):
        mm.calibrate_benches(jobs.drop(columns=["result_comm_share"]), pl["stand_in"])


def test_fit_recovers_known_parameters_and_predicts_the_held_out_rep():
    truth = {"startup_cpu_frac": 1, "ctx_switch_us": 40, "quantum_ms": 1}
    jobs, by_run, pl = synthetic(truth)
    res = mm.run_model(jobs, by_run, pl)
    assert res["fit"] == truth
    assert res["fit_error_pct"] == pytest.approx(0.0, abs=1e-6)
    assert res["within"] is True and res["projection"] is not None
    v = res["validation"]
    assert (v["fitted"], v["held_out"], v["held_out_reps"]) == (5, 5, "rep 1")
    t = res["table"]
    assert set(t["scheme"]) == {"batch", "local", "ib", "sb", "cc_b"}
    assert t[t["held_out"]]["error_response_s_pct"].abs().max() == pytest.approx(0.0, abs=1e-6)


def test_the_check_is_on_runs_the_fit_did_not_see():
    """A miss in the fitted rep moves the fit, but the check reads the held-out rep only; a miss in
    the held-out rep fails the check and withholds the projection."""
    truth = {"startup_cpu_frac": 1, "ctx_switch_us": 40, "quantum_ms": 1}
    jobs, by_run, pl = synthetic(truth)
    held = by_run.copy()
    held.loc[(held["scheme"] == "local") & (held["rep"] == 1), "response_s"] *= 3
    res = mm.run_model(jobs, held, pl)
    assert res["within"] is False and res["projection"] is None
    summary, notes = mm.describe(res)
    assert "does not predict the 5 held-out run(s)" in summary[0] and "+-10%" in summary[0]
    assert "No projection" in summary[0] and not any("Model projection" in n for n in notes)


def test_one_rep_is_not_checked_and_not_projected():
    jobs, by_run, pl = synthetic({"startup_cpu_frac": 1, "ctx_switch_us": 40, "quantum_ms": 1}, reps=1)
    res = mm.run_model(jobs, by_run, pl)
    assert res["validation"]["held_out"] == 0 and "one rep" in res["validation"]["why"]
    assert res["within"] is False and res["projection"] is None
    assert "not checked" in mm.describe(res)[0][0]


def test_the_fit_is_kept_for_an_unchanged_campaign(tmp_path):
    jobs, by_run, pl = synthetic({"startup_cpu_frac": 1, "ctx_switch_us": 40, "quantum_ms": 1})
    first = mm.run_model(jobs, by_run, pl, cache_dir=tmp_path)
    again = mm.run_model(jobs, by_run, pl, cache_dir=tmp_path)
    assert (first["cached"], again["cached"]) == (False, True)
    assert again["fit"] == first["fit"] and len(list(tmp_path.glob("fit-*.json"))) == 1
    changed = by_run.copy()
    changed.loc[changed["rep"] == 0, "response_s"] *= 1.01  # another campaign: fitted again
    assert mm.run_model(jobs, changed, pl, cache_dir=tmp_path)["cached"] is False


def test_report_section_renders_the_model_tables(tmp_path):
    from analysis import runtables as rt

    jobs, by_run, pl = synthetic({"startup_cpu_frac": 1, "ctx_switch_us": 40, "quantum_ms": 1})
    res = mm.run_model(jobs, by_run, pl)
    summary, notes = mm.describe(res)
    section = {
        "experiment": "mpl_sweep",
        "title": "t",
        "paper": "p",
        "summary": " ".join(summary),
        "figures": [],
        "claims": [],
        "tables": [
            {"title": "Model beside the measurements", "csv": "model_fit.csv"},
            {"title": "Model projection: model values only, not measurements", "csv": "model_projection.csv"},
        ],
        "missing": [],
        "runs": [],
        "notes": notes,
    }
    rt.write_outputs(tmp_path, section, {"model_fit.csv": res["table"], "model_projection.csv": res["projection"]})
    html = report.render_section(json.loads((tmp_path / "section.json").read_text()), tmp_path, "mpl")
    assert "Model projection: model values only, not measurements" in html
    assert "model_response_s" in html and "measured_response_s" in html and "error_response_s_pct" in html
    proj = pd.read_csv(tmp_path / "model_projection.csv")
    assert not any(c.startswith("measured") for c in proj.columns)
    assert math.isfinite(proj["model_response_s"].iloc[0])


def test_projection_is_the_same_in_another_process(tmp_path):
    """No object-identity order (sets of ranks or nodes) leaks into the event order."""
    code = (
        "import hashlib, json, random\n"
        "from experiments.mpl_sweep import des, model as mm\n"
        "b = {'cg': des.Bench(iters=20, compute_s=2e-4, lat_s=1e-4, allreduce_every=1),\n"
        "     'bt': des.Bench(iters=20, compute_s=1e-3, lat_s=2e-4, allreduce_every=10)}\n"
        "jobs = mm.projection_stream(b, ['bt', 'cg'], [4, 8, 16], 10, 0.02, random.Random(1))\n"
        "out = [des.simulate(s, 5, 16, des.Params(startup_s=0.05, startup_cpu_frac=0.5), b, jobs)\n"
        "       for s in ('sb', 'cc_b', 'pb')]\n"
        "print(hashlib.sha256(json.dumps(out).encode()).hexdigest())\n"
    )
    root = Path(__file__).resolve().parents[3]
    outs = []
    for seed in ("1", "2"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        res = subprocess.run([sys.executable, "-c", code], cwd=root, env=env, capture_output=True, text=True)
        assert res.returncode == 0, res.stderr
        outs.append(res.stdout.strip())
    assert outs[0] == outs[1]


def test_calibration_with_npb_jobs_says_the_model_needs_the_stand_in():
    jobs, _, pl = synthetic({"startup_cpu_frac": 0.5, "ctx_switch_us": 5, "quantum_ms": 4})
    npb = jobs["bench"] == sorted(set(jobs["bench"]))[0]  # one benchmark ran NPB: no stencil fields
    jobs.loc[npb, [c for c in jobs.columns if c.startswith("result_")]] = None
    with pytest.raises(mm.ModelInputError, match="NPB prints no per-iteration times"):
        mm.calibrate_benches(jobs, pl["stand_in"])

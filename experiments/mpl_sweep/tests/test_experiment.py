"""The mpl_sweep experiment plugin (paper 001): its points, job streams, specs and config checks."""

import json
import random
import statistics

import pytest
import yaml

from corun.errors import ConfigError
from corun.util import repo_root
from experiments.config import profile_config, validate_config
from experiments.mpl_sweep import experiment as ms
from experiments.mpl_sweep import workloads as mw

SMOKE = repo_root() / "workflows" / "config" / "smoke.yaml"


def cfg_with(section: dict) -> dict:
    raw = profile_config(SMOKE)
    raw["mpl_sweep"] = {**raw["mpl_sweep"], **section}
    return validate_config(raw, "test.yaml")


def error(section: dict) -> str:
    with pytest.raises(ConfigError) as e:
        cfg_with(section)
    msg = str(e.value)
    assert "\n" not in msg
    return msg


def test_points_batch_at_mpl_1_reps_outermost_and_shuffled():
    cfg = cfg_with({"schemes": ["batch", "sb", "cc_b"], "mpl_levels": [3, 5], "reps": 2})
    pts = ms.points(cfg)
    assert len(pts) == 2 * (1 + 2 * 2)
    assert [p["rep"] for p in pts] == [0] * 5 + [1] * 5
    assert {(p["scheme"], p["mpl"]) for p in pts if p["scheme"] == "batch"} == {("batch", 1)}
    first, second = [[(p["scheme"], p["mpl"]) for p in pts if p["rep"] == r] for r in (0, 1)]
    assert sorted(first) == sorted(second)
    assert ms.run_name(pts[0]).startswith("wl6_heavy_") and ms.run_name(pts[0]).endswith("_r0")


def test_the_job_stream_is_the_same_for_every_scheme_and_mpl_of_a_rep(tmp_path):
    cfg = cfg_with({"schemes": ["sb", "cc_b"], "mpl_levels": [1, 2], "reps": 2})
    n = ms.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path)
    assert n == 8
    streams = {}
    for p in ms.points(cfg):
        spec = yaml.safe_load((tmp_path / f"{ms.run_name(p)}.yaml").read_text())
        assert spec["cluster"]["mpl"] == p["mpl"] and spec["scheduler"]["params"]["mpl"] == p["mpl"]
        assert spec["cluster"]["inventory"].endswith("mpl_sweep/netns/inventory.yml")
        key = [(j["ranks"], j["submit_s"], j["labels"]["bench"]) for j in spec["jobs"]]
        streams.setdefault(p["rep"], set()).add(tuple(key))
    assert all(len(s) == 1 for s in streams.values())  # paired across schemes and MPLs
    assert streams[0] != streams[1]  # but not across reps


def test_exponential_arrivals_have_the_loads_mean_gap():
    wl = {"apps": ["bt", "cg"], "ranks": [4, 9, 16], "arrival": "exponential", "jobs": 2000}
    jobs = mw.job_stream(wl, 2000, "exponential", 40.75, random.Random(1), "A")
    gaps = [b["submit_s"] - a["submit_s"] for a, b in zip(jobs, jobs[1:])]
    assert statistics.mean(gaps) == pytest.approx(40.75, rel=0.06)
    assert jobs[0]["submit_s"] == 0.0 and all(g >= 0 for g in gaps)
    burst = mw.job_stream(wl, 5, "burst", 0.0, random.Random(1), "A")
    assert {j["submit_s"] for j in burst} == {0.0}


def test_npb_rank_counts_squares_for_bt_sp_powers_of_two_otherwise():
    assert mw.allowed_ranks("bt", [4, 8, 9, 16]) == [4, 9, 16]
    assert mw.allowed_ranks("cg", [4, 8, 9, 16]) == [4, 8, 16]


def npb_manifest(tmp_path, names: list[str], version: str = "3.3.1") -> dict:
    progs = {}
    for n in names:
        p = tmp_path / n
        p.write_text("#!/bin/sh\n")
        p.chmod(0o755)
        progs[n] = str(p)
    src = {"name": "git-import", "file": "NPB3.3.1-MPI-git-b066d24.tar.gz", "sha256": "4116"}
    return {"npb": {"status": "built", "version": version, "source": src, "programs": progs}}


def test_the_stand_in_runs_without_npb_and_says_so(monkeypatch, tmp_path):
    monkeypatch.setattr(mw, "upstream", lambda: {})
    t = mw.job_template("ft", "A", 8, cfg_with({})["mpl_sweep"]["stand_in"])
    assert t["cmd"][0].endswith("kernels/build/mpi_stencil") and "--alltoall-every" in t["cmd"]
    assert t["result"] == "json"
    assert t["labels"] == {
        "bench": "ft",
        "binary": "corun mpi_stencil",
        "stands_in_for": "NPB 2.4 FT class A",
        "stand_in_reason": "npb not provisioned (no upstream manifest entry)",
    }
    up = npb_manifest(tmp_path, ["ft.A.8"])
    monkeypatch.setattr(mw, "upstream", lambda: up)
    t = mw.job_template("ft", "A", 8, {})
    assert t["cmd"] == [str(tmp_path / "ft.A.8")] and t["result"] == "npb"
    assert t["labels"] == {
        "bench": "ft",
        "binary": "NPB 3.3.1 ft.A.8",
        "stands_in_for": "NPB 2.4 FT class A",
        "program_version": "3.3.1",
        "source_name": "git-import",
        "source_file": "NPB3.3.1-MPI-git-b066d24.tar.gz",
        "source_sha256": "4116",
    }
    # a count the role did not build stands in, and says which binary was missing
    t = mw.job_template("ft", "A", 4, cfg_with({})["mpl_sweep"]["stand_in"])
    assert t["labels"]["stand_in_reason"].startswith("NPB 3.3.1 was not built as ft.A.4")


def test_the_stand_in_runs_only_for_benchmarks_npb_cannot_run(monkeypatch, tmp_path):
    # BT needs a square count: on 2 ranks it has no binary and stands in; CG runs NPB
    up = npb_manifest(tmp_path, ["cg.S.2", "bt.S.1", "bt.S.4"])
    monkeypatch.setattr(mw, "upstream", lambda: up)
    assert mw.npb_ranks("bt", "S", [2]) == [] and mw.npb_ranks("cg", "S", [2]) == [2]
    assert mw.npb_benches(["bt", "cg"], "S", [2]) == {"bt": False, "cg": True}
    assert mw.npb_ranks("bt", "S", [1, 2]) == [1]
    wl = {"apps": ["bt", "cg"], "ranks": [1, 2], "arrival": "burst", "jobs": 40}
    drawn = {(j["bench"], j["ranks"]) for j in mw.job_stream(wl, 40, "burst", 0.0, random.Random(3), "S")}
    assert drawn == {("bt", 1), ("cg", 2)}  # cg.S.1 was not built, bt only at the square count
    assert mw.npb_present("S") and not mw.npb_present("A")


def test_workloads_given_in_part_keep_table_3():
    cfg = cfg_with({})
    wls = cfg["mpl_sweep"]["workloads"]
    assert wls["wl1"] == {"apps": ["bt"], "ranks": [4, 9, 16], "arrival": "burst", "jobs": 50}
    assert wls["wl6"]["ranks"] == [2]  # the smoke configuration's


@pytest.mark.parametrize(
    ("section", "needle"),
    [
        ({"use_workloads": ["wl7"]}, "mpl_sweep.use_workloads[0]: 'wl7' (expected one of wl1, wl2"),
        ({"use_loads": ["medium"]}, "mpl_sweep.use_loads[0]: 'medium' (expected one of heavy, light)"),
        ({"scheduler_params": {"mpl": 2}}, "mpl_sweep.scheduler_params.mpl: 2 (expected no value (set by mpl_levels))"),
        ({"mpl_levels": [0]}, "mpl_sweep.mpl_levels[0]: 0 (expected an integer >= 1)"),
        ({"schemes": ["fifo"]}, "mpl_sweep.schemes[0]: 'fifo'"),
        ({"scheduler_params": {"spin_us": -1}}, "mpl_sweep.scheduler_params.spin_us: -1 (expected"),
        (
            {"workloads": {"wl6": {"apps": ["bt"], "ranks": [2, 4], "arrival": "exponential", "jobs": 2}}},
            "mpl_sweep.workloads.wl6.ranks: [2, 4] (expected counts <= 2 (2 hosts x 1 ranks per node))",
        ),
        (
            {"cluster": {"netns": {"hosts": 0}}},
            "mpl_sweep.cluster.inventory: None (expected an inventory file, or cluster.netns.hosts >= 1)",
        ),
        (
            {"model": {"projection": {"workload": "wl9"}}},
            "mpl_sweep.model.projection.workload: 'wl9' (expected one of wl1, wl2",
        ),
        ({"model": {"projection": {"load": "medium"}}}, "mpl_sweep.model.projection.load: 'medium' (expected one of"),
        ({"model": {"tolerance_pct": 0}}, "mpl_sweep.model.tolerance_pct: 0 (expected"),
        ({"model": {"fitt": {}}}, "mpl_sweep.model"),
    ],
)
def test_bad_config_is_one_line_naming_key_value_and_expectation(section, needle):
    assert needle in error(section)


def test_the_plan_carries_what_the_model_needs(tmp_path):
    cfg = cfg_with({})
    ms.EXPERIMENT.specs(cfg, {}, tmp_path / "data", tmp_path / "specs")
    plan = json.loads((tmp_path / "specs" / "plan.json").read_text())
    assert plan["hosts"] == 2 and plan["cores_per_node"] == 1 and plan["ranks_per_node"] == 1
    assert plan["model"]["enabled"] is True and plan["model"]["projection"]["nodes"] == [4]
    assert set(plan["stand_in"]) == {"bt", "sp", "ft", "is", "cg"} and "wl6" in plan["workloads"]

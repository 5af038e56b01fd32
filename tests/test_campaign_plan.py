"""The campaign's plan (experiments.campaign): made once from the validated configuration,
written as plan.json against its schema, and what every step of the workflow reads."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

from corun import config as documents
from corun.layout import Layout
from experiments import campaign, registry
from experiments.config import experiments_with_runs, load_workflow_config


def experiments_cmd(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "experiments", *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def local_plan():
    cfg = load_workflow_config("workflows/config/local.yaml")
    return cfg, campaign.build(cfg, registry(), experiments_with_runs(cfg))


def test_the_plan_matches_its_schema_and_names_every_run_once(local_plan):
    cfg, plan = local_plan
    documents.validate(plan, campaign.SCHEMA, "plan.json")
    lay = Layout(cfg["results_dir"], cfg["data_dir"])
    for exp, P in plan["runs"].items():
        names = [r["name"] for r in P["runs"]]
        assert len(names) == len(set(names)), exp
        for r in P["runs"]:
            assert r["spec"] == lay.spec(exp, r["name"]) and r["dir"] == lay.run(exp, r["name"])
            assert r["needs"]["exclusive"]
        # a group's look is a field of the plan, never parsed out of its name
        for g in P["groups"]:
            assert {next(r["look"] for r in P["runs"] if r["name"] == n) for n in g["runs"]} == {g["look"]}
            assert all(next(r for r in P["runs"] if r["name"] == n)["group"] == g["name"] for n in g["runs"])
        # each look collects the runs of the looks up to it
        assert [look["reps"] for look in P["looks"]] == sorted(look["reps"] for look in P["looks"])
        assert set(P["looks"][-1]["dirs"]) == {r["dir"] for r in P["runs"]}
    assert plan["config"] == cfg  # the steps read the configuration as validated
    assert any(len(P["looks"]) > 1 for P in plan["runs"].values())  # the local profile has looks


def test_experiments_plan_writes_the_file_and_a_step_reads_it(tmp_path):
    out = tmp_path / "plan.json"
    res = experiments_cmd("plan", "--config", "workflows/config/smoke.yaml", "--out", str(out))
    assert res.returncode == 0, res.stderr
    plan = json.loads(out.read_text())
    assert plan["layout"]["plan"].endswith("/plan.json") and "sensitivity_ranking" in plan["runs"]
    mtime = out.stat().st_mtime_ns
    assert not campaign.write(out, plan) and out.stat().st_mtime_ns == mtime  # unchanged: not rewritten
    # a step given the plan needs no configuration file
    res = experiments_cmd("data", "io_latency_split", "--plan", str(out), "--data-dir", str(tmp_path))
    assert res.returncode == 0, res.stderr


def test_a_file_that_is_not_a_plan_is_one_line(tmp_path):
    bad = tmp_path / "plan.json"
    bad.write_text("{}")
    res = experiments_cmd("data", "io_latency_split", "--plan", str(bad), "--data-dir", str(tmp_path))
    assert res.returncode != 0 and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert "version" in res.stderr

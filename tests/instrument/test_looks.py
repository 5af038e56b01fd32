"""The sequential design (experiments/looks.py): looks and their reps, each look's runs and run
groups, the decision to look again, and the workflow's plan with looks."""

import json
import subprocess

import pytest

from corun.errors import ConfigError
from experiments import looks, registry
from experiments.config import profile_config, validate_config


@pytest.fixture(scope="module")
def smoke(repo_root):
    raw = profile_config(repo_root / "workflows" / "config" / "smoke.yaml")
    return validate_config(raw, "smoke.yaml")


def with_cap(cfg, name, cap, step=None, reps=None):
    c = json.loads(json.dumps(cfg))
    c[name]["max_reps"] = cap
    c[name]["reps_step"] = step
    if reps is not None:
        c[name]["reps"] = reps
    return c


def test_reps_per_look(smoke):
    assert looks.reps_per_look(smoke, "mpl_sweep") == [smoke["mpl_sweep"]["reps"]]  # no cap: one look
    assert looks.reps_per_look(with_cap(smoke, "mpl_sweep", 7, reps=3), "mpl_sweep") == [3, 6, 7]
    assert looks.reps_per_look(with_cap(smoke, "mpl_sweep", 7, step=1, reps=5), "mpl_sweep") == [5, 6, 7]
    assert looks.reps_per_look(with_cap(smoke, "mpl_sweep", 2, reps=2), "mpl_sweep") == [2]


def test_a_cap_below_the_reps_is_one_line(smoke):
    raw = with_cap(smoke, "mpl_sweep", 1, reps=3)
    with pytest.raises(ConfigError, match=r"mpl_sweep.max_reps: 1 \(expected an integer >= mpl_sweep.reps \(3\)\)"):
        validate_config({**raw, "profile": None}, "test.yaml")


def test_each_look_adds_only_its_new_reps(smoke):
    exp = registry()["mpl_sweep"]
    cfg = with_cap(smoke, "mpl_sweep", 3, step=1, reps=1)
    parts = looks.names_by_look(exp, cfg)
    assert len(parts) == 3 and all(parts)
    assert all(n.endswith("_r0") for n in parts[0]) and all(n.endswith("_r2") for n in parts[2])
    flat = [n for p in parts for n in p]
    assert len(flat) == len(set(flat)) == len(exp.run_names(looks.at_reps(cfg, "mpl_sweep", 3)))


def test_run_groups_are_split_by_look(smoke):
    exp = registry()["sais"]
    cfg = with_cap(smoke, "sais", 3, step=1, reps=1)
    split = looks.groups_by_look(exp, cfg)
    base = exp.group_runs(looks.at_reps(cfg, "sais", 1))
    for g, runs in base.items():
        assert split[g] == runs
        assert {f"{g}-look2", f"{g}-look3"} <= set(split)
        assert not set(split[f"{g}-look2"]) & set(runs)
    doc = {"experiment": "sais", "groups": [{"name": g, "runs": [], "cluster": {"hosts": 3}} for g in base]}
    written = looks.groups_file(doc, exp, cfg)["groups"]
    assert {g["name"] for g in written} == set(split)
    assert all(g["cluster"] == {"hosts": 3} and g["runs"] == split[g["name"]] for g in written)
    # each look's group says which of the experiment's it is and its look as fields, never by name
    parts = looks.look_groups(exp, cfg)
    assert {(p["of"], p["look"]) for p in parts} == {(g, look) for g in base for look in (1, 2, 3)}
    assert all(set(g["run_inputs"]) == set(g["runs"]) for g in written)


def row(outcome, n=3, need=None, claim="c"):
    return {"claim": claim, "outcome": outcome, "n": n, "reps_needed": need}


def test_another_look_only_when_it_can_decide_within_the_cap():
    plan = [6, 9, 12]
    decided = [{"experiment": "e", "claims": [row("reproduced"), row("contradicted")]}]
    assert looks.decide(decided, 1, plan)["more"] is False
    within = [{"experiment": "e", "claims": [row("inconclusive", need=7)]}]
    d = looks.decide(within, 1, plan)
    assert d["more"] is True and d["undecided"] == ["e.c (7 reps)"]
    beyond = [{"experiment": "e", "claims": [row("inconclusive", need=25), row("inconclusive", need=None)]}]
    d = looks.decide(beyond, 1, plan)
    assert d["more"] is False and "2 would need more than 24 reps" in d["why"]
    # an estimate beyond the cap but within twice it (a noisy estimate from a few reps): the
    # claim runs to the cap rather than stop here in one campaign and be decided in another
    near = [{"experiment": "e", "claims": [row("inconclusive", need=24), row("inconclusive", need=40)]}]
    d = looks.decide(near, 1, plan)
    assert d["more"] is True and d["undecided"] == ["e.c (24 reps)"]
    # nothing measured (the configuration did not run it): more reps change nothing
    assert looks.decide([{"experiment": "e", "claims": [row("inconclusive", n=0, need=2)]}], 1, plan)["more"] is False
    # an estimate at or below the reps run, the claim undecided: the next look is still taken
    d = looks.decide([{"experiment": "e", "claims": [row("inconclusive", n=3, need=3)]}], 1, plan)
    assert d["more"] is True and d["undecided"] == ["e.c (3 reps)"]
    # the last look never asks for another
    assert looks.decide(within, 3, plan)["more"] is False


def test_no_estimate_from_fewer_than_six_reps_stops_a_look():
    """From 3 reps the estimates of one claim were 15, 15 and 201 in three campaigns: at 3 reps
    an inconclusive claim takes the next look whatever its estimate; from 6 the estimate decides."""
    plan = [3, 6, 9, 12, 15]
    far = [{"experiment": "e", "claims": [row("inconclusive", need=201), row("inconclusive", need=None, claim="d")]}]
    d = looks.decide(far, 1, plan)
    assert d["more"] is True and d["undecided"] == ["e.c (201 reps)", "e.d"]
    assert "fewer than 6 reps" in d["why"]
    d = looks.decide(far, 2, plan)
    assert d["more"] is False and "2 would need more than 30 reps" in d["why"]


def test_the_workflow_plans_looks_and_a_checkpoint(repo_root, tmp_path):
    extra = tmp_path / "seq.yaml"
    extra.write_text(
        f"results_dir: {tmp_path}/results\ndata_dir: {tmp_path}/data\n"
        "experiments: [mpl_sweep]\nmpl_sweep: {max_reps: 3}\n"
    )
    res = subprocess.run(
        [str(repo_root / ".venv/bin/snakemake"), "--profile", "workflows/profiles/smoke", "--configfile",
         "workflows/config/smoke.yaml", str(extra), "-n", "all"],
        cwd=repo_root, capture_output=True, text=True,
    )  # fmt: skip
    assert res.returncode == 0, res.stdout + res.stderr
    out = res.stdout
    for rule in ("collect_look", "analyze_look", "decide_looks", "finish_analysis"):
        assert f"rule {rule}:" in out or f"checkpoint {rule}:" in out, rule
    assert f"{tmp_path}/results/mpl_sweep/looks/1/jobs.csv" in out and "looks/2" not in out  # look 2: if decided

"""The cmp_stacking plan's run order: reps outermost, so that the claims' pairing by rep pairs runs
measured close in time."""

from experiments import registry
from experiments.config import validate_config


def test_runs_are_measured_rep_by_rep():
    cfg = validate_config({"plan_for": "2x1", "experiments": ["cmp_stacking"], "cmp_stacking": {"reps": 3}}, "t")
    exp = registry()["cmp_stacking"]
    order = sorted(exp.run_priority(cfg).items(), key=lambda kv: -kv[1])
    reps = [int(name.rsplit("_r", 1)[1]) for name, _ in order]
    assert reps == sorted(reps) and len(order) == 4 * 2 * 3  # workloads x k x reps
    assert order[0][0] == "g00_k1_r0" and order[-1][0] == "g03_k2_r2"

"""The sensitivity_ranking plan's run order: reps outermost, so that the claims' pairing by rep
pairs runs measured close in time."""

from experiments import registry
from experiments.config import validate_config


def test_runs_are_measured_rep_by_rep():
    cfg = validate_config({"plan_for": "2x1", "experiments": ["sensitivity_ranking"],
                           "sensitivity_ranking": {"reps": 2, "demands_mb_s": [0, 2, 8]}}, "t")  # fmt: skip
    order = sorted(registry()["sensitivity_ranking"].run_priority(cfg).items(), key=lambda kv: -kv[1])
    reps = [int(name.rsplit("_r", 1)[1]) for name, _ in order]
    assert reps == sorted(reps) and len(order) == 3 * 2 * 2  # groups x k x reps
    assert order[0][0] == "g00_k1_r0" and order[-1][0] == "g02_k2_r1"

"""Two independent sets (Welch's interval) decide only with enough runs per set for the exact
permutation test of the two sets to reach each side's level: 1 / C(m + n, n) <= alpha / 2, so 4
runs per set at 95 %; fewer are inconclusive, saying how many would decide."""

import pandas as pd
import pytest

from analysis import stats as st
from analysis.claims import complete_claim
from analysis.verdicts import Looks, Machine, judge

MACHINE = Machine({}, {})
RATIO = {"effect": "ratio", "metric": "t", "head": {"scheme": "x"}, "base": {"scheme": "y"}, "expect": "greater"}


def claim(**kw) -> dict:
    c = {"says": "x is faster than y", "source": "Sec. 5", "quote": "faster", "paper_as": "same", "table": "runs",
         "pair_by": [], "aggregate": "mean", "min_reps": 2, **RATIO}  # fmt: skip
    c.update(kw)
    return complete_claim("claims.yaml", "c", c, {})


def sets(head, base) -> pd.DataFrame:
    return pd.DataFrame(
        [{"run_id": f"x{i}", "scheme": "x", "t": v} for i, v in enumerate(head)]
        + [{"run_id": f"y{i}", "scheme": "y", "t": v} for i, v in enumerate(base)]
    )


def test_the_least_runs_per_set_from_the_permutation_bound():
    assert st.permutation_attainable_p(2, 2) == pytest.approx(1 / 6)
    assert st.permutation_attainable_p(4, 3) == pytest.approx(1 / 35)
    assert st.permutation_least_n(0.025) == 4  # 1 / C(8, 4) = 1 / 70
    assert st.permutation_least_n(0.05) == 3  # 1 / C(6, 3) = 1 / 20
    assert st.permutation_least_n(0.005) == 5  # 1 / C(10, 5) = 1 / 252


@pytest.mark.parametrize(
    "head, base",
    [
        ([11.0, 11.0], [10.0, 10.0]),  # no spread in either set
        ([11.0, 11.0001], [10.0, 10.0]),  # near-identical: Welch's df 1 interval clears 1 by far
        ([10.0, 10.0], [10.0, 10.0]),  # identical sets
        ([10.0, 10.0000001], [10.0, 10.0]),  # near-identical sets
    ],
)
def test_two_runs_per_set_never_decide(head, base):
    for c in (claim(), claim(expect="less"), claim(expect="equivalent", margin=0.05)):
        row = judge("c", c, {"runs": sets(head, base)}, MACHINE)
        assert row["outcome"] == "inconclusive", (c["expect"], row["why"])
        assert row["reps_needed"] == (3 if c["expect"] == "equivalent" else 4)
        assert f"at least {row['reps_needed']} runs per set" in row["why"]


def test_enough_runs_per_set_decide():
    head = [11.0, 11.2, 10.9, 11.1]
    row = judge("c", claim(), {"runs": sets(head, [10.0, 10.1, 9.9, 10.05])}, MACHINE)
    assert row["outcome"] == "reproduced"
    # 4 + 3: 1 / C(7, 3) = 1 / 35 > 0.025, however clear the interval
    row = judge("c", claim(), {"runs": sets(head, [10.0, 10.1, 9.9])}, MACHINE)
    assert row["outcome"] == "inconclusive" and row["ci_low"] > 1 and row["reps_needed"] == 4
    assert "1/35" in row["why"] or "0.0286" in row["why"]


def test_a_sequential_plan_needs_more_runs_per_set():
    # three looks at 4, 8, 12 reps: each look at alpha 0.02, a side at 0.01 > 1 / C(8, 4) = 1 / 70
    head, base = [11.0, 11.2, 10.9, 11.1], [10.0, 10.1, 9.9, 10.05]
    looks = Looks(1, 3, 4, plan=(4, 8, 12))
    assert looks.alpha / 2 < 1 / 70
    row = judge("c", claim(), {"runs": sets(head, base)}, MACHINE, looks)
    assert row["outcome"] == "inconclusive" and row["reps_needed"] == st.permutation_least_n(looks.alpha / 2) == 5

"""The template's analysis on hand-made runs: its claim judged by the engine."""

from pathlib import Path

import pandas as pd

from analysis.claims import load_claims
from analysis.machine import here
from analysis.verdicts import judge
from experiments import PAPERS_DIR

from ..analysis import per_run  # noqa: TID252 - the folder is copied under another name
from ..experiment import NAME  # noqa: TID252


class FakeInputs:
    def __init__(self, runs, jobs):
        self.runs, self.jobs, self.config, self.experiment = runs, jobs, {NAME: {"baseline": "linux"}}, NAME


def tables(head_factor: float) -> FakeInputs:
    runs, jobs = [], []
    for rep in range(6):  # the fewest pairs the engine's sign-flip check lets decide
        # the head's factor varies a little from rep to rep: identical ratios have no spread to decide on
        for variant, f in (("linux", 1.0), ("mine", head_factor * (1 + 0.01 * (rep - 2.5)))):
            rid = f"{variant}_r{rep}"
            runs.append({"run_id": rid, "variant": variant, "rep": rep})
            jobs += [{"run_id": rid, "exit_code": 0, "runtime_s": f * (10 + rep * 0.1 + j)} for j in range(2)]
    return FakeInputs(pd.DataFrame(runs), pd.DataFrame(jobs))


def test_the_claim_is_judged_on_the_paired_runs():
    folder = Path(__file__).resolve().parents[1]
    claim = load_claims(folder / "claims.yaml", NAME, PAPERS_DIR).claims["variant_faster"]
    faster = judge("variant_faster", claim, {"runs": per_run(tables(0.8))}, here())
    assert faster["outcome"] == "reproduced" and faster["n"] == 6
    slower = judge("variant_faster", claim, {"runs": per_run(tables(1.2))}, here())
    assert slower["outcome"] == "contradicted"

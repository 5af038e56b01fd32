"""Where a measuring run goes on a Slurm cluster (corun.testbed.slurm_placement): its node alone,
the node of its repetition, so the runs a claim pairs (one point's head and base at one
repetition) are measured on one node and every node measures some repetitions; and which rules
the workflow sends to the nodes (workflows/rules/slurm.smk)."""

import re
from pathlib import Path

from corun.testbed import slurm_placement as sp

REPO = Path(__file__).resolve().parent.parent
NODES = ["n1", "n2", "n3"]


def test_the_runs_of_one_repetition_share_a_node():
    pairs = [("w01-dynamic_io-r4", "w01-linux-r4"), ("g00_k1_r7", "g01_k1_r7"), ("alone-x264-r2", "w03-cfs-r2")]
    for head, base in pairs:
        assert sp.node_of(head, NODES) == sp.node_of(base, NODES) is not None


def test_every_node_measures_some_repetitions():
    assert {sp.node_of(f"g00_k1_r{r}", NODES) for r in range(6)} == set(NODES)
    assert [sp.node_of(f"x-r{r}", NODES) for r in range(4)] == ["n1", "n2", "n3", "n1"]


def test_each_run_holds_its_node_alone():
    assert sp.slurm_extra("g00_k1_r4", NODES) == "--exclusive --no-requeue --nodelist=n2"
    assert sp.slurm_extra("g00_k1_r4", []) == "--exclusive --no-requeue"  # no cluster read: Slurm places it
    assert sp.slurm_extra("calibration", NODES) == "--exclusive --no-requeue"  # no repetition in the name


def test_only_single_node_runs_leave_the_controller():
    text = (REPO / "workflows" / "rules" / "slurm.smk").read_text()
    assert 'SLURM_MEASURED = ["run"] if STEPS.on_one_host else []' in text
    steps = (REPO / "experiments" / "steps.py").read_text()
    assert 'r["group"] is None and r["needs"]["hosts"] == hosts' in steps
    assert "workflow.localrules(" in text
    snakefile = (REPO / "Snakefile").read_text()
    includes = re.findall(r'^include: "([^"]+)"', snakefile, re.MULTILINE)
    assert includes[-1] == "workflows/rules/slurm.smk", "slurm.smk must come last, once every rule is defined"

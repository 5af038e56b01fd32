"""A CPU program's alone run shorter than the perf intervals its bandwidth needs is failed for the
bandwidth with that reason (analysis.run_length), naming both lengths, apart from a machine whose
perf counted nothing; the program's NUMA gain rows are failed with it, never pooled."""

import pandas as pd

from experiments.noisy_neighbour import metrics as nm
from experiments.noisy_neighbour.tests.test_analysis import analyse, numa_campaign  # noqa: F401


def test_a_short_alone_run_is_named_too_short_for_the_bandwidth(numa_campaign):  # noqa: F811
    runs = pd.read_csv(numa_campaign / "runs.csv")
    runs.loc[runs["run_id"] == "alone_lo_r0", "duration_s"] = 2.5  # 5 intervals recorded, 2 inside it
    runs.to_csv(numa_campaign / "runs.csv", index=False)
    res, _, section = analyse(numa_campaign)
    g = res.evidence["numa_gain"].set_index(["workload", "rep"])
    why = g.loc[("lo", 0), "failed_reason"]
    assert g.loc[("lo", 0), "failed"] and g.loc[("lo", 1), "failed"]
    assert (
        f"alone run alone_lo_r0: run shorter than the {nm.MIN_PERF_INTERVALS} perf intervals its metric needs "
        "(2.50 s measured" in why
    )
    assert not g.loc[("hi", 0), "failed"]  # hi's 2-interval run is left out, its 5-interval one kept

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


def test_a_premise_run_with_too_few_pelt_samples_is_failed_naming_it(tmp_path):
    """The premise's util_avg is a mean over corun.monitors.pelt's samples after the warm-up: a
    task with fewer than the metric needs (or none) is failed with the reason, not left blank."""
    import json

    from analysis import runtables as rt

    folder = tmp_path / "alone" / "r0"
    folder.mkdir(parents=True)
    tasks = {"cpu": {"samples": 20, "util_avg_mean": 1000.0}, "psync": {"samples": 3, "util_avg_mean": 200.0},
             "store": {"samples": 1}}  # fmt: skip
    (folder / "summary.json").write_text(json.dumps({"layout": "alone", "tasks": tasks}))
    rows, _ = nm.premise([folder], rt.MissingLog())
    r = rows.set_index("task")
    assert not r.loc["cpu", "failed"] and r.loc["cpu", "util_avg"] == 1000.0
    assert r.loc["psync", "failed"] and r.loc["store", "failed"]
    assert r.loc["psync", "failed_reason"] == (
        f"3 PELT sample(s) after the warm-up, fewer than the {nm.MIN_PELT_SAMPLES} its util_avg needs "
        "(the premise run was shorter than the metric needs: raise premise.duration_s)"
    )

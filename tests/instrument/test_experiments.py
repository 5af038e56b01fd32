"""Experiment planning: run specs from the workflow config (no measurement here)."""

import pytest

from corun import config
from corun.errors import ConfigError
from corun.experiments import plan, sensitivity_ranking as sr, stacking as st
from corun.workflow_config import validate_config


def cfg(**kw):
    base = {"plan_for": "2x1", "experiments": ["sensitivity_ranking", "cmp_stacking", "llc_miss", "implicit_io"]}
    base.update(kw)
    return validate_config(base, "test.yaml")


def test_stacking_matrix_caps_k_at_the_machine_and_reports_it():
    c = cfg(cmp_stacking={"k_values": [1, 2, 4, 8], "reps": 2})
    lay = st.layout(c, "cmp_stacking")
    assert lay["k_values"] == [1, 2] and lay["k_dropped"] == [4, 8] and lay["jobs_per_cmp"] == 1
    m = st.matrix(c, "cmp_stacking")
    assert len(m) == 4 * 2 * 2  # workloads x k x reps
    assert m[0] == (0, 1, 0) and m[-1] == (3, 2, 1)  # reps outermost
    assert "k = 4, 8 dropped" in plan.describe(c)


def test_plan_for_another_machine():
    c = cfg(plan_for="8x8", cmp_stacking={"k_values": [1, 2, 4, 8]})
    lay = st.layout(c, "cmp_stacking")
    assert lay["K"] == 8 and lay["jobs_per_cmp"] == 8 and lay["k_values"] == [1, 2, 4, 8]


def test_llc_spec_loads_k_cmps_fully(kernels_built, tmp_path):
    c = cfg(plan_for="2x2", llc_miss={"nops": [0, 50], "k_values": [2]})
    spec = st.make_spec(c, "llc_miss", 1, 2, 0, tmp_path)
    assert len(spec["jobs"]) == 4 and [j["cmp"] for j in spec["jobs"]] == [0, 0, 1, 1]
    assert spec["placement"]["use_cmps"] == [0, 1]
    assert spec["labels"]["nops"] == 50 and spec["labels"]["k"] == 2
    assert "--nops" in spec["jobs"][0]["cmd"] and spec["jobs"][0]["result"] == "json"
    config.validate(spec, "run_spec", "generated")  # a valid run spec


def test_implicit_io_spec_caps_memory_and_adds_the_memory_monitor(kernels_built, tmp_path):
    c = cfg(implicit_io={"graphs": [{"scale": 10, "edgefactor": 16}], "memory_limit_bytes": 64 << 20})
    spec = st.make_spec(c, "implicit_io", 0, 2, 0, tmp_path)
    assert spec["memory"]["limit_bytes"] == 64 << 20
    assert "memory" in spec["monitors"]["enabled"]
    assert spec["labels"]["scale"] == 10 and spec["jobs"][0]["labels"]["binary"] == "corun graph_bfs"
    config.validate(spec, "run_spec", "generated")


def test_cmp_stacking_labels_say_what_stood_in(kernels_built, tmp_path):
    c = cfg(workloads={"graph_s22_e16": {"kind": "graph", "scale": 12, "edgefactor": 16}},
            cmp_stacking={"workloads": ["graph_s22_e16"], "k_values": [1]})
    spec = st.make_spec(c, "cmp_stacking", 0, 1, 0, tmp_path)
    labels = spec["jobs"][0]["labels"]
    assert labels["stands_in_for"] == "Graph500 graph -s 12 -e 16"
    assert labels["scale_note"] == "scaled down: scale 12 (paper 22)" and labels["workload_id"] == 3


def test_unknown_workload_is_a_config_error():
    c = cfg(cmp_stacking={"workloads": ["x264_tiny"]})
    with pytest.raises(ConfigError, match="cmp_stacking.workloads: 'x264_tiny' .expected a name defined under workloads"):
        st.groups(c, "cmp_stacking")


@pytest.mark.parametrize("doc, key, expected", [
    ({"implicit_io": {"criterion": "psi>=x"}}, "implicit_io.criterion", "metric>=threshold"),
    ({"workloads": {"w": {"kind": "graph", "scale": 40, "edgefactor": 16}}}, "workloads.w.scale", "<= 30"),
    ({"workloads": {"w": {"kind": "x264", "input": "simlarge"}}}, "workloads.w.frames", "required"),
    ({"llc_miss": {"nops": [-1]}}, "llc_miss.nops[0]", ">= 0"),
    ({"plan_for": "8by8"}, "plan_for", "NxC"),
])
def test_section2_config_errors(doc, key, expected):
    with pytest.raises(ConfigError) as ei:
        validate_config(doc, "c.yaml")
    assert str(ei.value).startswith(f"c.yaml: {key}: ") and expected in str(ei.value), str(ei.value)


def test_sensitivity_nops_for_control_and_targets():
    cal = {"block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
    n, ok = sr.nops_for(0, cal, 2.0)
    assert ok and n == 10_000_000_000  # compute only, for the whole target runtime
    n, ok = sr.nops_for(1.0, cal, 2.0)  # 64 KiB per 65.5 ms
    assert ok and abs(n - (0.065536 - 1e-4) / 2e-10) < 2
    assert sr.nops_for(1e6, cal, 2.0) == (0, False)  # faster than the device: unattainable

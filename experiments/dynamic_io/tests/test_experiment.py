"""The dynamic_io plan's parameters per variant (issue 26) and the variant that stands for the
paper's scheduler: which variants take the section's TIMESLICE and IO_BOUND_INTERVAL, and the
one-line errors of paper_variant."""

import pytest

from corun.errors import ConfigError
from experiments.config import validate_config
from experiments.dynamic_io import experiment as dio

MANIFEST = """name: my_dyn
description: a variant of dynamic_io with its own TIMESLICE and bound
kind: daemon
paper: "not in a paper"
extends: dynamic_io
params:
  timeslice_s: {type: number, default: 2.0, minimum: 0.05, maximum: 60, unit: s, description: its quantum}
  io_bound_mbps: {type: number, default: 100, exclusiveMinimum: 0, maximum: 1000000, description: its bound}
"""


@pytest.fixture
def my_dyn(tmp_path, monkeypatch):
    """A new variant that extends dynamic_io (so it declares both parameters) with its own defaults."""
    (tmp_path / "my_dyn").mkdir()
    (tmp_path / "my_dyn" / "manifest.yaml").write_text(MANIFEST)
    monkeypatch.setenv("CORUN_SCHEDULERS_PATH", str(tmp_path))
    return "my_dyn"


def cfg(**section):
    base = {"workloads": ["w01", "w07"], "variants": ["linux", "dynamic_io"], "reps": 2, "alone_reps": 1,
            "scale": 0.05, "batch_scale": 0.03125, "timeslice_s": 0.5, "timeslice_graph_s": 2.0,
            "io_bound_mbps": 6.0}  # fmt: skip
    base.update(section)
    return validate_config({"plan_for": "2x1", "experiments": ["dynamic_io"], "dynamic_io": base}, "test.yaml")


def test_a_new_variant_keeps_its_manifest_defaults(my_dyn):
    """Issue 26: the old rule gave the section's 6 MB/s and 0.5 s to every variant declaring the
    parameters, so a variant extending dynamic_io silently lost its own defaults."""
    c = cfg(variants=["linux", my_dyn])
    assert dio.variant_params(c, my_dyn, "w01") == {}
    assert dio.effective_params(c, my_dyn, "w01") == {"timeslice_s": 2.0, "io_bound_mbps": 100}
    assert all(v != my_dyn or p is None for _, v, p, _ in dio.params_to_check(c))
    # the paper's own variants take the section's values, graph workloads the long TIMESLICE
    c = cfg(variants=["linux", "dynamic_io", "dynamic_io_psi"])
    assert dio.variant_params(c, "dynamic_io", "w01") == {"timeslice_s": 0.5, "io_bound_mbps": 6.0}
    assert dio.variant_params(c, "dynamic_io_psi", "w07") == {"timeslice_s": 2.0, "io_bound_mbps": 6.0}
    assert dio.effective_params(c, "linux", "w01") == {"timeslice_s": None, "io_bound_mbps": None}


def test_a_variant_named_under_variant_params_takes_the_sections_values(my_dyn):
    c = cfg(variants=["linux", my_dyn], variant_params={my_dyn: {}})
    assert dio.variant_params(c, my_dyn, "w01") == {"timeslice_s": 0.5, "io_bound_mbps": 6.0}
    c = cfg(variants=["linux", my_dyn], variant_params={my_dyn: {"io_bound_mbps": 9.0}})
    assert dio.variant_params(c, my_dyn, "w07") == {"timeslice_s": 2.0, "io_bound_mbps": 9.0}
    assert ("dynamic_io.timeslice_graph_s", my_dyn, "timeslice_s", 2.0) in dio.params_to_check(c)


def test_the_spec_labels_record_the_values_the_variant_runs_with(my_dyn, tmp_path):
    c = cfg(variants=["linux", my_dyn], workloads=["w01"])
    entry = next(e for e in dio.campaign(c) if e["kind"] == "campaign" and e["variant"] == my_dyn)
    cal = {"needed": True, "block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
    spec = dio.make_spec(c, cal, entry, tmp_path)
    assert spec["scheduler"]["params"] == {}
    assert (spec["labels"]["timeslice_s"], spec["labels"]["io_bound_mbps"]) == (2.0, 100)


@pytest.mark.parametrize(
    "variants, given, expected",
    [
        (["linux", "dynamic_io", "elevator_bfq"], None, "dynamic_io"),
        (["linux", "elevator_bfq"], None, "elevator_bfq"),  # a new variant against linux: that variant
        (["linux", "dynamic_io", "elevator_bfq"], "elevator_bfq", "elevator_bfq"),
        (["linux"], None, None),
    ],
)
def test_the_variant_that_stands_for_the_papers_scheduler(variants, given, expected):
    assert dio.paper_variant(given, variants, "linux") == expected
    validate_config({"experiments": ["dynamic_io"], "dynamic_io": {"variants": variants, "paper_variant": given}}, "c")


@pytest.mark.parametrize(
    "section, expected",
    [
        ({"variants": ["linux", "dynamic_io"], "paper_variant": "dynamic_io_psi"},
         "dynamic_io.paper_variant: 'dynamic_io_psi' (expected one of dynamic_io.variants besides the baseline: "
         "dynamic_io)"),
        ({"variants": ["linux", "dynamic_io"], "paper_variant": "linux"}, "besides the baseline"),
        ({"variants": ["linux", "elevator_bfq", "dynamic_io_psi"]},
         "dynamic_io.paper_variant: None (expected the variant that stands for the paper's scheduler, one of "
         "elevator_bfq, dynamic_io_psi)"),
        ({"tol_pct": 5}, "dynamic_io.tol_pct: 'unknown key'"),  # the margins are the claims' now
    ],
)  # fmt: skip
def test_paper_variant_errors_are_one_line(section, expected):
    with pytest.raises(ConfigError) as ei:
        validate_config({"experiments": ["dynamic_io"], "dynamic_io": section}, "c.yaml")
    msg = str(ei.value)
    assert "\n" not in msg and expected in msg, msg


# ----------------------------------------------------------------------------- overhead runs (Sec. 3.5)


def test_overhead_runs_one_per_timeslice_and_rep_on_the_first_workload(tmp_path):
    """Sec. 3.5 bounds the scheduler's cost at 1 % "when TIMESLICE varies from 1s to 20s": each rep
    runs the first workload under dynamic_io once per TIMESLICE with a bound no job reaches,
    beside the rep's linux run of the same workload; the other workloads' orders do not change."""
    c = cfg(overhead={"timeslices_s": [1.0, 20.0]})
    order = dio.campaign(c)
    over = [e for e in order if e["kind"] == "overhead"]
    assert [(e["rep"], e["workload"], e["timeslice_s"]) for e in over if e["timeslice_s"] == 1.0] == [
        (0, "w01", 1.0),
        (1, "w01", 1.0),
    ]
    assert len(over) == 4 and over[0]["name"].startswith("w01-dynamic_io-overhead-ts")
    assert {e["name"] for e in over} >= {"w01-dynamic_io-overhead-ts1-r0", "w01-dynamic_io-overhead-ts20-r1"}
    none = dio.campaign(cfg(overhead={"timeslices_s": []}))
    assert [e for e in none if e["kind"] == "overhead"] == []
    w07 = [e["name"] for e in order if e.get("workload") == "w07"]
    assert w07 == [e["name"] for e in none if e.get("workload") == "w07"]
    cal = {"needed": True, "block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
    entry = next(e for e in over if e["timeslice_s"] == 20.0)
    spec = dio.make_spec(c, cal, entry, tmp_path)
    assert spec["scheduler"]["name"] == "dynamic_io"
    assert spec["scheduler"]["params"]["timeslice_s"] == 20.0
    assert spec["scheduler"]["params"]["io_bound_mbps"] == 1e9  # the manifest's maximum
    lab = spec["labels"]
    assert (lab["run_kind"], lab["workload"], lab["timeslice_s"], lab["io_bound_mbps"]) == (
        "overhead",
        "w01",
        20.0,
        1e9,
    )
    assert ("dynamic_io.overhead.timeslices_s[1]", "dynamic_io", "timeslice_s", 20.0) in dio.params_to_check(c)
    assert dio.EXPERIMENT.estimate(c)["runs"] == len(order)


def test_the_overhead_workload_must_be_one_of_the_campaigns():
    with pytest.raises(ConfigError) as ei:
        cfg(overhead={"workload": "w13"})
    msg = str(ei.value)
    assert msg.startswith("test.yaml: dynamic_io.overhead.workload: ") and "one of dynamic_io.workloads" in msg
    assert "\n" not in msg

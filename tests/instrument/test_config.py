"""Run specs and workflow configs: one-line errors naming file, key, value and expectation."""

import pytest

from corun import config
from corun.errors import ConfigError
from experiments.config import validate_config

GOOD = {"name": "t", "jobs": [{"name": "a", "cmd": ["true"]}]}


def spec_with(**kw):
    s = {"name": "t", "jobs": [{"name": "a", "cmd": ["true"]}]}
    s.update(kw)
    return s


@pytest.mark.parametrize(
    "doc, key, expected",
    [
        (spec_with(jobs=[{"name": "a", "cmd": ["true"], "cores": 0}]), "jobs[0].cores", "an integer >= 1"),
        (spec_with(jobs=[{"name": "a", "cmd": ["true"], "cores": "two"}]), "jobs[0].cores", "an integer"),
        (spec_with(jobs=[{"name": "a", "cmd": ["true"], "core": 1}]), "jobs[0].core", "one of"),
        (spec_with(jobs=[{"name": "a"}]), "jobs[0].cmd", "required"),
        (spec_with(jobs=[]), "jobs", "at least 1"),
        (spec_with(placement={"policy": "random"}), "placement.policy", "one of pack, spread"),
        (spec_with(device={"throttle": {"read_bps": -5}}), "device.throttle.read_bps", ">= 1"),
        (spec_with(name="bad name!"), "name", "letters, digits"),
        (spec_with(monitors={"enabled": ["iostat", "top"]}), "monitors.enabled[1]", "one of iostat"),
    ],
)
def test_spec_errors_are_one_line(doc, key, expected):
    with pytest.raises(ConfigError) as ei:
        config.validate(doc, "run_spec", "spec.yaml")
    msg = str(ei.value)
    assert "\n" not in msg
    assert msg.startswith(f"spec.yaml: {key}: "), msg
    assert expected in msg, msg


def test_defaults_come_from_the_schema():
    s = config.validate(GOOD, "run_spec", "spec.yaml")
    assert s["placement"]["slots_per_core"] == 1
    assert s["placement"]["cmp"]["grouping"] == "auto"
    assert s["jobs"][0]["cores"] == 1 and s["jobs"][0]["repeat"] == 1
    assert s["monitors"]["enabled"] == ["iostat", "pidstat", "psi", "perf"]
    assert s["scheduler"]["name"] == "linux"
    assert s["device"]["throttle"] is None


def test_yaml_syntax_error_is_one_line(tmp_path):
    p = tmp_path / "bad.yaml"
    p.write_text("name: [unclosed\n")
    with pytest.raises(ConfigError) as ei:
        config.load(p, "run_spec")
    assert "valid YAML" in str(ei.value) and "\n" not in str(ei.value)


def test_missing_file(tmp_path):
    with pytest.raises(ConfigError, match="an existing file"):
        config.load(tmp_path / "nope.yaml", "run_spec")


@pytest.mark.parametrize(
    "cfg, key, expected",
    [
        ({"sensitivity_ranking": {"reps": 0}}, "sensitivity_ranking.reps", "an integer >= 1"),
        ({"sensitivity_ranking": {"demands_mb_s": [1]}}, "sensitivity_ranking.demands_mb_s", "at least 2"),
        ({"sensitivity_ranking": {"block_size": 1000}}, "sensitivity_ranking.block_size", "multiple of 4096"),
        ({"sensitivity_ranking": {"cache_mode": "mmap"}}, "sensitivity_ranking.cache_mode", "one of direct, evict"),
        ({"cmp": {"cores_per_cmp": 0}}, "cmp.cores_per_cmp", "an integer >= 1"),
        ({"experiment": ["x"]}, "experiment", "one of"),
        # a value of none of hosts' forms: every form named, not the first ("expected null")
        ({"hosts": "node1"}, "hosts", "null, a list of ssh destinations [user@]host or a mapping with keys"),
        ({"hosts": ["a@@b"]}, "hosts[0]", "ssh destinations [user@]host"),
        ({"hosts": {"from_inventory": "x", "grop": "y"}}, "hosts.grop", "one of from_inventory, group, names"),
    ],
)
def test_workflow_config_errors(cfg, key, expected):
    with pytest.raises(ConfigError) as ei:
        validate_config(cfg, "workflows/config/x.yaml")
    msg = str(ei.value)
    assert msg.startswith(f"workflows/config/x.yaml: {key}: ") and expected in msg, msg


def test_shipped_configs_are_valid(repo_root):
    from experiments.config import load_workflow_config

    for p in sorted((repo_root / "workflows" / "config").glob("*.yaml")):
        cfg = load_workflow_config(p)
        assert cfg["experiments"]

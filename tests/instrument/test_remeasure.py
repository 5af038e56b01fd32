"""corun.run.runner.run_spec_file: a run whose machine lost more than the limit of its CPU time to
steal is measured again (at most `attempts` times); the disturbed attempts are kept and said. The
policy is the spec's `remeasure` section, which the specs step writes into every spec."""

import json

import pytest
import yaml

from corun.config import load_schema, validate
from corun.errors import ConfigError
from corun.plan.base import stamp_remeasure
from corun.run import runner
from corun.run.checked_spec import load_spec
from experiments.config import workflow_schema


def test_the_policy_is_the_specs_section_else_its_schema_defaults_and_the_command_line_wins():
    base = {"name": "s", "jobs": [{"name": "j", "cmd": ["/bin/true"]}]}
    assert runner.remeasure_policy(validate(base, "run_spec", "s")) == (None, 3)
    spec = validate({**base, "remeasure": {"max_steal_pct": 7.5, "attempts": 2}}, "run_spec", "s")
    assert runner.remeasure_policy(spec) == (7.5, 2)
    assert runner.remeasure_policy(spec, 10, 4) == (10, 4)
    assert runner.remeasure_policy(spec, attempts=5) == (7.5, 5)


@pytest.mark.parametrize(
    "section, args, message",
    [
        ({"max_steal_pct": "high"}, {}, "s: remeasure.max_steal_pct: 'high' (expected a number or null"),
        ({"attempts": 2.5}, {}, "s: remeasure.attempts: 2.5 (expected an integer"),
        ({"attempts": 1}, {}, "s: remeasure.attempts: 1 (expected an integer >= 2)"),
        (
            {"after": 3},
            {},
            "s: remeasure.after: 'unknown key' "
            "(expected one of attempts, lengthen, max_foreign_pct, max_steal_pct, min_measure_s)",
        ),
        ({}, {"max_steal_pct": 120}, "command line: --max-steal-pct: 120 (expected a number from 0 to 100"),
        ({}, {"attempts": 1}, "command line: --attempts: 1 (expected an integer from 2 to 10)"),
    ],
)
def test_a_bad_policy_is_one_line_naming_it(section, args, message):
    with pytest.raises(ConfigError) as err:
        spec = validate({"name": "s", "jobs": [{"name": "j", "cmd": ["true"]}], "remeasure": section}, "run_spec", "s")
        runner.remeasure_policy(spec, **args)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def test_no_environment_variable_sets_the_policy(monkeypatch):
    """A spec re-run by hand measures as in the workflow: nothing but the spec (and the command
    line) decides, whatever the environment says."""
    monkeypatch.setenv("CORUN_REMEASURE_STEAL_PCT", "5")
    monkeypatch.setenv("CORUN_REMEASURE_ATTEMPTS", "4")
    spec = validate({"name": "s", "jobs": [{"name": "j", "cmd": ["true"]}]}, "run_spec", "s")
    assert runner.remeasure_policy(spec) == (None, 3)


def spec_file(tmp, name="steal", remeasure=None):
    spec = {
        "name": name,
        **({"remeasure": remeasure} if remeasure else {}),
        "jobs": [{"name": "j", "cmd": ["/bin/true"]}],
        "device": {"path": str(tmp)},
        "monitors": {"enabled": []},
    }
    path = tmp / "s.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def fake_steal(monkeypatch, values):
    """The runs' steal, in order (the machine's real shares otherwise)."""
    real = runner.hostmod.cpu_shares
    left = list(values)

    def shares(before, after, interval_s):
        out = real(before, after, interval_s)
        if left:
            out["steal_pct"] = left.pop(0)
        return out

    monkeypatch.setattr(runner.hostmod, "cpu_shares", shares)


@pytest.mark.root
def test_a_disturbed_run_is_measured_again_and_its_attempts_are_kept(disk_tmp, monkeypatch):
    fake_steal(monkeypatch, [30.0, 12.0, 1.0])
    out = runner.run_spec_file(spec_file(disk_tmp), disk_tmp / "run", max_steal_pct=10, attempts=3, progress=False)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["machine_cpu"]["steal_pct"] == 1.0
    rm = meta["remeasured"]
    assert rm["max_steal_pct"] == 10 and rm["attempts"] == 3 and rm["attempt"] == 3
    assert [e["steal_pct"] for e in rm["earlier"]] == [30.0, 12.0]
    for e in rm["earlier"]:
        kept = json.loads((out / e["folder"] / "metadata.json").read_text())
        assert kept["run_id"] == e["run_id"] and kept["machine_cpu"]["steal_pct"] == e["steal_pct"]
    assert len({meta["run_id"], *(e["run_id"] for e in rm["earlier"])}) == 3
    assert not list(disk_tmp.glob("run.*"))  # nothing left beside the run folder


@pytest.mark.root
def test_the_last_attempt_is_kept_whatever_its_steal_and_no_limit_measures_once(disk_tmp, monkeypatch):
    fake_steal(monkeypatch, [30.0, 40.0, 50.0])
    # the policy from the spec alone, as the specs step writes it (corun run SPEC by hand)
    spec = spec_file(disk_tmp, remeasure={"max_steal_pct": 10, "attempts": 2})
    out = runner.run_spec_file(spec, disk_tmp / "run", progress=False)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["machine_cpu"]["steal_pct"] == 40.0 and meta["remeasured"]["attempt"] == 2
    assert meta["remeasured"]["max_steal_pct"] == 10 and meta["spec"]["remeasure"]["attempts"] == 2
    out = runner.run_spec_file(spec_file(disk_tmp, "once"), disk_tmp / "once", progress=False)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["machine_cpu"]["steal_pct"] == 50.0 and "remeasured" not in meta


def test_the_specs_step_writes_the_configurations_section_into_every_spec(tmp_path):
    """corun.plan.base.stamp_remeasure: every run spec gets the section; the runs of a file-system
    group (and their companions) are measured once; a spec's own section and other files stay."""
    job = {"name": "s", "jobs": [{"name": "j", "cmd": ["true"]}]}
    for name in ("plain", "fs_a", "fs_a.h1", "own"):
        spec = {**job, "remeasure": {"max_steal_pct": 50, "attempts": 2}} if name == "own" else job
        (tmp_path / f"{name}.yaml").write_text(yaml.safe_dump(spec))
    (tmp_path / "pfs.yaml").write_text(yaml.safe_dump({"servers": 2}))
    groups = {"groups": [{"name": "g", "runs": ["fs_a"], "pfs": {}, "companions": [{"suffix": ".h1"}]}]}
    (tmp_path / "groups.json").write_text(json.dumps(groups))
    assert stamp_remeasure(tmp_path, {"max_steal_pct": 5, "max_foreign_pct": 2, "attempts": 3}) == 3

    def section(name):
        return load_spec(tmp_path / f"{name}.yaml")["remeasure"]

    assert section("plain") == {"max_steal_pct": 5, "max_foreign_pct": 2, "attempts": 3}
    assert section("fs_a") == section("fs_a.h1") == {"max_steal_pct": None, "max_foreign_pct": None, "attempts": 3}
    assert section("own") == {"max_steal_pct": 50, "max_foreign_pct": None, "attempts": 2}
    assert yaml.safe_load((tmp_path / "pfs.yaml").read_text()) == {"servers": 2}


def test_the_workflow_configuration_takes_the_run_specs_section_and_defaults():
    """One definition: the configuration's `remeasure` is the run spec schema's."""
    spec_def = load_schema("run_spec")["$defs"]["remeasure"]
    wf = workflow_schema()
    assert wf["properties"]["remeasure"]["$ref"] == "#/$defs/remeasure"
    assert wf["$defs"]["remeasure"] == spec_def
    assert "default" in spec_def["properties"]["attempts"]

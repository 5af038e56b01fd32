"""corun.run.runner.run_spec_file: a run whose machine lost more than the limit of its CPU time to
steal is measured again (at most `attempts` times); the disturbed attempts are kept and said."""

import json

import pytest
import yaml

from corun.errors import ConfigError
from corun.run import runner


def test_the_policy_comes_from_the_arguments_else_the_environment(monkeypatch):
    monkeypatch.delenv(runner.STEAL_ENV, raising=False)
    monkeypatch.delenv(runner.ATTEMPTS_ENV, raising=False)
    assert runner.remeasure_policy() == (None, 3)
    monkeypatch.setenv(runner.STEAL_ENV, "7.5")
    monkeypatch.setenv(runner.ATTEMPTS_ENV, "2")
    assert runner.remeasure_policy() == (7.5, 2)
    assert runner.remeasure_policy(10, 4) == (10, 4)
    monkeypatch.setenv(runner.STEAL_ENV, "none")
    assert runner.remeasure_policy() == (None, 2)


@pytest.mark.parametrize(
    "env, args, message",
    [
        (
            {"CORUN_REMEASURE_STEAL_PCT": "high"},
            {},
            "environment: CORUN_REMEASURE_STEAL_PCT: 'high' (expected a number",
        ),
        ({"CORUN_REMEASURE_ATTEMPTS": "2.5"}, {}, "environment: CORUN_REMEASURE_ATTEMPTS: '2.5' (expected an integer"),
        ({}, {"max_steal_pct": 120}, "remeasure: max_steal_pct: 120 (expected a number from 0 to 100"),
        ({}, {"attempts": 1}, "remeasure: attempts: 1 (expected an integer from 2 to 10)"),
    ],
)
def test_a_bad_policy_is_one_line_naming_it(monkeypatch, env, args, message):
    monkeypatch.delenv(runner.STEAL_ENV, raising=False)
    monkeypatch.delenv(runner.ATTEMPTS_ENV, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    with pytest.raises(ConfigError) as err:
        runner.remeasure_policy(**args)
    assert str(err.value).startswith(message) and "\n" not in str(err.value)


def spec_file(tmp, name="steal"):
    spec = {
        "name": name,
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
    out = runner.run_spec_file(spec_file(disk_tmp), disk_tmp / "run", max_steal_pct=10, attempts=2, progress=False)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["machine_cpu"]["steal_pct"] == 40.0 and meta["remeasured"]["attempt"] == 2
    monkeypatch.delenv(runner.STEAL_ENV, raising=False)
    out = runner.run_spec_file(spec_file(disk_tmp, "once"), disk_tmp / "once", progress=False)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["machine_cpu"]["steal_pct"] == 50.0 and "remeasured" not in meta

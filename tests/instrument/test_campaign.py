"""Controlled campaigns: randomised interleaved order, warm-ups, adaptive repetition."""

import json
import subprocess
import sys

import pytest
import yaml

from analysis.campaign_decision import decide, decider
from analysis.synthetic import write_run
from corun.errors import ConfigError
from corun.results import campaign

PY = sys.executable


def test_order_blocks_warmups_and_seed():
    plan = campaign.order(["a", "b", "c"], reps=4, seed=42, warmup=1)
    assert len(plan) == 15 and [e["position"] for e in plan] == list(range(15))
    assert all(e["seed"] == 42 for e in plan)
    for b in range(5):
        block = [e for e in plan if e["block"] == b]
        assert sorted(e["variant"] for e in block) == ["a", "b", "c"]  # every variant once per block
        assert all(e["warmup"] == (b == 0) for e in block)
    assert [e for e in plan if e["warmup"]] == plan[:3]  # warm-ups first
    assert sorted(e["rep"] for e in plan if e["variant"] == "a" and not e["warmup"]) == [0, 1, 2, 3]
    assert plan == campaign.order(["a", "b", "c"], reps=4, seed=42, warmup=1)  # the seed rebuilds it
    orders = {tuple(e["variant"] for e in campaign.order(["a", "b", "c"], 4, s, 1)) for s in range(20)}
    assert len(orders) > 10  # randomised
    drawn = campaign.order(["a", "b"], 1)
    assert isinstance(drawn[0]["seed"], int)  # drawn and recorded
    labels = campaign.labels(plan[0], "camp")
    assert labels == {
        "campaign": "camp",
        "campaign_seed": 42,
        "order": 0,
        "block": 0,
        "rep": 0,
        "warmup": True,
        "variant": plan[0]["variant"],
    }


@pytest.mark.parametrize(
    "args, key",
    [((["a", "a"], 2), "variants"), ((["a"], 0), "reps"), (([], 2), "variants"), ((["a"], 2, 1, -1), "warmup")],
)
def test_order_bad_input(args, key):
    with pytest.raises(ConfigError, match=key):
        campaign.order(*args)


def test_decide_stops_when_every_variant_reaches_the_target_or_the_cap():
    out = decide({"a": [10.0, 10.1, 9.9], "b": [10.0, 13.0, 7.0]}, target=0.05, max_reps=10)
    assert out["decision"] == "more"
    assert out["variants"]["a"]["decision"] == "stop" and out["variants"]["b"]["decision"] == "more"
    assert decide({"a": [10.0, 10.1, 9.9], "b": [10.0, 13.0, 7.0]}, 0.05, 3)["decision"] == "stop"
    with pytest.raises(ConfigError):
        decide({"a": [1.0]}, target=5, max_reps=10)


def fake_runner(noise):
    """Writes a synthetic run for each spec instead of measuring (variant b is noisy)."""
    calls = []

    def run(spec, spec_file, out):
        calls.append(spec)
        spec_file.parent.mkdir(parents=True, exist_ok=True)
        spec_file.write_text(yaml.safe_dump(spec))
        v = spec["scheduler"]["name"]
        rt = 10.0 + (noise[len(calls) % len(noise)] if v == "b" else 0.01 * (len(calls) % 3))
        write_run(out, v, [rt, rt], labels=spec["labels"])

    return run, calls


def test_run_campaign_fixed_and_resumed(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "t", "jobs": [{"name": "a", "cmd": ["true"]}], "device": {"path": "."}}))
    run, calls = fake_runner([0.0])
    state = campaign.run_campaign(
        spec, ["a", "b"], tmp_path / "camp", reps=2, warmup=1, seed=5, runner=run, log=lambda s: None
    )
    assert len(calls) == 6 and state["seed"] == 5
    assert [c["labels"]["warmup"] for c in calls[:2]] == [True, True]
    assert all(c["labels"]["campaign"] == "camp" and c["labels"]["campaign_seed"] == 5 for c in calls)
    assert json.loads((tmp_path / "camp" / "campaign.json").read_text())["variants"] == ["a", "b"]
    again = campaign.run_campaign(spec, ["a", "b"], tmp_path / "camp", reps=2, warmup=1, runner=run, log=lambda s: None)
    assert len(calls) == 6 and again["seed"] == 5  # finished runs are not run again
    with pytest.raises(ConfigError, match="seed"):
        campaign.run_campaign(spec, ["a", "b"], tmp_path / "camp", reps=2, seed=6, runner=run)


def test_run_campaign_adaptive_stops_at_target_or_cap(tmp_path):
    spec = tmp_path / "spec.yaml"
    spec.write_text(yaml.safe_dump({"name": "t", "jobs": [{"name": "a", "cmd": ["true"]}], "device": {"path": "."}}))
    run, calls = fake_runner([3.0, -3.0, 2.5, -2.0])
    state = campaign.run_campaign(
        spec,
        ["a", "b"],
        tmp_path / "camp",
        reps=3,
        warmup=1,
        seed=1,
        target=0.02,
        max_reps=6,
        runner=run,
        log=lambda s: None,
        decide=decider("runtime_s"),
    )
    measured_b = [c for c in calls if c["scheduler"]["name"] == "b" and not c["labels"]["warmup"]]
    assert len(measured_b) == 6  # noisy: the cap
    assert state["decision"]["decision"] == "stop" and "cap" in state["decision"]["variants"]["b"]["reason"]
    assert "target" in state["decision"]["variants"]["a"]["reason"]
    res = subprocess.run(
        [
            PY,
            "-m",
            "corun",
            "campaign",
            "decide",
            str(tmp_path / "camp"),
            "--by",
            "variant",
            "--target",
            "2%",
            "--max-reps",
            "20",
            "--quiet",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0 and res.stdout.strip() == "more", res.stderr


def test_cli_order(tmp_path):
    res = subprocess.run(
        [
            PY,
            "-m",
            "corun",
            "campaign",
            "order",
            "--variants",
            "linux,dynamic_io",
            "--reps",
            "2",
            "--seed",
            "3",
            "--lines",
        ],
        capture_output=True,
        text=True,
    )
    assert res.returncode == 0, res.stderr
    lines = [json.loads(x) for x in res.stdout.splitlines()]
    assert len(lines) == 6 and lines[0]["warmup"] and lines[0]["seed"] == 3
    res = subprocess.run(
        [PY, "-m", "corun", "campaign", "order", "--variants", "linux", "--reps", "0"], capture_output=True, text=True
    )
    assert res.returncode == 2 and "reps: 0 (expected an integer >= 1)" in res.stderr
    res = subprocess.run(
        [PY, "-m", "corun", "campaign", "order", "--variants", "linux,nosuch"], capture_output=True, text=True
    )
    assert res.returncode == 2 and res.stdout == "", res.stdout
    assert res.stderr.strip().splitlines() == [
        "corun: command line: --variants: 'nosuch' (expected one of the variants (corun sched list shows them))"
    ]


def test_template_params_go_to_the_variants_that_declare_them():
    template = {"scheduler": {"name": "dynamic_io", "params": {"timeslice_s": 0.2, "max_suspend_s": 2}}}
    assert campaign.scheduler_for(template, "linux") == {"name": "linux"}
    assert campaign.scheduler_for(template, "dynamic_io") == {"name": "dynamic_io", "params": {"timeslice_s": 0.2}}
    assert campaign.scheduler_for(template, "dynamic_io_fair") == {
        "name": "dynamic_io_fair",
        "params": {"timeslice_s": 0.2, "max_suspend_s": 2},
    }
    assert campaign.scheduler_for({}, "anything") == {"name": "anything"}

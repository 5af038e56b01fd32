"""CLI table of the variant commands: args -> exit code -> the line on stderr.

`corun sched list|show` with a broken manifest beside the shipped ones, `corun validate` on a
spec like those the experiments generate (a device built for the run), and `corun campaign run`
refusing a misspelt variant before anything runs."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
PY = sys.executable
BROKEN = "name: broken\ndescription: a manifest with a bad param type\nkind: daemon\nparams: {x: {type: nope}}\n"


def corun(*args, env_path=None, cwd=ROOT):
    env = None
    if env_path is not None:
        env = {**os.environ, "CORUN_SCHEDULERS_PATH": str(env_path)}
    return subprocess.run([PY, "-m", "corun", *map(str, args)], capture_output=True, text=True, cwd=cwd, env=env)


@pytest.fixture
def broken(tmp_path):
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "manifest.yaml").write_text(BROKEN)
    return tmp_path


# (args, with the broken manifest on the search path, exit code, in stdout, stderr's one line or "")
CASES = [
    (["sched", "list"], False, 0, ["cfs", "batch", "elevator_bfq", "dynamic_io_psi"], ""),
    (["sched", "list"], True, 0, ["cfs", "batch", "dynamic_io"], "broken/manifest.yaml: params.x.type: 'nope'"),
    (["sched", "list", "--strict"], True, 2, ["dynamic_io"], "broken/manifest.yaml: params.x.type: 'nope'"),
    (["sched", "list", "--strict"], False, 0, ["dynamic_io"], ""),
    (["sched", "list", "--kind", "placement"], False, 0, ["smt_mixed", "numa_spread"], ""),
    (["sched", "list", "--kind", "plcement"], False, 2, [], "command line: --kind: 'plcement' (expected one of none,"),
    (["sched", "show", "broken"], True, 2, [], "broken/manifest.yaml: params.x.type: 'nope'"),
    (["sched", "show", "gang"], True, 0, ['"family": "mpi_cosched"', '"scheme": "gang"'], ""),
    (
        ["sched", "show", "dynamic_oi"],
        False,
        2,
        [],
        "command line: scheduler.name: 'dynamic_oi' (expected one of dynamic_io, dynamic_io_psi",
    ),
    (["sched", "list", "cfs"], False, 2, [], "corun sched list: 'cfs' (expected no name"),
]


@pytest.mark.parametrize(
    "args,with_broken,code,out,err", CASES, ids=[" ".join(c[0]) + (" +broken" if c[1] else "") for c in CASES]
)
def test_sched_commands(broken, args, with_broken, code, out, err):
    res = corun(*args, env_path=broken if with_broken else None)
    assert res.returncode == code, res.stderr
    for word in out:
        assert word in res.stdout, (word, res.stdout[:300])
    lines = res.stderr.strip().splitlines()
    if err:
        assert len(lines) == 1 and err in lines[0], res.stderr
    else:
        assert lines == [], res.stderr
    if args[:2] == ["sched", "list"] and code == 0 and "--kind" not in args:
        assert "broken" not in res.stdout.split()


def test_sched_list_by_kind_lists_only_that_kind():
    res = corun("sched", "list", "--kind", "irq_policy")
    names = [line.split()[0] for line in res.stdout.splitlines()]
    assert res.returncode == 0 and sorted(names) == ["dedicated", "irqbalance", "sais_mark", "source_aware", "spread"]


def generated_like_spec(tmp_path, kind):
    """A spec as the dynamic_io experiment writes one: its data folder, with kind rotating_disk
    the emulated disk mounted over it (overlay) and the inputs copied onto it."""
    data = tmp_path / "data"
    data.mkdir()
    (data / "in.bin").write_bytes(b"x" * 4096)
    device = {"path": str(data), "throttle": None}
    if kind == "rotating_disk":
        device.update(kind="rotating_disk", rotating_disk={"overlay": True}, populate=[{"src": str(data / "in.bin")}])
    else:
        device["evict"] = [str(data / "in.bin")]
    spec = {
        "name": "dynamic_io-W1-dynamic_io-r0",
        "jobs": [{"name": "a", "cmd": ["cat", str(data / "in.bin")]}],
        "device": device,
        "scheduler": {"name": "dynamic_io", "params": {"timeslice_s": 1.0, "io_bound_mbps": 40}},
        "labels": {"experiment": "dynamic_io"},
    }
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


@pytest.mark.parametrize(
    "kind",
    [
        "throttle",
        pytest.param("rotating_disk", marks=pytest.mark.root),  # validate checks the machine can build it
    ],
)
def test_validate_a_generated_spec(tmp_path, kind):
    subprocess.run(["make", "-s", "-C", str(ROOT / "schedulers" / "dynamic_io"), "all"], check=True)
    if kind == "rotating_disk":
        subprocess.run(["make", "-s", "-C", str(ROOT / "emulators" / "rotating_disk"), "all"], check=True)
    path = generated_like_spec(tmp_path, kind)
    res = corun("validate", path)
    assert res.returncode == 0 and res.stderr == "", res.stderr
    assert f"{path}: ok (1 jobs on CMPs" in res.stdout and "scheduler dynamic_io)" in res.stdout
    if kind == "rotating_disk":
        assert f"device an emulated rotating disk built for the run on {tmp_path / 'data'}" in res.stdout


@pytest.mark.parametrize(
    "variants,message",
    [
        ("linux,dynamic_oi", "command line: --variants: 'dynamic_oi' (expected one of dynamic_io"),
        ("linux,broken", "broken/manifest.yaml: params.x.type: 'nope'"),
        ("linux,dynamic_io", "scheduler.params.timeslice_s: 0.001 (expected a number >= 0.05"),
    ],
)
def test_campaign_refuses_a_bad_variant_before_any_run(tmp_path, broken, variants, message):
    spec = tmp_path / "spec.yaml"
    spec.write_text(
        yaml.safe_dump(
            {
                "name": "c",
                "jobs": [{"name": "a", "cmd": ["sleep", "15"]}],
                "device": {"path": str(tmp_path)},
                "scheduler": {"name": "linux", "params": {"timeslice_s": 0.001}},
            }
        )
    )
    t0 = time.monotonic()
    res = corun(
        "campaign", "run", spec, "--variants", variants, "--reps", 1, "--out", tmp_path / "camp", env_path=broken
    )
    assert time.monotonic() - t0 < 10  # no run of the 15 s job was started
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and message in lines[0], res.stderr
    assert not (tmp_path / "camp" / "runs").exists()

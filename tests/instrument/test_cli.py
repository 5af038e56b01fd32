"""CLI table: bad input -> exit code -> one line on stderr naming key, value, expectation; nothing runs."""

import json
import os
import subprocess
import sys

import pytest
import yaml

PY = sys.executable


def spec(**kw):
    s = {"name": "t", "jobs": [{"name": "a", "cmd": ["true"]}], "device": {"path": "."}}
    s.update(kw)
    return s


CASES = [
    ("missing file", None, 2, "an existing file"),
    ("bad key", spec(jobz=[]), 2, "jobz: 'unknown key'"),
    (
        "cores > CMP",
        spec(jobs=[{"name": "a", "cmd": ["true"], "cores": 64}]),
        2,
        "jobs[0].cores: 64 (expected an integer <=",
    ),
    ("use_cmps out of range", spec(placement={"use_cmps": [99]}), 2, "placement.use_cmps[0]: 99"),
    (
        "unknown program",
        spec(jobs=[{"name": "a", "cmd": ["no-such-program-x"]}]),
        2,
        "jobs[0].cmd[0]: 'no-such-program-x' (expected a program on PATH)",
    ),
    ("unbuilt kernel", spec(jobs=[{"name": "a", "cmd": ["./kernels/build/nope"]}]), 2, "expected an executable file"),
    ("unknown scheduler", spec(scheduler={"name": "cfs2"}), 2, "scheduler.name: 'cfs2' (expected one of"),
    ("bad scheduler param", spec(scheduler={"name": "linux", "params": {"x": 1}}), 2, "scheduler.params.x"),
    ("device on tmpfs", spec(device={"path": "/dev/shm"}), 2, "device.path: '/dev/shm'"),
    (
        "bad pin",
        spec(jobs=[{"name": "a", "cmd": ["true"], "cmp": 1}], placement={"use_cmps": [0]}),
        2,
        "jobs[0].cmp: 1",
    ),
]


@pytest.mark.parametrize("label, doc, code, needle", CASES, ids=[c[0] for c in CASES])
def test_bad_specs(tmp_path, repo_root, label, doc, code, needle):
    path = tmp_path / "spec.yaml"
    if doc is not None:
        path.write_text(yaml.safe_dump(doc))
    out = tmp_path / "out"
    res = subprocess.run(
        [PY, "-m", "corun", "run", str(path), "--out", str(out)], capture_output=True, text=True, cwd=repo_root
    )
    assert res.returncode == code, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("corun: "), res.stderr
    assert needle in lines[0], lines[0]
    assert not out.exists() and not (tmp_path / "out.incomplete").exists()


def test_validate_command(tmp_path, repo_root):
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec()))
    res = subprocess.run([PY, "-m", "corun", "validate", str(path)], capture_output=True, text=True, cwd=repo_root)
    assert res.returncode == 0 and ": ok (" in res.stdout


def test_topology_and_sched_list(repo_root):
    res = subprocess.run([PY, "-m", "corun", "topology"], capture_output=True, text=True, cwd=repo_root)
    assert res.returncode == 0 and '"cmps"' in res.stdout
    res = subprocess.run([PY, "-m", "corun", "sched", "list"], capture_output=True, text=True, cwd=repo_root)
    for name in ("linux", "elevator_none", "elevator_mq_deadline", "elevator_bfq", "elevator_kyber"):
        assert name in res.stdout


def test_sched_list_tells_a_family_apart_and_show_needs_no_build(repo_root, tmp_path):
    res = subprocess.run([PY, "-m", "corun", "sched", "list"], capture_output=True, text=True, cwd=repo_root)
    rows = [ln for ln in res.stdout.splitlines() if ln.startswith("elevator_")]
    assert len(rows) == 4 and len({ln.split(None, 2)[2] for ln in rows}) == 4, rows  # four different lines
    assert any("[elevator=bfq]" in ln for ln in rows) and all(len(ln) <= 24 + 1 + 12 + 1 + 80 for ln in rows)
    # a daemon never built (a clone not provisioned): show describes it and says what is missing
    folder = tmp_path / "notbuilt"
    folder.mkdir()
    (folder / "manifest.yaml").write_text(
        "name: notbuilt\ndescription: a daemon never built\nkind: daemon\ndaemon: true\n"
        "requires: [no-such-tool-here]\nstart: ['{scheduler_dir}/build/notbuilt']\n"
    )
    env = dict(os.environ, CORUN_SCHEDULERS_PATH=str(tmp_path))
    res = subprocess.run(
        [PY, "-m", "corun", "sched", "show", "notbuilt"], capture_output=True, text=True, cwd=repo_root, env=env
    )
    assert res.returncode == 0, res.stderr
    shown = json.loads(res.stdout)
    assert shown["missing_here"] == {"tools": ["no-such-tool-here"], "build": str(folder / "build" / "notbuilt")}

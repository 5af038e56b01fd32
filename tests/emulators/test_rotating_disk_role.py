"""The rotating_disk role: lint, wrong variables rejected by name, a second run changes nothing."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent
RECAP = re.compile(r"^localhost\s*:.*\bchanged=(\d+).*\bfailed=(\d+)", re.MULTILINE)


def env(**extra):
    e = dict(os.environ)
    e.update(ANSIBLE_CONFIG=str(REPO / "ansible.cfg"), ANSIBLE_NOCOLOR="1", NO_COLOR="1", **extra)
    return e


def playbook(path, variables):
    path.write_text(
        json.dumps(
            [
                {
                    "name": "Apply rotating_disk",
                    "hosts": "testbed",
                    "gather_facts": False,
                    "roles": [{"role": "rotating_disk", "vars": variables}],
                }
            ]
        )
    )
    return path


def run(*args, **kw):
    return subprocess.run(
        [str(BIN / "ansible-playbook"), *args], cwd=REPO, env=env(**kw), capture_output=True, text=True, timeout=600
    )


@pytest.mark.timeout(300)
def test_lint_role():
    proc = subprocess.run(
        [str(BIN / "ansible-lint"), "roles/rotating_disk"],
        cwd=REPO,
        env=env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


@pytest.mark.timeout(120)
@pytest.mark.parametrize(
    "variable,value",
    [
        ("rotating_disk_packages", "fuse3"),
        ("rotating_disk_packages", [5]),
        ("rotating_disk_src_dir", "relative"),
        ("rotating_disk_make_target", "install"),
    ],
)
def test_wrong_variable_is_rejected_by_name(tmp_path, variable, value):
    proc = run("--check", str(playbook(tmp_path / "p.yml", {variable: value})))
    assert proc.returncode != 0
    assert f"rotating_disk: {variable}:" in proc.stdout, proc.stdout


@pytest.mark.root
@pytest.mark.timeout(600)
def test_second_run_changes_nothing(tmp_path):
    pb = playbook(tmp_path / "p.yml", {"rotating_disk_src_dir": str(REPO)})
    first = run(str(pb))
    assert first.returncode == 0, first.stdout + first.stderr
    second = run(str(pb))
    assert second.returncode == 0, second.stdout
    assert RECAP.search(second.stdout).groups() == ("0", "0"), second.stdout
    assert (REPO / "emulators/rotating_disk/build/corun-rotating-disk").is_file()

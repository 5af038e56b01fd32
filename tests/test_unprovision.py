"""scripts/unprovision.py: what `make unprovision` would undo, from a recorded state, in check
mode only (the test suite needs this machine provisioned afterwards)."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "scripts" / "unprovision.py"
_spec = importlib.util.spec_from_file_location("unprovision", SCRIPT)
unprovision = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(unprovision)

SYSCTL = "kernel.perf_event_paranoid"
BEFORE = {
    "packages": ["bash", "irqbalance"],
    "services": {"ssh": {"enabled": False, "active": False}, "irqbalance": {"enabled": True, "active": True}},
    "sysctl": {SYSCTL: "3"},
    "paths": ["/opt/corun"],
}
NOW = {
    "packages": ["bash", "irqbalance", "openssh-server", "glusterfs-server"],
    "services": {"ssh": {"enabled": True, "active": True}, "irqbalance": {"enabled": False, "active": False}},
    "sysctl": {SYSCTL: "-1"},
    "paths": ["/etc/sysctl.d/90-corun-perf.conf", "/opt/corun"],
}


def test_undo_restores_services_sysctl_files_and_packages_provisioning_changed():
    assert unprovision.plan_undo(BEFORE, NOW) == [
        ("stop", "ssh"),
        ("disable", "ssh"),
        ("enable", "irqbalance"),
        ("start", "irqbalance"),
        ("remove", "/etc/sysctl.d/90-corun-perf.conf"),  # /opt/corun was there before: kept
        ("sysctl", f"{SYSCTL}=3"),
        ("purge", "glusterfs-server openssh-server"),  # bash and irqbalance were there before
    ]


def test_undo_of_an_unchanged_machine_does_nothing():
    assert unprovision.plan_undo(BEFORE, BEFORE) == []


def test_without_a_record_only_corun_files_and_settings_are_undone():
    acts = unprovision.plan_undo(None, NOW)
    assert ("remove", "/etc/sysctl.d/90-corun-perf.conf") in acts and ("sysctl", f"{SYSCTL}=3") in acts
    assert not [a for a in acts if a[0] in ("purge", "stop", "disable")]
    assert acts[-1][0] == "leave"


def _run(*args):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120)


def test_check_mode_against_a_recorded_state_changes_nothing(tmp_path):
    state = tmp_path / "before.json"
    res = _run("record", "--state", str(state))
    assert res.returncode == 0, res.stderr
    if not state.exists():  # this machine was provisioned before: record keeps out of it
        state.write_text(json.dumps(unprovision.snapshot()))
    res = _run("undo", "--check", "--keep-builds", "--state", str(state))
    assert res.returncode == 0 and res.stdout.strip() == "corun: nothing to undo", res.stdout + res.stderr
    # a package this machine has that the record lacks would be purged; check mode leaves it
    rec = json.loads(state.read_text())
    rec["packages"].remove("bash")
    state.write_text(json.dumps(rec))
    res = _run("undo", "--check", "--keep-builds", "--state", str(state))
    assert res.stdout.strip() == "corun: would purge bash", res.stdout + res.stderr
    assert state.exists() and Path("/bin/bash").exists()


def test_a_broken_state_file_is_one_line(tmp_path):
    state = tmp_path / "before.json"
    state.write_text("{not json")
    res = _run("undo", "--check", "--state", str(state))
    assert res.returncode == 2
    assert res.stdout.startswith(f"corun: {state}: not a state file") and len(res.stdout.splitlines()) == 1

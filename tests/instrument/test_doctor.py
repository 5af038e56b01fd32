"""corun doctor: CLI table (args -> exit code -> stderr), JSON shape, findings from host states."""

import json
import subprocess
import sys

import pytest

from corun.machine import doctor

PY = sys.executable

CASES = [
    (
        "unknown inventory host",
        ["nosuch", "--inventory", "inventory/local"],
        2,
        "corun: inventory/local: host: 'nosuch' (expected one of localhost)",
    ),
    (
        "missing inventory",
        ["--inventory", "inventory/nope"],
        2,
        "inventory: 'inventory/nope' (expected an existing Ansible inventory file or folder)",
    ),
    (
        "empty group",
        ["--inventory", "inventory/local", "--group", "nogroup"],
        2,
        "group: 'nogroup' (expected a group with hosts in inventory/local",
    ),
    ("bad host name", ["bad name!"], 2, "hosts[0]: 'bad name!' (expected localhost or an ssh destination"),
    ("negative free space", ["--min-free-gib", "-1"], 2, "--min-free-gib: -1.0 (expected a number of GiB >= 0)"),
    ("no such data dir", ["--data-dir", "no/such/dir"], 1, "not ready: localhost (device under test)"),
    ("not enough free space", ["--min-free-gib", "1e9"], 1, "not ready: localhost (free disk)"),
    ("host with a port", ["nobody@127.0.0.1:x"], 2, "expected localhost or an ssh destination"),
]


@pytest.mark.parametrize(("label", "args", "code", "needle"), CASES, ids=[c[0] for c in CASES])
def test_doctor_cli_table(repo_root, label, args, code, needle):
    res = subprocess.run(
        [PY, "-m", "corun", "doctor", *args], capture_output=True, text=True, cwd=repo_root, timeout=120
    )
    lines = res.stderr.strip().splitlines()
    assert res.returncode == code, res.stderr
    assert len(lines) == 1 and lines[0].startswith("corun: "), res.stderr
    assert needle in lines[0], lines[0]


def test_doctor_json_shape(repo_root):
    res = subprocess.run(
        [PY, "-m", "corun", "doctor", "--json", "localhost"], capture_output=True, text=True, cwd=repo_root, timeout=120
    )
    report = json.loads(res.stdout)
    assert set(report) == {"ready", "quiet", "hosts"}
    (host,) = report["hosts"]
    assert set(host) == {"host", "ready", "quiet", "findings"} and host["host"] == "localhost"
    checks = [f["check"] for f in host["findings"]]
    for check in (
        "tool iostat",
        "tool perf",
        "tool fio",
        "tool x264",
        "tool mpirun",
        "corun kernels",
        "scheduler builds",
        "governor",
        "turbo",
        "thp",
        "swap",
        "load",
        "irqbalance",
        "perf_event_paranoid",
        "elevator",
        "free disk",
    ):
        assert check in checks
    for f in host["findings"]:
        assert set(f) == {"check", "status", "value", "advice"}
        assert f["status"] in ("ok", "warn", "fail", "missing")
        assert f["status"] == "ok" or f["advice"], f
    assert res.returncode == (0 if report["ready"] else 1)


def test_unreachable_host_is_not_ready(repo_root):
    res = subprocess.run(
        [PY, "-m", "corun", "doctor", "--json", "nobody@127.0.0.1"],
        capture_output=True,
        text=True,
        cwd=repo_root,
        timeout=120,
    )
    report = json.loads(res.stdout)
    assert res.returncode == 1 and not report["ready"]
    assert report["hosts"][0]["findings"][0]["check"] == "ssh"
    assert "not ready: 127.0.0.1 (ssh)" in res.stderr
    # its quietness was never checked: neither quiet nor noisy
    assert report["hosts"][0]["quiet"] is None and report["quiet"] is None
    res = subprocess.run(
        [PY, "-m", "corun", "doctor", "nobody@127.0.0.1"], capture_output=True, text=True, cwd=repo_root, timeout=120
    )
    assert "127.0.0.1: NOT READY, quiet not checked" in res.stdout, res.stdout


NOISY = {
    "governor": {"cpu0": "powersave"},
    "turbo": "on",
    "thp": "[always] madvise never",
    "swap_active": True,
    "loadavg": [2.5, 1, 1],
    "irqbalance": "running",
    "perf_event_paranoid": "2",
}


def test_noisy_host_state_gives_warnings_with_advice():
    found = {f["check"]: f for f in doctor.state_findings(NOISY)}
    for check in ("governor", "turbo", "thp", "swap", "load", "irqbalance"):
        assert found[check]["status"] == "warn" and found[check]["advice"], check


def test_missing_tools_and_strict_mode(monkeypatch, capsys):
    findings = doctor.tool_findings({"iostat": "12.6.1", "perf": None})
    by = {f["check"]: f for f in findings}
    assert by["tool iostat"]["status"] == "ok"
    assert by["tool perf"]["status"] == "fail" and "--tags perf" in by["tool perf"]["advice"]
    quiet_but_noisy = doctor.summary("h", doctor.state_findings(NOISY))
    assert quiet_but_noisy["ready"] and not quiet_but_noisy["quiet"]


def test_run_metadata_carries_the_doctor_findings():
    from corun.run import metadata

    meta = metadata.collect()
    assert meta["doctor"]["host"] == meta["host"]["hostname"]
    assert {"ready", "quiet", "findings"} <= set(meta["doctor"])

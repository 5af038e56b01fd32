"""scripts/bare-testbed without root: usage errors, the plan of names and addresses, the
inventory and ssh_config it writes (the testbed itself: test_bare_testbed.py, root)."""

import importlib.machinery
import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
SCRIPT = REPO / "scripts" / "bare-testbed"


def load():
    loader = importlib.machinery.SourceFileLoader("bare_testbed", str(SCRIPT))
    spec = importlib.util.spec_from_loader("bare_testbed", loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


bt = load()


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["up", "0"], "bare-testbed: N: 0 (expected an integer from 1 to 50)"),
        (["up", "2", "--prefix", "Bad-Name"], "bare-testbed: --prefix: 'Bad-Name' (expected 1 to 8 lower-case"),
        (["up", "2", "--subnet", "10.79.0.0/33"], "bare-testbed: --subnet: '10.79.0.0/33' (expected an IPv4 network"),
        (["up", "9", "--subnet", "10.79.0.0/29"], "bare-testbed: --subnet: '10.79.0.0/29' (expected room for 9"),
        (["up", "2", "--mirror-dir", "no/such/folder"], "bare-testbed: --mirror-dir: 'no/such/folder' (expected"),
        (["up", "2", "--disk-gib", "1"], "bare-testbed: --disk-gib: 1 (expected an integer from 2 to 1024)"),
        (["link", "corunb-n1", "sideways"], "bare-testbed: STATE: 'sideways' (expected down or up)"),
    ],
)
def test_usage_errors_are_one_line_with_exit_2(tmp_path, args, expected):
    proc = subprocess.run(
        [sys.executable, str(SCRIPT), "--state-dir", str(tmp_path / "s"), *args],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc.stderr
    assert proc.stderr.startswith(expected) and proc.stderr.count("\n") == 1, proc.stderr
    assert not (tmp_path / "s").exists()


def test_status_and_down_without_a_testbed(tmp_path):
    run = [sys.executable, str(SCRIPT), "--state-dir", str(tmp_path / "s")]
    st = subprocess.run([*run, "status", "--json"], capture_output=True, text=True, timeout=30)
    assert (st.returncode, st.stdout.strip()) == (1, '{"up": false, "nodes": []}')
    down = subprocess.run([*run, "down"], capture_output=True, text=True, timeout=30)
    assert down.returncode == 0 and "no testbed" in down.stdout


def test_the_inventory_names_the_nodes_the_proxy_side_mirror_and_the_copy_of_corun(tmp_path):
    state = bt.plan(2, "10.79.3.0/24", "tb", tmp_path)
    assert [(n["name"], n["address"], n["veth"]) for n in state["nodes"]] == [
        ("tb-n1", "10.79.3.11", "tb-v1"),
        ("tb-n2", "10.79.3.12", "tb-v2"),
    ]
    assert (state["gateway"], state["bridge"]) == ("10.79.3.1", "tb-br")
    inv = yaml.safe_load(bt.inventory_text(state, tmp_path))
    group = inv["all"]["children"]["testbed"]
    # corun_mirror per host: host vars outrank inventory/group_vars/all.yml, which sets it too
    mirror = "http://10.79.3.1:8078"
    assert group["hosts"] == {
        "tb-n1": {"ansible_host": "10.79.3.11", "corun_mirror": mirror},
        "tb-n2": {"ansible_host": "10.79.3.12", "corun_mirror": mirror},
    }
    assert group["vars"]["corun_source_copy"] is True
    assert group["vars"]["corun_mpi_network"] == "10.79.3.0/24"
    # a node's root is on a disk of its own (a loop device): its elevators are checked as on a real node
    assert not any("elevators" in k for k in group["vars"])
    assert group["vars"]["ansible_ssh_common_args"] == f"-F {tmp_path / 'ssh_config'}"
    # Slurm's controller (roles/slurm) is this machine, reached by the nodes on the bridge's address
    ctl = inv["all"]["children"]["slurm_controller"]["hosts"]
    assert ctl == {
        "localhost": {
            "ansible_connection": "local",
            "ansible_python_interpreter": "/usr/bin/python3",
            "slurm_controller_address": "10.79.3.1",
        }
    }
    cfg = bt.ssh_config_text(state, tmp_path)
    assert "Host tb-n2 10.79.3.12\n  HostName 10.79.3.12\n  HostKeyAlias tb-n2" in cfg
    assert "StrictHostKeyChecking yes" in cfg


def test_the_debian_mirror_is_read_from_deb822_and_one_line_sources(tmp_path, monkeypatch):
    d = tmp_path / "sources.list.d"
    d.mkdir()
    (d / "debian.sources").write_text(
        "Types: deb\nURIs: http://deb.example.org/debian-security\nSuites: bookworm-security\n\n"
        "Types: deb\nURIs: http://deb.example.org/debian\nSuites: bookworm\n"
    )
    real = Path

    def fake_path(p, *rest):
        if str(p) == "/etc/apt/sources.list.d":
            return real(d)
        if str(p) == "/etc/apt/sources.list":
            return real(tmp_path / "sources.list")
        return real(p, *rest)

    monkeypatch.setattr(bt, "Path", fake_path)
    assert bt.debian_mirror() == "http://deb.example.org/debian"

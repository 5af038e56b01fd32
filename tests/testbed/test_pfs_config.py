"""Bad configurations of the parallel file system: one line, exit 2, nothing started."""

import json
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent


def pfs_command(cfg, command):
    """`python -m corun.testbed.pfs --config CFG COMMAND`, from the repository root."""
    argv = [sys.executable, "-m", "corun.testbed.pfs", "--config", str(cfg), command]
    return subprocess.run(argv, capture_output=True, text=True, cwd=REPO, timeout=60)


@pytest.mark.parametrize(
    "text, needle",
    [
        ("servers: 0\n", "servers: 0 (expected an integer >= 1)"),
        ("strip_size_bytes: 1000\n", "strip_size_bytes: 1000 (expected an integer >= 4096)"),
        ("brick: {backend: nfs}\n", "brick.backend: 'nfs' (expected one of dir, loop, rotating_disk)"),
        ("root: relative/path\n", "root: 'relative/path' (expected an absolute path"),
        ("link: {rate_mb: 1000}\n", "link.rate_mb: 'unknown key' (expected one of client_links, rate_mbit, shape)"),
        ("fuse: {shard_block_mib: 1}\n", "fuse.shard_block_mib: 1 (expected an integer >= 4)"),
        ("inventory: does/not/exist.yml\n", "inventory: 'does/not/exist.yml' (expected an existing Ansible inventory"),
        ("servers: [1\n", "(expected valid YAML)"),
        ("server_xlators: [{name: x, type: 'a b'}]\n", "server_xlators[0].type: 'a b' (expected a translator type"),
        (
            "server_xlators: [{name: corun-brick, type: debug/io-stats}]\ninventory: inventory/local\n"
            "colocate_client: true\nservers: 1\n",
            "server_xlators[0].name: 'corun-brick' (expected a name used once",
        ),
    ],
)
def test_bad_config_is_one_line_and_nothing_starts(tmp_path, text, needle):
    cfg = tmp_path / "pfs.yaml"
    cfg.write_text(text + f"state_dir: {tmp_path / 'state'}\n" if "[1" not in text else text)
    res = pfs_command(cfg, "up")
    assert res.returncode == 2, res.stderr
    lines = res.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith(f"corun: {cfg}: ") and needle in lines[0], res.stderr
    assert not (tmp_path / "state").exists()


def test_more_servers_than_hosts_is_refused(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text(
        "all:\n  children:\n    testbed:\n      hosts:\n        a: {ansible_host: 10.77.9.11}\n"
        "        b: {ansible_host: 10.77.9.12}\n"
    )
    cfg = tmp_path / "pfs.yaml"
    cfg.write_text(f"inventory: {inv}\nservers: 2\nstate_dir: {tmp_path / 'state'}\n")
    res = pfs_command(cfg, "layout")
    assert res.returncode == 2
    assert f"corun: {cfg}: servers: 2 (expected at most 1: the hosts of {inv} besides the client a)" in res.stderr
    cfg.write_text(f"inventory: {inv}\nservers: 2\ncolocate_client: true\nstate_dir: {tmp_path / 'state'}\n")
    res = pfs_command(cfg, "layout")
    assert res.returncode == 0, res.stderr
    assert [s["name"] for s in __import__("json").loads(res.stdout)["servers"]] == ["a", "b"]


def test_several_client_hosts_come_first_and_the_servers_after_them(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text(
        "all:\n  children:\n    testbed:\n      hosts:\n"
        + "".join(f"        {n}: {{ansible_host: 10.77.9.{11 + i}}}\n" for i, n in enumerate("abcd"))
    )
    cfg = tmp_path / "pfs.yaml"

    def layout(extra: str) -> subprocess.CompletedProcess:
        cfg.write_text(f"inventory: {inv}\nstate_dir: {tmp_path / 'state'}\nroot: /srv/pfs\n{extra}")
        return subprocess.run(
            [sys.executable, "-m", "corun.testbed.pfs", "--config", str(cfg), "layout"],
            capture_output=True,
            text=True,
            cwd=REPO,
            timeout=60,
        )

    res = layout("servers: 2\nclient_hosts: 2\n")
    assert res.returncode == 0, res.stderr
    lay = json.loads(res.stdout)
    assert [c["name"] for c in lay["clients"]] == ["a", "b"] and lay["client"]["name"] == "a"
    assert [s["name"] for s in lay["servers"]] == ["c", "d"]
    assert lay["client_volfiles"] == {h: [f"/srv/pfs/{h}/client/stripe-{i}.vol" for i in (0, 1)] for h in "ab"}
    assert lay["volfiles"] == lay["client_volfiles"]["a"]
    res = layout("servers: 1\nclient_hosts: 2\nclient: c\n")  # the named client first, then the hosts in order
    assert res.returncode == 0, res.stderr
    lay = json.loads(res.stdout)
    assert [c["name"] for c in lay["clients"]] == ["c", "a"] and [s["name"] for s in lay["servers"]] == ["b"]
    res = layout("servers: 3\nclient_hosts: 2\n")
    assert res.returncode == 2
    assert f"servers: 3 (expected at most 2: the hosts of {inv} besides the 2 client hosts)" in res.stderr
    res = layout("servers: 1\nclient_hosts: 5\n")
    assert res.returncode == 2 and f"client_hosts: 5 (expected at most 4: the hosts of {inv})" in res.stderr

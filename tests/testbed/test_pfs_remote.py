"""corun.testbed.pfs_remote: what corun.testbed.pfs_sched needs, without the configuration."""

import json
import subprocess
import sys

from corun.testbed import pfs_config, pfs_remote


def test_pfs_sched_starts_without_the_configuration_and_its_schema(repo_root):
    # the aIOLi variants start pfs_sched four times a run (apply, verify, verify, restore): with
    # corun.config and jsonschema it took 0.11 s a start here, 0.05 s without
    code = "import json, sys, corun.testbed.pfs_sched; print(json.dumps(sorted(sys.modules)))"
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=repo_root, check=True)
    loaded = set(json.loads(res.stdout))
    assert not {"corun.config", "jsonschema", "yaml"} & loaded, sorted(m for m in loaded if m.startswith("corun"))


def test_netns_host_enters_its_namespace():
    h = pfs_remote.NetnsHost(name="n1", address="10.0.0.2", netns="pfs-n1")
    assert h.command(["cat", "f"]) == ["nsenter", "--net=/run/netns/pfs-n1", "--", "cat", "f"]
    assert h.command(["ls"], cwd="/d") == [
        "nsenter",
        "--net=/run/netns/pfs-n1",
        "--",
        "sh",
        "-c",
        'cd "$0" && exec "$@"',
        "/d",
        "ls",
    ]
    assert pfs_config.NetnsHost is pfs_remote.NetnsHost  # one class, whichever module names it

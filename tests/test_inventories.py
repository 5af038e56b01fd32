"""Testbed inventories on fixture inputs (no testbed needed): the CloudLab profile (run against
a small stand-in for geni-lib's portal API: the geni-lib on PyPI is Python 2 only; CloudLab's
portal runs its own) and inventory/cloudlab/manifest_inventory.py (a manifest rspec). Grid'5000's
inventory through EnOSlib: tests/testbed/test_g5k_reserve.py.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
FIXTURES = REPO / "tests" / "fixtures" / "testbeds"
PY = sys.executable


def generate(script, *args):
    return subprocess.run(
        [PY, str(REPO / "inventory" / script), *args], capture_output=True, text=True, cwd=REPO, timeout=60
    )


def listed(inventory_file):
    """The inventory as Ansible reads it (ansible-inventory --list)."""
    proc = subprocess.run(
        [str(Path(PY).parent / "ansible-inventory"), "-i", str(inventory_file), "--list"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return json.loads(proc.stdout)


def generated(out, script, *args):
    """(the hosts of group testbed, every host's variables) of the inventory SCRIPT writes to OUT
    from ARGS, as Ansible reads it."""
    proc = generate(script, *args, "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    inv = listed(out)
    return inv["testbed"]["hosts"], inv["_meta"]["hostvars"]


def test_cloudlab_inventory_from_manifest(tmp_path):
    options = [str(FIXTURES / "cloudlab_manifest.xml"), "--user", "bob", "--corun-dir", "/users/bob/corun"]
    hosts, hostvars = generated(tmp_path / "cl.yml", "cloudlab/manifest_inventory.py", *options)
    assert hosts == ["node0", "node1"]
    hv = hostvars["node1"]
    assert (hv["ansible_host"], hv["ansible_user"], hv["corun_lan_address"]) == (
        "pc102.utah.cloudlab.us",
        "bob",
        "10.10.1.2",
    )
    assert hv["corun_mpi_network"] == "10.10.1.0/24" and hv["corun_become"] is True


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--user", "carol"], "node node0: login: 'carol' (expected a user of the manifest's ssh logins (alice, bob))"),
        (["--corun-dir", "corun"], "corun_dir: 'corun' (expected an absolute path on the nodes)"),
    ],
)
def test_cloudlab_bad_input_is_one_line(tmp_path, args, needle):
    proc = generate(
        "cloudlab/manifest_inventory.py",
        str(FIXTURES / "cloudlab_manifest.xml"),
        *args,
        "--out",
        str(tmp_path / "x.yml"),
    )
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1 and needle in proc.stderr, proc.stderr


def test_cloudlab_request_rspec_is_not_a_manifest(tmp_path):
    request = tmp_path / "request.xml"
    request.write_text('<rspec xmlns="http://www.geni.net/resources/rspec/3" type="request"/>')
    proc = generate("cloudlab/manifest_inventory.py", str(request), "--out", "-")
    assert proc.returncode == 2 and "expected a GENI v3 manifest rspec" in proc.stderr


# A stand-in for the part of geni-lib's portal API the profile uses; the rspec is printed as JSON.
FAKE_PORTAL = """
import json, os, sys
class ParameterType:
    INTEGER, STRING, IMAGE, NODETYPE = "integer", "string", "image", "nodetype"
class ParameterError(Exception):
    def __init__(self, msg, names):
        super().__init__(msg)
class _Params:
    pass
class Context:
    def __init__(self):
        self.defaults, self.errors = {}, []
    def defineParameter(self, name, desc, kind, default, legalValues=None, longDescription=None):
        self.defaults[name] = default
    def bindParameters(self):
        p = _Params()
        given = json.loads(os.environ.get("FAKE_PARAMS", "{}"))
        for k, v in self.defaults.items():
            setattr(p, k, given.get(k, v))
        return p
    def reportError(self, err):
        self.errors.append(str(err))
    def verifyParameters(self):
        if self.errors:
            print("; ".join(self.errors), file=sys.stderr)
            sys.exit(1)
    def makeRequestRSpec(self):
        from geni.rspec.pg import Request
        return Request()
    def printRequestRSpec(self, request):
        print(json.dumps(request.as_dict()))
"""
FAKE_PG = """
class IPv4Address:
    def __init__(self, address, netmask):
        self.address, self.netmask = address, netmask
class Interface:
    def __init__(self, name):
        self.name, self.addresses = name, []
    def addAddress(self, a):
        self.addresses.append((a.address, a.netmask))
class RawPC:
    def __init__(self, name):
        self.name, self.disk_image, self.hardware_type, self.interfaces = name, None, None, []
    def addInterface(self, name):
        i = Interface(name)
        self.interfaces.append(i)
        return i
class LAN:
    def __init__(self, name):
        self.name, self.interfaces = name, []
    def addInterface(self, i):
        self.interfaces.append(i.name)
class Request:
    def __init__(self):
        self.nodes, self.lans = [], []
    def RawPC(self, name):
        self.nodes.append(RawPC(name))
        return self.nodes[-1]
    def LAN(self, name):
        self.lans.append(LAN(name))
        return self.lans[-1]
    def as_dict(self):
        return {"nodes": [{"name": n.name, "image": n.disk_image, "type": n.hardware_type,
                           "addresses": [a for i in n.interfaces for a in i.addresses]} for n in self.nodes],
                "lans": [{"name": l.name, "interfaces": l.interfaces} for l in self.lans]}
"""


@pytest.fixture
def fake_geni(tmp_path):
    pkg = tmp_path / "geni"
    (pkg / "rspec").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "portal.py").write_text(FAKE_PORTAL)
    (pkg / "rspec" / "__init__.py").write_text("")
    (pkg / "rspec" / "pg.py").write_text(FAKE_PG)
    return tmp_path


def run_profile(fake_geni, **params):
    env = dict(os.environ, PYTHONPATH=str(fake_geni), FAKE_PARAMS=json.dumps(params))
    return subprocess.run(
        [PY, str(REPO / "inventory" / "cloudlab" / "profile.py")], capture_output=True, text=True, env=env, timeout=60
    )


def test_cloudlab_profile_requests_raw_pcs_on_one_lan(fake_geni):
    proc = run_profile(fake_geni, node_count=3, hardware_type="m510")
    assert proc.returncode == 0, proc.stderr
    rspec = json.loads(proc.stdout)
    assert [n["name"] for n in rspec["nodes"]] == ["node0", "node1", "node2"]
    assert {n["type"] for n in rspec["nodes"]} == {"m510"}
    assert all(n["image"].endswith("STD") for n in rspec["nodes"])
    assert rspec["lans"] == [{"name": "lan", "interfaces": ["if0", "if1", "if2"]}]
    assert rspec["nodes"][2]["addresses"] == [["10.10.1.3", "255.255.255.0"]]


def test_cloudlab_profile_rejects_zero_nodes(fake_geni):
    proc = run_profile(fake_geni, node_count=0)
    assert proc.returncode != 0 and "node_count: expected an integer >= 1" in proc.stderr

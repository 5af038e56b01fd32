"""Testbed inventories and the OAR executor wrapper, on fixture inputs (no testbed needed).

inventory/grid5000/oar_inventory.py ($OAR_NODEFILE, oarstat -J output), the CloudLab profile
(run against a small stand-in for geni-lib's portal API: the geni-lib on PyPI is Python 2 only;
CloudLab's portal runs its own), inventory/cloudlab/manifest_inventory.py (a manifest rspec) and
corun.testbed.oar's oarsub/oarstat command construction and parsing.
"""

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from corun.errors import ConfigError, CorunError
from corun.testbed import oar

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


@pytest.mark.parametrize("source", [("--nodefile", "oar_nodefile"), ("--oarstat-json", "oarstat_job.json")])
def test_grid5000_inventory_from_oar(tmp_path, source):
    options = [source[0], str(FIXTURES / source[1]), "--corun-dir", "/root/corun", "--jump", "alice@access.grid5000.fr"]
    hosts, hostvars = generated(tmp_path / "g5k.yml", "grid5000/oar_inventory.py", *options)
    assert hosts == ["dahu-3", "dahu-7"]
    hv = hostvars["dahu-7"]
    assert hv["ansible_host"] == "dahu-7.grenoble.grid5000.fr"
    assert hv["ansible_user"] == "root"
    assert hv["ansible_ssh_common_args"] == "-J alice@access.grid5000.fr"
    assert hv["corun_kernels_src_dir"] == "/root/corun"


def test_grid5000_job_not_running_is_one_line(tmp_path):
    doc = json.loads((FIXTURES / "oarstat_job.json").read_text())
    doc["2457811"]["state"] = "Waiting"
    saved = tmp_path / "oarstat.json"
    saved.write_text(json.dumps(doc))
    proc = generate("grid5000/oar_inventory.py", "--oarstat-json", str(saved), "--out", str(tmp_path / "x.yml"))
    assert proc.returncode == 2
    assert proc.stderr.count("\n") == 1 and "2457811.state: 'Waiting' (expected a running job" in proc.stderr
    assert not (tmp_path / "x.yml").exists()


def test_grid5000_nodefile_garbage_is_one_line(tmp_path):
    """A line that is not a host name (a pasted prompt, a path) is refused, not made a host."""
    nodefile = tmp_path / "nodefile"
    nodefile.write_text("dahu-3.grenoble.grid5000.fr\nroot@dahu-3:~# oarsub -I\n")
    proc = generate("grid5000/oar_inventory.py", "--nodefile", str(nodefile), "--out", str(tmp_path / "x.yml"))
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert f"{nodefile}: line 2: 'root@dahu-3:~# oarsub -I' (expected a node's host name" in proc.stderr
    assert not (tmp_path / "x.yml").exists()


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


# The OAR wrapper of Snakemake's cluster-generic executor.


def test_oar_submit_command():
    argv = oar.submit_argv(
        "/home/a/corun/.snakemake/tmp.x/job.sh", "2:30:00", nodes=1, name="corun-run x", project="p1", types=["deploy"]
    )
    assert argv == [
        "oarsub",
        "-l",
        "nodes=1,walltime=2:30:00",
        "-n",
        "corun-run_x",
        "--project",
        "p1",
        "-t",
        "deploy",
        "-O",
        "/home/a/corun/.snakemake/tmp.x/job.sh.%jobid%.out",
        "-E",
        "/home/a/corun/.snakemake/tmp.x/job.sh.%jobid%.err",
        "/bin/bash /home/a/corun/.snakemake/tmp.x/job.sh",
    ]
    assert oar.submit_argv("j.sh", cores=4, undeployed=True)[2] == "nodes=1/core=4,walltime=1:00:00"


def test_oar_submit_refuses_a_job_on_undeployed_nodes_unless_told():
    with pytest.raises(ConfigError) as exc:
        oar.submit_argv("j.sh", types=["besteffort"])
    assert str(exc.value) == (
        "corun.testbed.oar submit: --type: ['besteffort'] (expected deploy (a kadeploy job: root on the "
        "nodes, where runs measure), or --undeployed to submit to the default environment, where runs "
        "cannot measure)"
    )
    assert "-t" not in oar.submit_argv("j.sh", undeployed=True)
    proc = subprocess.run([PY, "-m", "corun.testbed.oar", "submit", "j.sh"], capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 2 and len(proc.stderr.strip().splitlines()) == 1, proc.stderr
    assert "(expected deploy" in proc.stderr


@pytest.mark.parametrize(
    ("kw", "needle"),
    [
        ({"walltime": "2h"}, "walltime: '2h' (expected hours[:minutes[:seconds]]"),
        ({"nodes": 0}, "(expected integers >= 1)"),
    ],
)
def test_oar_submit_bad_resources(kw, needle):
    with pytest.raises(ConfigError, match=r".*") as exc:
        oar.submit_argv("j.sh", **kw)
    assert needle in str(exc.value)


def test_oar_parses_oarsub_and_oarstat():
    out = "[ADMISSION RULE] Modify resource description with type constraints\nOAR_JOB_ID=2457811\n"
    assert oar.parse_submit(out) == "2457811"
    with pytest.raises(CorunError):
        oar.parse_submit("[ERROR] no resources\n")
    doc = json.loads((FIXTURES / "oarstat_job.json").read_text())
    assert oar.parse_status(doc, "2457811") == "running"
    doc["2457811"].update(state="Terminated", exit_code=0)
    assert oar.parse_status(doc, "2457811") == "success"
    doc["2457811"].update(exit_code=256)
    assert oar.parse_status(doc, "2457811") == "failed"
    doc["2457811"].update(state="Error", exit_code=None)
    assert oar.parse_status(doc, "2457811") == "failed"


def test_oar_wrapper_end_to_end_with_stand_in_commands(tmp_path):
    """submit/status/cancel as Snakemake calls them, with oarsub/oarstat/oardel stand-ins on PATH."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "calls.log"
    (bin_dir / "oarsub").write_text(f'#!/bin/sh\necho "oarsub $*" >> {log}\necho OAR_JOB_ID=42\n')
    (bin_dir / "oarstat").write_text('#!/bin/sh\necho \'{"42": {"state": "Terminated", "exit_code": 0}}\'\n')
    (bin_dir / "oardel").write_text(f'#!/bin/sh\necho "oardel $*" >> {log}\n')
    for f in bin_dir.iterdir():
        f.chmod(0o755)
    env = dict(os.environ, PATH=f"{bin_dir}:{os.environ['PATH']}")

    def call(*args):
        return subprocess.run([PY, "-m", "corun.testbed.oar", *args], capture_output=True, text=True, env=env, cwd=REPO)

    sub = call("submit", "--walltime", "0:10:00", "--name", "corun-run_llc", "--undeployed", str(tmp_path / "job.sh"))
    assert (sub.returncode, sub.stdout) == (0, "42\n"), sub.stderr
    assert call("status", "42").stdout == "success\n"
    assert call("cancel", "42", "43").returncode == 0
    assert log.read_text().splitlines() == [
        f"oarsub -l nodes=1,walltime=0:10:00 -n corun-run_llc -O {tmp_path}/job.sh.%jobid%.out "
        f"-E {tmp_path}/job.sh.%jobid%.err /bin/bash {tmp_path}/job.sh",
        "oardel 42 43",
    ]


def test_oar_profile_uses_the_wrapper():
    profile = yaml.safe_load((REPO / "workflows" / "profiles" / "oar" / "config.yaml").read_text())
    assert profile["executor"] == "cluster-generic"
    assert "-m corun.testbed.oar submit" in profile["cluster-generic-submit-cmd"]
    assert profile["cluster-generic-status-cmd"].endswith("-m corun.testbed.oar status")

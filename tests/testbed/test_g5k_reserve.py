"""inventory/grid5000/reserve.py and corun.testbed.g5k without Grid'5000 or EnOSlib.

EnOSlib's G5k provider hands back (roles, networks) from provider.init(): roles maps a role to
enoslib.objects.Host objects (dataclass fields address, alias, user, keyfile, port, extra; the
extra holds gateway, gateway_user for the jump through access.grid5000.fr from outside, and
internal_gateway* for a kavlan-local network), networks maps a role to network objects whose
`network` is an ipaddress network (enoslib.objects.Network). The fakes below have exactly those
attributes; the inventory written from them is read back with corun's own loader.
"""

import importlib.util
import ipaddress
import json
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from corun.errors import ConfigError, CorunError
from corun.testbed import g5k
from corun.testbed import inventory as inv

REPO = Path(__file__).resolve().parents[2]
SCRIPT = REPO / "inventory" / "grid5000" / "reserve.py"


@dataclass
class FakeHost:  # enoslib.objects.Host's fields
    address: str
    alias: str | None = None
    user: str | None = "root"
    keyfile: str | None = None
    port: int | None = None
    extra: dict = field(default_factory=dict)


@dataclass
class FakeNetwork:  # enoslib.objects.Network: .network is an ipaddress network
    network: object


def settings(**kw):
    return g5k.check({"site": "grenoble", "cluster": "dahu", "nodes": 3, **kw}, "reserve.yaml")


def outside_g5k(address):
    """A host as EnOSlib gives it when it runs outside Grid'5000 (alias defaults to address)."""
    return FakeHost(address, alias=address, extra={"gateway": "access.grid5000.fr", "gateway_user": "alice"})


def roles_and_networks():
    nodes = [outside_g5k(f"dahu-{i}.grenoble.grid5000.fr") for i in (10, 2, 7)]
    networks = {
        "prod": [
            FakeNetwork(ipaddress.ip_network("172.16.16.0/20")),
            FakeNetwork(ipaddress.ip_network("2001:660:4406:100::/64")),
        ]
    }
    return {"testbed": nodes}, networks


def test_enoslib_hosts_become_corun_inventory(tmp_path, monkeypatch):
    monkeypatch.setenv("CORUN_STATE_DIR", str(tmp_path / "state"))
    roles, networks = roles_and_networks()
    out = tmp_path / "grid5000.yml"
    out.write_text(g5k.inventory_text(roles, networks, settings(), ["2457811"], "reserve.yaml"))
    hosts = inv.load(out)
    assert [h.name for h in hosts] == ["dahu-2", "dahu-7", "dahu-10"]
    h = hosts[0]
    assert (h.address, h.user, h.local) == ("dahu-2.grenoble.grid5000.fr", "root", False)
    assert h.ssh_args == ["-J", "alice@access.grid5000.fr"]
    assert h.vars["corun_source_copy"] is True and h.vars["corun_source_dir"] == "/root/corun"
    assert h.vars["corun_kernels_src_dir"] == h.vars["corun_schedulers_src_dir"] == "/root/corun"
    assert h.vars["corun_mpi_network"] == "172.16.16.0/20"
    assert h.vars["ansible_python_interpreter"] == "/usr/bin/python3"
    assert "OAR job 2457811 (3 x dahu, grenoble, debian12-min, walltime 2:00:00)" in out.read_text()


def test_inside_g5k_no_jump_and_a_kavlan_gateway_is_chained():
    inside = [FakeHost("dahu-3.grenoble.grid5000.fr")]
    _, hv = g5k.inventory_hosts({"testbed": inside}, "x")[0]
    assert hv == {"ansible_host": "dahu-3.grenoble.grid5000.fr", "ansible_user": "root"}
    kavlan = FakeHost(
        "dahu-3-kavlan-1.grenoble.grid5000.fr",
        extra={
            "gateway": "access.grid5000.fr",
            "gateway_user": "alice",
            "internal_gateway": "kavlan-1.grenoble.grid5000.fr",
            "internal_gateway_user": "alice",
        },
        port=2222,
        keyfile="/home/alice/.ssh/id_ed25519",
    )
    name, hv = g5k.inventory_hosts({"testbed": [kavlan]}, "x")[0]
    assert name == "dahu-3-kavlan-1"
    assert hv["ansible_ssh_common_args"] == "-J alice@access.grid5000.fr,alice@kavlan-1.grenoble.grid5000.fr"
    assert (hv["ansible_port"], hv["ansible_ssh_private_key_file"]) == (2222, "/home/alice/.ssh/id_ed25519")


def test_non_root_nodes_and_a_missing_role_are_one_line_errors():
    with pytest.raises(ConfigError) as exc:
        g5k.inventory_hosts({"testbed": [FakeHost("dahu-3.grenoble.grid5000.fr", user="alice")]}, "reserve.yaml")
    assert str(exc.value).startswith("reserve.yaml: dahu-3.grenoble.grid5000.fr.user: 'alice' (expected root")
    with pytest.raises(ConfigError, match=r"roles.testbed: \['prod'\] \(expected reserved nodes in role testbed\)"):
        g5k.inventory_hosts({"prod": [FakeHost("x")]}, "reserve.yaml")


def test_settings_handed_to_enoslib():
    s, m = g5k.enoslib_settings(settings(walltime="12:30", job_id=2457811, project="lab"))
    assert s == {
        "job_name": "corun",
        "job_type": ["deploy"],
        "env_name": "debian12-min",
        "walltime": "12:30:00",
        "oargrid_jobids": [["grenoble", "2457811"]],
        "project": "lab",
    }
    assert m == {"roles": ["testbed"], "cluster": "dahu", "site": "grenoble", "nodes": 3}
    assert g5k.enoslib_settings(settings(reservable_disks=True))[1]["reservable_disks"] is True


def run_script(*args, cwd=REPO):
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True, cwd=cwd, timeout=60)


@pytest.mark.parametrize(
    ("yaml_text", "needle"),
    [
        ("site: grenoble\n", "reserve.yaml: cluster: None (expected the Grid'5000 cluster to reserve on"),
        ("site: grenoble\ncluster: dahu\nnode: 3\n", "reserve.yaml: node: 3 (expected a reservation setting (site,"),
        ("site: grenoble\ncluster: dahu\nnodes: 0\n", "reserve.yaml: nodes: 0 (expected an integer >= 1)"),
        ("site: grenoble\ncluster: dahu\nwalltime: 3:00\n", "walltime: 180 (expected a quoted"),
        ("site: grenoble\ncluster: dahu\nwalltime: '3h'\n", "walltime: '3h' (expected hours:minutes[:seconds]"),
        ("site: grenoble\ncluster: dahu\nimage: debian11-min\n", "image: 'debian11-min' (expected a Debian 12"),
        ("site: Grenoble\ncluster: dahu\n", "site: 'Grenoble' (expected a Grid'5000 site name such as grenoble)"),
        ("site: grenoble\ncluster: dahu\ncorun_dir: corun\n", "reserve.yaml: corun_dir: 'corun' (expected an absolute"),
        ("site: grenoble\ncluster: dahu\nreservable_disks: 2\n", "reservable_disks: 2 (expected true or false)"),
        ("- site\n", "reserve.yaml: (top level): ['site'] (expected a YAML mapping"),
    ],
)
def test_bad_config_is_one_line(tmp_path, yaml_text, needle):
    (tmp_path / "reserve.yaml").write_text(yaml_text)
    proc = run_script("reserve.yaml", "--out", str(tmp_path / "g.yml"), cwd=tmp_path)
    assert proc.returncode == 2 and proc.stderr.count("\n") == 1, proc.stderr
    assert needle in proc.stderr
    assert not (tmp_path / "g.yml").exists()


def test_command_line_overrides_the_file_and_print_conf_needs_no_enoslib(tmp_path):
    (tmp_path / "reserve.yaml").write_text("site: nancy\ncluster: gros\nnodes: 2\nwalltime: '3:00'\n")
    proc = run_script("reserve.yaml", "--nodes", "8", "--image", "debian12-nfs", "--print-conf", cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert doc["machine"] == {"roles": ["testbed"], "cluster": "gros", "site": "nancy", "nodes": 8}
    assert doc["settings"]["env_name"] == "debian12-nfs" and doc["settings"]["walltime"] == "3:00:00"
    bad = run_script("reserve.yaml", "--walltime", "3h", "--print-conf", cwd=tmp_path)
    assert bad.returncode == 2 and bad.stderr.startswith("reserve: command line: walltime: '3h' (expected"), bad.stderr


def test_without_enoslib_reserving_is_one_line(monkeypatch, capsys, tmp_path):
    monkeypatch.setitem(sys.modules, "enoslib", None)  # as if not installed: find_spec gives None
    with pytest.raises(CorunError) as exc:
        g5k.reserve(settings())
    assert str(exc.value) == g5k.MISSING_ENOSLIB
    spec = importlib.util.spec_from_file_location("reserve_script", SCRIPT)
    script = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(script)
    out = tmp_path / "g.yml"
    assert script.main(["--site", "grenoble", "--cluster", "dahu", "--out", str(out)]) == 1
    assert capsys.readouterr().err == f"reserve: {g5k.MISSING_ENOSLIB}\n"
    assert not out.exists()
    assert script.main(["--site", "grenoble", "--cluster", "dahu", "--release"]) == 1


def test_settings_pass_enoslib_schema():
    """Where EnOSlib is installed (the frontend's .venv-grid5000): its own schema accepts them."""
    en = pytest.importorskip("enoslib")
    from enoslib.infra.enos_g5k.configuration import ClusterConfiguration

    s, m = g5k.enoslib_settings(settings(job_id=1, reservation="2026-12-05 19:00:00", queue="default"))
    conf = en.G5kConf.from_settings(**s)
    machine = ClusterConfiguration(**m)  # add_machine asks the API whether the cluster is exotic
    conf.machines.append(machine)
    conf._set_default_primary_network(machine)
    conf.finalize()
    assert conf.to_dict()["resources"]["machines"][0]["nodes"] == 3

"""Ansible inventories of testbed reservations: a CloudLab manifest here, Grid'5000 nodes
through EnOSlib in corun/testbed/g5k.py.

inventory/cloudlab/manifest_inventory.py and inventory/grid5000/reserve.py call these functions;
each writes a YAML inventory with the hosts in group testbed and the variables corun's roles and
multi-host runs read (the corun checkout path on the nodes, the ssh user, the network MPI uses).
"""

from __future__ import annotations

import ipaddress
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from corun.errors import ConfigError
from corun.util import atomic_write_text

RSPEC_NS = "{http://www.geni.net/resources/rspec/3}"


def _yaml(value) -> str:
    return json.dumps(value)  # a JSON scalar is a YAML scalar


def inventory_yaml(header: str, hosts: list[tuple[str, dict]], group_vars: dict) -> str:
    lines = [f"# {line}" if line else "#" for line in header.splitlines()]
    lines += ["all:", "  children:", "    testbed:", "      hosts:"]
    for name, hv in hosts:
        lines.append(f"        {name}:" + ("" if hv else " {}"))
        lines += [f"          {k}: {_yaml(v)}" for k, v in hv.items()]
    if group_vars:
        lines.append("      vars:")
        lines += [f"        {k}: {_yaml(v)}" for k, v in group_vars.items()]
    return "\n".join(lines) + "\n"


def corun_vars(corun_dir: str) -> dict:
    """Where corun is checked out on the nodes, for the roles that build in it."""
    if not corun_dir.startswith("/"):
        raise ConfigError("--corun-dir", "corun_dir", corun_dir, "an absolute path on the nodes")
    return {
        "corun_kernels_src_dir": corun_dir,
        "corun_schedulers_src_dir": corun_dir,
        "corun_schedulers_data_dir": f"{corun_dir}/results",
    }


# CloudLab -------------------------------------------------------------------------------------


def cloudlab_hosts(xml_text: str, user: str | None, source: str) -> tuple[list[tuple[str, dict]], dict]:
    """Hosts and group variables of a CloudLab (GENI v3) manifest rspec."""
    try:
        root = ET.fromstring(xml_text)
    except ET.ParseError as exc:
        raise ConfigError(source, "", "unparsable XML", f"a CloudLab manifest rspec ({exc})") from None
    if root.tag != f"{RSPEC_NS}rspec" or root.get("type") not in (None, "manifest"):
        raise ConfigError(source, "rspec", root.tag, 'a GENI v3 manifest rspec (<rspec type="manifest">)')
    hosts, networks = [], set()
    for node in root.iter(f"{RSPEC_NS}node"):
        name = node.get("client_id")
        logins = [e for e in node.iter(f"{RSPEC_NS}login") if e.get("authentication") == "ssh-keys"]
        if user is not None:
            logins = [e for e in logins if e.get("username") == user]
        if not logins:
            users = sorted({e.get("username") for e in node.iter(f"{RSPEC_NS}login")})
            raise ConfigError(
                source,
                f"node {name}: login",
                user,
                f"a user of the manifest's ssh logins ({', '.join(users) or 'none: still booting?'})",
            )
        login = logins[0]
        hv = {"ansible_host": login.get("hostname"), "ansible_user": login.get("username")}
        if login.get("port") not in (None, "22"):
            hv["ansible_port"] = int(login.get("port"))
        for ip in node.iter(f"{RSPEC_NS}ip"):
            if ip.get("type", "ipv4") == "ipv4" and ip.get("address"):
                hv["corun_lan_address"] = ip.get("address")
                net = ipaddress.ip_network(f"{ip.get('address')}/{ip.get('netmask', '255.255.255.0')}", strict=False)
                networks.add(str(net))
                break
        hosts.append((name, hv))
    if not hosts:
        raise ConfigError(source, "node", None, "a manifest with nodes")
    group_vars = {"corun_become": True}
    if len(networks) == 1:
        group_vars["corun_mpi_network"] = networks.pop()
    return hosts, group_vars


def cloudlab_inventory(xml_text: str, user: str | None, corun_dir: str, source: str) -> str:
    hosts, group_vars = cloudlab_hosts(xml_text, user, source)
    group_vars.update(corun_vars(corun_dir))
    return inventory_yaml(
        f"CloudLab nodes of {source}, written by inventory/cloudlab/manifest_inventory.py.\n"
        "The login user has passwordless sudo: roles use become, corun runs use sudo (corun_become).",
        hosts,
        group_vars,
    )


def write(out: str, text: str) -> None:
    if out == "-":
        print(text, end="")
    else:
        atomic_write_text(Path(out), text)
        print(f"inventory: {out}")

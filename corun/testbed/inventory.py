"""The hosts of an Ansible inventory, and how to reach each of them.

corun reads inventories through `ansible-inventory --list`, so every format Ansible accepts
(INI, YAML, group_vars beside the file) means the same here as in provisioning. A host is
local (`ansible_connection: local`) or reached with ssh using its ansible_host, ansible_port,
ansible_user, ansible_ssh_private_key_file, ansible_ssh_common_args and ansible_ssh_extra_args.
"""

from __future__ import annotations

import json
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from corun.errors import ConfigError, CorunError

HOST_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")
LOCAL_NAMES = ("localhost", "local")


@dataclass
class Host:
    name: str
    address: str
    local: bool = False
    user: str | None = None
    port: int | None = None
    key: str | None = None
    ssh_args: list[str] = field(default_factory=list)
    vars: dict = field(default_factory=dict)

    def ssh_base(self, own_connection: bool = False) -> list[str]:
        """ssh and its options, without the destination (for rsync -e and mpirun's rsh agent).
        OWN_CONNECTION: not a session on a shared master connection (an ssh_config with
        ControlMaster, as the netns cluster's), so that ending this ssh ends the connection and
        the remote command notices (a daemon watching its parent, PR_SET_PDEATHSIG)."""
        argv = ["ssh", "-o", "BatchMode=yes", *(["-o", "ControlPath=none"] if own_connection else []), *self.ssh_args]
        if self.key:
            argv += ["-i", self.key]
        if self.port:
            argv += ["-p", str(self.port)]
        if self.user:
            argv += ["-l", self.user]
        return argv

    def destination(self) -> str:
        return self.address

    def command(self, argv: list[str], cwd: str | None = None, own_connection: bool = False) -> list[str]:
        """argv to run `argv` on this host (in cwd), locally or through ssh (see ssh_base)."""
        if self.local:
            return list(argv)
        remote = shlex.join(argv)
        if cwd:
            remote = f"cd {shlex.quote(cwd)} && exec {remote}"
        return [*self.ssh_base(own_connection), self.destination(), remote]

    def describe(self) -> dict:
        return {"name": self.name, "address": self.address, "local": self.local, "user": self.user, "port": self.port}


def ansible_inventory_program() -> str:
    beside = Path(sys.executable).parent / "ansible-inventory"
    if beside.is_file():
        return str(beside)
    found = shutil.which("ansible-inventory")
    if found is None:
        raise CorunError("ansible-inventory not found: run make setup (it installs ansible-core in .venv)")
    return found


def read_inventory(path: str | Path, source: str = "--inventory") -> dict:
    """`ansible-inventory --list` of path, as a dict."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(source, "inventory", str(path), "an existing Ansible inventory file or folder")
    # No standard input: Ansible refuses a non-blocking one (an MPI job beside it may leave one).
    proc = subprocess.run(
        [ansible_inventory_program(), "-i", str(p), "--list"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    if proc.returncode != 0:
        lines = [line for line in proc.stderr.splitlines() if line.strip()]
        raise ConfigError(
            source,
            "inventory",
            str(path),
            f"an inventory ansible-inventory can read ({lines[-1].strip() if lines else 'failed'})",
        )
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise ConfigError(source, "inventory", str(path), "an inventory ansible-inventory can list") from None


def group_hosts(listing: dict, group: str) -> list[str]:
    """Hosts of a group and its child groups, in inventory order, without repeats."""
    out: list[str] = []
    seen_groups: set[str] = set()

    def walk(g: str) -> None:
        if g in seen_groups:
            return
        seen_groups.add(g)
        entry = listing.get(g, {})
        for h in entry.get("hosts", []):
            if h not in out:
                out.append(h)
        for child in entry.get("children", []):
            walk(child)

    walk(group)
    return out


def host_from_vars(name: str, hv: dict, source: str) -> Host:
    if not HOST_NAME.match(name):
        raise ConfigError(source, "hosts", name, "host names of letters, digits, '.', '_' and '-'")
    local = hv.get("ansible_connection") == "local"
    port = hv.get("ansible_port") or hv.get("ansible_ssh_port")
    try:
        port = int(port) if port not in (None, "") else None
    except (TypeError, ValueError):
        raise ConfigError(source, f"{name}.ansible_port", port, "an integer port") from None
    ssh_args = shlex.split(str(hv.get("ansible_ssh_common_args") or "")) + shlex.split(
        str(hv.get("ansible_ssh_extra_args") or "")
    )
    return Host(
        name=name,
        address=str(hv.get("ansible_host") or name),
        local=local,
        user=hv.get("ansible_user") or hv.get("ansible_ssh_user"),
        port=port,
        key=hv.get("ansible_ssh_private_key_file") or hv.get("ansible_private_key_file"),
        ssh_args=ssh_args,
        vars=hv,
    )


def load(path: str | Path, group: str = "testbed", source: str = "--inventory") -> list[Host]:
    """The hosts of `group` in the inventory at path."""
    listing = read_inventory(path, source)
    names = group_hosts(listing, group)
    if not names:
        groups = sorted(k for k in listing if k != "_meta")
        raise ConfigError(source, "group", group, f"a group with hosts in {path} (groups: {', '.join(groups)})")
    hostvars = listing.get("_meta", {}).get("hostvars", {})
    return [host_from_vars(n, hostvars.get(n, {}), f"{path}") for n in names]


def from_names(names: list[str], source: str = "hosts") -> list[Host]:
    """Hosts given by name: localhost (this machine) or an ssh destination [user@]host."""
    out = []
    for i, n in enumerate(names):
        if not isinstance(n, str) or not n:
            raise ConfigError(source, f"hosts[{i}]", n, "localhost or an ssh destination [user@]host")
        user, _, addr = n.rpartition("@")
        if n in LOCAL_NAMES:
            out.append(Host(name="localhost", address="localhost", local=True))
        elif HOST_NAME.match(addr):
            out.append(Host(name=addr, address=addr, user=user or None))
        else:
            raise ConfigError(source, f"hosts[{i}]", n, "localhost or an ssh destination [user@]host")
    return out


def resolve(spec, source: str = "hosts") -> list[Host]:
    """The `hosts:` setting of a workflow config: a list of names or {from_inventory, group}."""
    if isinstance(spec, list):
        hosts = from_names(spec, source)
    elif isinstance(spec, dict) and "from_inventory" in spec:
        hosts = load(spec["from_inventory"], spec.get("group", "testbed"), source)
    else:
        raise ConfigError(source, "hosts", spec, "a list of host names or {from_inventory: PATH}")
    names = [h.name for h in hosts]
    dup = sorted({n for n in names if names.count(n) > 1})
    if dup:
        raise ConfigError(source, "hosts", dup[0], "each host once")
    return hosts


def pick(hosts: list[Host], names: list[str], source: str) -> list[Host]:
    by_name = {h.name: h for h in hosts}
    out = []
    for n in names:
        if n not in by_name:
            raise ConfigError(source, "host", n, f"one of {', '.join(by_name) or '(none)'}")
        out.append(by_name[n])
    return out

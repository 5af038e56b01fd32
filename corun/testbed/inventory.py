"""The hosts of an Ansible inventory, and how to reach each of them.

corun reads inventories through `ansible-inventory --list`, so every format Ansible accepts
(INI, YAML, group_vars beside the file) means the same here as in provisioning. The listing of a
static inventory (files, no plugin and no script) is kept in the state folder under the hash of
everything it was read from (the files, group_vars and host_vars beside them, Ansible's config
file and ANSIBLE_* settings), so the runs of a campaign read an unchanged inventory once: each
listing costs about half a second of Ansible's start-up. A host is
local (`ansible_connection: local`) or reached with ssh using its ansible_host, ansible_port,
ansible_user, ansible_ssh_private_key_file, ansible_ssh_common_args and ansible_ssh_extra_args.
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from corun.errors import ConfigError, CorunError
from corun.machine.state import state_dir
from corun.util import atomic_write_json

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


PLUGIN_LINE = re.compile(rb"^\s*plugin\s*:", re.M)


def _inventory_files(p: Path) -> list[tuple[Path, bytes]] | None:
    """Every file whose content an `ansible-inventory --list` of P depends on, with that
    content, or None when that is not only files (a script, an inventory plugin, a folder we
    cannot read)."""
    roots = [p] + [p.parent / d if p.is_file() else p / d for d in ("group_vars", "host_vars")]
    files: list[tuple[Path, bytes]] = []
    for root in roots:
        if not root.exists():
            continue
        found = [root] if root.is_file() else sorted(f for f in root.rglob("*") if not f.is_dir())
        for f in found:
            try:
                if not f.is_file() or f.stat().st_mode & 0o111:
                    return None
                content = f.read_bytes()
            except OSError:
                return None
            if PLUGIN_LINE.search(content):
                return None
            files.append((f, content))
    return files


def _listing_key(p: Path) -> str | None:
    files = _inventory_files(p)
    if files is None:
        return None
    h = hashlib.sha256()
    h.update(b"listing 2: unparsed sources fail\0")  # a listing kept by an earlier way of listing is not reused
    h.update(str(p.resolve()).encode())
    prog = Path(ansible_inventory_program())  # another Ansible may list it otherwise
    h.update(f"\0{prog}\0{prog.stat().st_mtime_ns}".encode())
    cfg = Path(os.environ.get("ANSIBLE_CONFIG") or "ansible.cfg")
    for f, content in [*files, *([(cfg, cfg.read_bytes())] if cfg.is_file() else [])]:
        h.update(b"\0" + str(f.resolve()).encode() + b"\0" + content)
    for k in sorted(k for k in os.environ if k.startswith("ANSIBLE_")):
        h.update(f"\0{k}={os.environ[k]}".encode())
    return h.hexdigest()[:32]


def read_inventory(path: str | Path, source: str = "--inventory") -> dict:
    """`ansible-inventory --list` of path, as a dict (kept for a static inventory: see above)."""
    p = Path(path)
    if not p.exists():
        raise ConfigError(source, "inventory", str(path), "an existing Ansible inventory file or folder")
    key = _listing_key(p)
    kept = state_dir() / "inventory" / f"{key}.json" if key else None
    if kept is not None and kept.is_file():
        try:
            return json.loads(kept.read_text())
        except ValueError:
            pass  # a damaged copy: list it again
    listing = _list_inventory(p, path, source)
    if kept is not None:
        kept.parent.mkdir(exist_ok=True)
        atomic_write_json(kept, listing)
    return listing


def _list_inventory(p: Path, path: str | Path, source: str) -> dict:
    # No standard input: Ansible refuses a non-blocking one (an MPI job beside it may leave one).
    # A source no plugin parses is an error, with the parser's own reason (Ansible itself only
    # warns and lists an empty inventory, which would read as "no hosts in the group").
    env = dict(os.environ, ANSIBLE_INVENTORY_ANY_UNPARSED_IS_FAILED="true")
    proc = subprocess.run(
        [ansible_inventory_program(), "-i", str(p), "--list"],
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    if proc.returncode != 0:
        raise ConfigError(
            source, "inventory", str(path), f"an inventory ansible-inventory can read ({parse_failure(proc.stderr)})"
        )
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise ConfigError(source, "inventory", str(path), "an inventory ansible-inventory can list") from None


def parse_failure(stderr: str) -> str:
    """The reason in ansible-inventory's error output: the deepest "Failed to parse ...: why"
    (the cause under the plugins' warnings), else its last line."""
    lines = [line.strip() for line in stderr.splitlines() if line.strip()]
    causes = [m.group(1) for line in lines if (m := re.match(r"^Failed to parse inventory: (.+)$", line))]
    if causes:
        return causes[-1]
    return re.sub(r"^\[(ERROR|WARNING)\]: ", "", lines[-1]) if lines else "failed"


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
    """The `hosts:` setting of a workflow config: a list of names or {from_inventory, group,
    names} (names: only those hosts of the group, in that order)."""
    if isinstance(spec, list):
        hosts = from_names(spec, source)
    elif isinstance(spec, dict) and "from_inventory" in spec:
        hosts = load(spec["from_inventory"], spec.get("group", "testbed"), source)
        by = {h.name: h for h in hosts}
        for n in spec.get("names") or []:
            if n not in by:
                raise ConfigError(source, "hosts.names", n, f"a host of the inventory's group: {', '.join(by)}")
        if spec.get("names"):
            hosts = [by[n] for n in spec["names"]]
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

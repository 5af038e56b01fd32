"""The parallel file system's configuration (corun.testbed.pfs): the validated section, the
deployment it makes (`Deployment`: the client hosts, the data servers and their folders, the hosts
in network namespaces and the links to shape), and the constants the other parts share."""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass
from pathlib import Path

from corun import config as cfgmod
from corun.errors import ConfigError
from corun.testbed import inventory
from corun.testbed.pfs_remote import NetnsHost
from corun.util import repo_path

SCHEMA = Path(__file__).resolve().with_name("pfs.schema.json")
BRICK_NAME = "corun-brick"
RESERVED_NAMES = {"corun-posix", "corun-locks", "corun-io-threads", BRICK_NAME, "corun-server"}
JOURNAL_ID = "pfs"  # the file system's journal (corun.machine.state) in its state_dir
JOURNAL_FILE = f"{JOURNAL_ID}.journal.json"
LISTEN_TIMEOUT_S = 20
TBF_LATENCY = "20ms"

# Ends the glusterfsd/glusterfs processes (found by pgrep, not a cat per /proc entry) whose
# command line holds the volfile $1 (exactly, as one argument); then removes the pid file $2.
# Idempotent.
STOP_SCRIPT = r"""
vol=$1; pidfile=$2; pids=
for p in $(pgrep -x glusterfsd; pgrep -x glusterfs); do
  if tr '\0' '\n' < "/proc/$p/cmdline" 2>/dev/null | grep -qxF -- "$vol"; then pids="$pids $p"; fi
done
if [ -n "$pids" ]; then
  kill $pids 2>/dev/null
  i=0
  while [ $i -lt 100 ]; do
    alive=; for p in $pids; do [ -d /proc/$p ] && alive="$alive $p"; done
    [ -z "$alive" ] && break
    sleep 0.1; i=$((i + 1))
  done
  [ -n "$alive" ] && kill -9 $alive 2>/dev/null
fi
rm -f "$pidfile"
exit 0
"""

# Lists the pids of processes serving volfile $1 (same match as STOP_SCRIPT).
PIDS_SCRIPT = r"""
vol=$1
for p in $(pgrep -x glusterfsd; pgrep -x glusterfs); do
  if tr '\0' '\n' < "/proc/$p/cmdline" 2>/dev/null | grep -qxF -- "$vol"; then echo "$p"; fi
done
exit 0
"""

UMOUNT_SCRIPT = r"""
m=$1
if mountpoint -q "$m" 2>/dev/null; then umount "$m" 2>/dev/null || umount -l "$m"; fi
exit 0
"""


# ---- configuration and deployment -------------------------------------------------------


def load_config(path: str | Path | None) -> tuple[dict, str]:
    """The validated configuration with defaults, and the name errors should use."""
    if path is None:
        return cfgmod.validate({}, cfgmod.load_schema(SCHEMA), "pfs defaults"), "pfs defaults"
    return cfgmod.load(path, cfgmod.load_schema(SCHEMA)), str(path)


@dataclass
class Server:
    index: int
    host: inventory.Host
    dir: str  # {root}/{host}: volfile, pid file, log (and the loop image)
    brick: str
    volfile: str
    pidfile: str
    log: str
    image: str | None
    disk: str | None = None  # the emulated disk's folder (backend rotating_disk)


@dataclass
class Deployment:
    """Where a configuration puts the file system: its client hosts, data servers and their
    folders, its state and the links to shape (make_deployment)."""

    cfg: dict
    source: str
    clients: list[inventory.Host]  # the client first, then the other client hosts
    servers: list[Server]
    state_dir: Path
    links: dict | None  # host name -> {"netns", "veth"} on a netns cluster, else None

    @property
    def journal_path(self) -> Path:
        return self.state_dir / JOURNAL_FILE

    @property
    def layout_path(self) -> Path:
        return self.state_dir / "layout.json"

    @property
    def client(self) -> inventory.Host:
        return self.clients[0]

    def host_dir(self, host: inventory.Host) -> str:
        return _fill("{root}/{host}", self.cfg["root"], host.name)

    @property
    def client_dir(self) -> str:
        return self.host_dir(self.client)

    def client_volfile(self, i: int, host: inventory.Host | None = None) -> str:
        """Data server i's client volfile on a client host (the client's by default)."""
        return f"{self.host_dir(host or self.client)}/client/stripe-{i}.vol"

    @property
    def fuse_volfile(self) -> str:
        return f"{self.client_dir}/client/fuse.vol"

    @property
    def mountpoint(self) -> str:
        return _fill(self.cfg["fuse"]["mountpoint"], self.cfg["root"], self.client.name)


def _fill(template: str, root: str, host: str) -> str:
    return template.replace("{root}", root.rstrip("/") or "/").replace("{host}", host)


def _in_netns(cfg: dict, hosts: list[inventory.Host]) -> list[inventory.Host]:
    """The hosts as NetnsHost when they are those of the netns cluster in cfg's netns_state."""
    links = _netns_links(cfg, hosts) if cfg.get("netns_state") else None
    if not links or any(h.local for h in hosts):
        return hosts
    return [NetnsHost(**dataclasses.asdict(h), netns=links[h.name]["netns"]) for h in hosts]


def make_deployment(cfg: dict, source: str) -> Deployment:
    inv = repo_path(cfg["inventory"])
    if not inv.exists():
        raise ConfigError(
            source,
            "inventory",
            cfg["inventory"],
            "an existing Ansible inventory file or folder (a relative path is taken from the repository)",
        )
    hosts = _in_netns(cfg, inventory.load(inv, cfg["group"], source))
    if cfg["client"] is None:
        client = hosts[0]
    else:
        client = inventory.pick(hosts, [cfg["client"]], source)[0]
    rest = [h for h in hosts if h.name != client.name]
    nc = cfg["client_hosts"]
    if nc - 1 > len(rest):
        raise ConfigError(source, "client_hosts", nc, f"at most {len(rest) + 1}: the hosts of {cfg['inventory']}")
    clients = [client] + rest[: nc - 1]
    taken = {h.name for h in clients}
    if cfg["colocate_client"]:
        others = clients + [h for h in rest if h.name not in taken]
    else:
        others = [h for h in rest if h.name not in taken]
    n = cfg["servers"]
    if n > len(others):
        besides = "the client " + client.name if nc == 1 else f"the {nc} client hosts"
        raise ConfigError(
            source,
            "servers",
            n,
            f"at most {len(others)}: the hosts of {cfg['inventory']}"
            + ("" if cfg["colocate_client"] else f" besides {besides}"),
        )
    names = [x["name"] for x in cfg["server_xlators"]]
    for i, name in enumerate(names):
        if name in RESERVED_NAMES or names.index(name) != i:
            raise ConfigError(
                source,
                f"server_xlators[{i}].name",
                name,
                "a name used once and none of " + ", ".join(sorted(RESERVED_NAMES)),
            )
    root = cfg["root"]
    servers = []
    for i, h in enumerate(others[:n]):
        d = _fill("{root}/{host}", root, h.name)
        servers.append(
            Server(
                index=i,
                host=h,
                dir=d,
                brick=_fill(cfg["brick"]["path"], root, h.name),
                volfile=f"{d}/server.vol",
                pidfile=f"{d}/glusterfsd.pid",
                log=f"{d}/glusterfsd.log",
                image=f"{d}/brick.img" if cfg["brick"]["backend"] == "loop" else None,
                # beside the server's folder, not in it: that folder's removal never reaches a
                # disk still up (its journal, the daemon's state)
                disk=_fill("{root}/.disks/{host}", root, h.name)
                if cfg["brick"]["backend"] == "rotating_disk"
                else None,
            )
        )
    for s in servers:
        if s.brick.rstrip("/") in ("", root.rstrip("/"), s.dir.rstrip("/")):
            raise ConfigError(
                source,
                "brick.path",
                cfg["brick"]["path"],
                "a folder of its own below {root}/{host}, such as {root}/{host}/brick",
            )
    return Deployment(
        cfg=cfg,
        source=source,
        clients=clients,
        servers=servers,
        state_dir=repo_path(cfg["state_dir"]),
        links=_netns_links(cfg, clients + [h for h in others[:n] if h.name not in taken]),
    )


def _netns_links(cfg: dict, hosts: list[inventory.Host]) -> dict | None:
    """On a scripts/netns-cluster cluster: each host's namespace and bridge-side veth."""
    state = repo_path(cfg["netns_state"]) / "state.json"
    try:
        data = json.loads(state.read_text())
    except (OSError, ValueError):
        return None
    by_addr = {h["address"]: h for h in data.get("hosts", [])}
    out = {}
    for h in hosts:
        e = by_addr.get(h.address)
        if e is None:
            return None
        out[h.name] = {"netns": e["netns"], "veth": e["veth"]}
    return out

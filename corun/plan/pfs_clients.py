"""The client side of corun's parallel file system (corun/testbed/pfs.py), as the experiments
that run on it (sais, aioli) name it: the client host, the file system's root, the client
volfiles `scripts/pfs up` writes there, the striped reader, a command run on the client, the hosts
of the file system's configuration, the policies' variant parameters, and the parts of a policy
the controller applies on the data servers of an inventory (corun.testbed.server_parts)."""

from __future__ import annotations

import functools
from pathlib import Path

from corun.errors import ConfigError
from corun.plan.base import Experiment
from corun.run import schedulers, workloads
from corun.testbed import inventory
from corun.util import repo_path, repo_root


def client_names(sec: dict, experiment: str, hosts: int = 1, servers: int = 0) -> list[str]:
    """The first `hosts` client hosts, the client first: on the netns cluster its hosts 1 to
    hosts (the data servers after them); on an inventory cluster.client (or the group's first
    host) and the hosts after it in the group's order, as corun.testbed.pfs picks them, with
    `servers` more hosts left for the data servers."""
    c = sec["cluster"]
    if c["kind"] == "netns":
        return [f"{c['prefix']}-n{i + 1}" for i in range(hosts)]
    names = _host_names(str(c["inventory"]), c["group"], f"{experiment}.cluster.inventory")
    client = c["client"] or names[0]
    rest = [n for n in names if n != client]
    if hosts + servers > len(names):
        raise ConfigError(
            f"{experiment}.cluster.inventory",
            f"{experiment}.client_hosts",
            hosts,
            f"at most {len(names) - servers} beside {servers} data server(s): "
            f"{c['inventory']} has {len(names)} hosts in group {c['group']}",
        )
    return [client] + rest[: hosts - 1]


def server_hosts(sec: dict, experiment: str, hosts: int, servers: int) -> list[inventory.Host]:
    """On an inventory, the data servers of a group of `hosts` client hosts: the `servers`
    hosts after the client hosts in the group's order, as corun.testbed.pfs picks them."""
    c = sec["cluster"]
    clients = set(client_names(sec, experiment, hosts, servers))
    group = _hosts(str(c["inventory"]), c["group"], f"{experiment}.cluster.inventory")
    return [h for h in group if h.name not in clients][:servers]


@functools.lru_cache(maxsize=16)
def _hosts(path: str, group: str, source: str) -> tuple[inventory.Host, ...]:
    return tuple(inventory.load(path, group, source))


def _host_names(path: str, group: str, source: str) -> list[str]:
    """The group's host names, read once per process (ansible-inventory takes about 0.5 s)."""
    return [h.name for h in _hosts(path, group, source)]


def client_name(sec: dict, experiment: str, host: int = 0) -> str:
    """Client host number `host` (0: the client; client_names)."""
    return client_names(sec, experiment, host + 1)[host]


def pfs_root(sec: dict, data_dir: Path) -> str:
    root = sec["cluster"]["pfs_root"]
    return root if root else str((data_dir / "pfs").resolve())


def volfiles(sec: dict, experiment: str, data_dir: Path, servers: int, host: int = 0) -> list[str]:
    """The client volfiles corun.testbed.pfs writes on client host `host` (Deployment.client_volfile);
    pfs_runs checks them."""
    base = f"{pfs_root(sec, data_dir).rstrip('/')}/{client_name(sec, experiment, host)}/client"
    return [f"{base}/stripe-{i}.vol" for i in range(servers)]


def pfs_read() -> str:
    return str(repo_root() / "kernels" / "build" / "pfs_read")


def in_client(sec: dict, experiment: str, argv: list[str], host: int = 0) -> list[str]:
    """argv run on client host `host` (0: the client): in its namespace on the netns cluster."""
    if sec["cluster"]["kind"] == "netns":
        return ["ip", "netns", "exec", client_name(sec, experiment, host), *argv]
    return argv


def variant_part(
    name: str, params: dict, state_dir: Path, host: str | None = None, what: str = "", fetch: tuple = ()
) -> dict:
    """A server part (corun.testbed.server_parts) that applies the variant NAME with PARAMS (its
    start, verify and stop) in STATE_DIR on HOST, from the controller (HOST None: on the
    controller itself, as a data servers' policy that reaches every server through the file
    system's layout, which only the controller holds)."""

    def step(s: str) -> list[str]:
        if not schedulers.manifest(name).get(s):
            return ["true"]
        # {python} kept: the host's own Python, filled where the part runs
        return schedulers.command(name, s, params, state_dir=state_dir.resolve(), python="{python}")

    return {
        "what": what or f"{name} on the data servers",
        "host": host,
        "state_dir": str(state_dir.resolve()),
        "apply": step("start"),
        "verify": step("verify"),
        "restore": step("stop"),
        "fetch": list(fetch),
    }


def check_cluster(sec: dict, experiment: str, source: str) -> None:
    """On an inventory the file system needs the inventory and a root that exists on every host."""
    c = sec["cluster"]
    if c["kind"] == "inventory":
        if not c["inventory"]:
            raise ConfigError(source, f"{experiment}.cluster.inventory", None, "an inventory (kind inventory)")
        if not c["pfs_root"]:
            raise ConfigError(
                source, f"{experiment}.cluster.pfs_root", None, "an absolute path on every host when kind is inventory"
            )


def cluster_hosts(sec: dict, work: Path) -> dict:
    """corun.testbed.pfs's keys naming the hosts of a group whose state is under `work`: the
    netns cluster's inventory and state there, or the configured inventory, group and client."""
    c = sec["cluster"]
    if c["kind"] == "netns":
        return {
            "inventory": str((work / "cluster" / "inventory.yml").resolve()),
            "netns_state": str((work / "cluster" / "state").resolve()),
        }
    return {"inventory": str(Path(c["inventory"]).resolve()), "group": c["group"], "client": c["client"]}


def hosts_held(sec: dict) -> int:
    """Experiment.hosts_held of sais and aioli: on an inventory the most data servers a run has and
    its client hosts; 1 on the netns cluster, which is one machine."""
    if sec["cluster"]["kind"] != "inventory":
        return 1
    servers = max(sec["servers"]) if isinstance(sec["servers"], list) else sec["servers"]
    return servers + max(sec.get("client_hosts", [1]))


def inventory_hosts(sec: dict, experiment: str) -> int:
    """Experiment.inventory_hosts of sais and aioli: the hosts of the cluster's inventory group
    (0 on the netns cluster, or while the inventory is not written)."""
    c = sec["cluster"]
    if c["kind"] != "inventory" or not c.get("inventory") or not repo_path(c["inventory"]).exists():
        return 0
    return len(_host_names(str(repo_path(c["inventory"])), c["group"], f"{experiment}.cluster.inventory"))


class FsGroupExperiment(Experiment):
    """An experiment whose runs are groups around the parallel file system and the cluster each
    group brings up (sais, aioli): groups.json beside its specs, the hosts its section gives."""

    data_file = None
    spec_files = ("groups.json",)
    host_runs = False  # a run needs the file system and cluster its group brings up

    def hosts_held(self, cfg: dict) -> int:
        return hosts_held(cfg[self.name])

    def inventory_hosts(self, cfg: dict) -> int:
        return inventory_hosts(cfg[self.name], self.name)

    def run_names(self, cfg: dict) -> list[str]:
        """Its groups' runs (group_runs), in their order."""
        return [r for rs in self.group_runs(cfg).values() for r in rs]


def policy_variant_params(sec: dict, experiment: str) -> list[tuple[str, str, str | None, object]]:
    """Experiment.variant_params of a section with `policies` (each a variant) and
    `policy_params` (per policy, its parameters), the form sais and aioli share."""
    out: list[tuple[str, str, str | None, object]] = []
    for i, p in enumerate(sec["policies"]):
        out.append((f"{experiment}.policies[{i}]", p, None, None))
        for k, v in (sec["policy_params"].get(p) or {}).items():
            out.append((f"{experiment}.policy_params.{p}.{k}", p, k, v))
    return out


# IOR on the striped file system (sais, aioli): the ior role's IOR through pfs_client's
# LD_PRELOAD library, run by scripts/ior-job (corun.testbed.ior_job), which prints IOR's JSON
# summary as the job's result in pfs_read's names.
IOR_PREFIX = "/corun-pfs"


def ior_program(reader: str) -> tuple[str | None, dict, str]:
    """IOR's binary when `reader` is "ior" and the ior role built it (the upstream manifest's
    programs.ior), the role's manifest entry, and otherwise why pfs_read reads instead."""
    if reader != "ior":
        return None, {}, f"reader: {reader} (the configuration's choice)"
    return workloads.upstream_program("ior", "ior")


def ior_labels(entry: dict) -> dict:
    return {"reader": "ior", "binary": f"IOR {entry.get('version', '?')}", **workloads.source_labels(entry)}


def ior_job(
    program: str, vols: list[str], strip_size: int, ior_options: list[str], tasks: int = 1, direct: bool = False
) -> list[str]:
    """scripts/ior-job's command line: `tasks` IOR tasks with IOR's own options (-o a path under
    IOR_PREFIX), the given client volfiles and strip size."""
    argv = [str(repo_root() / "scripts" / "ior-job"), "--ior", program, "--tasks", str(tasks)]
    argv += [x for v in vols for x in ("--volfile", v)]
    argv += ["--strip-size", str(strip_size), "--prefix", IOR_PREFIX]
    return [*argv, *(["--direct"] if direct else []), "--", *ior_options]

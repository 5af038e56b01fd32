"""Paper 004 (SAIs): steering policies x data servers x transfer size x clients on a striped
parallel file system (docs/pfs.md, experiments/sais/README.md).

The runs fall into groups, one per (servers, client links): the file system is brought up once
per group (corun.testbed.pfs_runs), one file is written into it, then the group's runs read it,
every (policy, transfer size, clients) point once per repetition, repetitions outermost and the
points shuffled (seeded) within each. Each run is a `corun run` whose jobs are the clients:
kernels/pfs_read reading the striped file in `transfer_size` requests, with `compute_passes`
per request standing in for the paper's encryption, under the policy's `irq_policy` variant.
On the workflow's own netns cluster (`cluster.kind: netns`) the clients run in the client
host's namespace (`ip netns exec`); on an inventory (`cluster.kind: inventory`) on its client
host.

Two more runs per repetition and application count of `pm.apps` (`pm_thread_r*`,
`pm_process_r*`; `pm_<mode>_a<apps>_r*` beyond one) run kernels/sais_inmem: the in-memory study
of sec. 6 (Si-SAIs, a thread pair, against Si-Irqbalance, a process pair) and, at one
application, the model's P and M for eqs. 1-9.

With `figures` (the paper profile) the groups and points are those some figure of the paper shows
(corun.plan.figures; a group none shows is not brought up).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.plan import figures, pfs_clients
from corun.plan.base import RUN_OVERHEAD_S
from corun.plan.pfs_clients import (
    IOR_PREFIX,
    check_cluster,
    client_name,
    client_names,
    cluster_hosts,
    in_client,
    ior_job,
    ior_labels,
    ior_program,
    pfs_read,
    pfs_root,
    policy_variant_params,
    server_hosts,
    variant_part,
    volfiles,
)
from corun.util import atomic_write_json, atomic_write_text, cli_options, lazy_module, repo_root
from experiments.sais import pmu

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)

NAME = "sais"
GROUPS_FILE = "groups.json"
BASELINE = "irqbalance"
DATA_FILE = "/sais.dat"
PFS_SETUP_S = 30.0  # cluster up, file system up, the file written, all down (measured here: 25-35 s)


def section(cfg: dict) -> dict:
    return cfg[NAME]


def group_name(servers: int, links: int, hosts: int = 1) -> str:
    return f"s{servers}_l{links}" + (f"_h{hosts}" if hosts > 1 else "")


def groups(sec: dict) -> list[tuple[int, int, int]]:
    """(servers, client links, client hosts) of every group (with `figures`, those some figure shows)."""
    every = [(n, ln, h) for h in sec["client_hosts"] for ln in sec["client_links"] for n in sec["servers"]]
    return [g for g in every if group_matrix(sec, *g)]


def group_matrix(sec: dict, servers: int, links: int, hosts: int, shown: bool = True) -> list[dict]:
    """The (policy, transfer, clients) points of one group: with `figures` those some figure shows
    (corun.plan.figures; SHOWN false: every one)."""
    base = [
        {"policy": p, "transfer_size_bytes": t, "clients": c}
        for p in sec["policies"]
        for t in sec["transfer_sizes_bytes"]
        for c in sec["clients"]
    ]
    if not shown or not sec["figures"]:
        return base
    at = {"kind": "read", "servers": servers, "client_links": links, "client_hosts": hosts}
    return [b for b in base if figures.served({**b, **at}, sec["figures"])]


def full_matrix(sec: dict) -> list[dict]:
    """Every point of the section's axes, which `figures` selects from: the read runs' (kind read)
    and the pm runs' (kind pm)."""
    every = [(n, ln, h) for h in sec["client_hosts"] for ln in sec["client_links"] for n in sec["servers"]]
    reads = [
        {**b, "kind": "read", "servers": n, "client_links": ln, "client_hosts": h}
        for n, ln, h in every
        for b in group_matrix(sec, n, ln, h, shown=False)
    ]
    return reads + [{"kind": "pm", "mode": m, "apps": a} for a in sec["pm"]["apps"] for m in ("thread", "process")]


def points(sec: dict, servers: int, links: int, hosts: int = 1) -> list[dict]:
    """The runs of one group: reps outermost, (policy, transfer, clients) shuffled within each."""
    base = group_matrix(sec, servers, links, hosts)
    rng = random.Random(f"{sec['seed']}-{servers}-{links}" + (f"-{hosts}" if hosts > 1 else ""))
    out = []
    for rep in range(sec["reps"]):
        order = list(base)
        rng.shuffle(order)
        out += [{**p, "servers": servers, "client_links": links, "client_hosts": hosts, "rep": rep} for p in order]
    return out


def run_name(p: dict) -> str:
    return (
        f"{group_name(p['servers'], p['client_links'], p['client_hosts'])}_{p['policy']}"
        f"_t{p['transfer_size_bytes'] // 1024}k_c{p['clients']}_r{p['rep']}"
    )


def pm_runs(sec: dict) -> list[tuple[str, str, int, int]]:
    """(name, mode, apps, rep) of every pm run: per application count, reps, then the two modes;
    one application's runs are pm_<mode>_r<rep>, more applications' pm_<mode>_a<apps>_r<rep>."""
    return [
        (f"pm_{mode}_r{r}" if apps == 1 else f"pm_{mode}_a{apps}_r{r}", mode, apps, r)
        for apps in sec["pm"]["apps"]
        for r in range(sec["reps"])
        for mode in ("thread", "process")
        if not sec["figures"] or figures.served({"kind": "pm", "mode": mode, "apps": apps}, sec["figures"])
    ]


def pm_names(sec: dict) -> list[str]:
    return [name for name, *_ in pm_runs(sec)]


def file_bytes(sec: dict) -> int:
    return sec["file_mib"] << 20


def link_cap_bytes_s(sec: dict, p: dict) -> float:
    """The run's read bandwidth bound: the client hosts' links or the servers' (one link each)."""
    return min(p["client_hosts"] * p["client_links"], p["servers"]) * sec["link_rate_mbit"] * 1e6 / 8


def read_repetitions(sec: dict, p: dict) -> int:
    """Reads of the whole file per client in run `p`: sais.read_repetitions, more where that many
    reads at the link cap (every client of every host reading at once) last less than
    min_read_intervals x monitor_interval_s, so that the run's monitors have the intervals its
    figures need on a fast machine too (the links are shaped to the cap on the netns cluster)."""
    reps = sec["read_repetitions"]
    need_s = sec["min_read_intervals"] * sec["monitor_interval_s"]
    one_s = file_bytes(sec) * p["clients"] * p["client_hosts"] / link_cap_bytes_s(sec, p)
    return max(reps, math.ceil(need_s / one_s)) if need_s > 0 and one_s > 0 else reps


def pfs_args(sec: dict, data_dir: Path, servers: int, host: int = 0) -> list[str]:
    vol = [x for v in volfiles(sec, NAME, data_dir, servers, host) for x in ("--volfile", v)]
    return [*vol, "--strip-size", str(sec["strip_size_bytes"]), "--file", DATA_FILE]


def ior_cmd(sec: dict, data_dir: Path, servers: int, program: str, options: list[str], host: int = 0) -> list[str]:
    """IOR (scripts/ior-job) on DATA_FILE through the striped client, one task."""
    vols = volfiles(sec, NAME, data_dir, servers, host)
    return ior_job(program, vols, sec["strip_size_bytes"], [*options, "-o", f"{IOR_PREFIX}{DATA_FILE}"])


def reader_program(sec: dict) -> tuple[str | None, dict, str]:
    """IOR's binary when it reads (no per-request compute step: IOR has none), else why not."""
    if sec["compute_passes"] > 0:
        return None, {}, f"compute_passes: {sec['compute_passes']} (IOR has no per-request compute step)"
    return ior_program(sec["reader"])


def policy_params(sec: dict, policy: str, servers: int, hosts: int = 1) -> dict:
    """The variant's parameters: the configured ones, and the interfaces of this group's cluster
    (on the netns cluster every client host's, hosts 1..hosts, the data servers after them)."""
    c = sec["cluster"]
    params = dict(sec["policy_params"].get(policy) or {})
    if c["kind"] == "netns":
        clients = [client_name(sec, NAME, i) for i in range(hosts)]
        if policy == "sais_mark":
            # the clients' own ends only: XDP on the bridge side would steer the clients' requests
            # (marked, and on veth never checksummed) instead of the servers' replies
            params.setdefault("interfaces", ",".join(f"{n}/eth0" for n in clients))
            first = hosts + 1
            params.setdefault(
                "server_interfaces", ",".join(f"{c['prefix']}-n{i}/eth0" for i in range(first, first + servers))
            )
        else:
            ends = [x for i, n in enumerate(clients) for x in (f"{n}/eth0", f"{c['prefix']}-v{i + 1}")]
            params.setdefault("interfaces", ",".join(ends))
    else:
        params.setdefault("interfaces", c["interfaces"])
        if policy == "sais_mark":  # the client's half only: the servers' is a server part on each server
            params.setdefault("server_interfaces", "")
            params.setdefault("server_addresses", ",".join(h.address for h in server_hosts(sec, NAME, hosts, servers)))
    return params


def server_parts(sec: dict, p: dict, work: Path) -> list[dict]:
    """What the controller applies on the data servers around the run (corun.testbed.server_parts):
    on an inventory, sais_mark's server half on every server's `cluster.server_interfaces`, its
    counters fetched into the run folder; nothing for the other policies or on the netns cluster
    (there the run's own variant reaches the servers' namespaces)."""
    if sec["cluster"]["kind"] != "inventory" or p["policy"] != "sais_mark":
        return []
    params = {"interfaces": "", "server_interfaces": sec["cluster"]["server_interfaces"], "server_addresses": ""}
    return [
        variant_part(
            "sais_mark",
            params,
            work / "parts" / run_name(p) / h.name,
            host=h.name,
            what=f"sais_mark's server half on {h.name}",
            fetch=("sais_mark_counters.json",),
        )
        for h in server_hosts(sec, NAME, p["client_hosts"], p["servers"])
    ]


def monitors(cfg: dict) -> dict:
    sec = section(cfg)
    return {
        "enabled": list(sec["monitors"]),
        "interval_s": sec["monitor_interval_s"],
        "perf_events": pmu.monitor_events(sec),
    }


def companions(sec: dict, hosts: int) -> bool:
    """Whether a run of `hosts` client hosts is one corun run per client host (on an inventory:
    each host applies the steering policy to its own NICs and records its own monitors) rather
    than one run whose jobs enter every client host's namespace (the netns cluster)."""
    return sec["cluster"]["kind"] != "netns" and hosts > 1


def companion_name(run: str, host: int) -> str:
    """The spec (and run folder, RUNS/<run>/hosts/<this>) of client host `host` >= 1 of a run."""
    return f"{run}.h{host}"


def reader_labels(sec: dict, p: dict) -> dict:
    """What a reading job ran and what it stands in for: the paper's IOR read with this run's
    transfer size and file (experiments/sais/README.md: why pfs_read reads instead)."""
    return {
        "binary": "corun pfs_read",
        "stands_in_for": f"IOR -a POSIX -r -t {p['transfer_size_bytes']} -b {file_bytes(sec)} on PVFS2 "
        f"({sec['strip_size_bytes'] // 1024} KiB strips)",
    }


def make_spec(cfg: dict, p: dict, data_dir: Path, only_host: int | None = None) -> dict:
    """The run's spec: every client host's readers, or with only_host those of one client host
    (a companion run on an inventory; host 0's spec is the run's own)."""
    sec = section(cfg)
    hosts = p["client_hosts"]

    program, entry, why = reader_program(sec)

    def read(host: int) -> list[str]:
        if program is not None:  # IOR's -i repetitions of one whole-file read, one task
            opts = ["-a", "POSIX", "-t", str(p["transfer_size_bytes"]), "-b", str(file_bytes(sec)), "-s", "1"]
            opts += ["-r", "-k", "-i", str(read_repetitions(sec, p))]
            return ior_cmd(sec, data_dir, p["servers"], program, opts, host)
        reads = {
            "--transfer-size": p["transfer_size_bytes"],
            "--compute-passes": sec["compute_passes"],
            "--repetitions": read_repetitions(sec, p),
        }
        pfs = pfs_args(sec, data_dir, p["servers"], host)
        return [pfs_read(), *pfs, "--block-size", str(file_bytes(sec)), "--read", *cli_options(reads)]

    reader = ior_labels(entry) if program is not None else {
        "reader": "pfs_read",
        "binary": "corun pfs_read",
        "stands_in_for": "IOR 4.0.0 -a POSIX -r through the striped client, with the paper's per-request encryption",
        "stand_in_reason": why,
    }  # fmt: skip
    labels = {
        "experiment": NAME,
        "kind": "read",
        "policy": p["policy"],
        "servers": p["servers"],
        "client_links": p["client_links"],
        "transfer_size_bytes": p["transfer_size_bytes"],
        "clients": p["clients"],
        "client_hosts": hosts,
        "rep": p["rep"],
        "read_repetitions": read_repetitions(sec, p),
        **reader,
    }
    jobs = [
        {
            "name": f"client-{i}" if hosts == 1 else f"client-h{h}-{i}",
            "cmd": in_client(sec, NAME, read(h), h),
            "result": "json",
            "labels": {"client": i, "client_host": h, **reader_labels(sec, p)},
        }
        for h in (range(hosts) if only_host is None else [only_host])
        for i in range(p["clients"])
    ]
    name = run_name(p) if not only_host else companion_name(run_name(p), only_host)
    if only_host is not None:
        labels["client_host_run"] = only_host
    return {
        "name": f"{NAME}-{name}",
        "labels": labels,
        "jobs": jobs,
        "scheduler": {"name": p["policy"], "params": policy_params(sec, p["policy"], p["servers"], hosts)},
        "monitors": monitors(cfg),
    }


def make_pm_spec(cfg: dict, mode: str, rep: int, data_dir: Path, apps: int = 1, name: str | None = None) -> dict:
    """One sais_inmem run of `apps` applications: Si-SAIs (thread) or Si-Irqbalance (process); at
    one application the thread pair gives the model's P, the process pair M."""
    sec = section(cfg)
    pm = sec["pm"]
    options = {
        "--mode": mode,
        "--apps": apps,
        "--files": pm["files"],
        "--strip-size": sec["strip_size_bytes"],
        "--request-size": pm["request_size_bytes"],
        "--duration-s": pm["duration_s"],
        "--dir": pm["dir"],
    }
    argv = [str(repo_root() / "kernels" / "build" / "sais_inmem"), *cli_options(options)]
    return {
        "name": f"{NAME}-{name or f'pm_{mode}_r{rep}'}",
        "labels": {"experiment": NAME, "kind": "pm", "mode": mode, "apps": apps, "rep": rep},
        "placement": {"slots_per_core": 1},
        "jobs": [{"name": f"sais_inmem-{mode}", "cmd": argv, "result": "json"}],
        # perf (where the read runs have it) counts the in-memory study's L2 miss rate (sec. 6)
        "monitors": {
            "enabled": [m for m in sec["monitors"] if m == "perf"],
            "interval_s": sec["monitor_interval_s"],
            "perf_events": pmu.monitor_events(sec),
        },
    }


def work_dir(specs_dir: Path, servers: int, links: int, hosts: int = 1) -> Path:
    """The group's cluster and file system state (corun.testbed.pfs_runs --work is its parent)."""
    return specs_dir.parent / "work" / group_name(servers, links, hosts)


def pfs_config(sec: dict, data_dir: Path, servers: int, links: int, work: Path, hosts: int = 1) -> dict:
    """corun.testbed.pfs's configuration for one group."""
    c = sec["cluster"]
    return {
        "servers": servers,
        "client_hosts": hosts,
        "strip_size_bytes": sec["strip_size_bytes"],
        "root": pfs_root(sec, data_dir),
        "port": c["port"],
        "state_dir": str((work / "pfs").resolve()),
        "link": {"shape": sec["shape_links"], "rate_mbit": sec["link_rate_mbit"], "client_links": links},
        **cluster_hosts(sec, work),
    }


class Sais(pfs_clients.FsGroupExperiment):
    name = NAME
    variant_kinds = ("irq_policy",)
    run_inputs = ("kernels/build/pfs_read", "kernels/build/sais_inmem")

    def check(self, cfg: dict, source: str) -> None:
        sec = section(cfg)
        if BASELINE not in sec["policies"]:
            raise ConfigError(source, f"{NAME}.policies", sec["policies"], f"a list holding {BASELINE} (the baseline)")
        for p in sec["policy_params"]:
            if p not in sec["policies"]:
                raise ConfigError(source, f"{NAME}.policy_params.{p}", p, "a policy of sais.policies")
        strip = sec["strip_size_bytes"]
        for i, t in enumerate(sec["transfer_sizes_bytes"]):
            if t % 8 or file_bytes(sec) % t:
                raise ConfigError(
                    source,
                    f"{NAME}.transfer_sizes_bytes[{i}]",
                    t,
                    f"a multiple of 8 bytes dividing file_mib ({file_bytes(sec)} bytes)",
                )
        if sec["pm"]["request_size_bytes"] % strip:
            raise ConfigError(
                source, f"{NAME}.pm.request_size_bytes", sec["pm"]["request_size_bytes"], f"a multiple of {strip}"
            )
        check_cluster(sec, NAME, source)
        figures.check(full_matrix(sec), sec["figures"], source, NAME)

    def variant_params(self, cfg: dict, source: str) -> list[tuple[str, str, str | None, object]]:
        return policy_variant_params(section(cfg), NAME)

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        sec = section(cfg)
        out_dir.mkdir(parents=True, exist_ok=True)
        n = 0
        group_list = []
        client = client_name(sec, NAME)
        for servers, links, hosts in groups(sec):
            pts = points(sec, servers, links, hosts)
            split = companions(sec, hosts)
            client_names(sec, NAME, hosts, servers)  # enough hosts for the group, before any spec
            for p in pts:
                spec = make_spec(cfg, p, data_dir, 0 if split else None)
                atomic_write_text(out_dir / f"{run_name(p)}.yaml", yaml.safe_dump(spec, sort_keys=False))
                for h in range(1, hosts) if split else []:
                    spec = make_spec(cfg, p, data_dir, h)
                    name = companion_name(run_name(p), h)
                    atomic_write_text(out_dir / f"{name}.yaml", yaml.safe_dump(spec, sort_keys=False))
            n += len(pts)
            write = [
                pfs_read(),
                *pfs_args(sec, data_dir, servers),  # once, from the client: every client host reads it
                "--block-size",
                str(file_bytes(sec)),
                "--write",
            ]
            writer, _, _ = ior_program(sec["reader"])
            if writer is not None:  # IOR writes it: one task, 1 MiB transfers, fsynced
                opts = ["-a", "POSIX", "-t", str(min(file_bytes(sec), 1 << 20)), "-b", str(file_bytes(sec))]
                write = ior_cmd(sec, data_dir, servers, writer, [*opts, "-s", "1", "-w", "-e", "-k"])
            group_list.append(
                {
                    "name": group_name(servers, links, hosts),
                    "servers": servers,
                    "client_links": links,
                    "client_hosts": hosts,
                    "runs": [run_name(p) for p in pts],
                    "cluster": {
                        "kind": sec["cluster"]["kind"],
                        "prefix": sec["cluster"]["prefix"],
                        "subnet": sec["cluster"]["subnet"],
                        "hosts": servers + hosts,
                        "client": client,
                    },
                    "pfs": pfs_config(sec, data_dir, servers, links, work_dir(out_dir, servers, links, hosts), hosts),
                    "volfiles": volfiles(sec, NAME, data_dir, servers),
                    "client_volfiles": {
                        client_name(sec, NAME, h): volfiles(sec, NAME, data_dir, servers, h) for h in range(hosts)
                    },
                    # on an inventory, client host h >= 1 runs RUNS/<run>/hosts/<run>.h<h> at the same time
                    "companions": [
                        {"host": client_name(sec, NAME, h), "suffix": companion_name("", h)}
                        for h in (range(1, hosts) if split else [])
                    ],
                    "write_cmd": in_client(sec, NAME, write),
                }
            )
            parts = {run_name(p): server_parts(sec, p, work_dir(out_dir, servers, links, hosts)) for p in pts}
            if any(parts.values()):
                group_list[-1]["server_parts"] = {r: v for r, v in parts.items() if v}
        for name, mode, apps, rep in pm_runs(sec):
            spec = make_pm_spec(cfg, mode, rep, data_dir, apps, name)
            atomic_write_text(out_dir / f"{name}.yaml", yaml.safe_dump(spec, sort_keys=False))
            n += 1
        atomic_write_json(out_dir / GROUPS_FILE, {"experiment": NAME, "groups": group_list})
        return n

    def group_runs(self, cfg: dict) -> dict[str, list[str]]:
        sec = section(cfg)
        return {group_name(s, ln, h): [run_name(p) for p in points(sec, s, ln, h)] for s, ln, h in groups(sec)}

    def run_names(self, cfg: dict) -> list[str]:
        sec = section(cfg)
        return super().run_names(cfg) + pm_names(sec)

    def run_figures(self, cfg: dict) -> dict[str, list[str]]:
        sec = section(cfg)
        out = {
            run_name(p): figures.served({**p, "kind": "read"}, sec["figures"])
            for g in groups(sec)
            for p in points(sec, *g)
        }
        for name, mode, apps, _ in pm_runs(sec):
            out[name] = figures.served({"kind": "pm", "mode": mode, "apps": apps}, sec["figures"])
        return out

    def estimate(self, cfg: dict) -> dict:
        sec = section(cfg)
        reads, read_s = 0, 0.0
        for s, ln, h in groups(sec):
            pts = points(sec, s, ln, h)
            reads += len(pts)
            for p in pts:  # every client reads the whole file; the clients' links or the servers' cap it
                cap = link_cap_bytes_s(sec, p)
                read_s += RUN_OVERHEAD_S + file_bytes(sec) * read_repetitions(sec, p) * p["clients"] * h / cap
        pm = len(pm_names(sec))
        seconds = len(groups(sec)) * PFS_SETUP_S + read_s + pm * (RUN_OVERHEAD_S + sec["pm"]["duration_s"])
        return {"runs": reads + pm, "seconds": seconds, "k_dropped": []}

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.sais.analysis")


EXPERIMENT = Sais()

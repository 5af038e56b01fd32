"""Paper 002 (aIOLi): server-side I/O scheduling policies x access pattern x request size x
clients (x read/write, x one or two applications) on the striped parallel file system, each data
server's brick on an emulated rotating disk (experiments/aioli/README.md).

All runs form one group: the file system is brought up once (corun.testbed.pfs_runs), with the
`corun/aioli` translator in every data server's graph when `translator.enabled`; one file per
application is written for the read runs; then every point once per repetition, repetitions
outermost and the points shuffled (seeded) within each. A run's jobs are the clients: N
kernels/pfs_read processes per application, client i with `--rank i --ranks N`, reading or
writing its part of the application's shared file (strided: IOR's segmented layout with one
request per block; contiguous: one region per client). With the translator, the run's policy
is its pfs_sched variant (applied at run start through each server's control file) and the
translator's status file is read on every server before and after the run
(`pfs_counters.json` in the run folder, beside the emulated disks' counters). Without it the
servers are stock (requests go to the brick in io-threads' order): the policy is a label only,
every run is the FIFO case, and the analysis says so.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.plan import pfs_clients
from corun.plan.base import RUN_OVERHEAD_S
from corun.plan.pfs_clients import (
    IOR_PREFIX,
    check_cluster,
    client_name,
    cluster_hosts,
    in_client,
    ior_job,
    ior_labels,
    ior_program,
    pfs_read,
    pfs_root,
    policy_variant_params,
    variant_part,
    volfiles,
)
from corun.util import atomic_write_json, atomic_write_text, lazy_module

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)

NAME = "aioli"
GROUPS_FILE = "groups.json"
PFS_SETUP_S = 40.0  # cluster up, emulated disks and file system up, files written, all down
DISK_MB_S = 60.0  # what the local runs' disks sustain under interleaved clients (for the plan)


def section(cfg: dict) -> dict:
    return cfg[NAME]


def group_name(sec: dict) -> str:
    return f"s{sec['servers']}"


def points(sec: dict) -> list[dict]:
    """Every run: reps outermost, (policy, pattern, op, request, clients, apps) shuffled within each."""
    base = [
        {"policy": p, "pattern": pat, "op": op, "request_size_bytes": t, "clients": c, "apps": a}
        for p in sec["policies"]
        for pat in sec["patterns"]
        for op in sec["operations"]
        for t in sec["request_sizes_bytes"]
        for c in sec["clients"]
        for a in sec["apps"]
    ]
    rng = random.Random(f"{sec['seed']}-{sec['servers']}")
    out = []
    for rep in range(sec["reps"]):
        order = list(base)
        rng.shuffle(order)
        out += [{**p, "servers": sec["servers"], "rep": rep} for p in order]
    return out


def run_name(p: dict) -> str:
    return (
        f"s{p['servers']}_{p['policy']}_{p['pattern']}_{p['op']}_t{p['request_size_bytes'] // 1024}k"
        f"_c{p['clients']}_a{p['apps']}_r{p['rep']}"
    )


def client_bytes(sec: dict) -> int:
    return sec["client_mib"] << 20


def data_file(op: str, app: int) -> str:
    """Read runs read the file written at set-up; write runs write their own."""
    return f"/aioli-{'r' if op == 'read' else 'w'}-app{app}.dat"


def layout_args(sec: dict, pattern: str, request: int) -> list[str]:
    """MPI-IO Test's pattern as pfs_read's block and segments: strided, one request per block
    (client r's k-th request at block k*N + r); contiguous, the client's bytes in one block."""
    if pattern == "strided":
        block, segments = request, client_bytes(sec) // request
    else:
        block, segments = client_bytes(sec), 1
    return [
        "--pattern",
        pattern,
        "--request-size",
        str(request),
        "--block-size",
        str(block),
        "--segments",
        str(segments),
    ]


def ior_layout(sec: dict, pattern: str, request: int) -> list[str]:
    """The same layouts in IOR's own options: strided is IOR's segmented layout, -b the
    request and -s the client's requests (segment k holds every task's k-th block);
    contiguous is one block of the client's bytes per task."""
    if pattern == "strided":
        block, segments = request, client_bytes(sec) // request
    else:
        block, segments = client_bytes(sec), 1
    return ["-a", "POSIX", "-t", str(request), "-b", str(block), "-s", str(segments)]


def ior_cmd(sec: dict, data_dir: Path, program: str, options: list[str], tasks: int = 1) -> list[str]:
    vols = volfiles(sec, NAME, data_dir, sec["servers"])
    return ior_job(program, vols, sec["strip_size_bytes"], options, tasks, sec["disk"]["o_direct"])


def op_options(op: str) -> list[str]:
    """IOR's phase options: a read of the file written at set-up, or a write fsynced at its
    end (-e); -k keeps the file."""
    return ["-r", "-k"] if op == "read" else ["-w", "-e", "-k"]


def base_args(sec: dict, data_dir: Path) -> list[str]:
    vol = [x for v in volfiles(sec, NAME, data_dir, sec["servers"]) for x in ("--volfile", v)]
    # with O_DIRECT bricks the clients open with O_DIRECT too: posix then copies a write into
    # an aligned buffer (a write below 512 KiB arrives unaligned and O_DIRECT refuses it)
    direct = ["--direct"] if sec["disk"]["o_direct"] else []
    return [pfs_read(), *vol, "--strip-size", str(sec["strip_size_bytes"]), *direct]


def status_file(sec: dict) -> str | None:
    t = sec["translator"]
    return t["status_file"] if t["enabled"] else None


def server_xlators(sec: dict) -> list[dict]:
    """The translator for corun.testbed.pfs's server_xlators (none when it is switched off)."""
    t = sec["translator"]
    if not t["enabled"]:
        return []
    return [{"name": t["name"], "type": t["type"], "options": dict(t["options"])}]


def policy_params(sec: dict, policy: str, pfs_state: str) -> dict:
    """The policy variant's parameters: the configured ones, and where the group's file system
    keeps its state (pfs_sched finds every data server's control and status files there)."""
    return {"pfs_state_dir": pfs_state, **(sec["policy_params"].get(policy) or {})}


def barrier_dir(data_dir: Path) -> Path:
    """Where a run's clients meet before their first request (pfs_read --barrier), per run; on
    an inventory the client host needs the same path (the data folder's)."""
    return (data_dir / "barriers").resolve()


def make_spec(cfg: dict, p: dict, data_dir: Path, pfs_state: str) -> dict:
    sec = section(cfg)
    meet = ["--barrier", str(barrier_dir(data_dir) / run_name(p)), "--barrier-count", str(p["clients"] * p["apps"])]
    program, entry, why = ior_program(sec["reader"])
    jobs = []
    for app in range(p["apps"]):
        if program is not None:  # one IOR of `clients` tasks per application
            opts = [*ior_layout(sec, p["pattern"], p["request_size_bytes"]), *op_options(p["op"])]
            opts += ["-o", IOR_PREFIX + data_file(p["op"], app)]
            jobs.append(
                {
                    "name": f"app{app}-ior",
                    "cmd": in_client(sec, NAME, ior_cmd(sec, data_dir, program, opts, p["clients"])),
                    "result": "json",
                    "labels": {"app": app, "client": "all", **ior_labels(entry)},
                }
            )
            continue
        for rank in range(p["clients"]):
            argv = [
                *base_args(sec, data_dir),
                "--file",
                data_file(p["op"], app),
                f"--{p['op']}",
                "--rank",
                str(rank),
                "--ranks",
                str(p["clients"]),
                "--app",
                str(app),
                *layout_args(sec, p["pattern"], p["request_size_bytes"]),
                *meet,
            ]
            jobs.append(
                {
                    "name": f"app{app}-client-{rank}",
                    "cmd": in_client(sec, NAME, argv),
                    "result": "json",
                    "labels": {
                        "app": app,
                        "client": rank,
                        "reader": "pfs_read",
                        "binary": "corun pfs_read",
                        "stands_in_for": "IOR 4.0.0 -a POSIX through the striped client",
                        "stand_in_reason": why,
                    },
                }
            )
    applied = sec["translator"]["enabled"]
    labels = {
        "experiment": NAME,
        "kind": p["op"],
        "policy": p["policy"],
        "policy_applied": applied,
        "pattern": p["pattern"],
        "op": p["op"],
        "request_size_bytes": p["request_size_bytes"],
        "clients": p["clients"],
        "apps": p["apps"],
        "servers": p["servers"],
        "rep": p["rep"],
        "disk": sec["disk"]["backend"],
    }
    # every client at once, whatever the client host's CPUs (corun runs one job per slot)
    slots = {"slots_per_core": min(64, len(jobs))}
    spec = {"name": f"{NAME}-{run_name(p)}", "labels": labels, "placement": slots, "jobs": jobs}
    if applied:
        spec["scheduler"] = {"name": p["policy"], "params": policy_params(sec, p["policy"], pfs_state)}
        if sec["cluster"]["kind"] == "inventory":  # the servers are other hosts: the controller applies it
            spec["scheduler"]["applied_by"] = "controller"
    spec["monitors"] = {"enabled": list(sec["monitors"]), "interval_s": sec["monitor_interval_s"]}
    return spec


def work_dir(specs_dir: Path, sec: dict) -> Path:
    return specs_dir.parent / "work" / group_name(sec)


def pfs_config(sec: dict, data_dir: Path, work: Path) -> dict:
    c, d = sec["cluster"], sec["disk"]
    brick = {"backend": d["backend"], "size_mib": d["size_mib"], "o_direct": d["o_direct"]}
    if d["backend"] == "rotating_disk":
        brick["rotating_disk"] = {
            "preset": d["preset"],
            "stroke": d["stroke"],
            "queue_window": d["queue_window"],
            "host": {"elevator": d["elevator"]},
        }
    return {
        "servers": sec["servers"],
        "strip_size_bytes": sec["strip_size_bytes"],
        "root": pfs_root(sec, data_dir),
        "port": c["port"],
        "state_dir": str((work / "pfs").resolve()),
        "brick": brick,
        "server_xlators": server_xlators(sec),
        "link": {"shape": sec["shape_links"], "rate_mbit": sec["link_rate_mbit"], "client_links": 1},
        **cluster_hosts(sec, work),
    }


def write_cmds(sec: dict, data_dir: Path) -> list[list[str]]:
    """The files of every application, each as large as the most clients use: the read runs'
    (read, never written again) and the write runs' (written once here, so that every write run
    overwrites allocated blocks and none pays the file's allocation)."""
    size = max(sec["clients"]) * client_bytes(sec)
    program, _, _ = ior_program(sec["reader"])
    if program is not None:  # IOR writes them: one task, 1 MiB transfers, fsynced
        opts = ["-a", "POSIX", "-t", str(min(size, 1 << 20)), "-b", str(size), "-s", "1", "-w", "-e", "-k"]
        return [
            in_client(sec, NAME, ior_cmd(sec, data_dir, program, [*opts, "-o", IOR_PREFIX + data_file(op, app)]))
            for op in ("read", "write")
            if op in sec["operations"]
            for app in range(max(sec["apps"]))
        ]
    return [
        in_client(
            sec,
            NAME,
            [
                *base_args(sec, data_dir),
                "--file",
                data_file(op, app),
                "--write",
                "--app",
                str(app),
                "--block-size",
                str(size),
                "--request-size",
                str(min(size, 1 << 20)),
            ],
        )
        for op in ("read", "write")
        if op in sec["operations"]
        for app in range(max(sec["apps"]))
    ]


class Aioli(pfs_clients.FsGroupExperiment):
    name = NAME
    variant_kinds = ("pfs_sched",)
    run_inputs = ("kernels/build/pfs_read",)

    def check(self, cfg: dict, source: str) -> None:
        sec = section(cfg)
        if sec["baseline"] not in sec["policies"]:
            raise ConfigError(
                source, f"{NAME}.policies", sec["policies"], f"a list holding {sec['baseline']} (aioli.baseline)"
            )
        for p in sec["policy_params"]:
            if p not in sec["policies"]:
                raise ConfigError(source, f"{NAME}.policy_params.{p}", p, "a policy of aioli.policies")
        trace = (sec["policy_params"].get("app_aware") or {}).get("trace")
        if "app_aware" in sec["policies"] and sec["translator"]["enabled"] and not trace:
            raise ConfigError(
                source,
                f"{NAME}.policy_params.app_aware.trace",
                trace,
                "the trace of an earlier run on every data server, e.g. '{dir}/arrivals.trace' (without one "
                "app_aware schedules as aioli without waits)",
            )
        for i, t in enumerate(sec["request_sizes_bytes"]):
            if t % 4096 or client_bytes(sec) % t:
                raise ConfigError(
                    source,
                    f"{NAME}.request_sizes_bytes[{i}]",
                    t,
                    f"a multiple of 4096 dividing client_mib ({client_bytes(sec)} bytes)",
                )
        need = max(sec["clients"]) * max(sec["apps"]) * client_bytes(sec) * 2  # read files + write files
        have = sec["servers"] * (sec["disk"]["size_mib"] << 20) * 9 // 10  # ext4's own share
        if max(sec["clients"]) * max(sec["apps"]) > 64:
            raise ConfigError(
                source,
                f"{NAME}.clients",
                sec["clients"],
                "at most 64 clients over all applications of a run (corun's slots per core)",
            )
        if sec["disk"]["backend"] != "dir" and need > have:
            raise ConfigError(
                source,
                f"{NAME}.disk.size_mib",
                sec["disk"]["size_mib"],
                f"room for {need >> 20} MiB over {sec['servers']} servers (the files of the most clients and apps)",
            )
        check_cluster(sec, NAME, source)

    def variant_params(self, cfg: dict, source: str) -> list[tuple[str, str, str | None, object]]:
        """The policies are checked against their manifests only when they are applied."""
        sec = section(cfg)
        return policy_variant_params(sec, NAME) if sec["translator"]["enabled"] else []

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        sec = section(cfg)
        out_dir.mkdir(parents=True, exist_ok=True)
        pts = points(sec)
        work = work_dir(out_dir, sec)
        pfs = pfs_config(sec, data_dir, work)
        for p in pts:
            spec = make_spec(cfg, p, data_dir, pfs["state_dir"])
            atomic_write_text(out_dir / f"{run_name(p)}.yaml", yaml.safe_dump(spec, sort_keys=False))
        group = {
            "name": group_name(sec),
            "servers": sec["servers"],
            "client_links": 1,
            "runs": [run_name(p) for p in pts],
            "cluster": {
                "kind": sec["cluster"]["kind"],
                "prefix": sec["cluster"]["prefix"],
                "subnet": sec["cluster"]["subnet"],
                "hosts": sec["servers"] + 1,
                "client": client_name(sec, NAME),
            },
            "pfs": pfs,
            "volfiles": volfiles(sec, NAME, data_dir, sec["servers"]),
            "write_cmds": write_cmds(sec, data_dir),
            "counters": {"sched_status": status_file(sec)},
            "barrier_dir": str(barrier_dir(data_dir)),
        }
        if sec["cluster"]["kind"] == "inventory" and sec["translator"]["enabled"]:
            group["server_parts"] = {
                run_name(p): [
                    variant_part(
                        p["policy"], policy_params(sec, p["policy"], pfs["state_dir"]), work / "parts" / run_name(p)
                    )
                ]
                for p in pts
            }
        atomic_write_json(out_dir / GROUPS_FILE, {"experiment": NAME, "groups": [group]})
        return len(pts)

    def group_runs(self, cfg: dict) -> dict[str, list[str]]:
        sec = section(cfg)
        return {group_name(sec): [run_name(p) for p in points(sec)]}

    def estimate(self, cfg: dict) -> dict:
        sec = section(cfg)
        pts = points(sec)
        io_s = sum(p["clients"] * p["apps"] * client_bytes(sec) / (DISK_MB_S * 1e6 * sec["servers"]) for p in pts)
        return {"runs": len(pts), "seconds": PFS_SETUP_S + len(pts) * RUN_OVERHEAD_S + io_s, "k_dropped": []}

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.aioli.analysis")


EXPERIMENT = Aioli()

"""Run a group of run specs on the netns cluster (and parallel file system) brought up for them.

    python -m corun.testbed.pfs_runs --groups SPECS/groups.json --group NAME [NAME ...] --specs SPECS
        --runs RUNS --work WORK [--done FILE [FILE ...]]

`groups.json` (written by an experiment's specs step, e.g. experiments.sais.experiment) describes each
group: the cluster (`kind` netns: a netns cluster of `hosts` hosts this command starts with
scripts/netns-cluster and ends; `kind` inventory: the inventory's hosts, left running), the file
system's configuration (corun.testbed.pfs), the client volfiles the specs name (`volfiles`, the
client's; `client_volfiles`, every client host's), the command that writes the file the runs
read (`write_cmd`, or a list `write_cmds`), and the runs. A group without `pfs` (mpl_sweep's: its
runs bring their own node daemons) is only the cluster and its runs; its `cluster` may also name
`cpus_per_host` (each host on CPUs of its own) and `inventory` (where the cluster's inventory is
written, the path its specs name). With
`counters` ({"sched_status": the server-side scheduler's status file or null}) the data servers'
counters (`pfs counters`: the emulated disks' and the scheduler's) are read before and after
every run into RUNS/<run>/pfs_counters.json (a run's after serves as the next run's before:
nothing else touches the servers in between). With `barrier_dir`, the folder barrier_dir/<run>
where the run's clients meet (pfs_read --barrier) is emptied before the run (on the client host).
With `server_parts`, what a run's policy changes on the data servers is applied from here around
the run (corun.testbed.server_parts). Every run of a group with a file system records where its
hosts were in its metadata.json (`pfs_group`: hosts_record).

In that order: cluster up, file system up, the volfiles checked against the layout, the file
written, then each run with `corun run` on the client host (corun.testbed.hosts.run_on_host),
measured now whatever run folder the host holds from an earlier attempt (the counters and
server parts around it are this attempt's), into RUNS/<run>.incomplete/<run>, where its
counters, server parts, companion runs and hosts are written before its one rename to
RUNS/<run> (a run folder is complete when it appears, as `corun run`'s own); then, always, the
file system down and the cluster down, newest first, also after an error, SIGTERM or Ctrl-C. A
netns cluster or file system left in WORK by an earlier killed attempt at any group is taken
down first; after a SIGKILL of this command, `corun recover` takes them down
(corun.testbed.guard).

Runs already finished (RUNS/<run>/metadata.json, newer than the run's spec and than the files
of its `run_inputs` in the group: its variants' manifests) are kept (a group whose runs all
finished brings nothing up), as Snakemake keeps a run of its own whose inputs did not change; a
run that fails ends the group with its error after the teardown.

With several groups they run one after another, in the order given, each with its own file
system; consecutive groups of the same netns cluster (hosts, prefix, subnet) share one: it is
brought up for the first and taken down after the last (sais: one group per client link count,
on the same hosts). `--done` then names one file per group, each written when its group ends.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import yaml

from corun.errors import CorunError, one_line_errors
from corun.machine.state import Journal
from corun.testbed import hosts as hostmod
from corun.testbed import inventory, pfs, server_parts
from corun.testbed.guard import Guard
from corun.testbed.pfs_config import JOURNAL_FILE
from corun.util import atomic_write_json, repo_path, repo_root

CLUSTER = "scripts/netns-cluster"
NETNS_DIR = Path("/run/netns")  # a host of this machine's network namespaces: NETNS_DIR/<name>
HOSTS_KEY = "pfs_group"  # where a run's file system ran, in its metadata.json


class Stop(CorunError):
    pass


def _raise_stop(signum, frame):  # only raises; the teardown runs in the finally below
    raise Stop(f"pfs_runs: stopped by signal {signum}; the file system and the cluster are down", 128 + signum)


def _run(argv: list[str], what: str, timeout: float = 900) -> str:
    res = subprocess.run(
        argv, capture_output=True, text=True, timeout=timeout, cwd=repo_root(), stdin=subprocess.DEVNULL
    )
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or res.stdout.strip().splitlines() or ["?"])[-1]
        raise CorunError(f"pfs_runs: {what} failed (exit {res.returncode}): {last}")
    return res.stdout


def cluster_argv(work: Path, *args: str) -> list[str]:
    return [sys.executable, str(repo_root() / CLUSTER), "--state-dir", str(work / "cluster" / "state"), *args]


def pfs_argv(cfg_file: Path, *args: str) -> list[str]:
    return [sys.executable, "-m", "corun.testbed.pfs", "--config", str(cfg_file), *args]


def log(msg: str) -> None:
    print(f"pfs_runs: {time.strftime('%H:%M:%S')} {msg}", flush=True)


def fs_state(cfg_file: Path) -> Path:
    """The file system's state folder that CFG_FILE names (its journal is there): a later look's
    group keeps its first look's, not a folder of its own work folder."""
    try:
        cfg = yaml.safe_load(cfg_file.read_text()) or {}
    except (OSError, yaml.YAMLError):
        cfg = {}
    return repo_path(cfg.get("state_dir") or cfg_file.parent / "pfs")


def teardown(work: Path, cfg_file: Path, netns: bool, cluster_work: Path | None = None) -> list[str]:
    """File system down, then the cluster (in CLUSTER_WORK, else WORK); each step tried even if
    the one before failed."""
    errors = []
    work = cluster_work or work
    if cfg_file.exists() and (fs_state(cfg_file) / JOURNAL_FILE).exists():
        try:
            _run(pfs_argv(cfg_file, "down"), "pfs down")
            log("file system down")
        except CorunError as exc:
            errors.append(str(exc))
    if netns and (work / "cluster" / "state" / "state.json").exists():
        try:
            _run(cluster_argv(work, "down"), "netns-cluster down")
            log("netns cluster down")
        except CorunError as exc:
            errors.append(str(exc))
    return errors


def run_group(
    group: dict,
    specs: Path,
    runs: Path,
    work: Path,
    shared: Path | None = None,
    keep: bool = False,
    journal: Journal | None = None,
) -> list[str]:
    """The group's runs around its file system (and its netns cluster: brought up in WORK, or
    the one already up in SHARED's work folder; left up with KEEP for the next group); the
    restore of its server parts journalled in JOURNAL."""
    netns = group["cluster"]["kind"] == "netns"
    has_fs = bool(group.get("pfs"))
    work.mkdir(parents=True, exist_ok=True)
    cfg_file = work / "pfs.yaml"
    left = teardown(work, cfg_file, netns)  # an earlier attempt killed before its teardown
    if left:
        raise CorunError(f"pfs_runs: could not take down what an earlier attempt left: {left[0]}")
    cfg = dict(group.get("pfs") or {})
    home = (shared or work) / "cluster"
    inv = Path(group["cluster"].get("inventory") or home / "inventory.yml").resolve()
    if netns:  # the cluster this process brings up in WORK, or the group's before it (SHARED):
        # its inventory and state are there whatever folder the plan named (a later look's
        # group is planned with its first look's folder)
        cfg["inventory"] = str(inv)
        cfg["netns_state"] = str((home / "state").resolve())
    if has_fs:
        cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    else:
        cfg_file.unlink(missing_ok=True)
    done = []
    old = {s: signal.signal(s, _raise_stop) for s in (signal.SIGTERM, signal.SIGHUP)}
    try:
        if netns and shared is not None:
            log(f"netns cluster of group {shared.name} kept for this group")
        elif netns:
            c = group["cluster"]
            args = ["up", str(c["hosts"]), "--prefix", c["prefix"], "--subnet", c["subnet"], "--inventory", str(inv)]
            if c.get("cpus_per_host"):
                args += ["--cpus-per-host", str(c["cpus_per_host"])]
            inv.parent.mkdir(parents=True, exist_ok=True)
            _run(cluster_argv(work, *args), "netns-cluster up")
            log(f"netns cluster up: {c['hosts']} hosts, prefix {c['prefix']}, {c['subnet']}")
        fs = counters = hosts = None
        if has_fs:
            client = _fs_up(group, cfg_file)
            counters = group.get("counters")
            deployment = load_deployment(cfg_file)
            fs = deployment if counters is not None else None
            hosts = hosts_record(group, deployment)
        else:
            client = client_host(group)
        done += _runs(group, specs, runs, client, fs, counters, journal, hosts)
    finally:
        errors = teardown(work, cfg_file, netns and not keep, cluster_work=shared)
        if netns and not keep and group["cluster"].get("inventory"):
            try:  # the folder made for the cluster's inventory, once the cluster took it away
                inv.parent.rmdir()
            except OSError:
                pass
        for s, h in old.items():
            signal.signal(s, h)
    if errors:
        raise CorunError(errors[0])
    return done


def _fs_up(group: dict, cfg_file: Path) -> inventory.Host:
    """The file system up and checked against the specs, its file written from the client
    host, which it returns."""
    _run(pfs_argv(cfg_file, "up"), "pfs up")
    lay = json.loads((Path(group["pfs"]["state_dir"]) / "layout.json").read_text())
    if lay["volfiles"] != group["volfiles"]:
        raise CorunError(f"pfs_runs: layout volfiles {lay['volfiles']} (expected the specs' {group['volfiles']})")
    for host, vols in (group.get("client_volfiles") or {}).items():  # every client host's
        if lay.get("client_volfiles", {}).get(host) != vols:
            raise CorunError(
                f"pfs_runs: layout volfiles of {host} {lay.get('client_volfiles', {}).get(host)} "
                f"(expected the specs' {vols})"
            )
    log(
        f"file system up: {group['servers']} servers, {group.get('client_hosts', 1)} client host(s) "
        f"of {group['client_links']} link(s)"
    )
    client = client_host(group)
    cmds = group.get("write_cmds", [group["write_cmd"]] if group.get("write_cmd") else [])
    for cmd in cmds:
        _run(client.command(cmd), "writing the file")
    log(f"{len(cmds)} file(s) written")
    return client


def _runs(
    group: dict,
    specs: Path,
    runs: Path,
    client: inventory.Host,
    fs,
    counters: dict | None,
    journal: Journal | None = None,
    hosts: dict | None = None,
) -> list[str]:
    """The group's runs one after another on CLIENT (with the servers' counters around each
    when PLAN is given, and its server parts applied from here: corun.testbed.server_parts),
    those already finished kept; HOSTS (hosts_record) in each run's metadata.json."""
    done = []
    comp = companion_hosts(group)
    last = None  # the counters after the run before: nothing touches the servers in between
    for name in group["runs"]:
        out = runs / name
        if run_done(group, runs, specs, name, comp):
            done.append(name)
            last = None
            continue
        parts = server_parts.parts_of(group, name)
        stage = staging(runs, name)
        for base in [name] + [f"{name}{suffix}" for suffix, _ in comp]:  # an earlier attempt's
            for d in (runs / base, runs / f"{base}.incomplete"):
                shutil.rmtree(d, ignore_errors=True)
        if group.get("barrier_dir"):  # where the run's clients meet: no arrival of an earlier try
            meet = Path(group["barrier_dir"]) / name
            shutil.rmtree(meet, ignore_errors=True)
            if not client.local:  # on the client host, where they meet
                _run(client.command(["rm", "-rf", "--", str(meet)]), f"emptying {meet} on {client.name}", timeout=60)
        t0 = time.monotonic()
        before = (last or read_counters(fs, counters)) if fs is not None else None
        applied = server_parts.Applied(parts, journal)
        try:
            applied.start()
            if comp:
                run_with_companions(client, comp, specs, stage.parent, name)
            else:
                hostmod.run_on_host(client, specs / f"{name}.yaml", stage, push=[], fresh=True)
            applied.check_end()
        except BaseException:
            applied.stop(None)
            shutil.rmtree(stage.parent, ignore_errors=True)  # not evidence of the policy: measured again
            raise
        errors = applied.stop(stage)
        if errors:
            shutil.rmtree(stage.parent, ignore_errors=True)
            raise CorunError(errors[0])
        if parts:
            server_parts.record(stage, applied.records)
        if hosts is not None:
            record_hosts(stage, hosts)
        if fs is not None:
            after = last = read_counters(fs, counters)
            atomic_write_json(stage / "pfs_counters.json", {"before": before, "after": after})
        os.replace(stage, out)  # complete: into place once, nothing written in it after
        shutil.rmtree(stage.parent, ignore_errors=True)
        done.append(name)
        log(f"{name}: {time.monotonic() - t0:.1f} s")
    return done


def staging(runs: Path, name: str) -> Path:
    """Where a group's run is measured and completed (its counters, server parts, companion
    runs and hosts written in it) before its one rename to RUNS/<name>: RUNS/<name>.incomplete/
    <name>, a folder readers of results skip (analysis.runindex), the run's own name kept for
    `corun run`, on the client host at the same path."""
    return runs / f"{name}.incomplete" / name


def hosts_record(group: dict, fs, netns_dir: Path | None = None) -> dict:
    """Where the group's file system ran (its runs' `pfs_group`): the group, its cluster's kind
    and each host of FS (client hosts, data servers: `roles`) with `netns`, whether it is a
    network namespace of this machine (NETNS_DIR/<name>, as scripts/netns-cluster and
    scripts/bare-testbed name their hosts' and corun.machine.foreign_cpu's hosts check reads
    them: its links are veth pairs) or a host of its own (a real testbed's node)."""
    netns_dir = netns_dir or NETNS_DIR
    roles: dict[str, list[str]] = {}
    names: dict[str, str] = {}
    for role, hs in (("client", fs.clients), ("server", [s.host for s in fs.servers])):
        for h in hs:
            roles.setdefault(h.name, []).append(role)
            names[h.name] = getattr(h, "netns", None) or h.name
    return {
        "group": group.get("name"),
        "cluster": group["cluster"]["kind"],
        "hosts": [{"name": n, "roles": r, "netns": (netns_dir / names[n]).exists()} for n, r in roles.items()],
    }


def record_hosts(out: Path, hosts: dict) -> None:
    """HOSTS (hosts_record) into the run's metadata.json and its companion runs'."""
    for meta in [out / "metadata.json", *sorted((out / "hosts").glob("*/metadata.json"))]:
        doc = json.loads(meta.read_text())
        doc[HOSTS_KEY] = hosts
        atomic_write_json(meta, doc)


def teardown_all(work: Path) -> list[str]:
    """What groups left in WORK (the parent of their folders): every file system, then every
    cluster (a group's file system may run on another group's cluster)."""
    homes = (
        sorted(d for d in work.iterdir() if (d / "pfs.yaml").exists() or (d / "cluster" / "state").exists())
        if work.is_dir()
        else []
    )
    errors = []
    for d in homes:
        errors += teardown(d, d / "pfs.yaml", False)
    for d in homes:
        errors += teardown(d, d / "pfs.yaml", True)
    return errors


def all_finished(group: dict, runs: Path, specs: Path | None = None) -> bool:
    comp = companion_hosts(group)
    return all(run_done(group, runs, specs, name, comp) for name in group["runs"])


def run_done(group: dict, runs: Path, specs: Path | None, name: str, comp: list) -> bool:
    """The run finished (see finished) and, with server parts, their record is in it."""
    out = runs / name
    if not finished(out, comp, inputs_of(group, specs, name)):
        return False
    return not (group.get("server_parts") or {}).get(name) or server_parts.recorded(out)


def inputs_of(group: dict, specs: Path | None, name: str) -> list[Path]:
    """The files a run of the group depends on: its spec and its `run_inputs` (None: not known)."""
    if specs is None:
        return []
    root = repo_root()
    return [specs / f"{name}.yaml"] + [root / f for f in (group.get("run_inputs") or {}).get(name, [])]


def cluster_key(group: dict) -> str | None:
    """Groups with the same key can run on one netns cluster, one after another."""
    c = group["cluster"]
    return json.dumps(c, sort_keys=True) if c["kind"] == "netns" else None


def companion_hosts(group: dict) -> list[tuple[str, inventory.Host]]:
    """(spec suffix, host) of every client host after the first that runs its own run at the
    same time as the client's (on an inventory, sais with several client hosts)."""
    comp = group.get("companions") or []
    if not comp:
        return []
    pfs = group["pfs"]
    by = {h.name: h for h in inventory.load(pfs["inventory"], pfs.get("group", "testbed"))}
    missing = [c["host"] for c in comp if c["host"] not in by]
    if missing:
        raise CorunError(f"pfs_runs: client host {missing[0]!r} is not a host of {pfs['inventory']}")
    return [(c["suffix"], by[c["host"]]) for c in comp]


def finished(out: Path, comp: list[tuple[str, inventory.Host]], inputs: list[Path] | None = None) -> bool:
    """The run and every companion run are in its folder (RUNS/<run>/hosts/<run><suffix>), and
    its metadata.json is newer than each of INPUTS that exists (a spec or manifest edited since
    it was measured: measured again)."""
    meta = out / "metadata.json"
    try:
        made = meta.stat().st_mtime
    except OSError:
        return False
    for f in inputs or []:
        try:
            if f.stat().st_mtime > made:
                return False
        except OSError:
            continue
    return all((out / "hosts" / f"{out.name}{suffix}" / "metadata.json").exists() for suffix, _ in comp)


def run_with_companions(
    client: inventory.Host, comp: list[tuple[str, inventory.Host]], specs: Path, folder: Path, name: str
) -> None:
    """The run on the client and one companion run on every other client host, started together,
    into FOLDER (the run's staging folder's parent); the companions' folders then move into
    FOLDER/<name>/hosts/. Any failure removes them all."""
    out = folder / name
    jobs = [(client, specs / f"{name}.yaml", out)] + [
        (h, specs / f"{name}{suffix}.yaml", folder / f"{name}{suffix}") for suffix, h in comp
    ]
    pool = ThreadPoolExecutor(max_workers=len(jobs))
    futures = [pool.submit(hostmod.run_on_host, h, spec, o, [], fresh=True) for h, spec, o in jobs]
    errors, waited = [], False
    try:
        for f in futures:
            try:
                f.result()
            except CorunError as exc:
                errors.append(str(exc))
        waited = True
    finally:
        if not waited:  # stopped (a signal): end the ssh sessions and local runs the threads wait on
            end_children()
        pool.shutdown(wait=True, cancel_futures=True)
    if errors:
        for _, _, o in jobs:
            shutil.rmtree(o, ignore_errors=True)
        raise CorunError(f"pfs_runs: {name}: {errors[0]}")
    (out / "hosts").mkdir(exist_ok=True)
    for _, _, o in jobs[1:]:
        os.replace(o, out / "hosts" / o.name)


def end_children() -> None:
    """SIGTERM to this process's child processes (each run's ssh or corun run)."""
    me = str(os.getpid())
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[1] == me:
            try:
                os.kill(int(stat.parent.name), signal.SIGTERM)
            except OSError:
                pass


def load_deployment(cfg_file: Path):
    """The file system's deployment, made once (the inventory is read once) for read_counters."""
    cfg, source = pfs.load_config(cfg_file)
    return pfs.make_deployment(cfg, source)


def read_counters(fs, counters: dict) -> dict:
    """The data servers' counters now (corun.testbed.pfs.counters: the emulated disks' and the
    server-side scheduler's status file)."""
    return pfs.counters(fs, counters.get("sched_status"))


def client_host(group: dict) -> inventory.Host:
    """The host the runs run on: this machine on the netns cluster (the jobs enter the client's
    namespace themselves), else the inventory's client host."""
    if group["cluster"]["kind"] == "netns":
        return inventory.Host(name="localhost", address="localhost", local=True)
    pfs = group["pfs"]
    hosts = inventory.load(pfs["inventory"], pfs.get("group", "testbed"))
    by = {h.name: h for h in hosts}
    name = group["cluster"]["client"]
    if name not in by:
        raise CorunError(f"pfs_runs: client {name!r} is not a host of {pfs['inventory']}")
    return by[name]


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--groups", required=True, type=Path, help="groups.json of the specs step")
    ap.add_argument("--group", required=True, nargs="+", help="the groups' names, run in this order")
    ap.add_argument("--specs", required=True, type=Path, help="folder of the run specs")
    ap.add_argument("--runs", required=True, type=Path, help="folder the run folders go to")
    ap.add_argument("--work", required=True, type=Path, help="folder for the cluster's and file system's state")
    ap.add_argument("--done", type=Path, nargs="+", help="one per group, written once it ends: its runs and wall time")
    a = ap.parse_args(argv)
    doc = json.loads(a.groups.read_text())
    by = {g["name"]: g for g in doc["groups"]}
    for name in a.group:
        if name not in by:
            raise CorunError(f"pfs_runs: --group: {name!r} (expected one of {', '.join(by)})")
    if a.done and len(a.done) != len(a.group):
        raise CorunError(f"pfs_runs: --done: {len(a.done)} file(s) (expected one per group: {len(a.group)})")
    guard = Guard("pfs-group", a.work)  # corun recover takes it all down if this process is killed
    left = teardown_all(a.work)  # what a killed attempt at any group left (the groups share the cluster's names)
    if left:
        raise CorunError(f"pfs_runs: could not take down what an earlier attempt left: {left[0]}")
    todo = [n for n in a.group if not all_finished(by[n], a.runs, a.specs)]
    home: Path | None = None  # the work folder of the netns cluster kept up for the next group
    try:
        for i, name in enumerate(a.group):
            t0 = time.monotonic()
            if name in todo:
                k, key = todo.index(name), cluster_key(by[name])
                keep = key is not None and k + 1 < len(todo) and cluster_key(by[todo[k + 1]]) == key
                done = run_group(
                    by[name], a.specs, a.runs, a.work / name, shared=home, keep=keep, journal=guard.journal
                )
                home = (home or a.work / name) if keep else None
            else:
                done = list(by[name]["runs"])
                log(f"group {name}: every run finished already")
            wall = time.monotonic() - t0
            log(f"group {name}: {len(done)} runs in {wall:.1f} s")
            if a.done:
                atomic_write_json(a.done[i], {"group": name, "runs": done, "wall_s": wall})
    finally:
        errors = teardown_all(a.work)  # a cluster kept for a group that did not come (an error)
        if not errors:
            guard.close()  # all down: nothing left for corun recover
    if errors:
        raise CorunError(errors[0])
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""corun's parallel file system: GlusterFS brick servers run from generated volfiles.

`up` starts one glusterfsd per data server host (no glusterd: each server's translator graph is
a volfile this module writes, so a server-side scheduling translator can be inserted into it),
each brick on its own storage (a directory, a loop-mounted ext4 image, or ext4 on an emulated
rotating disk: corun.testbed.pfs_disk on the server's host), writes the client
volfiles of the striped layout (one per server, read in-process by kernels/pfs_read through
gfapi) and optionally mounts a FUSE client for IOR. On a netns test cluster it also shapes the
links with tc TBF: every server one link of `link.rate_mbit`, the client `link.client_links`
of them as one cap. docs/pfs.md explains the layout and how it differs from PVFS2's.

Every change is written to a journal (corun.machine.state's, `state_dir/pfs.journal.json`)
before it is made; `down` undoes it newest first (the data servers' stops at once, then the
disks' teardowns), so teardown after a failure, Ctrl-C or SIGKILL of `up` leaves no server
process, mount, image or qdisc behind. The journal lives beside the layout, not in /run/corun,
because the file system outlives the `up` command (`corun recover` must not end it).

    scripts/pfs [--config FILE] up | status [--json] | counters [--sched-status T] | args | down | layout
"""

from __future__ import annotations

import argparse
import json
import shlex
import socket
import subprocess
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from corun.errors import CorunError
from corun.machine.state import Journal
from corun.testbed import inventory
from corun.testbed.pfs_config import (
    JOURNAL_ID,
    LISTEN_TIMEOUT_S,
    PIDS_SCRIPT,
    STOP_SCRIPT,
    UMOUNT_SCRIPT,
    Deployment,
    Server,
    _fill,
    load_config,
    make_deployment,
)
from corun.testbed.pfs_links import _tbf_args, _tc, qdisc_undo_argv, qdiscs, shaped_rate_mbit
from corun.testbed.pfs_remote import AIOLI_TYPE, REMOTE_TIMEOUT_S, PfsError, remote, remote_argv
from corun.testbed.pfs_volfiles import (
    client_volfile,
    fuse_volfile,
    kernel_args,
    layout,
    server_volfile,
    server_xlators,
)
from corun.util import atomic_write_text, repo_root

# ---- the journal -----------------------------------------------------------------------


def open_journal(fs: Deployment) -> Journal:
    """The file system's journal (corun.machine.state's, in state_dir: not corun's state folder,
    which `corun recover` undoes), with the actions an earlier `up` left in it."""
    fs.state_dir.mkdir(parents=True, exist_ok=True)
    return Journal(JOURNAL_ID, directory=fs.state_dir, resume=True)


def _push(j: Journal, what: str, argv: list[str], together: str | None = None) -> None:
    """An undo command journalled before its change; TOGETHER names a kind of action (the data
    servers' stops, the disks' teardowns) that the unwind undoes at once for every server."""
    action = {"kind": "command", "what": what, "argv": argv, "timeout_s": REMOTE_TIMEOUT_S}
    j.push({**action, "together": together} if together else action)


def journal_actions(fs: Deployment) -> int:
    """How many undo actions the journal holds (read, not taken: `up` may be holding it)."""
    try:
        return len(json.loads(fs.journal_path.read_text()).get("actions", []))
    except (OSError, ValueError):
        return 0


# ---- up, status, down --------------------------------------------------------------------


def port_open(addr: str, port: int, timeout: float = 0.5) -> bool:
    try:
        with socket.create_connection((addr, port), timeout=timeout):
            return True
    except OSError:
        return False


def check_tools(fs: Deployment) -> None:
    need = {"glusterfsd"}
    if fs.cfg["brick"]["backend"] in ("loop", "rotating_disk"):
        need |= {"mkfs.ext4", "mount", "losetup"}
    client_need = {"glusterfs"} if fs.cfg["fuse"]["mount"] else set()
    wants: dict[str, tuple[inventory.Host, set]] = {}
    for s in fs.servers:
        wants.setdefault(s.host.name, (s.host, set()))[1].update(need)
    wants.setdefault(fs.client.name, (fs.client, set()))[1].update(client_need)  # the FUSE mount's host
    for h, want in wants.values():
        names = sorted(want)
        if not names:
            continue
        res = remote(h, 'for t; do command -v "$t" >/dev/null || echo "$t"; done', *names, check=False)
        if res.returncode == 255:
            raise PfsError(
                f"pfs: {h.name}: cannot reach the host over ssh: {(res.stderr.strip().splitlines() or [''])[-1]}", 1
            )
        missing = res.stdout.split()
        if missing:
            raise PfsError(
                f"pfs: {h.name}: {missing[0]} not found: install it with the 'glusterfs' role "
                "(ansible-playbook site.yml --tags glusterfs)",
                3,
            )
    types = sorted({x["type"] for x in fs.cfg["server_xlators"]})
    for h in {s.host.name: s.host for s in fs.servers}.values():
        if not types:
            break
        res = remote(
            h, 'd=$(glusterfsd --print-xlatordir) || exit 1; for t; do [ -f "$d/$t.so" ] || echo "$t"; done', *types
        )
        missing = res.stdout.split()
        if missing:
            hint = (
                "build and install it with the corun_schedulers role (make provision)"
                if missing[0] == AIOLI_TYPE
                else "a .so in glusterfsd --print-xlatordir"
            )
            raise PfsError(f"pfs: {h.name}: translator {missing[0]} not installed: {hint}", 3)
    if qdiscs(fs) and subprocess.run(["sh", "-c", "command -v tc"], capture_output=True).returncode != 0:
        raise PfsError("pfs: tc not found: install iproute2", 3)


def up(fs: Deployment) -> dict:
    j = open_journal(fs)
    if j.actions:
        j.release()
        raise PfsError(f"pfs: a file system is already up ({fs.journal_path}); run down first", 1)
    try:
        check_tools(fs)
        _up(fs, j)
    except BaseException:
        errors = j.unwind(keep_failed=True)  # what cannot be undone stays for down
        if errors:
            print("pfs: undoing a failed up: " + "; ".join(errors), file=sys.stderr)
        fs.layout_path.unlink(missing_ok=True)
        raise
    lay = layout(fs)
    atomic_write_text(fs.layout_path, json.dumps(lay, indent=2) + "\n")
    j.release()  # the journal stays: down unwinds it
    return lay


def _up(fs: Deployment, j: Journal) -> None:
    cfg, port = fs.cfg, fs.cfg["port"]
    root = cfg["root"]
    for h in {x.name: x for x in [s.host for s in fs.servers] + fs.clients}.values():
        if remote(h, '[ -e "$1" ] || echo absent', root).stdout.strip() == "absent":
            _push(j, f"remove {root} on {h.name} if empty", remote_argv(h, 'rmdir -- "$1" 2>/dev/null; exit 0', root))
    for s in fs.servers:
        h = s.host
        existed = remote(h, 'for p; do [ -e "$p" ] && echo "$p"; done; exit 0', s.dir, s.brick).stdout.split()
        if s.dir not in existed:
            _push(j, f"remove {s.dir} on {h.name}", remote_argv(h, 'rm -rf -- "$1"', s.dir))
        if s.brick not in existed:
            _push(j, f"remove {s.brick} on {h.name}", remote_argv(h, 'rm -rf -- "$1"', s.brick))
        remote(h, 'mkdir -p -- "$1" "$2"', s.dir, s.brick)
        if s.image:
            _push(j, f"remove {s.image} on {h.name}", remote_argv(h, 'rm -f -- "$1"', s.image))
            remote(h, 'truncate -s "$2M" "$1" && mkfs.ext4 -q -F "$1"', s.image, str(cfg["brick"]["size_mib"]))
            _push(j, f"unmount {s.brick} on {h.name}", remote_argv(h, UMOUNT_SCRIPT, s.brick))
            remote(h, 'mount -o loop -- "$1" "$2"', s.image, s.brick)
        if s.disk:
            _push(
                j,
                f"remove {s.disk} on {h.name} once its disk is down",
                remote_argv(
                    h,
                    '[ -e "$1/brick.journal.json" ] || rm -rf -- "$1"; rmdir -- "$2" 2>/dev/null; exit 0',
                    s.disk,
                    str(Path(s.disk).parent),
                ),
            )
            disk_argv = _disk_argv(fs, "down", s.disk)
            _push(
                j,
                f"take down the emulated disk of {s.brick} on {h.name}",
                h.command(disk_argv, cwd=str(repo_root())),
                together="disks",
            )
            res = subprocess.run(
                h.command([*_disk_argv(fs, "up", s.disk), "--target", s.brick], cwd=str(repo_root())),
                input=json.dumps(_disk_config(cfg)),
                capture_output=True,
                text=True,
                timeout=REMOTE_TIMEOUT_S,
            )
            if res.returncode != 0:
                err = (res.stderr.strip().splitlines() or ["(no output)"])[-1]
                raise PfsError(f"pfs: {h.name}: the emulated disk of {s.brick}: {err}")
        if port_open(h.address, port):
            raise PfsError(
                f"pfs: {h.name}: {h.address}:{port} is already in use (another file system? "
                "choose another port in the configuration)"
            )
        remote(
            h, 'cat > "$1"', s.volfile, stdin=server_volfile(s, port, cfg["server_xlators"], cfg["brick"]["o_direct"])
        )
        _push(j, f"stop the data server on {h.name}", remote_argv(h, STOP_SCRIPT, s.volfile, s.pidfile), "servers")
        remote(h, 'exec glusterfsd -f "$1" -p "$2" -l "$3"', s.volfile, s.pidfile, s.log)
    for ns, dev, rate in qdiscs(fs):
        _push(j, f"remove the qdisc of {dev}" + (f" in {ns}" if ns else ""), qdisc_undo_argv(ns, dev))
        res = subprocess.run(
            _tc(ns) + ["qdisc", "replace", "dev", dev, "root"] + _tbf_args(rate), capture_output=True, text=True
        )
        if res.returncode != 0:
            raise PfsError(f"pfs: tc on {dev}: {res.stderr.strip()}")
    deadline = time.monotonic() + LISTEN_TIMEOUT_S
    for s in fs.servers:
        while not port_open(s.host.address, port):
            if time.monotonic() > deadline:
                tail = remote(s.host, 'tail -n 3 "$1" 2>/dev/null', s.log, check=False).stdout.strip()
                raise PfsError(
                    f"pfs: the data server on {s.host.name} does not listen on "
                    f"{s.host.address}:{port} ({tail.splitlines()[-1] if tail else 'no log'})"
                )
            time.sleep(0.1)
    for c in fs.clients:
        hdir = fs.host_dir(c)
        cdir = f"{hdir}/client"
        exists = remote(c, '[ -e "$1" ] && echo yes; exit 0', hdir).stdout.strip() == "yes"
        if not exists:
            _push(j, f"remove {hdir} on {c.name}", remote_argv(c, 'rm -rf -- "$1"', hdir))
        else:
            _push(j, f"remove {cdir} on {c.name}", remote_argv(c, 'rm -rf -- "$1"', cdir))
        remote(c, 'mkdir -p -- "$1"', cdir)
        for s in fs.servers:
            remote(c, 'cat > "$1"', fs.client_volfile(s.index, c), stdin=client_volfile(s, port))
        remote(c, 'cat > "$1"', f"{cdir}/layout.json", stdin=json.dumps(layout(fs), indent=2) + "\n")
    c = fs.client
    cdir = f"{fs.client_dir}/client"
    if cfg["fuse"]["mount"]:
        m = fs.mountpoint
        remote(c, 'cat > "$1"', fs.fuse_volfile, stdin=fuse_volfile(fs))
        _push(j, f"stop the FUSE client on {c.name}", remote_argv(c, STOP_SCRIPT, fs.fuse_volfile, f"{cdir}/fuse.pid"))
        _push(j, f"unmount {m} on {c.name}", remote_argv(c, UMOUNT_SCRIPT, m))
        remote(
            c,
            'mkdir -p -- "$2" && exec glusterfs -f "$1" -p "$3" -l "$4" "$2"',
            fs.fuse_volfile,
            m,
            f"{cdir}/fuse.pid",
            f"{cdir}/fuse.log",
        )
        res = remote(
            c,
            'i=0; while ! mountpoint -q "$1"; do i=$((i+1)); [ $i -gt 100 ] && exit 1; sleep 0.1; done',
            m,
            check=False,
        )
        if res.returncode != 0:
            tail = remote(c, 'tail -n 2 "$1" 2>/dev/null', f"{cdir}/fuse.log", check=False).stdout.strip()
            raise PfsError(
                f"pfs: {c.name}: the FUSE mount {m} did not appear within 10 s "
                f"({tail.splitlines()[-1] if tail else 'no log'})"
            )


def status(fs: Deployment) -> dict:
    actions = journal_actions(fs)
    servers = []
    for s in fs.servers:
        res = remote(s.host, PIDS_SCRIPT, s.volfile, check=False)
        mounted = None
        if s.image or s.disk:
            mounted = (
                remote(s.host, 'mountpoint -q "$1" && echo yes; exit 0', s.brick, check=False).stdout.strip() == "yes"
            )
        scheds = []
        for x in server_xlators(fs.cfg["server_xlators"], s, fs.cfg["root"]):
            if x["type"] != AIOLI_TYPE:
                continue
            st = remote(s.host, 'cat -- "$1" 2>/dev/null; exit 0', x["options"]["status-file"], check=False)
            try:
                doc = json.loads(st.stdout)
            except ValueError:
                doc = None
            scheds.append(
                {
                    "name": x["name"],
                    "status_file": x["options"]["status-file"],
                    "policy": doc.get("policy") if doc else None,
                    "age_s": round(time.time() - doc["updated_unix"], 3) if doc else None,
                    "dispatches": doc["counters"]["dispatches"] if doc else None,
                    "aggregations": doc["counters"]["aggregations"] if doc else None,
                    "control_error": doc.get("control_error") if doc else None,
                }
            )
        servers.append(
            {
                "index": s.index,
                "name": s.host.name,
                "address": s.host.address,
                "schedulers": scheds,
                "reachable": res.returncode != 255,
                "pids": [int(p) for p in res.stdout.split()] if res.returncode == 0 else [],
                "listening": port_open(s.host.address, fs.cfg["port"]),
                "brick": s.brick,
                "brick_mounted": mounted,
            }
        )
    links = [
        {"netns": ns, "dev": dev, "expected_mbit": r, "rate_mbit": shaped_rate_mbit(ns, dev)}
        for ns, dev, r in qdiscs(fs)
    ]
    fuse = None
    if fs.cfg["fuse"]["mount"]:
        fuse = {
            "mountpoint": fs.mountpoint,
            "mounted": remote(
                fs.client, 'mountpoint -q "$1" && echo yes; exit 0', fs.mountpoint, check=False
            ).stdout.strip()
            == "yes",
        }
    is_up = (
        bool(actions)
        and all(x["pids"] and x["listening"] for x in servers)
        and all(q["rate_mbit"] == q["expected_mbit"] for q in links)
        and (fuse is None or fuse["mounted"])
    )
    return {
        "up": is_up,
        "journal_actions": actions,
        "servers": servers,
        "links": links,
        "fuse": fuse,
        "layout": json.loads(fs.layout_path.read_text()) if fs.layout_path.exists() else None,
    }


def _disk_argv(fs: Deployment, command: str, work: str) -> list[str]:
    """corun.testbed.pfs_disk on a server host: this Python on a netns cluster (the same
    machine), python3 from the repository's folder on other hosts."""
    py = sys.executable if fs.links else "python3"
    return ["env", f"PYTHONPATH={repo_root()}", py, "-m", "corun.testbed.pfs_disk", command, "--work", work]


def _disk_config(cfg: dict) -> dict:
    rd = cfg["brick"]["rotating_disk"]
    return {
        "preset": rd["preset"],
        "stroke": rd["stroke"],
        "queue_window": rd["queue_window"],
        "rt_priority": rd["rt_priority"],
        "model": rd["model"],
        "host": rd["host"],
        "size_bytes": cfg["brick"]["size_mib"] << 20,
    }


def counters(fs: Deployment, sched_status: str | None = None) -> dict:
    """Per data server: the emulated disk's counters (backend rotating_disk) and the server-side
    scheduler's status file (SCHED_STATUS, {root} and {host} replaced), each None with the
    reason when absent."""

    def one(s: Server) -> dict:
        e: dict = {"index": s.index, "name": s.host.name, "disk": None, "disk_error": None}
        if s.disk:
            res = subprocess.run(
                s.host.command(_disk_argv(fs, "stats", s.disk), cwd=str(repo_root())),
                capture_output=True,
                text=True,
                timeout=REMOTE_TIMEOUT_S,
                stdin=subprocess.DEVNULL,
            )
            try:
                e["disk"] = json.loads(res.stdout) if res.returncode == 0 else None
            except ValueError:
                e["disk"] = None
            if e["disk"] is None:
                e["disk_error"] = (res.stderr.strip().splitlines() or ["no counters"])[-1]
        else:
            e["disk_error"] = f"brick backend {fs.cfg['brick']['backend']}: no emulated disk"
        if sched_status:
            path = _fill(sched_status, fs.cfg["root"], s.host.name)
            res = remote(s.host, 'cat -- "$1"', path, check=False)
            try:
                e["sched"], e["sched_error"] = json.loads(res.stdout), None
            except ValueError:
                e["sched"] = None
                e["sched_error"] = f"{path}: " + (
                    (res.stderr.strip().splitlines() or ["not JSON"])[-1] if res.returncode else "not JSON"
                )
        return e

    with ThreadPoolExecutor(max_workers=min(16, len(fs.servers))) as pool:  # the servers at once
        out = list(pool.map(one, fs.servers))
    return {"time_epoch_s": time.time(), "servers": out}


def down(fs: Deployment) -> list[str]:
    """Undo what up did, newest first; an undo that fails stays in the journal for the next down."""
    errors = open_journal(fs).unwind(keep_failed=True) if fs.journal_path.exists() else []
    if not errors:
        fs.layout_path.unlink(missing_ok=True)
    return errors


# ---- command line ------------------------------------------------------------------------


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(
        prog="pfs",
        description="corun's parallel file system (GlusterFS bricks from "
        "generated volfiles) on the hosts of an inventory; docs/pfs.md",
    )
    ap.add_argument("--config", help="YAML configuration (corun/testbed/pfs.schema.json; default: its defaults)")
    sub = ap.add_subparsers(dest="command", required=True)
    sub.add_parser("up", help="start the data servers, shape the links, write the client volfiles")
    st = sub.add_parser("status", help="servers, links and mount; exit 1 unless all is up")
    st.add_argument("--json", action="store_true", help="machine-readable output")
    ct = sub.add_parser("counters", help="per data server: the emulated disk's and the scheduler's counters (JSON)")
    ct.add_argument(
        "--sched-status", help="the server-side scheduler's status file on each server ({root}, {host} replaced)"
    )
    sub.add_parser("down", help="undo everything up did, newest first")
    sub.add_parser("layout", help="print the layout up would make, change nothing")
    sub.add_parser("args", help="print pfs_read's options for the file system that is up")
    return ap


def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    try:
        cfg, source = load_config(a.config)
        fs = make_deployment(cfg, source)
        if a.command == "layout":
            print(json.dumps(layout(fs), indent=2))
            return 0
        if a.command == "args":
            if not fs.layout_path.exists():
                raise PfsError(f"pfs: no file system is up ({fs.layout_path} is missing); run up first", 1)
            print(shlex.join(kernel_args(json.loads(fs.layout_path.read_text()))))
            return 0
        if a.command == "up":
            lay = up(fs)
            for s in lay["servers"]:
                print(f"data server {s['index']}: {s['name']} {s['address']}:{s['port']} brick {s['brick']}")
            ln = lay["link"]
            print(
                "links: "
                + (
                    f"servers {ln['server_rate_mbit']} Mbit/s, client {ln['client_rate_mbit']} Mbit/s"
                    if ln["shaped"]
                    else ln["note"]
                )
            )
            print(f"pfs_read options: {shlex.join(kernel_args(lay))}")
            return 0
        if a.command == "counters":
            print(json.dumps(counters(fs, a.sched_status)))
            return 0
        if a.command == "status":
            st = status(fs)
            if a.json:
                print(json.dumps(st, indent=2))
            else:
                for s in st["servers"]:
                    print(
                        f"server {s['index']} {s['name']:12s} {s['address']:15s} "
                        f"{'up' if s['pids'] and s['listening'] else 'DOWN'} pids={s['pids'] or '-'}"
                    )
                    for x in s["schedulers"]:
                        print(
                            f"  scheduler {x['name']}: "
                            + (
                                f"policy {x['policy']}, status {x['age_s']} s old, dispatches {x['dispatches']}, "
                                f"aggregations {x['aggregations']}"
                                + (f", control error: {x['control_error']}" if x["control_error"] else "")
                                if x["policy"]
                                else f"no status in {x['status_file']}"
                            )
                        )
                for q in st["links"]:
                    print(
                        f"link {q['netns'] or '(root)'}:{q['dev']} {q['rate_mbit']} Mbit/s "
                        f"(expected {q['expected_mbit']})"
                    )
                if st["fuse"]:
                    print(f"fuse {st['fuse']['mountpoint']} {'mounted' if st['fuse']['mounted'] else 'NOT mounted'}")
                print("up" if st["up"] else "not up")
            return 0 if st["up"] else 1
        errors = down(fs)
        if errors:
            raise PfsError("pfs: down left: " + "; ".join(errors), 1)
        print("pfs: down")
        return 0
    except CorunError as exc:
        print(f"corun: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("corun: pfs: interrupted (run down to undo what was done)", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())

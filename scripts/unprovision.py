#!/usr/bin/env python3
"""Undo what `make provision` changed on this machine, and only that.

    unprovision.py record [--state FILE]          before provisioning (make provision does it)
    unprovision.py undo [--check] [--state FILE]  make unprovision (--check: say, change nothing)

`record` writes, once, the machine as it was before corun first provisioned it (the state file,
/var/lib/corun/before-provision.json): the installed Debian packages, which services were
enabled and running (systemd), the running kernel.perf_event_paranoid, and which of corun's
own paths existed. A later `record` keeps the first one. `undo` compares the machine with it:
it purges the packages installed since, puts each service back as it was (stops and disables
what provisioning enabled, such as ssh; enables and starts again what it disabled, such as
irqbalance), removes corun's files that were not there (the sysctl file, the apt hook,
/opt/corun, /var/lib/corun's records, the builds in this tree) and sets the sysctl back. A
machine provisioned before the record existed has no record: undo then removes corun's own
files and settings and names the packages it leaves, since it cannot tell which were there.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
STATE = Path("/var/lib/corun/before-provision.json")
# what the roles write (roles/perf, roles/common, the upstream benchmarks' roles) and build here
CORUN_PATHS = [
    "/etc/sysctl.d/90-corun-perf.conf",
    "/etc/apt/apt.conf.d/50corun-update-success-stamp",
    "/opt/corun",
    "/var/lib/corun/upstream.d",
]
BUILDS = ["kernels/build", "pfs_client/build"]
# the services the roles enable, start, stop or disable
SERVICES = ["ssh", "glusterd", "irqbalance", "apt-cacher-ng", "munge", "slurmctld", "slurmd", "slurmdbd", "sysstat"]
SYSCTL = "kernel.perf_event_paranoid"
DEBIAN_PARANOID = "3"  # Debian 12's default, for a machine without a record


def _out(argv: list[str]) -> str:
    try:
        return subprocess.run(argv, capture_output=True, text=True, check=False).stdout.strip()
    except OSError:
        return ""


def snapshot() -> dict:
    """The machine now, in the shape of the state file."""
    pkgs = _out(["dpkg-query", "-W", "-f", "${db:Status-Status} ${Package}\\n"]).splitlines()
    services = {}
    if Path("/run/systemd/system").is_dir():
        for s in SERVICES:
            services[s] = {
                "enabled": _out(["systemctl", "is-enabled", s]) == "enabled",
                "active": _out(["systemctl", "is-active", s]) == "active",
            }
    return {
        "packages": sorted(p.split(" ", 1)[1] for p in pkgs if p.startswith("installed ")),
        "services": services,
        "sysctl": {SYSCTL: _out(["sysctl", "-n", SYSCTL])},
        "paths": sorted(p for p in CORUN_PATHS if Path(p).exists()),
    }


def plan_undo(before: dict | None, now: dict) -> list[tuple[str, str]]:
    """The actions that take `now` back to `before`: (kind, what), in the order they run."""
    acts: list[tuple[str, str]] = []
    if before is None:
        acts += [("remove", p) for p in now["paths"]]
        value = now["sysctl"].get(SYSCTL)
        if value not in ("", None, DEBIAN_PARANOID):
            acts.append(("sysctl", f"{SYSCTL}={DEBIAN_PARANOID}"))
        acts += [("leave", "packages: no record of the machine before provisioning")]
        return acts
    for name, state in now["services"].items():
        was = before["services"].get(name)
        if was is None:
            continue
        if state["active"] and not was["active"]:
            acts.append(("stop", name))
        if state["enabled"] and not was["enabled"]:
            acts.append(("disable", name))
        if was["enabled"] and not state["enabled"]:
            acts.append(("enable", name))
        if was["active"] and not state["active"]:
            acts.append(("start", name))
    acts += [("remove", p) for p in now["paths"] if p not in before["paths"]]
    value = before["sysctl"].get(SYSCTL)
    if value and now["sysctl"].get(SYSCTL) != value:
        acts.append(("sysctl", f"{SYSCTL}={value}"))
    new = sorted(set(now["packages"]) - set(before["packages"]))
    if new:
        acts.append(("purge", " ".join(new)))
    return acts


def _do(kind: str, what: str) -> None:
    if kind in ("stop", "start", "enable", "disable"):
        subprocess.run(["systemctl", kind, what], check=False)
    elif kind == "remove":
        p = Path(what)
        shutil.rmtree(p) if p.is_dir() and not p.is_symlink() else p.unlink(missing_ok=True)
    elif kind == "sysctl":
        subprocess.run(["sysctl", "-q", "-w", what], check=False)
    elif kind == "purge":
        env = {"DEBIAN_FRONTEND": "noninteractive", "PATH": "/usr/sbin:/usr/bin:/sbin:/bin"}
        subprocess.run(["apt-get", "purge", "-y", "-q", *what.split()], check=False, env=env)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("action", choices=["record", "undo"])
    ap.add_argument("--state", type=Path, default=STATE, help=f"the state file (default {STATE})")
    ap.add_argument("--check", action="store_true", help="say what undo would change, change nothing")
    ap.add_argument("--keep-builds", action="store_true", help="leave the builds in this tree (kernels/build ...)")
    args = ap.parse_args(argv)
    if args.action == "record":
        if args.state.exists():
            return 0
        if any(Path(p).exists() for p in CORUN_PATHS):
            return 0  # provisioned before the record existed: the machine before it is unknown
        args.state.parent.mkdir(parents=True, exist_ok=True)
        args.state.write_text(json.dumps(snapshot(), indent=1) + "\n")
        print(f"corun: recorded this machine before provisioning in {args.state} (make unprovision undoes it)")
        return 0
    before = None
    if args.state.exists():
        try:
            before = json.loads(args.state.read_text())
        except ValueError as exc:
            print(f"corun: {args.state}: not a state file ({exc}); expected what `unprovision.py record` writes")
            return 2
    else:
        print(f"corun: {args.state}: no record of this machine before provisioning; undoing corun's own files only")
    acts = plan_undo(before, snapshot())
    if not args.keep_builds:
        acts += [("remove", str(ROOT / b)) for b in BUILDS if (ROOT / b).exists()]
    if not acts:
        print("corun: nothing to undo")
    for kind, what in acts:
        print(f"corun: {'would ' if args.check else ''}{kind} {what}")
        if not args.check and kind != "leave":
            _do(kind, what)
    if not args.check and before is not None:
        args.state.unlink()
    return 0


if __name__ == "__main__":
    sys.exit(main())

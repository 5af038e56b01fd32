"""`corun doctor HOST...`: is a host ready (tools, kernels and variants built) and quiet?

The findings of one host are corun.machine.doctor's (and corun.run.schedulers.build_findings for
the variants' builds). localhost is checked here; other hosts through ssh (`--inventory` gives
their ssh settings), by running `corun doctor --json localhost` in the corun checkout at this
checkout's path there. Exit codes: 0 every host ready (with --strict: and quiet), 1 not, 2 usage
error.
"""

from __future__ import annotations

import json
import shlex
import subprocess
import sys

from corun.errors import ConfigError
from corun.machine.doctor import DEFAULT_MIN_FREE_GIB, finding, local_findings, summary
from corun.run import schedulers
from corun.testbed import inventory as inv
from corun.testbed.hosts import remote_python
from corun.util import repo_path, repo_root


def remote_report(host, data_dir: str, min_free_gib: float, timeout: float = 120) -> dict:
    root = str(repo_root())
    script = (
        f"test -d {shlex.quote(root)}/corun || {{ echo 'no corun checkout' >&2; exit 3; }}; "
        f"cd {shlex.quote(root)} && exec {shlex.quote(remote_python(host))} -m corun doctor --json "
        f"--data-dir {shlex.quote(data_dir)} --min-free-gib {min_free_gib:g} localhost"
    )
    try:
        proc = subprocess.run(
            host.command(["sh", "-c", script]),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return summary(
            host.name, [finding("ssh", "fail", f"no answer in {timeout:g} s", "check the host")], quiet_checked=False
        )
    if proc.returncode == 255:
        reason = (proc.stderr.strip().splitlines() or ["ssh failed"])[-1]
        return summary(
            host.name,
            [finding("ssh", "fail", reason, "check that the host is up and the inventory's ssh settings")],
            quiet_checked=False,
        )
    if proc.returncode == 3:
        return summary(
            host.name,
            [finding("corun checkout", "fail", f"none at {root}", "clone corun to the same path on the host")],
            quiet_checked=False,
        )
    try:
        report = json.loads(proc.stdout)
        (entry,) = report["hosts"]
    except (ValueError, KeyError, TypeError):
        reason = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return summary(
            host.name,
            [finding("corun doctor", "fail", reason, "run make setup on the host (corun's venv)")],
            quiet_checked=False,
        )
    return summary(host.name, [finding("ssh", "ok", host.address)] + entry["findings"])


def check_hosts(names: list[str], inventory: str | None, group: str, data_dir: str, min_free_gib: float) -> list[dict]:
    if inventory:
        hosts = inv.load(inventory, group)
        hosts = inv.pick(hosts, names, inventory) if names else hosts
    else:
        hosts = inv.from_names(names or ["localhost"], "command line")
    out = []
    for h in hosts:
        if h.local:
            path = repo_path(data_dir)
            if not path.exists():
                out.append(
                    summary(
                        h.name,
                        [
                            finding(
                                "device under test",
                                "fail",
                                str(path),
                                "create the data folder (the corun_schedulers role does)",
                            )
                        ],
                        quiet_checked=False,
                    )
                )
                continue
            out.append(
                summary(h.name, local_findings(path, min_free_gib=min_free_gib, builds=schedulers.build_findings()))
            )
        else:
            out.append(remote_report(h, data_dir, min_free_gib))
    return out


def table(reports: list[dict]) -> str:
    rows = [("host", "check", "status", "value", "advice")]
    for r in reports:
        for f in r["findings"]:
            rows.append(
                (
                    r["host"],
                    f["check"],
                    f["status"],
                    "" if f["value"] is None else str(f["value"]),
                    f["advice"] or "" if f["status"] != "ok" else "",
                )
            )
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r[:4], widths)) + ("  " + r[4] if r[4] else "") for r in rows]
    for r in reports:
        quiet = {True: ", quiet", False: ", not quiet", None: ", quiet not checked"}[r["quiet"]]
        state = ("ready" if r["ready"] else "NOT READY") + quiet
        lines.append(f"{r['host']}: {state}")
    return "\n".join(line.rstrip() for line in lines)


def run(a) -> int:
    if a.min_free_gib < 0:
        raise ConfigError("command line", "--min-free-gib", a.min_free_gib, "a number of GiB >= 0")
    reports = check_hosts(a.hosts, a.inventory, a.group, a.data_dir, a.min_free_gib)
    ready = all(r["ready"] for r in reports)
    quiet = (
        False
        if any(r["quiet"] is False for r in reports)
        else None
        if any(r["quiet"] is None for r in reports)
        else True
    )
    if a.json:
        print(json.dumps({"ready": ready, "quiet": quiet, "hosts": reports}, indent=2, default=str))
    else:
        print(table(reports))
    bad = [r for r in reports if not r["ready"] or (a.strict and r["quiet"] is not True)]
    if bad:
        parts = []
        for r in bad:
            checks = [
                f["check"] for f in r["findings"] if f["status"] == "fail" or (a.strict and f["status"] == "warn")
            ]
            parts.append(f"{r['host']} ({', '.join(checks)})")
        what = "not ready or not quiet" if a.strict else "not ready"
        print(f"corun: doctor: {what}: {'; '.join(parts)}", file=sys.stderr)
        return 1
    return 0


def add_parser(sub) -> None:
    d = sub.add_parser("doctor", help="is a host ready (tools, builds) and quiet (governor, load, ...)?")
    d.add_argument(
        "hosts",
        nargs="*",
        metavar="HOST",
        help="localhost, an inventory host or [user@]host (default: localhost, or with --inventory "
        "every host of the group)",
    )
    d.add_argument("--inventory", help="Ansible inventory giving the hosts' ssh settings")
    d.add_argument("--group", default="testbed", help="inventory group (default testbed)")
    d.add_argument(
        "--data-dir",
        default="results",
        help="folder on the device under test, relative to the corun checkout (default results)",
    )
    d.add_argument(
        "--min-free-gib",
        type=float,
        default=DEFAULT_MIN_FREE_GIB,
        help=f"free space needed on the device under test, GiB (default {DEFAULT_MIN_FREE_GIB:g})",
    )
    d.add_argument("--strict", action="store_true", help="a host that is not quiet fails too")
    d.add_argument("--json", action="store_true", help="machine-readable output")
    d.set_defaults(fn=run)

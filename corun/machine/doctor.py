"""`corun doctor HOST...`: is a host ready (tools, kernels and variants built) and quiet?

Each check is a finding {check, status, value, advice}. status is `ok`; `fail` (the host is
not ready: corun or an experiment would stop); `warn` (ready, but not quiet: measurements may
be noisy or unrepresentative); or `missing` (the host does not expose it, e.g. no cpufreq in a
VM: recorded with the reason, never guessed). The host state comes from corun.machine.host, the
same record every run stores; every run's metadata.json carries these findings under `doctor`.

localhost is checked here; other hosts through ssh (`--inventory` gives their ssh settings),
by running `corun doctor --json localhost` in the corun checkout at this checkout's path there.
Exit codes: 0 every host ready (with --strict: and quiet), 1 not, 2 usage error.
"""

from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys
from pathlib import Path

from corun.errors import ConfigError, CorunError
from corun.machine import device as devmod
from corun.machine import host as hoststate
from corun.run import schedulers
from corun.testbed import inventory as inv
from corun.testbed.hosts import remote_python
from corun.util import repo_root

# Program -> the role that installs it (and the tool name in metadata.TOOLS).
REQUIRED_TOOLS = {
    "iostat": "sysstat",
    "pidstat": "sysstat",
    "perf": "perf",
    "fio": "fio",
    "x264": "x264",
    "mpirun": "openmpi",
}
REQUIRED_ELEVATORS = ("none", "mq-deadline")
DEFAULT_MIN_FREE_GIB = 1.0


def finding(check: str, status: str, value=None, advice: str | None = None) -> dict:
    return {"check": check, "status": status, "value": value, "advice": advice}


def tool_findings(tools: dict) -> list[dict]:
    out = []
    for tool, role in REQUIRED_TOOLS.items():
        version = tools.get(tool)
        if version:
            out.append(finding(f"tool {tool}", "ok", version))
        else:
            out.append(finding(f"tool {tool}", "fail", None, f"install it: ansible-playbook site.yml --tags {role}"))
    return out


def kernel_findings(root: Path) -> list[dict]:
    expected = sorted(p.stem for p in (root / "kernels").glob("*.c"))
    missing = [k for k in expected if not os.access(root / "kernels" / "build" / k, os.X_OK)]
    if not expected:
        return [finding("corun kernels", "fail", None, f"no kernels/*.c under {root}: not a corun checkout")]
    if missing:
        return [
            finding(
                "corun kernels",
                "fail",
                f"not built: {', '.join(missing)}",
                "build them: ansible-playbook site.yml --tags corun_kernels (or make -C kernels)",
            )
        ]
    return [finding("corun kernels", "ok", f"{len(expected)} built")]


def scheduler_findings() -> list[dict]:
    """Variants that declare a build command must have built the program their start runs."""
    unbuilt, checked = [], 0
    for name in schedulers.available():
        try:
            path = schedulers.find(name)
            man = schedulers.load_manifest(path)
        except CorunError as exc:
            unbuilt.append(f"{name} ({exc})")
            continue
        if "build" not in man:
            continue
        checked += 1
        program = (man.get("start") or [""])[0].replace("{scheduler_dir}", str(path.parent))
        if "{" in program or not program:
            continue
        if not os.access(program, os.X_OK):
            unbuilt.append(name)
    if unbuilt:
        return [
            finding(
                "scheduler builds",
                "fail",
                f"not built: {', '.join(unbuilt)}",
                "build them: ansible-playbook site.yml --tags corun_schedulers",
            )
        ]
    return [finding("scheduler builds", "ok", f"{checked} built")]


def state_findings(host: dict) -> list[dict]:
    """Quietness, from the host state corun.machine.host reads and every run records."""
    out = []
    gov = host.get("governor") or {}
    bad = sorted({g for g in gov.values() if g != "performance"})
    if not gov:
        out.append(
            finding(
                "governor",
                "missing",
                None,
                "no cpufreq governor visible (VM or fixed frequency): frequency is not controlled",
            )
        )
    elif bad:
        out.append(
            finding("governor", "warn", ", ".join(bad), "set 'performance': cpupower frequency-set -g performance")
        )
    else:
        out.append(finding("governor", "ok", "performance"))
    turbo = host.get("turbo")
    if turbo is None:
        out.append(finding("turbo", "missing", None, "no intel_pstate/no_turbo or cpufreq/boost visible"))
    else:
        out.append(
            finding(
                "turbo",
                "warn" if turbo == "on" else "ok",
                turbo,
                "disable it (intel_pstate/no_turbo=1 or cpufreq/boost=0)" if turbo == "on" else None,
            )
        )
    thp = host.get("thp")
    always = bool(thp) and "[always]" in thp
    out.append(
        finding(
            "thp",
            "warn" if always else ("ok" if thp else "missing"),
            thp,
            "set madvise: echo madvise > /sys/kernel/mm/transparent_hugepage/enabled" if always else None,
        )
    )
    swap = bool(host.get("swap_active"))
    out.append(
        finding(
            "swap",
            "warn" if swap else "ok",
            "active" if swap else "off",
            "turn it off (swapoff -a): memory-pressure runs would page to it" if swap else None,
        )
    )
    load = (host.get("loadavg") or [0.0])[0]
    out.append(
        finding(
            "load",
            "warn" if load > 0.5 else "ok",
            round(load, 2),
            "other work is running: wait for it or stop it" if load > 0.5 else None,
        )
    )
    irq = host.get("irqbalance")
    out.append(
        finding(
            "irqbalance",
            "warn" if irq == "running" else "ok",
            irq,
            "stop it during measurements (or ban the measured CPUs)" if irq == "running" else None,
        )
    )
    paranoid = host.get("perf_event_paranoid")
    try:
        level = int(paranoid) if paranoid is not None else None
    except ValueError:
        level = None
    if level is None:
        out.append(finding("perf_event_paranoid", "missing", paranoid, "no /proc/sys/kernel/perf_event_paranoid"))
    elif level > 0 and os.geteuid() != 0:
        out.append(
            finding(
                "perf_event_paranoid",
                "warn",
                level,
                "perf counters need root or <= 0: ansible-playbook site.yml --tags perf",
            )
        )
    else:
        out.append(finding("perf_event_paranoid", "ok", level))
    return out


def device_findings(data_dir: Path | None, device: dict | None, min_free_gib: float) -> list[dict]:
    """The device under test (the disk holding data_dir): its elevator and free space."""
    out = []
    if device is None and data_dir is not None:
        try:
            device = devmod.device_of(data_dir, "doctor", "--data-dir").describe()
        except CorunError as exc:
            return [
                finding("device under test", "fail", str(data_dir), f"put the data folder on a block device ({exc})")
            ]
    if device is not None:
        avail = device.get("elevators_available") or []
        lacking = [e for e in REQUIRED_ELEVATORS if e not in avail]
        value = f"{device.get('name')}: {device.get('elevator')} (available: {' '.join(avail) or 'none'})"
        out.append(
            finding(
                "elevator",
                "fail" if lacking else "ok",
                value,
                f"the experiments need {', '.join(lacking)}: ansible-playbook site.yml --tags corun_schedulers"
                if lacking
                else None,
            )
        )
    if data_dir is not None:
        st = os.statvfs(data_dir)
        free = st.f_bavail * st.f_frsize / 2**30
        low = free < min_free_gib
        out.append(
            finding(
                "free disk",
                "fail" if low else "ok",
                f"{free:.1f} GiB at {data_dir}",
                f"free space or move data_dir (need >= {min_free_gib:g} GiB)" if low else None,
            )
        )
    return out


def local_findings(
    data_dir: Path | None = None,
    device: dict | None = None,
    host: dict | None = None,
    tools: dict | None = None,
    min_free_gib: float = DEFAULT_MIN_FREE_GIB,
) -> list[dict]:
    host = host if host is not None else hoststate.host_state()
    tools = tools if tools is not None else hoststate.tool_versions()
    root = repo_root()
    return (
        tool_findings(tools)
        + kernel_findings(root)
        + scheduler_findings()
        + state_findings(host)
        + device_findings(data_dir, device, min_free_gib)
    )


def summary(name: str, findings: list[dict]) -> dict:
    return {
        "host": name,
        "ready": not any(f["status"] == "fail" for f in findings),
        "quiet": not any(f["status"] == "warn" for f in findings),
        "findings": findings,
    }


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
        return summary(host.name, [finding("ssh", "fail", f"no answer in {timeout:g} s", "check the host")])
    if proc.returncode == 255:
        reason = (proc.stderr.strip().splitlines() or ["ssh failed"])[-1]
        return summary(
            host.name, [finding("ssh", "fail", reason, "check that the host is up and the inventory's ssh settings")]
        )
    if proc.returncode == 3:
        return summary(
            host.name,
            [finding("corun checkout", "fail", f"none at {root}", "clone corun to the same path on the host")],
        )
    try:
        report = json.loads(proc.stdout)
        (entry,) = report["hosts"]
    except (ValueError, KeyError, TypeError):
        reason = (proc.stderr.strip().splitlines() or [f"exit {proc.returncode}"])[-1]
        return summary(
            host.name, [finding("corun doctor", "fail", reason, "run make setup on the host (corun's venv)")]
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
            path = Path(data_dir)
            path = path if path.is_absolute() else repo_root() / path
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
                    )
                )
                continue
            out.append(summary(h.name, local_findings(path, min_free_gib=min_free_gib)))
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
        state = ("ready" if r["ready"] else "NOT READY") + (", quiet" if r["quiet"] else ", not quiet")
        lines.append(f"{r['host']}: {state}")
    return "\n".join(line.rstrip() for line in lines)


def run(a) -> int:
    if a.min_free_gib < 0:
        raise ConfigError("command line", "--min-free-gib", a.min_free_gib, "a number of GiB >= 0")
    reports = check_hosts(a.hosts, a.inventory, a.group, a.data_dir, a.min_free_gib)
    ready = all(r["ready"] for r in reports)
    quiet = all(r["quiet"] for r in reports)
    if a.json:
        print(json.dumps({"ready": ready, "quiet": quiet, "hosts": reports}, indent=2, default=str))
    else:
        print(table(reports))
    bad = [r for r in reports if not r["ready"] or (a.strict and not r["quiet"])]
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

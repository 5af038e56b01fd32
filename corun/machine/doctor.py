"""Is this host ready (tools, kernels and variants built) and quiet? (`corun doctor`, corun.cli.doctor)

Each check is a finding {check, status, value, advice}. status is `ok`; `fail` (the host is
not ready: corun or an experiment would stop); `warn` (ready, but not quiet: measurements may
be noisy or unrepresentative); or `missing` (the host does not expose it, e.g. no cpufreq in a
VM: recorded with the reason, never guessed). The host state comes from corun.machine.host, the
same record every run stores; every run's metadata.json carries these findings under `doctor`.

The findings of this host are made here; the variants' builds by corun.run.schedulers
(build_findings), other hosts and the command by corun.cli.doctor.
"""

from __future__ import annotations

import os
from pathlib import Path

from corun.errors import CorunError
from corun.machine import block_device as devmod
from corun.machine import host as hoststate
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


def flagged(bad: bool, check: str, value, advice: str, status: str = "warn") -> dict:
    """`status` with `advice` where the setting is `bad`, else ok (and no advice)."""
    return finding(check, status if bad else "ok", value, advice if bad else None)


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
        out.append(flagged(turbo == "on", "turbo", turbo, "disable it (intel_pstate/no_turbo=1 or cpufreq/boost=0)"))
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
        flagged(
            swap, "swap", "active" if swap else "off", "turn it off (swapoff -a): memory-pressure runs would page to it"
        )
    )
    load = (host.get("loadavg") or [0.0])[0]
    out.append(flagged(load > 0.5, "load", round(load, 2), "other work is running: wait for it or stop it"))
    irq = host.get("irqbalance")
    out.append(flagged(irq == "running", "irqbalance", irq, "stop it during measurements (or ban the measured CPUs)"))
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
        advice = f"the experiments need {', '.join(lacking)}: ansible-playbook site.yml --tags corun_schedulers"
        out.append(flagged(bool(lacking), "elevator", value, advice, "fail"))
    if data_dir is not None:
        st = os.statvfs(data_dir)
        free = st.f_bavail * st.f_frsize / 2**30
        advice = f"free space or move data_dir (need >= {min_free_gib:g} GiB)"
        out.append(flagged(free < min_free_gib, "free disk", f"{free:.1f} GiB at {data_dir}", advice, "fail"))
    return out


def local_findings(
    data_dir: Path | None = None,
    device: dict | None = None,
    host: dict | None = None,
    tools: dict | None = None,
    min_free_gib: float = DEFAULT_MIN_FREE_GIB,
    builds: list[dict] | None = None,
) -> list[dict]:
    """This host's findings; `builds`: those of the scheduler variants' builds
    (corun.run.schedulers.build_findings), which the callers above this layer add."""
    host = host if host is not None else hoststate.host_state()
    tools = tools if tools is not None else hoststate.tool_versions()
    root = repo_root()
    return (
        tool_findings(tools)
        + kernel_findings(root)
        + (builds or [])
        + state_findings(host)
        + device_findings(data_dir, device, min_free_gib)
    )


def summary(name: str, findings: list[dict], quiet_checked: bool = True) -> dict:
    """A host's report; `quiet` is None when its quiet checks could not run (no answer over ssh,
    no checkout): an unreachable host is not quiet, nor known to be noisy."""
    return {
        "host": name,
        "ready": not any(f["status"] == "fail" for f in findings),
        "quiet": not any(f["status"] == "warn" for f in findings) if quiet_checked else None,
        "findings": findings,
    }

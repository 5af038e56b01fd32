"""Machine state stored with every run (and advice where the host looks untuned)."""

from __future__ import annotations

import functools
import subprocess
import sys
import time

from corun import __version__, upstream
from corun.machine.doctor import local_findings, summary
from corun.machine.host import (  # noqa: F401 - recorded here
    HWLOC_ARGV,
    TOOLS,
    cpu_model,
    host_state,
    hwloc_summary,
    tool_versions,
)
from corun.run.schedulers import build_findings
from corun.util import repo_root


@functools.lru_cache(maxsize=1)
def git_describe() -> str:
    try:
        res = subprocess.run(
            ["git", "-C", str(repo_root()), "describe", "--always", "--dirty", "--tags"],
            capture_output=True,
            text=True,
            timeout=10,
        )
        return res.stdout.strip() or "unknown"
    except (OSError, subprocess.TimeoutExpired):
        return "unknown"


def advice(host: dict, device: dict | None = None) -> list[str]:
    """pyperf-style hints on what may make measurements noisy or unrepresentative."""
    tips = []
    gov = host.get("governor") or {}
    bad = sorted({g for g in gov.values() if g != "performance"})
    if bad:
        tips.append(f"CPU frequency governor is {', '.join(bad)}: set 'performance' for stable timings")
    if not gov:
        tips.append("no cpufreq governor visible (VM or fixed frequency): frequency is not controlled by corun")
    if host.get("turbo") == "on":
        tips.append("turbo boost is on: runtimes depend on temperature and load; consider disabling it")
    if host.get("loadavg") and host["loadavg"][0] > 0.5:
        tips.append(f"load average {host['loadavg'][0]:.2f} at start: other work is running on this host")
    if host.get("swap_active"):
        tips.append("swap is active: memory-pressure experiments will page to it")
    if host.get("thp") and "[always]" in host["thp"]:
        tips.append("transparent huge pages = always: memory behaviour differs from the papers' machines")
    if host.get("irqbalance") == "running":
        tips.append("irqbalance is running: interrupt placement may change during the run")
    if host.get("virtualized"):
        tips.append("virtual machine: hardware counters and device timings reflect the hypervisor")
    if device and device.get("rotational") is False:
        tips.append(
            f"device {device.get('name')} is not rotational: I/O contention is weaker than on the papers' HDDs "
            "unless a cap emulates it"
        )
    return tips


def collect(device: dict | None = None) -> dict:
    """The host's state as every run records it (`corun metadata`)."""
    return with_device(collect_host(), device)


def collect_host(hwloc: bool = False) -> dict:
    """Everything but what depends on the run's device (with_device adds it); with `hwloc`, the
    hwloc summary too, lstopo running beside git. A run reads it in a thread while it sets the
    machine up."""
    lstopo = _start_lstopo() if hwloc else None
    doc = {
        "corun_version": __version__,
        "git_describe": git_describe(),
        "collected_epoch_s": time.time(),
        "host": host_state(),
        "tools": tool_versions(),
        # What the provisioning roles built from upstream sources, from which archive (name, file,
        # sha256, origin), or which stand-in runs instead (corun.upstream, docs/upstream.md).
        "upstream": upstream.provenance(),
        "python_executable": sys.executable,
    }
    if hwloc:
        doc["hwloc"] = _end_lstopo(lstopo)
    return doc


def with_device(doc: dict, device: dict | None) -> dict:
    """DOC (collect_host) with the advice and doctor's findings, the device's among them."""
    host, tools = doc["host"], doc["tools"]
    return {
        **doc,
        "advice": advice(host, device),
        # corun doctor's findings on this host (ready and quiet?), device checks on the run's device.
        "doctor": summary(
            host["hostname"], local_findings(device=device, host=host, tools=tools, builds=build_findings())
        ),
    }


def _start_lstopo() -> subprocess.Popen | None:
    try:
        return subprocess.Popen(
            HWLOC_ARGV, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
    except OSError:
        return None


def _end_lstopo(proc: subprocess.Popen | None) -> str | None:
    """hwloc_summary's result from a started lstopo."""
    if proc is None:
        return None
    try:
        out, _ = proc.communicate(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return None
    return out if proc.returncode == 0 else None

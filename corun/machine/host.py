"""The state of this host as every run records it: CPU, governors, turbo, services, swap, memory,
virtualisation, hwloc and the versions of the tools corun uses (corun.run.metadata stores it;
corun.machine.doctor judges it)."""

from __future__ import annotations

import functools
import json
import os
import platform
import shutil
import socket
import subprocess
from pathlib import Path

from corun.machine.state import state_dir
from corun.util import atomic_write_json, tool_version

TOOLS = {
    "iostat": ["iostat", "-V"],
    "pidstat": ["pidstat", "-V"],
    "perf": ["perf", "--version"],
    "fio": ["fio", "--version"],
    "lstopo": ["lstopo-no-graphics", "--version"],
    "gcc": ["gcc", "--version"],
    "x264": ["x264", "--version"],
    "mpirun": ["mpirun", "--version"],
}


def _read(path: str, default: str | None = None) -> str | None:
    try:
        return Path(path).read_text().strip()
    except OSError:
        return default


def _tool_stamp(argv: list[str]) -> list | None:
    """Path, size and mtime of a tool's executable: its version changes only with them."""
    path = shutil.which(argv[0])
    if path is None:
        return None
    st = os.stat(path)
    return [os.path.realpath(path), st.st_size, st.st_mtime_ns]


@functools.lru_cache(maxsize=1)
def tool_versions() -> dict:
    """The version of each tool in TOOLS (None: not installed). Asking 8 programs takes a few
    hundred ms; the answers are kept in the state folder (/run/corun/tool_versions.json) and
    asked again only for a tool whose executable changed."""
    cache_path = state_dir() / "tool_versions.json"
    try:
        cache = json.loads(cache_path.read_text())
    except (OSError, ValueError):
        cache = {}
    out, fresh = {}, {}
    for name, argv in TOOLS.items():
        stamp = _tool_stamp(argv)
        hit = cache.get(name)
        if stamp is not None and isinstance(hit, dict) and hit.get("stamp") == stamp:
            out[name] = hit["version"]
        else:
            v = tool_version(argv)
            if name in ("iostat", "pidstat") and v:
                v = v.split()[-1]
            out[name] = v
        fresh[name] = {"stamp": stamp, "version": out[name]}
    if fresh != cache:
        try:
            atomic_write_json(cache_path, fresh)
        except OSError:
            pass  # a cache only
    out["python"] = platform.python_version()
    return out


def cpu_model() -> str | None:
    for line in (_read("/proc/cpuinfo", "") or "").splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or None


def governors() -> dict:
    out = {}
    for f in sorted(Path("/sys/devices/system/cpu").glob("cpu[0-9]*/cpufreq/scaling_governor")):
        out[f.parent.parent.name] = f.read_text().strip()
    return out


def turbo() -> str | None:
    nt = _read("/sys/devices/system/cpu/intel_pstate/no_turbo")
    if nt is not None:
        return "off" if nt == "1" else "on"
    boost = _read("/sys/devices/system/cpu/cpufreq/boost")
    if boost is not None:
        return "on" if boost == "1" else "off"
    return None


def running(name: str) -> bool:
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            comm = _read(f"/proc/{d.name}/comm")
            if comm == name:
                return True
    return False


def swap_active() -> bool:
    lines = (_read("/proc/swaps", "") or "").splitlines()
    return len(lines) > 1


def virtualized() -> bool:
    return " hypervisor" in (_read("/proc/cpuinfo", "") or "")


# the aggregate "cpu" line of /proc/stat, in its order (steal from Linux 2.6.11 on)
CPU_FIELDS = ("user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal")


def cpu_ticks(text: str | None = None) -> dict | None:
    """All CPUs' cumulative time by kind, in clock ticks, from /proc/stat's "cpu" line (TEXT:
    that file's content; default: read it). None when the line is not there."""
    if text is None:
        text = _read("/proc/stat", "") or ""
    for line in text.splitlines():
        parts = line.split()
        if parts and parts[0] == "cpu":
            values = [int(v) for v in parts[1:]]
            return dict(zip(CPU_FIELDS, values))
    return None


def cpu_shares(before: dict | None, after: dict | None, interval_s: float) -> dict:
    """What the machine's CPUs did between two cpu_ticks() readings, in % of all CPUs' time:
    busy (user, nice, system, irq, softirq), iowait, idle and steal (time the VM's host gave
    to others while this VM wanted to run: noise no run can control). None where not known."""
    out = {
        "interval_s": round(interval_s, 3),
        "busy_pct": None,
        "iowait_pct": None,
        "idle_pct": None,
        "steal_pct": None,
    }
    if not before or not after:
        return {**out, "reason": "no cpu line in /proc/stat"}
    delta = {k: after[k] - before[k] for k in after if k in before}
    total = sum(delta.values())
    if total <= 0:
        return {**out, "reason": "no clock ticks passed between the two readings"}
    busy = sum(delta.get(k, 0) for k in ("user", "nice", "system", "irq", "softirq"))
    out.update(
        busy_pct=round(100 * busy / total, 2),
        iowait_pct=round(100 * delta.get("iowait", 0) / total, 2),
        idle_pct=round(100 * delta.get("idle", 0) / total, 2),
    )
    if "steal" in delta:
        out["steal_pct"] = round(100 * delta["steal"] / total, 2)
    else:
        out["reason"] = "/proc/stat has no steal column (kernel before 2.6.11)"
    return out


def pmem_devices() -> list[str]:
    """Persistent memory this machine exposes: /dev/pmem* (fsdax) and /dev/dax* (devdax)."""
    return sorted(str(p) for pattern in ("pmem*", "dax*") for p in Path("/dev").glob(pattern))


RFS_FLOW_TABLE = "/proc/sys/net/core/rps_sock_flow_entries"


def rfs_flow_table() -> bool:
    """Whether RFS's flow table can be set here: the kernel shows it in its initial network
    namespace only, so a host that is a namespace of another machine's kernel (the emulated
    testbed's nodes) has none, and source-aware steering (RFS) cannot run on it."""
    return Path(RFS_FLOW_TABLE).exists()


def _netdev_names(text: str) -> list[str]:
    """The interfaces /proc/net/dev lists (those of the reader's network namespace)."""
    names = []
    for line in text.splitlines()[2:]:
        name, sep, _ = line.partition(":")
        if sep and name.strip():
            names.append(name.strip())
    return names


def _interrupt_numbers(text: str) -> set[int]:
    """The numbered IRQs /proc/interrupts lists (NMI, LOC and the like are not a device's)."""
    out = set()
    for line in text.splitlines()[1:]:
        head = line.split(":", 1)[0].strip()
        if head.isdigit():
            out.add(int(head))
    return out


def _device_irqs(device: Path) -> set[int]:
    """The IRQs of a bus device: its MSI vectors (msi_irqs/) or its line (irq); a virtio device's
    are its PCI function's, one level up."""
    out: set[int] = set()
    for d in (device, device.parent) if device.name.startswith("virtio") else (device,):
        msi = d / "msi_irqs"
        if msi.is_dir():
            out |= {int(p.name) for p in msi.iterdir() if p.name.isdigit()}
        line = _read(str(d / "irq"))
        if line and line.isdigit() and int(line) > 0:
            out.add(int(line))
    return out


def physical_nics(root: str | Path = "/", index_of=socket.if_nametoindex) -> list[dict]:
    """The network interfaces of this network namespace that are devices with interrupts of their
    own: [{"name", "device", "irqs"}]. An interface counts when /sys/class/net/<name>/device is a
    bus device (a PCI NIC, a virtio NIC on PCI) and one of that device's IRQs is listed in
    /proc/interrupts; veth, lo, bridges, bonds, tun and ifb have no device and never count, so a
    node of the emulated testbed (veth links in a namespace) has none. /proc/net/dev names the
    namespace's interfaces; an entry of /sys/class/net whose ifindex is not the namespace's own
    (a sysfs mounted in another namespace) is left out. ROOT: the file system's root (tests)."""
    root = Path(root)
    names = _netdev_names(_read(str(root / "proc/net/dev"), "") or "")
    listed = _interrupt_numbers(_read(str(root / "proc/interrupts"), "") or "")
    out = []
    for name in names:
        entry = root / "sys/class/net" / name
        device = entry / "device"
        if not device.exists():
            continue
        index = _read(str(entry / "ifindex"))
        try:
            if index is not None and index_of is not None and int(index) != index_of(name):
                continue
        except (OSError, ValueError):
            continue
        real = device.resolve()
        irqs = sorted(_device_irqs(real) & listed)
        if irqs:
            out.append({"name": name, "device": real.name, "irqs": irqs})
    return out


def _ip_link(namespace: str | None, name: str) -> dict | str:
    """`ip -d -j link show NAME` (in NAMESPACE): the link's JSON object, or the error text."""
    argv = ["ip", *(["-n", namespace] if namespace else []), "-d", "-j", "link", "show", name]
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"ip failed: {exc}"
    if res.returncode != 0:
        return (res.stderr.strip().splitlines() or [f"ip exited {res.returncode}"])[0][:160]
    try:
        links = json.loads(res.stdout)
    except ValueError:
        return "ip: no JSON output"
    return links[0] if isinstance(links, list) and links and isinstance(links[0], dict) else "ip: no such link"


def steered_nics(interfaces: str, root: str | Path = "/", ip_link=_ip_link) -> list[dict]:
    """The interfaces a run steers (a scheduler's `interfaces`: IFACE or NETNS/IFACE, comma-
    separated), each as {"name", "kind", "device", "irqs"}: kind "physical" for a link on a bus
    device (ip's parentbus and parentdev) whose IRQs /proc/interrupts lists, else the link's own
    kind (veth, bridge, ...; "virtual" when it has none); kind None and an "error" when it could not
    be looked up. The device tree under /sys is the same in every network namespace, so a
    namespace's link is traced to its device from here. ROOT and IP_LINK: for tests."""
    root = Path(root)
    listed = _interrupt_numbers(_read(str(root / "proc/interrupts"), "") or "")
    out = []
    for spec in (x.strip() for x in interfaces.split(",")):
        if not spec:
            continue
        ns, _, name = spec.rpartition("/")
        link = ip_link(ns or None, name)
        if isinstance(link, str):
            out.append({"name": spec, "kind": None, "device": None, "irqs": [], "error": link})
            continue
        bus, dev = link.get("parentbus"), link.get("parentdev")
        kind = (link.get("linkinfo") or {}).get("info_kind") or ("device" if bus and dev else "virtual")
        irqs: list[int] = []
        if bus and dev:
            device = root / "sys/bus" / bus / "devices" / dev
            irqs = sorted(_device_irqs(device.resolve()) & listed) if device.exists() else []
            kind = "physical" if irqs else kind
        out.append({"name": spec, "kind": kind, "device": dev, "irqs": irqs})
    return out


@functools.lru_cache(maxsize=1)
def pmu() -> dict:
    """Whether perf can count hardware events here: {"supported": bool | None, "seen": text}.
    perf counts `instructions` of `true` once per kernel and perf binary (kept in the state folder
    beside the tool versions): a VM without a virtual PMU says "<not supported>"."""
    stamp = [os.uname().release, _tool_stamp(["perf"])]
    cache_path = state_dir() / "pmu.json"
    try:
        cached = json.loads(cache_path.read_text())
        if cached.get("stamp") == stamp:
            return cached["pmu"]
    except (OSError, ValueError, KeyError, AttributeError):
        pass
    if stamp[1] is None:
        out = {"supported": None, "seen": "perf not installed"}
    else:
        try:
            res = subprocess.run(
                ["perf", "stat", "-x", ",", "-e", "instructions", "true"], capture_output=True, text=True, timeout=20
            )
            text = res.stderr
        except (OSError, subprocess.TimeoutExpired) as exc:
            text = f"perf failed: {exc}"
        if "<not supported>" in text:
            out = {"supported": False, "seen": "perf: instructions <not supported> (no hardware counters)"}
        elif "<not counted>" in text or res.returncode != 0:
            line = next((x for x in text.splitlines() if x.strip()), "no output")
            out = {"supported": False, "seen": f"perf could not count instructions: {line[:120]}"}
        else:
            out = {"supported": True, "seen": "perf counts instructions"}
    try:
        atomic_write_json(cache_path, {"stamp": stamp, "pmu": out})
    except OSError:
        pass  # a cache only
    return out


def host_state() -> dict:
    u = os.uname()
    return {
        "hostname": u.nodename,
        "kernel_release": u.release,
        "kernel_version": u.version,
        "kernel_cmdline": _read("/proc/cmdline"),
        "machine": u.machine,
        "cpu_model": cpu_model(),
        "virtualized": virtualized(),
        "governor": governors() or None,
        "turbo": turbo(),
        "irqbalance": "running" if running("irqbalance") else "not running",
        "thp": _read("/sys/kernel/mm/transparent_hugepage/enabled"),
        "swap_active": swap_active(),
        "loadavg": list(os.getloadavg()),
        "perf_event_paranoid": _read("/proc/sys/kernel/perf_event_paranoid"),
        "aslr": _read("/proc/sys/kernel/randomize_va_space"),
        "psi": Path("/proc/pressure/io").exists(),
        "mem_total_kb": _meminfo().get("MemTotal"),
        "pmu": pmu(),
        "pmem": pmem_devices(),
        "rfs_flow_table": rfs_flow_table(),
        "physical_nics": physical_nics(),
    }


def _meminfo() -> dict:
    out = {}
    for line in (_read("/proc/meminfo", "") or "").splitlines():
        k, _, v = line.partition(":")
        parts = v.split()
        if parts:
            out[k] = int(parts[0])
    return out


HWLOC_ARGV = ["lstopo-no-graphics", "--of", "console", "--no-io"]


def hwloc_summary() -> str | None:
    try:
        res = subprocess.run(HWLOC_ARGV, capture_output=True, text=True, timeout=20)
        return res.stdout if res.returncode == 0 else None
    except (OSError, subprocess.TimeoutExpired):
        return None

"""Interrupt and packet steering policies of paper 004 (SAIs), shared by the irq_policy variants
irqbalance, spread, dedicated, source_aware and sais_mark (docs/schedulers/irq_steering.md).

    steer.py apply   --policy P --interfaces LIST --state FILE [options]
    steer.py verify  --policy P --interfaces LIST --state FILE [options]
    steer.py restore --state FILE
    steer.py snapshot                      per-CPU NET_RX softirqs and softnet_stat, as JSON
    steer.py where BEFORE AFTER            where receive processing ran between two snapshots
    steer.py limits                        the options' types and bounds, as JSON

`apply` checks every parameter first (a bad one: one line, exit 2, nothing changed), writes
every value it is about to change into the state file, then changes them. `verify` reads them
back (masks, sysctls, the daemon, the BPF programs) and exits 0 only when the policy is in
effect. `restore` puts the saved values back, ends the daemon it started and detaches the BPF
programs, newest change first; without a state file it does nothing. An interface is IFACE (this
network namespace) or NETNS/IFACE (read and written through `ip netns exec`).

sais_mark has a client half (--interfaces) and a server half (--server-interfaces); one apply
does either or both. On a testbed whose servers are other machines each is applied apart, with
its own state file: the client node's (`corun run`, through the manifest) as

    steer.py apply --policy sais_mark --interfaces eth0 --server-interfaces "" \
        --server-addresses 10.0.0.2,10.0.0.3 --state FILE

(the servers' IPv4 addresses or host names, which the client cannot read off their interfaces),
and each server's (the controller, over ssh) as

    steer.py apply --policy sais_mark --interfaces "" --server-interfaces eth0 \
        --server-addresses "" --state FILE

With both halves on one machine, --server-addresses is "" and the servers' addresses are those
of the server interfaces. --interfaces may be empty for sais_mark's server half only.

`--root DIR` resolves /proc and /sys under DIR, so the logic runs against a synthetic tree; a
NETNS/IFACE then lives under DIR/netns/NETNS/sys/class/net/IFACE.

The options the variants' params are passed to have no default here: every policy takes
--interfaces, dedicated --cpu, source_aware --flow-entries and sais_mark --server-interfaces and
--server-addresses, each required, and no policy takes another's (the manifests hold the one
default of each). LIMITS is their bounds; `steer.py limits` prints it
(tests/schedulers/test_variant_limits.py compares it with the manifests).

Exit codes: 0 ok, 1 runtime error or not in effect, 2 usage error, 4 skipped (a feature the
policy needs is missing; one line with the reason).
"""

from __future__ import annotations

import argparse
import ipaddress
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from corun.util import atomic_write_json, proc_ended, proc_starttime

POLICIES = ("irqbalance", "spread", "dedicated", "source_aware", "sais_mark")
EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_SKIPPED = 0, 1, 2, 4
HERE = Path(__file__).resolve().parent


class UsageError(Exception):
    pass


class Skipped(Exception):
    pass


class NotInEffect(Exception):
    pass


# ---- reading and writing kernel files, here or inside a network namespace ------------------


class Fs:
    def __init__(self, root: str = "/"):
        self.root = Path(root)
        self.synthetic = self.root != Path("/")

    def _local(self, ns: str | None, path: str) -> Path:
        rel = path.lstrip("/")
        if ns and self.synthetic:
            return self.root / "netns" / ns / rel
        return self.root / rel

    def read(self, ns: str | None, path: str) -> str:
        if ns and not self.synthetic:
            res = subprocess.run(["ip", "netns", "exec", ns, "cat", path], capture_output=True, text=True, check=False)
            if res.returncode != 0:
                raise OSError(f"{ns}:{path}: {res.stderr.strip()}")
            return res.stdout.strip()
        return self._local(ns, path).read_text().strip()

    def write(self, ns: str | None, path: str, value: str) -> None:
        if ns and not self.synthetic:
            res = subprocess.run(
                ["ip", "netns", "exec", ns, "sh", "-c", 'printf "%s\\n" "$1" > "$2"', "sh", value, path],
                capture_output=True,
                text=True,
                check=False,
            )
            if res.returncode != 0:
                raise OSError(f"{ns}:{path}: {res.stderr.strip()}")
            return
        with open(self._local(ns, path), "w") as f:
            f.write(value + "\n")

    def listdir(self, ns: str | None, path: str) -> list[str]:
        if ns and not self.synthetic:
            res = subprocess.run(
                ["ip", "netns", "exec", ns, "ls", "-1", path], capture_output=True, text=True, check=False
            )
            if res.returncode != 0:
                raise FileNotFoundError(f"{ns}:{path}")
            return res.stdout.split()
        return sorted(os.listdir(self._local(ns, path)))

    def exists(self, ns: str | None, path: str) -> bool:
        """Whether PATH (a file or a folder) is there."""
        if ns and not self.synthetic:
            try:
                self.listdir(ns, path)
                return True
            except FileNotFoundError:
                return False
        return self._local(ns, path).exists()


def parse_cpulist(text: str) -> list[int]:
    cpus: list[int] = []
    for part in text.strip().split(","):
        if not part:
            continue
        if "-" in part:
            a, b = part.split("-")
            cpus.extend(range(int(a), int(b) + 1))
        else:
            cpus.append(int(part))
    return cpus


def mask_of(cpus) -> int:
    m = 0
    for c in cpus:
        m |= 1 << c
    return m


def mask_text(mask: int) -> str:
    """A CPU mask as the kernel prints it: hex in 32-bit groups joined by commas."""
    words = []
    while True:
        words.append(f"{mask & 0xFFFFFFFF:08x}")
        mask >>= 32
        if not mask:
            break
    return ",".join(reversed(words))


def parse_mask(text: str) -> int:
    return int(text.replace(",", "").strip() or "0", 16)


def online_cpus(fs: Fs) -> list[int]:
    return parse_cpulist(fs.read(None, "/sys/devices/system/cpu/online"))


def pow2_at_least(n: int) -> int:
    p = 1
    while p < n:
        p <<= 1
    return p


# ---- parameters ------------------------------------------------------------------------------

NAME_RE = re.compile(r"^[A-Za-z0-9_.:@-]{1,15}$")
NS_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")


# The options the manifests' params are passed to, in JSON schema words, and the policies that
# take each (every policy takes --policy and --interfaces).
LIMITS = {
    "policy": {"type": "string", "enum": list(POLICIES)},
    "interfaces": {"type": "string"},
    "cpu": {"type": "integer", "minimum": 0},
    "flow-entries": {"type": "integer", "minimum": 1, "maximum": 1 << 20},
    "server-interfaces": {"type": "string"},
    "server-addresses": {"type": "string"},
}
TAKEN_BY = {
    "cpu": ("dedicated",),
    "flow-entries": ("source_aware",),
    "server-interfaces": ("sais_mark",),
    "server-addresses": ("sais_mark",),
}
MAX_SERVERS = 1024  # sais-mark-ctl's and the sais_servers map's
HOST_RE = re.compile(r"^[A-Za-z0-9_]([A-Za-z0-9_.-]{0,252})$")


def check_args(args) -> None:
    """The options of apply and verify against LIMITS and the policy: each option the policy
    takes given and within its bounds, no option of another policy. Raises UsageError."""
    if args.policy not in POLICIES:
        raise usage(args, "policy", args.policy, "one of " + ", ".join(POLICIES))
    if args.interfaces is None:
        raise UsageError("corun: steer.py: --interfaces: missing (expected a value: the manifest's)")
    for opt, policies in TAKEN_BY.items():
        value = getattr(args, opt.replace("-", "_"))
        if args.policy not in policies:
            if value is not None:
                raise UsageError(f"corun: steer.py: --{opt}: {value!r} (expected only with policy {policies[0]})")
            continue
        if value is None:
            raise UsageError(f"corun: steer.py: --{opt}: missing (expected a value with policy {args.policy})")
        lim = LIMITS[opt]
        if lim["type"] == "integer" and not (lim["minimum"] <= value <= lim.get("maximum", value)):
            bounds = f"from {lim['minimum']} to {lim['maximum']}" if "maximum" in lim else f">= {lim['minimum']}"
            raise usage(args, opt.replace("-", "_"), value, f"an integer {bounds}")


def err_source(args) -> str:
    return f"schedulers/{args.variant}/manifest.yaml" if args.variant else "schedulers/irq_steering"


def usage(args, key: str, value, expected: str) -> UsageError:
    shown = repr(value) if isinstance(value, str) else value
    return UsageError(f"corun: {err_source(args)}: params.{key}: {shown} (expected {expected})")


def parse_ifaces(args, key: str, text: str, fs: Fs) -> list[tuple[str | None, str]]:
    out = []
    items = [t.strip() for t in (text or "").split(",") if t.strip()]
    if not items:
        raise usage(args, key, text, "one or more network interfaces, [NETNS/]IFACE, comma-separated")
    for item in items:
        ns, _, name = item.rpartition("/")
        ns = ns or None
        if not NAME_RE.match(name) or (ns is not None and not NS_RE.match(ns)):
            raise usage(args, key, item, "[NETNS/]IFACE with an interface name of at most 15 characters")
        if not fs.exists(ns, f"/sys/class/net/{name}/queues"):
            raise usage(
                args, key, item, "an existing network interface" + (f" in network namespace {ns}" if ns else "")
            )
        out.append((ns, name))
    return out


def parse_addresses(args, text: str) -> list[str]:
    """--server-addresses: IPv4 addresses or host names resolved to IPv4 (every address a name
    has), comma-separated, in order, each once. Raises UsageError for an empty item or a name
    that does not resolve."""
    expected = "IPv4 addresses or host names that resolve to one, comma-separated"
    out: list[str] = []
    for item in (t.strip() for t in text.split(",")):
        if not item:
            raise usage(args, "server_addresses", text, expected)
        if re.fullmatch(r"[0-9.]+", item):  # a dotted quad, not getaddrinfo's 10.1 = 10.0.0.1
            try:
                found = [str(ipaddress.IPv4Address(item))]
            except ValueError:
                raise usage(args, "server_addresses", item, expected) from None
        else:
            try:
                infos = (
                    socket.getaddrinfo(item, None, socket.AF_INET, socket.SOCK_STREAM) if HOST_RE.match(item) else []
                )
            except (OSError, UnicodeError):
                infos = []
            if not infos:
                raise usage(args, "server_addresses", item, expected)
            found = [info[4][0] for info in infos]
        out += [a for a in found if a not in out]
    if len(out) > MAX_SERVERS:
        raise usage(args, "server_addresses", text, f"at most {MAX_SERVERS} IPv4 addresses")
    return out


def plan_mark(args, fs: Fs, out: dict) -> dict:
    """sais_mark's halves: the client's interfaces, the servers' interfaces and, for a client
    whose servers are other machines, their addresses. Raises UsageError."""
    client_text = (args.interfaces or "").strip()
    server_text = (args.server_interfaces or "").strip()
    addr_text = (args.server_addresses or "").strip()
    if not client_text and not server_text:
        raise usage(
            args,
            "interfaces",
            args.interfaces,
            "the client's interfaces, [NETNS/]IFACE, comma-separated; empty only for a server half, "
            "with server_interfaces set",
        )
    if server_text and addr_text:
        raise usage(
            args,
            "server_addresses",
            args.server_addresses,
            "'' with server_interfaces set: server_addresses is only for a client whose server "
            "interfaces are elsewhere",
        )
    if client_text and not server_text and not addr_text:
        raise usage(
            args,
            "server_interfaces",
            args.server_interfaces,
            "the servers' interfaces, [NETNS/]IFACE, comma-separated, or for a client whose servers "
            "are other machines their addresses in server_addresses",
        )
    out["client"] = parse_ifaces(args, "interfaces", client_text, fs) if client_text else []
    out["server"] = parse_ifaces(args, "server_interfaces", server_text, fs) if server_text else []
    # None: read from the server interfaces at apply (both halves here)
    out["server_addresses"] = parse_addresses(args, addr_text) if addr_text else None
    return out


def iface_label(ns: str | None, name: str) -> str:
    return f"{ns}/{name}" if ns else name


def rx_queues(fs: Fs, ns: str | None, name: str) -> list[str]:
    return [q for q in fs.listdir(ns, f"/sys/class/net/{name}/queues") if q.startswith("rx-")]


def nic_irqs(fs: Fs, ns: str | None, name: str) -> list[int]:
    """The hardware IRQs of an interface (MSI vectors of its PCI device); none for veth."""
    for rel in ("device/msi_irqs", "device/../msi_irqs"):
        path = f"/sys/class/net/{name}/{rel}"
        if fs.exists(ns, path):
            return sorted(int(x) for x in fs.listdir(ns, path) if x.isdigit())
    return []


# ---- the plan: every file a policy writes, with its new value --------------------------------


def plan(args, fs: Fs) -> dict:
    """What the policy changes: [(ns, path, value, compare)], plus daemon and BPF parts.
    Raises UsageError before anything is changed."""
    cpus = online_cpus(fs)
    all_mask = mask_of(cpus)
    writes: list[dict] = []
    out = {"policy": args.policy, "writes": writes, "cpus": cpus}
    check_args(args)
    if args.policy == "sais_mark":
        return plan_mark(args, fs, out)
    ifaces = parse_ifaces(args, "interfaces", args.interfaces, fs)
    out["interfaces"] = ifaces
    if args.policy == "dedicated" and args.cpu not in cpus:
        raise usage(args, "cpu", args.cpu, f"an online CPU ({','.join(map(str, cpus))})")

    def w(ns, path, value, kind):
        writes.append({"ns": ns, "path": path, "value": value, "kind": kind})

    for ns, name in ifaces:
        queues = rx_queues(fs, ns, name)
        if args.policy == "irqbalance":
            rps, flows = 0, 0  # no software steering: the daemon places the hardware IRQs
        elif args.policy == "spread":
            rps, flows = all_mask, 0
        elif args.policy == "dedicated":
            rps, flows = mask_of([args.cpu]), 0
        else:  # source_aware: RFS steers to the CPU of the consuming socket's last recvmsg
            rps = all_mask
            flows = pow2_at_least(max(1, args.flow_entries // max(1, len(queues))))
        for q in queues:
            base = f"/sys/class/net/{name}/queues/{q}"
            w(ns, f"{base}/rps_cpus", mask_text(rps), "mask")
            w(ns, f"{base}/rps_flow_cnt", str(flows), "int")
        if args.policy in ("dedicated", "spread"):
            irq_cpus = [args.cpu] if args.policy == "dedicated" else cpus
            for irq in nic_irqs(fs, ns, name):
                w(None, f"/proc/irq/{irq}/smp_affinity_list", ",".join(map(str, irq_cpus)), "irq")
    if args.policy == "source_aware":
        table = "/proc/sys/net/core/rps_sock_flow_entries"
        if not fs.exists(None, table):
            # kernel-wide, shown in the initial network namespace only: a node of an emulated
            # testbed (a namespace sharing its host's kernel) can neither set nor read it back
            raise Skipped(
                f"RFS's flow table {table} is not in this network namespace (the kernel shows it in the "
                "initial one only; a node that shares its host's kernel cannot set it)"
            )
        w(None, table, str(pow2_at_least(args.flow_entries)), "int")
    if args.policy == "irqbalance":
        exe = shutil.which(args.irqbalance_bin)
        if exe is None:
            raise Skipped(f"{args.irqbalance_bin} not installed (Debian package irqbalance)")
        out["irqbalance"] = exe
    return out


# ---- state ---------------------------------------------------------------------------------


def own_irqbalance(fs: Fs) -> list[int]:
    """The irqbalance processes running here (one that has exited and waits to be reaped, as the
    previous run's may for a second, is not running)."""
    if fs.synthetic:
        return []
    pids = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if (d / "comm").read_text().strip() == "irqbalance" and not proc_ended(
                    int(d.name), proc_starttime(int(d.name))
                ):
                    pids.append(int(d.name))
            except OSError:
                pass
    return pids


def cmd_apply(args) -> int:
    fs = Fs(args.root)
    state_path = Path(args.state)
    if state_path.exists():
        raise UsageError(
            f"corun: {state_path}: exists (expected no saved state: a previous apply was "
            "not restored; run restore first)"
        )
    p = plan(args, fs)
    if p["policy"] == "irqbalance":
        running = own_irqbalance(fs)
        if running:
            raise UsageError(
                f"corun: {err_source(args)}: irqbalance: pid {running[0]} "
                "(expected no irqbalance running before the run; stop it first)"
            )
    if p["policy"] == "sais_mark":
        from sais_mark import apply_mark

        return apply_mark(args, fs, p, state_path)
    saved = []
    for wr in p["writes"]:
        try:
            old = fs.read(wr["ns"], wr["path"])
        except OSError as exc:
            raise NotInEffect(f"cannot read {wr['path']}: {exc}") from None
        saved.append({**wr, "old": old})
    # irq affinity: the /proc/irq/*/smp_affinity_list of every IRQ, because irqbalance moves them all
    irq_saved = []
    if p["policy"] == "irqbalance" and not fs.synthetic:
        for d in sorted(Path("/proc/irq").iterdir(), key=lambda x: int(x.name) if x.name.isdigit() else -1):
            if d.name.isdigit():
                try:
                    irq_saved.append(
                        {
                            "ns": None,
                            "path": f"/proc/irq/{d.name}/smp_affinity_list",
                            "old": (d / "smp_affinity_list").read_text().strip(),
                            "kind": "irq",
                        }
                    )
                except OSError:
                    pass
    state = {
        "policy": p["policy"],
        "root": args.root,
        "saved": saved + irq_saved,
        "done": [],
        "skipped": [],
        "daemon": None,
        "time": time.time(),
    }
    atomic_write_json(state_path, state)
    for wr in saved:
        try:
            fs.write(wr["ns"], wr["path"], wr["value"])
        except OSError as exc:
            if wr["kind"] == "irq":  # a managed IRQ: the kernel owns its affinity
                state["skipped"].append({"path": wr["path"], "reason": str(exc).splitlines()[-1]})
                continue
            atomic_write_json(state_path, state)
            raise
        state["done"].append(wr["path"])
    if p["policy"] == "irqbalance":
        with open(state_path.with_suffix(".irqbalance.log"), "ab") as log:
            proc = subprocess.Popen(
                [p["irqbalance"], "--foreground"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
        state["daemon"] = {"pid": proc.pid, "starttime": proc_starttime(proc.pid), "exe": p["irqbalance"]}
        time.sleep(0.2)
        if proc.poll() is not None:
            atomic_write_json(state_path, state)
            raise NotInEffect(
                f"irqbalance exited at once with {proc.returncode} (see {state_path.with_suffix('.irqbalance.log')})"
            )
    atomic_write_json(state_path, state)
    return EXIT_OK


def cmd_verify(args) -> int:
    fs = Fs(args.root)
    p = plan(args, fs)
    state_path = Path(args.state)
    if p["policy"] == "sais_mark":
        from sais_mark import verify_mark

        return verify_mark(args, fs, p, state_path)
    state = json.loads(state_path.read_text()) if state_path.exists() else {"skipped": [], "daemon": None}
    skipped = {s["path"] for s in state.get("skipped", [])}
    for wr in p["writes"]:
        if wr["path"] in skipped:
            continue
        got = fs.read(wr["ns"], wr["path"])
        if wr["kind"] == "mask":
            ok = parse_mask(got) == parse_mask(wr["value"])
        elif wr["kind"] == "irq":
            ok = parse_cpulist(got) == parse_cpulist(wr["value"])
        else:
            ok = int(got) == int(wr["value"])
        if not ok:
            raise NotInEffect(
                f"{iface_label(wr['ns'], wr['path'])}: {got!r} (policy {p['policy']} wants {wr['value']!r})"
            )
    if p["policy"] == "irqbalance":
        d = state.get("daemon")
        if not d or proc_starttime(d["pid"]) != d["starttime"]:
            raise NotInEffect("irqbalance is not running")
    return EXIT_OK


def cmd_restore(args) -> int:
    state_path = Path(args.state)
    if not state_path.exists():
        return EXIT_OK
    state = json.loads(state_path.read_text())
    fs = Fs(state.get("root", "/"))
    errors = []
    d = state.get("daemon")
    if d and proc_starttime(d["pid"]) == d["starttime"]:
        try:
            os.kill(d["pid"], signal.SIGTERM)
        except ProcessLookupError:
            pass
        end = time.monotonic() + 5
        while time.monotonic() < end and not proc_ended(d["pid"], d["starttime"]):
            try:  # our child only when restore runs in the applying process (tests)
                os.waitpid(d["pid"], os.WNOHANG)
            except ChildProcessError:
                pass
            time.sleep(0.05)
        if not proc_ended(d["pid"], d["starttime"]):
            os.kill(d["pid"], signal.SIGKILL)
    if state.get("policy") == "sais_mark":
        from sais_mark import restore_mark

        errors += restore_mark(state, fs, state_path)
    skipped = {s["path"] for s in state.get("skipped", [])}
    for wr in reversed(state.get("saved", [])):
        if wr["path"] in skipped:
            continue
        try:
            fs.write(wr["ns"], wr["path"], wr["old"])
        except OSError as exc:
            if wr["kind"] == "irq":
                continue  # not writable now (managed, or gone): nothing was changed there
            if wr["ns"] and "Cannot open network namespace" in str(exc):
                continue  # the namespace is gone, and its settings with it
            errors.append(f"{wr['path']}: {exc}")
    if errors:
        print("steer.py restore: " + "; ".join(errors)[:900], file=sys.stderr)
        return EXIT_RUNTIME
    state_path.unlink()
    return EXIT_OK


# ---- where receive processing ran ----------------------------------------------------------


def snapshot(root: str = "/") -> dict:
    """Per-CPU NET_RX softirq counts (/proc/softirqs) and the processed column of
    /proc/net/softnet_stat (one row per online CPU, the CPU in column 13 where present)."""
    r = Path(root)
    net_rx: list[int] = []
    for line in (r / "proc/softirqs").read_text().splitlines():
        if line.split(":")[0].strip() == "NET_RX":
            net_rx = [int(x) for x in line.split(":", 1)[1].split()]
    processed: dict[int, int] = {}
    for i, line in enumerate((r / "proc/net/softnet_stat").read_text().splitlines()):
        cols = [int(x, 16) for x in line.split()]
        cpu = cols[12] if len(cols) > 12 else i
        processed[cpu] = cols[0]
    n = max(len(net_rx), max(processed, default=-1) + 1)
    return {
        "t": time.time(),
        "net_rx": net_rx + [0] * (n - len(net_rx)),
        "softnet_processed": [processed.get(c, 0) for c in range(n)],
    }


def where(before: dict, after: dict) -> dict:
    """Per-CPU deltas of both counters, each CPU's share, and the CPU with most of each."""
    out = {"interval_s": after["t"] - before["t"]}
    for key in ("net_rx", "softnet_processed"):
        delta = [a - b for a, b in zip(after[key], before[key])]
        total = sum(delta)
        out[key] = {
            "per_cpu": delta,
            "total": total,
            "share": [d / total if total else 0.0 for d in delta],
            "top_cpu": max(range(len(delta)), key=lambda c: delta[c]) if total else None,
        }
    return out


# ---- command line --------------------------------------------------------------------------


class _Parser(argparse.ArgumentParser):
    def error(self, message):
        raise UsageError(f"corun: steer.py: {message}")


def build_parser() -> argparse.ArgumentParser:
    ap = _Parser(prog="steer.py", description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True, parser_class=_Parser)
    for name in ("apply", "verify"):
        s = sub.add_parser(name)
        s.add_argument("--policy", required=True)
        s.add_argument("--interfaces")
        s.add_argument("--server-interfaces")
        s.add_argument("--server-addresses")
        s.add_argument("--cpu", type=int)
        s.add_argument("--flow-entries", type=int)
        s.add_argument("--irqbalance-bin", default="irqbalance")
        s.add_argument("--bpf-dir", default=str(HERE / "build"))
        s.add_argument("--state", required=True)
        s.add_argument("--variant", default="")
        s.add_argument("--root", default="/")
    s = sub.add_parser("restore")
    s.add_argument("--state", required=True)
    s = sub.add_parser("snapshot")
    s.add_argument("--root", default="/")
    s = sub.add_parser("where")
    s.add_argument("before")
    s.add_argument("after")
    sub.add_parser("limits")
    return ap


def main(argv: list[str] | None = None) -> int:
    sys.path.insert(0, str(HERE))
    sys.modules.setdefault("steer", sys.modules[__name__])  # sais_mark.py shares these classes
    try:
        args = build_parser().parse_args(argv)
        if args.cmd == "apply":
            return cmd_apply(args)
        if args.cmd == "verify":
            return cmd_verify(args)
        if args.cmd == "restore":
            return cmd_restore(args)
        if args.cmd == "limits":
            print(json.dumps(LIMITS))
            return EXIT_OK
        if args.cmd == "snapshot":
            print(json.dumps(snapshot(args.root)))
            return EXIT_OK
        print(
            json.dumps(
                where(json.loads(Path(args.before).read_text()), json.loads(Path(args.after).read_text())), indent=1
            )
        )
        return EXIT_OK
    except UsageError as exc:
        print(str(exc).splitlines()[0], file=sys.stderr)
        return EXIT_USAGE
    except Skipped as exc:
        print(f"skipped: feature missing: {exc}", file=sys.stderr)
        return EXIT_SKIPPED
    except NotInEffect as exc:
        print(f"steer.py: not in effect: {exc}", file=sys.stderr)
        return EXIT_RUNTIME
    except OSError as exc:
        print(f"steer.py: {exc}", file=sys.stderr)
        return EXIT_RUNTIME


if __name__ == "__main__":
    sys.exit(main())

"""steer.py's outcomes, parameters and plan (docs/schedulers/irq_steering.md): the exit codes and
the exceptions that end in them, the options' bounds (LIMITS, TAKEN_BY) and their checks, and the
plan of every file a policy writes with its new value, made before anything is changed."""

from __future__ import annotations

import ipaddress
import re
import shutil
import socket

from steer_sysfs import Fs, mask_of, mask_text, nic_irqs, online_cpus, pow2_at_least, rx_queues

POLICIES = ("irqbalance", "spread", "dedicated", "source_aware", "sais_mark")
EXIT_OK, EXIT_RUNTIME, EXIT_USAGE, EXIT_SKIPPED = 0, 1, 2, 4


class UsageError(Exception):
    pass


class Skipped(Exception):
    pass


class NotInEffect(Exception):
    pass


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

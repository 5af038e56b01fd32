"""The sais_mark policy of steer.py: the paper's mark carried in the IPv4 DSCP field by BPF
programs (bpf/sais_mark.bpf.c), attached and detached by build/sais-mark-ctl.

Client interfaces (`--interfaces`): tc egress stamps the sending CPU into requests to a server;
XDP sends each marked reply from a server to the CPU map entry of its mark. The servers are the
IPv4 addresses of the server interfaces, read when the policy is applied, or, for a client whose
servers are other machines, `--server-addresses` (addresses or host names, resolved by steer.py):
packets to anywhere else go out unstamped, and packets from anywhere else pass unsteered whatever
their DSCP (ssh marks its packets too). Server interfaces (`--server-interfaces`):
tc ingress records each flow's mark, tc egress writes it into the flow's replies.

The two halves are applied together (both interfaces on this machine) or apart, each with its
own state file: a client half (`--server-interfaces ""`, the servers' addresses given) on the
client node, a server half (`--interfaces ""`) on each server node; the state records what was
attached, so verify and restore act on that half alone. The programs
count what they did (stamped, recorded, reflected, steered, foreign); verify and restore write the
counts of the half's interfaces into sais_mark_counters.json beside the state file (the run's
sched/state/; a server half's holds the recorded and reflected marks), and verify fails once
requests were stamped but no reply came back steered (a client half's check). A packet
redirected through the CPU map loses the checksum state the driver gave it, so the stack checks
the TCP checksum in software; on veth the sender never computed it (offloaded), so transmit
checksumming is switched off on the server interfaces (saved and restored). A step the kernel
refuses ends apply with exit 4 and the reason, after undoing what was done.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from steer import EXIT_OK, NotInEffect, Skipped, iface_label, usage

from corun.util import atomic_write_json


def _ctl(args_bpf_dir: str) -> tuple[Path, Path]:
    d = Path(args_bpf_dir)
    ctl, obj = d / "sais-mark-ctl", d / "sais_mark.bpf.o"
    if not ctl.exists() or not obj.exists():
        raise Skipped(
            f"{ctl.name} or {obj.name} not built in {d} (make -C schedulers/irq_steering; "
            "needs clang and libbpf-dev, role irq_steering)"
        )
    return ctl, obj


def _run(argv: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False)


def _ns_argv(ns: str | None, argv: list[str]) -> list[str]:
    return ["ip", "netns", "exec", ns, *argv] if ns else argv


def _tx_csum(ns: str | None, iface: str) -> str:
    res = _run(_ns_argv(ns, ["ethtool", "-k", iface]))
    if res.returncode != 0:
        raise Skipped(f"ethtool -k {iface_label(ns, iface)}: {res.stderr.strip() or 'failed'}")
    for line in res.stdout.splitlines():
        if line.startswith("tx-checksumming:"):
            return line.split(":", 1)[1].split()[0]
    raise Skipped(f"{iface_label(ns, iface)}: ethtool shows no tx-checksumming")


def _set_tx_csum(ns: str | None, iface: str, value: str) -> None:
    res = _run(_ns_argv(ns, ["ethtool", "-K", iface, "tx", value]))
    if res.returncode != 0:
        raise Skipped(f"ethtool -K {iface_label(ns, iface)} tx {value}: {res.stderr.strip()}")


def server_addresses(args, servers: list) -> list[str]:
    """The IPv4 addresses of the server interfaces; a usage error for one without any."""
    out: list[str] = []
    for ns, iface in servers:
        res = _run(_ns_argv(ns, ["ip", "-j", "-4", "addr", "show", "dev", iface]))
        if res.returncode != 0:
            raise Skipped(f"ip addr show {iface_label(ns, iface)}: {res.stderr.strip() or 'failed'}")
        found = [a["local"] for link in json.loads(res.stdout or "[]") for a in link.get("addr_info", [])]
        if not found:
            raise usage(args, "server_interfaces", iface_label(ns, iface), "an interface with an IPv4 address")
        out += [a for a in found if a not in out]
    return out


def _status(ctl: Path, ns: str | None, iface: str) -> dict:
    argv = [str(ctl), "status", "--iface", iface] + (["--netns", ns] if ns else [])
    res = _run(argv)
    if res.returncode != 0:
        raise NotInEffect(f"{iface_label(ns, iface)}: {res.stderr.strip()}")
    return json.loads(res.stdout)


COUNTERS_FILE = "sais_mark_counters.json"  # beside the state file: the run's sched/state/
COUNTERS = ("stamped", "recorded", "reflected", "steered", "foreign")


def read_counters(ctl: Path, attached: list[dict]) -> dict:
    """The programs' counters on every attached interface and their totals: requests stamped
    (clients), marks recorded and reflected (servers), replies steered and marked packets from
    elsewhere (clients). An interface whose programs are gone counts nothing and says why."""
    totals = dict.fromkeys(COUNTERS, 0)
    rows = []
    for a in attached:
        row = {"iface": iface_label(a["ns"], a["iface"]), "role": a["role"]}
        try:
            st = _status(ctl, a["ns"], a["iface"]).get("stats")
        except (NotInEffect, ValueError) as exc:
            st, row["error"] = None, str(exc)
        if st:
            row.update({k: int(st[k]) for k in COUNTERS})
            for k in COUNTERS:
                totals[k] += int(st[k])
        else:
            row.setdefault("error", "no counters (programs not attached)")
        rows.append(row)
    return {"totals": totals, "interfaces": rows}


def save_counters(state: dict, state_path: Path) -> dict | None:
    """Read the counters and write them beside the state file; None when nothing is attached."""
    if not state.get("attached") or not state.get("ctl"):
        return None
    doc = read_counters(Path(state["ctl"]), state["attached"])
    atomic_write_json(state_path.parent / COUNTERS_FILE, doc)
    return doc


def apply_mark(args, fs, p: dict, state_path: Path) -> int:
    if fs.synthetic:
        raise Skipped("BPF programs cannot be attached to a synthetic tree")
    ctl, obj = _ctl(args.bpf_dir)
    for tool in ["ethtool", "ip"] if p["server"] else ["ip"]:  # a client half leaves checksumming alone
        if _run(["sh", "-c", f"command -v {tool}"]).returncode != 0:
            raise Skipped(f"{tool} not installed")
    if not p["client"]:
        addresses = []  # a server half: its programs reflect whatever mark comes in
    elif p["server_addresses"] is not None:
        addresses = p["server_addresses"]  # a client half whose servers are other machines
    else:
        addresses = server_addresses(args, p["server"])
    state = {
        "policy": "sais_mark",
        "root": "/",
        "ctl": str(ctl),
        "saved": [],
        "skipped": [],
        "daemon": None,
        "ethtool": [],
        "attached": [],
        "server_addresses": addresses,
    }
    for ns, iface in p["server"]:
        state["ethtool"].append({"ns": ns, "iface": iface, "old": _tx_csum(ns, iface)})
    atomic_write_json(state_path, state)
    try:
        for e in state["ethtool"]:
            _set_tx_csum(e["ns"], e["iface"], "off")
        for role, ifaces in (("server", p["server"]), ("client", p["client"])):
            for ns, iface in ifaces:
                state["attached"].append({"ns": ns, "iface": iface, "role": role})
                atomic_write_json(state_path, state)
                argv = [str(ctl), role, "--obj", str(obj), "--iface", iface] + (["--netns", ns] if ns else [])
                if role == "client":
                    argv += [x for a in state["server_addresses"] for x in ("--server", a)]
                res = _run(argv)
                if '"clsact_created": true' in res.stdout:
                    state["attached"][-1]["clsact_created"] = True
                    atomic_write_json(state_path, state)
                if res.returncode != 0:
                    reason = (res.stderr.strip().splitlines() or ["failed"])[-1]
                    raise Skipped(f"{iface_label(ns, iface)}: {reason.removeprefix('skipped: feature missing: ')}")
    except Skipped as exc:
        restore_mark(state, fs)
        state.update(ethtool=[], attached=[], skipped_reason=str(exc))
        atomic_write_json(state_path, state)
        raise
    atomic_write_json(state_path, state)
    return EXIT_OK


def verify_mark(args, fs, p: dict, state_path: Path) -> int:
    state = json.loads(state_path.read_text()) if state_path.exists() else {}
    if state.get("skipped_reason"):
        raise Skipped(state["skipped_reason"])
    if fs.synthetic:
        raise Skipped("BPF programs cannot be attached to a synthetic tree")
    ctl, _ = _ctl(args.bpf_dir)
    for ns, iface in p["client"]:
        st = _status(ctl, ns, iface)
        if not st["xdp"] or not st["tc_egress"]:
            raise NotInEffect(f"{iface_label(ns, iface)}: XDP steer or tc egress stamp missing ({st})")
        want = len(state.get("server_addresses", []))
        if st.get("servers") != want:
            raise NotInEffect(f"{iface_label(ns, iface)}: {st.get('servers')} server addresses steered, {want} applied")
    for ns, iface in p["server"]:
        st = _status(ctl, ns, iface)
        if not st["tc_ingress"] or not st["tc_egress"]:
            raise NotInEffect(f"{iface_label(ns, iface)}: tc record or reflect program missing ({st})")
        if _tx_csum(ns, iface) != "off":
            raise NotInEffect(f"{iface_label(ns, iface)}: tx-checksumming is on")
    # the mark at work: once requests went out stamped, replies came back steered
    t = (save_counters(state, state_path) or {}).get("totals") or {}
    if t.get("stamped", 0) > 0 and t.get("steered", 0) == 0:
        raise NotInEffect(
            f"{t['stamped']} requests stamped, {t.get('recorded', 0)} marks recorded, "
            f"{t.get('reflected', 0)} reflected, no reply steered"
        )
    return EXIT_OK


def restore_mark(state: dict, fs, state_path: Path | None = None) -> list[str]:
    """Detach everything apply attached, newest first; with state_path, the counters are read
    and written beside it first (the run's record that its replies were steered)."""
    errors = []
    ctl = state.get("ctl")
    if state_path is not None:
        try:
            save_counters(state, state_path)
        except OSError as exc:
            errors.append(f"sais_mark counters: {exc}")
    for a in reversed(state.get("attached", [])):
        argv = (
            [ctl, "detach", "--iface", a["iface"]]
            + (["--netns", a["ns"]] if a["ns"] else [])
            + (["--remove-clsact"] if a.get("clsact_created") else [])
        )
        res = _run(argv)
        if res.returncode != 0 and "network namespace" not in res.stderr and "interface" not in res.stderr:
            errors.append(f"detach {iface_label(a['ns'], a['iface'])}: {res.stderr.strip()}")
    for e in reversed(state.get("ethtool", [])):
        try:
            _set_tx_csum(e["ns"], e["iface"], e["old"])
        except Skipped as exc:
            if "Cannot open network namespace" not in str(exc) and "No such device" not in str(exc):
                errors.append(str(exc))
    return errors

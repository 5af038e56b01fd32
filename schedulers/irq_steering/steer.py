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

The parts live beside this file: steer_sysfs.py (the kernel's files, here or in a namespace; CPU
lists and masks), steer_plan.py (exit codes, exceptions, the options' checks and the plan of what
a policy writes), steer_where.py (snapshot and where), sais_mark.py (the sais_mark policy). This
file holds the commands and keeps the parts' names importable as `steer.NAME`.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # the parts beside this file, however it was loaded
    sys.path.insert(0, str(HERE))

from steer_plan import (  # noqa: E402
    EXIT_OK,
    EXIT_RUNTIME,
    EXIT_SKIPPED,
    EXIT_USAGE,
    HOST_RE,
    LIMITS,
    MAX_SERVERS,
    NAME_RE,
    NS_RE,
    POLICIES,
    TAKEN_BY,
    NotInEffect,
    Skipped,
    UsageError,
    check_args,
    err_source,
    parse_addresses,
    parse_ifaces,
    plan,
    plan_mark,
    usage,
)
from steer_sysfs import (  # noqa: E402
    Fs,
    iface_label,
    mask_of,
    mask_text,
    nic_irqs,
    online_cpus,
    parse_cpulist,
    parse_mask,
    pow2_at_least,
    rx_queues,
)
from steer_where import snapshot, where  # noqa: E402

from corun.util import atomic_write_json, proc_ended, proc_starttime  # noqa: E402

# The parts' names, importable from here (sais_mark.py, the tests, steer.NAME).
__all__ = [
    "EXIT_OK", "EXIT_RUNTIME", "EXIT_SKIPPED", "EXIT_USAGE", "HOST_RE", "LIMITS", "MAX_SERVERS", "NAME_RE",
    "NS_RE", "POLICIES", "TAKEN_BY", "Fs", "NotInEffect", "Skipped", "UsageError", "atomic_write_json",
    "build_parser", "check_args", "cmd_apply", "cmd_restore", "cmd_verify", "err_source", "iface_label",
    "main", "mask_of", "mask_text", "nic_irqs", "online_cpus", "own_irqbalance", "parse_addresses",
    "parse_cpulist", "parse_ifaces", "parse_mask", "plan", "plan_mark", "pow2_at_least", "proc_ended",
    "proc_starttime", "rx_queues", "snapshot", "usage", "where",
]  # fmt: skip


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

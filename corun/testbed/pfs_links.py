"""The parallel file system's links (corun.testbed.pfs): token-bucket shaping to the
configured rates, and what is shaped."""

from __future__ import annotations

import json
import shlex
import subprocess

from corun.testbed.pfs_config import TBF_LATENCY, Deployment

# ---- links ---------------------------------------------------------------------------------


def _tbf_args(rate_mbit: int) -> list[str]:
    # The bucket holds 4 ms at the rate, and never less than two 64 KiB GSO packets.
    burst = max(rate_mbit * 1_000_000 // 8 * 4 // 1000, 2 * 65536 + 3000)
    return ["tbf", "rate", f"{rate_mbit}mbit", "burst", str(burst), "latency", TBF_LATENCY]


def _link_summary(fs: Deployment) -> dict:
    ln = fs.cfg["link"]
    shaped = bool(ln["shape"] and fs.links)
    return {
        "shaped": shaped,
        "server_rate_mbit": ln["rate_mbit"] if shaped else None,
        "client_rate_mbit": ln["rate_mbit"] * ln["client_links"] if shaped else None,
        "client_links": ln["client_links"],
        "note": None
        if shaped
        else (
            "links not shaped: link.shape is false"
            if not ln["shape"]
            else "links not shaped: the hosts are not a netns cluster"
        ),
    }


def qdiscs(fs: Deployment) -> list[tuple[str | None, str, int]]:
    """(namespace or None for the root one, device, rate) of every shaped link end."""
    if not (fs.cfg["link"]["shape"] and fs.links):
        return []
    rate = fs.cfg["link"]["rate_mbit"]
    out = []
    hosts = {h.name: (h, rate * fs.cfg["link"]["client_links"]) for h in fs.clients}
    for s in fs.servers:
        hosts.setdefault(s.host.name, (s.host, rate))
    for h, r in hosts.values():
        e = fs.links[h.name]
        out.append((e["netns"], "eth0", r))  # what the host sends
        out.append((None, e["veth"], r))  # what the host receives (the bridge's side)
    return out


def _tc(ns: str | None) -> list[str]:
    return ["tc", "-n", ns] if ns else ["tc"]


def qdisc_undo_argv(ns: str | None, dev: str) -> list[str]:
    tc = shlex.join(_tc(ns))
    script = (
        f"if {tc} qdisc show dev {shlex.quote(dev)} root 2>/dev/null | grep -q '^qdisc tbf'; "
        f"then {tc} qdisc del dev {shlex.quote(dev)} root; fi"
    )
    return ["sh", "-c", script]


def shaped_rate_mbit(ns: str | None, dev: str) -> int | None:
    res = subprocess.run(_tc(ns) + ["-j", "qdisc", "show", "dev", dev, "root"], capture_output=True, text=True)
    try:
        for q in json.loads(res.stdout or "[]"):
            if q.get("kind") == "tbf":
                return round(q["options"]["rate"] * 8 / 1_000_000)
    except (ValueError, KeyError, TypeError):
        pass
    return None

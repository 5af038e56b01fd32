"""What the machine that ran (or would run) an experiment has, for the claims' declared needs
(analysis.verdicts.Machine): every need word claims.yaml accepts: SMT, NUMA nodes, sockets, CMPs,
CPUs, a PMU perf can use, persistent memory, RFS's flow table, physical NICs with their own
interrupts, hosts.

From the runs' metadata.json when there are runs (`topology`, `host.pmu`, `host.pmem`,
`host.rfs_flow_table`, `host.physical_nics`, a cluster's `hosts`); from this machine
itself when there are none, so a claim whose need is missing is "not measurable here" before
anything runs. A fact a run did not record is None ("not recorded"), never guessed.
"""

from __future__ import annotations

import json
from pathlib import Path

from analysis.verdicts import Machine
from corun.machine import host, topology


def _load(path: Path) -> dict | None:
    try:
        doc = json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def from_metadata(metas: list[dict]) -> Machine:
    """The machine described by the runs' metadata (the smallest one where they differ: a claim
    needs every run to have had it)."""
    facts: dict = {}
    seen: dict = {}
    topo = [m.get("topology") or (m.get("host") or {}).get("topology") for m in metas]
    topo = [t for t in topo if isinstance(t, dict)]
    if topo:
        smt = [bool(t.get("smt")) for t in topo if t.get("smt") is not None]
        if smt:
            facts["smt"] = all(smt)
            seen["smt"] = "SMT" if all(smt) else "one hardware thread per core"
        numa = [int(t["numa_nodes"]) for t in topo if t.get("numa_nodes") is not None]
        if numa:
            facts["numa_nodes"] = min(numa)
            seen["numa_nodes"] = f"{min(numa)} NUMA node{'s' if min(numa) != 1 else ''}"
        cmps = [len(t["cmps"]) for t in topo if isinstance(t.get("cmps"), list)]
        if cmps:
            facts["cmps"] = min(cmps)
            seen["cmps"] = f"{min(cmps)} CMPs"
        sockets = [int(t["sockets"]) for t in topo if t.get("sockets") is not None]
        if sockets:
            facts["sockets"] = min(sockets)
            seen["sockets"] = f"{min(sockets)} socket{'s' if min(sockets) != 1 else ''}"
        cpus = [int(t["cpus"]) for t in topo if t.get("cpus") is not None]
        if cpus:
            facts["cpus"] = min(cpus)
            seen["cpus"] = f"{min(cpus)} CPUs"
    pmus = [(m.get("host") or {}).get("pmu") for m in metas]
    pmus = [p for p in pmus if isinstance(p, dict) and p.get("supported") is not None]
    if pmus:
        ok = all(p["supported"] for p in pmus)
        facts["pmu"] = ok
        seen["pmu"] = next((p["seen"] for p in pmus if not p["supported"]), pmus[0]["seen"])
    pmem = [(m.get("host") or {}).get("pmem") for m in metas]
    pmem = [p for p in pmem if isinstance(p, list)]
    if pmem:
        facts["pmem"] = all(bool(p) for p in pmem)
        seen["pmem"] = "persistent memory" if facts["pmem"] else "no /dev/pmem* or /dev/dax* device"
    rfs = [(m.get("host") or {}).get("rfs_flow_table") for m in metas]
    rfs = [r for r in rfs if isinstance(r, bool)]
    if rfs:
        facts["rfs_flow_table"] = all(rfs)
        seen["rfs_flow_table"] = (
            "in the runs' network namespace" if all(rfs) else f"no {host.RFS_FLOW_TABLE} in a run's network namespace"
        )
    nics = [_nics(m) for m in metas]
    nics = [n for n in nics if n is not None]
    if nics:
        facts["physical_nics"] = all(bool(n) for n in nics)
        if facts["physical_nics"]:
            names = sorted({x.get("name", "?") for n in nics if isinstance(n, list) for x in n})
            seen["physical_nics"] = "NICs with their own interrupts" + (f" ({', '.join(names)})" if names else "")
        else:
            seen["physical_nics"] = "no NIC with its own interrupts where a run ran (veth links, lo, bridges have none)"
    # every run must have had the hosts too: the fewest of any run (one, for a run without a cluster)
    hosts = [len((m.get("cluster") or {}).get("hosts") or []) or 1 for m in metas if "run_id" in m or "cluster" in m]
    if hosts:
        facts["hosts"] = min(hosts)
        seen["hosts"] = "one host" if min(hosts) == 1 else f"{min(hosts)} hosts in each run's cluster"
    return Machine(facts, seen)


def _nics(meta: dict):
    """A run's host.physical_nics: the list of NICs with interrupts (corun.machine.host), or a bool;
    None when the run did not record it. A run whose steering policy (an irq_policy scheduler)
    names the interfaces it steers counts only the NICs among them: an interface named inside a
    network namespace (`<netns>/<if>`, a netns cluster's node) is a veth end, never the host's NIC,
    so runs whose jobs read through a netns cluster on a host that has a NIC have none. A run that
    traced the interfaces it steers to their devices (steered_nics) has NICs only when every one of
    them has interrupts of its own."""
    traced = meta.get("steered_nics")  # corun.machine.host.steered_nics, recorded by the run
    if isinstance(traced, list) and traced:
        if any(n.get("kind") is None for n in traced):
            return None  # an interface the run could not look up: not recorded
        return list(traced) if all(n.get("irqs") for n in traced) else []
    v = (meta.get("host") or {}).get("physical_nics")
    if not isinstance(v, (list, bool)):
        return None
    sched = meta.get("scheduler") or {}
    steered = (sched.get("params") or {}).get("interfaces") if sched.get("kind") == "irq_policy" else None
    if isinstance(v, list) and isinstance(steered, str) and steered.strip():
        names = {x.strip() for x in steered.split(",") if x.strip() and "/" not in x}
        return [n for n in v if n.get("name") in names]
    return v


def from_metadata_files(paths: list[Path]) -> Machine:
    return from_metadata([m for m in (_load(p) for p in paths) if m is not None])


def here() -> Machine:
    """This machine, for claims judged before (or without) runs."""
    t = topology.discover()
    desc = {
        "topology": t.as_dict(),
        "host": {
            "pmu": host.pmu(),
            "pmem": host.pmem_devices(),
            "rfs_flow_table": host.rfs_flow_table(),
            "physical_nics": host.physical_nics(),
        },
    }
    m = from_metadata([desc])
    m.facts.pop("hosts", None)  # a cluster is brought up by the runs (a netns cluster, an inventory)
    m.seen.pop("hosts", None)
    return m

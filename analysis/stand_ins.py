"""Which of a claim's stand-ins the runs behind its row used.

A claim declares the emulations its evidence may rest on (claims.yaml `stand_ins:`, words of
analysis/schemas/stand_ins.yaml); the row names only those the runs it was judged on used, read
from each run's metadata.json by one predicate per word below: True (the run used it), False (it
did not: a real device, a cluster of real hosts, the upstream program), None (the run did not
record it). A word is named when a run used it, or when no run says it did not (not recorded:
the claim may rest on it); a word without a predicate (corun has no other way to run it) is named
whenever declared.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable


def _labels(meta: dict) -> dict:
    return meta.get("labels") or (meta.get("spec") or {}).get("labels") or {}


def _jobs(meta: dict) -> list[dict]:
    return [j.get("labels") or {} for j in (meta.get("spec") or {}).get("jobs") or [] if isinstance(j, dict)]


def emulated_disk(meta: dict) -> bool | None:
    """The run's device (device_kind) or its servers' disks (label `disk`) an emulated rotating disk."""
    kinds = [k for k in (meta.get("device_kind"), _labels(meta).get("disk")) if k]
    return "rotating_disk" in kinds if kinds else None


def cores_as_cmps(meta: dict) -> bool | None:
    """More CMPs than sockets: some CMPs are cores of one chip."""
    topo = meta.get("topology") or {}
    cmps, sockets = topo.get("cmps"), topo.get("sockets")
    if not isinstance(cmps, list) or not isinstance(sockets, int):
        return None
    return len(cmps) > sockets


def netns_links(meta: dict) -> bool | None:
    """Hosts joined by veth links: a host of the run's file-system group that is a network
    namespace of this machine (`pfs_group.hosts[].netns`, corun.testbed.pfs_runs: a netns
    cluster's host or an emulated node, not a real testbed's), or a host of the run's cluster
    sharing this machine (`cluster.hosts[].shared_machine`: scripts/netns-cluster's hosts)."""
    group = (meta.get("pfs_group") or {}).get("hosts") or []
    hosts = (meta.get("cluster") or {}).get("hosts") or []
    seen = [h.get("netns") for h in group if isinstance(h, dict)]
    seen += [h.get("shared_machine") for h in hosts if isinstance(h, dict)]
    if any(s is True for s in seen):
        return True
    if not seen or any(s is None for s in seen):
        return None
    return False


def tmpfs_pmem(meta: dict) -> bool | None:
    """A job standing in for persistent memory whose medium was not persistent memory."""
    jobs = [j for j in _jobs(meta) if "persistent memory" in str(j.get("stands_in_for") or "")]
    media = [str(j.get("io_medium") or "") for j in jobs]
    if not media or not all(media):
        return None if jobs or not _jobs(meta) else False
    return any(not m.startswith("persistent memory") for m in media)


def stand_in_program(meta: dict) -> bool | None:
    """A job whose program stands in for the paper's: it records why (`stand_in_reason`), or it
    is one of corun's own programs standing in for another (`binary` corun ..., `stands_in_for`)."""
    jobs = _jobs(meta)
    if any(j.get("stand_in_reason") for j in jobs):
        return True
    if any(str(j.get("binary") or "").startswith("corun ") and j.get("stands_in_for") for j in jobs):
        return True
    return False if jobs and all(j.get("binary") for j in jobs) else None


def memory_cap(meta: dict) -> bool | None:
    """A memory cgroup cap on the run's jobs."""
    return bool(meta["memory_cap"]) if "memory_cap" in meta else None


# the one place a stand-in word meets the runs' metadata (striped_pfs, user_space_cosched: corun
# has no other way to run them, so they are named whenever declared)
USED_BY: dict[str, Callable[[dict], bool | None]] = {
    "emulated_disk": emulated_disk,
    "cores_as_cmps": cores_as_cmps,
    "netns_links": netns_links,
    "tmpfs_pmem": tmpfs_pmem,
    "stand_in_program": stand_in_program,
    "memory_cap": memory_cap,
}


def used(words: Iterable[str], metas: list[dict]) -> list[str]:
    """The declared words the runs used, in declaration order: every word when no run is known."""
    words = list(words or [])
    if not metas:
        return words
    out = []
    for w in words:
        test = USED_BY.get(w)
        seen = [test(m) for m in metas] if test else [True]
        if any(s is True for s in seen) or not any(s is False for s in seen):
            out.append(w)
    return out


def row_words(claim: dict, row: dict, metas: dict[str, dict]) -> list[str]:
    """The stand-in words a row names: the claim's declared ones its runs (row['runs']) used."""
    runs = [metas[r] for r in row.get("runs") or [] if r in metas]
    return used(claim.get("stand_ins") or [], runs)

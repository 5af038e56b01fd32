#!/usr/bin/env python3
"""Raw striped read bandwidth of corun's parallel file system at 1, 2, 4 data servers.

Brings up a netns test cluster (scripts/netns-cluster: one client host and the most servers
asked for), then for each link model (1 x 1 GbE, 3 x 1 GbE at the client; every server one
1 GbE link, tc TBF) and each server count: the file system (scripts/pfs up, directory bricks,
64 KiB strips), one file written once through kernels/pfs_read, then read --reps times in
--transfer-size requests by --tasks processes. Reported per point: the mean read bandwidth
with its min and max, the link cap min(client cap, servers x server cap) and the ratio to it.
Everything it starts is taken down at the end, also after an error or Ctrl-C. Root only.

Locally the servers and the client share the machine's CPUs: where the ratio falls well below
1 at high caps, the CPU, not the link, is the bottleneck (the table says which).

  .venv/bin/python bench/pfs_bandwidth.py [--servers 1,2,4] [--links 1,3] [--mib 256] [--reps 3]
      [--transfer-size 1M] [--tasks 1] [--out results/bench/pfs_bandwidth.json]
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _common  # noqa: E402

PROG = "pfs_bandwidth"
NETNS = {"prefix": "pfsb", "subnet": "10.77.5.0/24"}  # this benchmark's netns cluster (hosts pfsb-n1 ...)


run = _common.run


def must(res: subprocess.CompletedProcess, what: str) -> str:
    return _common.must(res, PROG, what)


def point(work: Path, state: Path, inventory: Path, servers: int, links: int, a) -> dict:
    d = work / f"s{servers}-l{links}"
    d.mkdir()
    link = {"rate_mbit": _common.LINK_MBIT, "client_links": links}
    pfs = _common.pfs_command(d, inventory, state, servers=servers, link=link)
    must(run(pfs + ["up"]), "pfs up")
    try:
        lay = json.loads((d / "state" / "layout.json").read_text())
        vol = [x for v in lay["volfiles"] for x in ("--volfile", v)]
        common = [
            str(_common.PFS_READ),
            *vol,
            "--file",
            "/bench.dat",
            "--transfer-size",
            a.transfer_size,
            "--tasks",
            str(a.tasks),
            "--block-size",
            f"{a.mib // a.tasks}M",
        ]
        ssh = ["ssh", "-F", str(state / "ssh_config"), f"{NETNS['prefix']}-n1"]
        must(run(ssh + [" ".join(common + ["--write"])]), "the write")
        out = json.loads(must(run(ssh + [" ".join(common + ["--read", "--repetitions", str(a.reps)])]), "the reads"))
    finally:
        must(run(pfs + ["down"]), "pfs down")
    bws = out["read_bw_mib_s"]
    client_cap = _common.LINK_MBIT * links
    cap_mbit = min(client_cap, servers * _common.LINK_MBIT)
    cap_mib_s = cap_mbit * 1e6 / 8 / 2**20
    mean = statistics.fmean(bws)
    return {
        "servers": servers,
        "client_links": links,
        "client_cap_mbit": client_cap,
        "server_cap_mbit": _common.LINK_MBIT,
        "cap_mib_s": cap_mib_s,
        "read_bw_mib_s": bws,
        "read_bw_mean_mib_s": mean,
        "read_bw_min_mib_s": min(bws),
        "read_bw_max_mib_s": max(bws),
        "ratio_to_cap": mean / cap_mib_s,
        "bytes_per_read": out["bytes_per_phase"],
        "strip_size_bytes": out["strip_size_bytes"],
        "transfer_size_bytes": out["transfer_size_bytes"],
        "tasks": a.tasks,
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", default="1,2,4", help="server counts (default 1,2,4)")
    _common.pfs_read_options(ap, PROG, 3, "reads per point")
    a = ap.parse_args()
    servers = [int(x) for x in a.servers.split(",")]
    links = [int(x) for x in a.links.split(",")]
    _common.need_pfs_read(PROG)
    t0 = time.monotonic()
    rows = []
    with _common.netns_up(PROG, max(servers) + 1, "pfs-bench-", **NETNS) as (work, state, inventory):
        for ln in links:
            for n in servers:
                rows.append(point(work, state, inventory, n, ln, a))
                r = rows[-1]
                print(f"  servers {n} client {ln} x 1 GbE: {r['read_bw_mean_mib_s']:.1f} MiB/s", flush=True)
    print()
    print(f"{'servers':>7} {'client link':>12} {'cap MiB/s':>10} {'read MiB/s (min-max)':>24} {'/cap':>6}")
    for r in rows:
        rng = f"{r['read_bw_mean_mib_s']:.1f} ({r['read_bw_min_mib_s']:.1f}-{r['read_bw_max_mib_s']:.1f})"
        print(
            f"{r['servers']:>7} {str(r['client_links']) + ' x 1 GbE':>12} {r['cap_mib_s']:>10.1f} "
            f"{rng:>24} {r['ratio_to_cap']:>6.2f}"
        )
    out = _common.write_figures(
        a.out,
        {
            "bench": PROG,
            "file_mib": a.mib,
            "reps": a.reps,
            "duration_s": time.monotonic() - t0,
            "points": rows,
        },
    )
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""IOR through pfs_client's striped gfapi library against kernels/pfs_read, on one file system.

Brings up a netns test cluster (scripts/netns-cluster: a client host and --servers data
servers) and corun's file system on it (directory bricks, 64 KiB strips, every server one 1 GbE
link, the client 1 x or 3 x 1 GbE: tc TBF), writes one file with `pfs_read --write`, then reads
it --reps times with each reader, alternating: `pfs_read --read` and IOR (`-a POSIX -r`, from
the ior role's manifest) through the LD_PRELOAD library, the same tasks, transfer and block
sizes. Reported per link: each reader's mean read bandwidth (min-max), IOR / pfs_read, and the
link cap. IOR's bandwidth counts its open and close (pfs_read's does not): the library
connects to the servers in MPI_Init, before them. Everything it starts is taken down at the
end, also after an error or Ctrl-C. Root only; hold the machine's lock.

  .venv/bin/python bench/ior_pfs_client.py [--servers 2] [--links 1,3] [--mib 256] [--reps 5]
      [--transfer-size 1M] [--tasks 1] [--out results/bench/ior_pfs_client.json]
"""

from __future__ import annotations

import argparse
import json
import shlex
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _common  # noqa: E402
from corun import upstream  # noqa: E402
from corun.testbed import ior, pfs  # noqa: E402

PROG = "ior_pfs_client"
NETNS = {"prefix": "iorb", "subnet": "10.77.10.0/24"}  # this benchmark's netns cluster (hosts iorb-n1 ...)


def run(argv: list[str], timeout: float = 900) -> subprocess.CompletedProcess:
    return _common.run(argv, timeout)


def must(res: subprocess.CompletedProcess, what: str) -> str:
    return _common.must(res, PROG, what)


def point(work: Path, state: Path, inventory: Path, links: int, program: str, library: str, a) -> dict:
    d = work / f"l{links}"
    d.mkdir()
    link = {"rate_mbit": _common.LINK_MBIT, "client_links": links}
    fs = _common.pfs_command(d, inventory, state, servers=a.servers, link=link)
    must(run(fs + ["up"]), "pfs up")
    try:
        lay = json.loads((d / "state" / "layout.json").read_text())
        ssh = ["ssh", "-F", str(state / "ssh_config"), lay["client"]["name"]]
        block = f"{a.mib // a.tasks}M"
        shape = ["--file", "/bench.dat", "--transfer-size", a.transfer_size, "--block-size", block]
        shape += ["--tasks", str(a.tasks)]
        kernel = [str(_common.PFS_READ), *pfs.kernel_args(lay), *shape]
        must(run(ssh + [shlex.join(kernel + ["--write"])]), "the write")
        env = ior.mpirun_exports(ior.client_env(lay, library))
        bws: dict[str, list[float]] = {"pfs_read": [], "ior": []}
        for rep in range(a.reps):
            out = json.loads(must(run(ssh + [shlex.join(kernel + ["--read"])]), "pfs_read"))
            bws["pfs_read"].append(out["read_bw_mean_mib_s"])
            summary = d / f"ior-{rep}.json"
            argv = ior.ior_argv(
                program,
                ior.PFS_PREFIX,
                str(summary),
                transfer_size=out["transfer_size_bytes"],
                block_size=out["block_size_bytes"],
                file_name="bench.dat",
            )
            mpi = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(a.tasks), *env]
            must(run(ssh + [shlex.join(mpi + argv)]), "IOR")
            bws["ior"].append(ior.result_fields(ior.parse_file(summary))["read_bw_mean_mib_s"])
            print(f"    rep {rep}: pfs_read {bws['pfs_read'][-1]:.1f}, IOR {bws['ior'][-1]:.1f} MiB/s", flush=True)
    finally:
        must(run(fs + ["down"]), "pfs down")
    cap_mbit = min(_common.LINK_MBIT * links, a.servers * _common.LINK_MBIT)
    row = {
        "servers": a.servers,
        "client_links": links,
        "cap_mib_s": cap_mbit * 1e6 / 8 / 2**20,
        "tasks": a.tasks,
        "transfer_size": a.transfer_size,
        "file_mib": a.mib,
    }
    for name, vals in bws.items():
        row[f"{name}_read_bw_mib_s"] = vals
        row[f"{name}_read_bw_mean_mib_s"] = statistics.fmean(vals)
    row["ior_over_pfs_read"] = row["ior_read_bw_mean_mib_s"] / row["pfs_read_read_bw_mean_mib_s"]
    return row


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--servers", type=int, default=2, help="data servers (default 2)")
    _common.pfs_read_options(ap, PROG, 5, "reads per reader and link")
    a = ap.parse_args()
    links = [int(x) for x in a.links.split(",")]
    _common.need_pfs_read(PROG)
    program = upstream.programs("ior").get("ior")
    if not program:
        sys.exit("ior_pfs_client: IOR is not provisioned here (the ior role's manifest lists no program)")
    library = ior.client_library()
    t0 = time.monotonic()
    rows = []
    with _common.netns_up(PROG, a.servers + 1, "ior-bench-", **NETNS, timeout=900) as (work, state, inventory):
        for ln in links:
            print(f"  {a.servers} servers, client {ln} x 1 GbE:", flush=True)
            rows.append(point(work, state, inventory, ln, program, library, a))
    print()
    head = ("client link", "cap MiB/s", "pfs_read MiB/s (min-max)", "IOR MiB/s (min-max)", "IOR/pfs_read")
    print(f"{head[0]:>12} {head[1]:>10} {head[2]:>26} {head[3]:>22} {head[4]:>13}")
    for r in rows:
        cells = []
        for name in ("pfs_read", "ior"):
            v = r[f"{name}_read_bw_mib_s"]
            cells.append(f"{statistics.fmean(v):.1f} ({min(v):.1f}-{max(v):.1f})")
        print(
            f"{str(r['client_links']) + ' x 1 GbE':>12} {r['cap_mib_s']:>10.1f} {cells[0]:>26} {cells[1]:>22} "
            f"{r['ior_over_pfs_read']:>13.3f}"
        )
    doc = {"bench": PROG, "reps": a.reps, "duration_s": time.monotonic() - t0, "points": rows}
    out = _common.write_figures(a.out, doc)
    print(f"\nwritten: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

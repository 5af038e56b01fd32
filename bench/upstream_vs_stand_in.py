#!/usr/bin/env python3
"""The upstream programs against the stand-ins they replace, on the experiments' own points.

- graph (cmp_stacking, implicit_io, dynamic_io): Graph500 2.1.4 seq-csr against corun's
  graph_bfs at each SCALE and edgefactor of the local configuration's graph rows (TMPDIR and
  graph_bfs's --storage on --storage-dir); wall time, and Graph500's harmonic-mean TEPS beside
  graph_bfs's (its BFS edges over its BFS time).
- npb (mpl_sweep): each benchmark of mpl_sweep's local WL6 at the rank counts it takes, NPB
  class --npb-class against kernels/mpi_stencil with the local profile's stand-in options,
  both under `mpirun -np P` on this host; wall time, and NPB's own time and verification.
- ior (aioli, sais): IOR through pfs_client's striped library against pfs_read on the same
  file system is bench/ior_pfs_client.py (root, a netns cluster); run it with aioli's request
  size and clients: `bench/ior_pfs_client.py --transfer-size 64K --tasks 4`.

Each pair alternates (upstream, stand-in) --reps times. The programs come from the upstream
manifest (corun.upstream.programs); a section whose program is not provisioned is skipped with
the reason. No root needed for graph and npb.

  .venv/bin/python bench/upstream_vs_stand_in.py [--sections graph,npb] [--reps 3]
      [--graph-points 16:16,16:18] [--npb-class S] [--storage-dir DIR]
      [--out results/bench/upstream_vs_stand_in.json]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun import upstream  # noqa: E402
from corun.run import graph500, npb  # noqa: E402
from experiments.mpl_sweep import workloads as mw  # noqa: E402

KERNELS = ROOT / "kernels" / "build"
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def timed(argv: list[str], env: dict | None = None, timeout: float = 1800) -> tuple[float, str]:
    t0 = time.monotonic()
    res = subprocess.run(argv, capture_output=True, text=True, env=env, timeout=timeout)
    dt = time.monotonic() - t0
    if res.returncode != 0:
        tail = (res.stderr.strip() or res.stdout.strip()).splitlines()[-1:] or ["?"]
        sys.exit(f"upstream_vs_stand_in: {argv[0]} exited {res.returncode}: {tail[0]}")
    return dt, res.stdout


def summary(vals: list[float]) -> dict:
    return {"mean": statistics.fmean(vals), "min": min(vals), "max": max(vals), "values": vals}


def graph_section(a, progs: dict) -> list[dict]:
    seq = progs.get("seq-csr")
    rows = []
    for point in a.graph_points.split(","):
        scale, ef = (int(x) for x in point.split(":"))
        up, stand, teps_up, teps_st = [], [], [], []
        env = {**os.environ, **graph500.env(a.storage_dir)}
        for _ in range(a.reps):
            dt, out = timed(graph500.argv(seq, "2.1.4", scale, ef), env)
            up.append(dt)
            teps_up.append(graph500.parse_output(out)["bfs_harmonic_mean_teps"])
            argv = [str(KERNELS / "graph_bfs"), "-s", str(scale), "-e", str(ef), "--roots", str(a.graph_roots)]
            dt, out = timed([*argv, "--storage", a.storage_dir])
            stand.append(dt)
            res = json.loads(out.strip().splitlines()[-1])
            teps_st.append(res["nedges"] * res["roots"] / max(1e-9, sum(res["bfs_time_s"])))
        row = {
            "scale": scale,
            "edgefactor": ef,
            "graph500_runtime_s": summary(up),
            "graph_bfs_runtime_s": summary(stand),
        }
        row["graph500_hm_teps"] = summary(teps_up)
        row["graph_bfs_teps"] = summary(teps_st)
        row["runtime_ratio"] = row["graph500_runtime_s"]["mean"] / row["graph_bfs_runtime_s"]["mean"]
        rows.append(row)
        print(
            f"  graph s{scale} e{ef}: Graph500 seq-csr {row['graph500_runtime_s']['mean']:.2f} s "
            f"({row['graph500_hm_teps']['mean']:.3g} TEPS, 64 roots), "
            f"graph_bfs {row['graph_bfs_runtime_s']['mean']:.2f} s "
            f"({row['graph_bfs_teps']['mean']:.3g} TEPS, {a.graph_roots} roots): x{row['runtime_ratio']:.2f}",
            flush=True,
        )
    return rows


def npb_section(a) -> list[dict]:
    local = yaml.safe_load((ROOT / "experiments" / "mpl_sweep" / "profiles" / "local.yaml").read_text())
    schema = json.loads((ROOT / "experiments" / "mpl_sweep" / "config.schema.json").read_text())
    stand_in = {**schema["properties"]["stand_in"]["default"], **local["stand_in"]}
    wl = local["workloads"]["wl6"]
    rows = []
    for bench in wl["apps"]:
        for ranks in mw.npb_ranks(bench, a.npb_class, wl["ranks"]):
            exe, entry, _ = mw.npb_binary(bench, a.npb_class, ranks)
            opts = stand_in[bench]
            cmd = [str(KERNELS / "mpi_stencil")]
            for k in ("iters", "cells", "sweeps", "halo_bytes", "allreduce_every", "alltoall_every", "alltoall_bytes"):
                cmd += [f"--{k.replace('_', '-')}", str(opts[k])]
            up, stand, own = [], [], []
            verified = True
            for _ in range(a.reps):
                dt, out = timed([*MPIRUN, "-np", str(ranks), exe])
                res = npb.parse_output(out)
                up.append(dt)
                own.append(res["time_s"])
                verified = verified and res["verified"]
                dt, _ = timed([*MPIRUN, "-np", str(ranks), *cmd])
                stand.append(dt)
            row = {"bench": bench, "class": a.npb_class, "ranks": ranks, "npb_version": entry.get("version")}
            row.update(npb_runtime_s=summary(up), npb_time_s=summary(own), mpi_stencil_runtime_s=summary(stand))
            row["verified"] = verified
            row["runtime_ratio"] = row["npb_runtime_s"]["mean"] / row["mpi_stencil_runtime_s"]["mean"]
            rows.append(row)
            print(
                f"  {bench}.{a.npb_class}.{ranks}: NPB {row['npb_runtime_s']['mean']:.2f} s wall "
                f"({row['npb_time_s']['mean']:.2f} s its own, verified {verified}), mpi_stencil "
                f"{row['mpi_stencil_runtime_s']['mean']:.2f} s: x{row['runtime_ratio']:.2f}",
                flush=True,
            )
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sections", default="graph,npb", help="graph, npb (default both)")
    ap.add_argument("--reps", type=int, default=3, help="pairs per point (default 3)")
    ap.add_argument("--graph-points", default="16:16,16:18", help="SCALE:EDGEFACTOR,... (local cmp_stacking's)")
    ap.add_argument("--graph-roots", type=int, default=4, help="graph_bfs's roots (local config: 4)")
    ap.add_argument("--npb-class", default="S", help="NPB class (default S)")
    ap.add_argument(
        "--storage-dir", default=None, help="Graph500's TMPDIR and graph_bfs's storage (default a temp dir)"
    )
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "upstream_vs_stand_in.json"))
    a = ap.parse_args()
    sections = [s for s in a.sections.split(",") if s]
    doc: dict = {"bench": "upstream_vs_stand_in", "reps": a.reps, "upstream": upstream.provenance(), "skipped": {}}
    with tempfile.TemporaryDirectory(prefix="upstream-bench-") as tmp:
        a.storage_dir = a.storage_dir or tmp
        if "graph" in sections:
            progs = upstream.programs("graph500")
            if "seq-csr" in progs:
                print("graph (cmp_stacking, implicit_io, dynamic_io):", flush=True)
                doc["graph"] = graph_section(a, progs)
            else:
                doc["skipped"]["graph"] = "graph500 built no seq-csr here"
        if "npb" in sections:
            if mw.npb_present(a.npb_class):
                print(f"npb (mpl_sweep), class {a.npb_class}:", flush=True)
                doc["npb"] = npb_section(a)
            else:
                doc["skipped"]["npb"] = f"npb built no class {a.npb_class} program here"
    for s, why in doc["skipped"].items():
        print(f"  {s}: skipped: {why}")
    out = Path(a.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(doc, indent=2) + "\n")
    print(f"written: {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

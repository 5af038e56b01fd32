"""Paper 001's parallel workloads: NPB jobs (or their stand-in) and the job streams WL1-WL6.

Table 3 of the paper: WL1 BT, WL2 SP, WL3 FT, WL4 IS, WL5 CG (50 identical jobs submitted at
once), WL6 a mix of the five (100 jobs, rank counts 4, 8, 9 or 16 as the benchmark allows,
exponential inter-arrival times). Which program runs a benchmark:

- NPB from the npb role, when the upstream manifest lists `<bench>.<CLASS>.<P>` (NPB 3.3.1, one
  binary per rank count) or `<bench>.<CLASS>.x` (3.4). BT and SP need a square rank count, CG,
  FT and IS a power of two; a count the benchmark cannot take is not drawn for it.
- otherwise corun's `mpi_stencil` kernel with the benchmark's communication shape from the
  configuration (nearest-neighbour halo exchange for BT, SP and CG, all-to-all for FT and IS, the
  computation grain setting the communication intensity); any rank count. Each job records the
  binary and what it stands in for.
"""

from __future__ import annotations

import math
import random

from corun.run.workloads import kernel, upstream

BENCHMARKS = ("bt", "sp", "ft", "is", "cg")
SQUARE = ("bt", "sp")


def allowed_ranks(bench: str, counts: list[int]) -> list[int]:
    """The rank counts NPB's `bench` accepts: squares for BT and SP, powers of two otherwise."""
    if bench in SQUARE:
        return [p for p in counts if math.isqrt(p) ** 2 == p]
    return [p for p in counts if p & (p - 1) == 0]


def npb_binary(bench: str, klass: str, ranks: int) -> str | None:
    """The npb role's binary for (bench, class, ranks), if it was provisioned."""
    npb = upstream().get("npb") or {}
    if str(npb.get("class", "")).upper() != klass.upper():
        return None
    bins = npb.get("binaries") or {}
    return bins.get(f"{bench}.{klass.upper()}.{ranks}") or bins.get(f"{bench}.{klass.upper()}.x")


def npb_present(klass: str) -> bool:
    npb = upstream().get("npb") or {}
    return bool(npb.get("binaries")) and str(npb.get("class", "")).upper() == klass.upper()


def job_template(bench: str, klass: str, ranks: int, stand_in: dict) -> dict:
    """cmd, result kind and labels of one job of `bench` with `ranks` ranks."""
    exe = npb_binary(bench, klass, ranks)
    if exe is not None:
        ver = (upstream().get("npb") or {}).get("version", "?")
        return {
            "cmd": [exe],
            "result": "none",
            "labels": {
                "bench": bench,
                "binary": f"NPB {ver} {bench}.{klass}",
                "stands_in_for": f"NPB 2.4 {bench.upper()} class {klass}",
            },
        }
    opts = stand_in[bench]
    cmd = [kernel("mpi_stencil")]
    for k in ("iters", "cells", "sweeps", "halo_bytes", "allreduce_every", "alltoall_every", "alltoall_bytes"):
        cmd += [f"--{k.replace('_', '-')}", str(opts[k])]
    return {
        "cmd": cmd,
        "result": "json",
        "labels": {
            "bench": bench,
            "binary": "corun mpi_stencil",
            "stands_in_for": f"NPB 2.4 {bench.upper()} class {klass}",
        },
    }


def job_stream(wl: dict, n_jobs: int, arrival: str, mean_gap_s: float, rng: random.Random, klass: str) -> list[dict]:
    """The jobs of one run: bench, ranks and submit_s each, in submit order.

    arrival `burst`: all submitted at 0 (the paper's WL1-WL5); `exponential`: inter-arrival
    times drawn with mean `mean_gap_s` (WL6), the first job at 0."""
    real = npb_present(klass)
    choices = []
    for b in wl["apps"]:
        counts = allowed_ranks(b, wl["ranks"]) if real else list(wl["ranks"])
        choices += [(b, p) for p in counts]
    jobs, t = [], 0.0
    for i in range(n_jobs):
        bench, ranks = rng.choice(choices)
        if arrival == "exponential" and i > 0:
            t += rng.expovariate(1.0 / mean_gap_s)
        jobs.append({"bench": bench, "ranks": ranks, "submit_s": round(t, 3)})
    return jobs

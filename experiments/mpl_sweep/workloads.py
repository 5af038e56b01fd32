"""Paper 001's parallel workloads: NPB jobs (or their stand-in) and the job streams WL1-WL6.

Table 3 of the paper: WL1 BT, WL2 SP, WL3 FT, WL4 IS, WL5 CG (50 identical jobs submitted at
once), WL6 a mix of the five (100 jobs, rank counts 4, 8, 9 or 16 as the benchmark allows,
exponential inter-arrival times). Which program runs a benchmark:

- NPB from the npb role, when the upstream manifest's `programs` list `<bench>.<CLASS>.<P>` (NPB
  3.3.1, one binary per rank count) or `<bench>.<CLASS>.x` (3.4). BT and SP need a square rank
  count, CG, FT and IS a power of two; a count the benchmark cannot take, or the role did not
  build, is not drawn for it. Its summary is parsed into the job's result (time_s, mops_total,
  verification: corun.run.npb), and the job records NPB's version and source pin.
- only for a benchmark with no such binary at any of the workload's counts, corun's
  `mpi_stencil` kernel with the benchmark's communication shape from the
  configuration (nearest-neighbour halo exchange for BT, SP and CG, all-to-all for FT and IS, the
  computation grain setting the communication intensity); any rank count. Each job records the
  binary, what it stands in for and why (`stand_in_reason`).
"""

from __future__ import annotations

import math
import random

from corun import upstream as upstream_manifest
from corun.run import npb
from corun.run.workloads import kernel, source_labels, upstream

BENCHMARKS = ("bt", "sp", "ft", "is", "cg")
SQUARE = ("bt", "sp")


def allowed_ranks(bench: str, counts: list[int]) -> list[int]:
    """The rank counts NPB's `bench` accepts: squares for BT and SP, powers of two otherwise."""
    if bench in SQUARE:
        return [p for p in counts if math.isqrt(p) ** 2 == p]
    return [p for p in counts if p & (p - 1) == 0]


def npb_binary(bench: str, klass: str, ranks: int) -> tuple[str | None, dict, str]:
    """The npb role's program for (bench, class, ranks), from the upstream manifest's
    `programs` (corun.upstream.programs): its path (None when it was not built), the role's
    manifest entry, and why there is none."""
    up = upstream()
    entry = up.get("npb") or {}
    progs = upstream_manifest.programs("npb", up)
    names = (npb.program_name(bench, klass, ranks), npb.program_name(bench, klass, None))
    path = next((progs[n] for n in names if n in progs), None)
    if path is not None:
        return path, entry, ""
    if not entry:
        return None, entry, "npb not provisioned (no upstream manifest entry)"
    if entry.get("status") != "built":
        return None, entry, f"npb: {entry.get('status', 'no status')}: {entry.get('reason', 'no reason recorded')}"
    built_as = "(npb_benchmarks, npb_classes, npb_nprocs)"
    return None, entry, f"NPB {entry.get('version', '?')} was not built as {names[0]} {built_as}"


def npb_ranks(bench: str, klass: str, counts: list[int]) -> list[int]:
    """The counts among `counts` NPB's `bench` accepts and the npb role built for class `klass`."""
    return [p for p in allowed_ranks(bench, counts) if npb_binary(bench, klass, p)[0] is not None]


def npb_benches(apps: list[str], klass: str, counts: list[int]) -> dict[str, bool]:
    """Which of `apps` run NPB (True) at some of `counts`, which the stand-in (False)."""
    return {b: bool(npb_ranks(b, klass, counts)) for b in apps}


def npb_present(klass: str) -> bool:
    """Whether the npb role built any program of class `klass`."""
    return any(n.split(".")[1:2] == [klass.upper()] for n in upstream_manifest.programs("npb", upstream()))


def job_template(bench: str, klass: str, ranks: int, stand_in: dict) -> dict:
    """cmd, result kind and labels of one job of `bench` with `ranks` ranks: NPB's binary when
    the npb role built it (its summary parsed, result "npb"), else the mpi_stencil stand-in."""
    exe, entry, why = npb_binary(bench, klass, ranks)
    paper = f"NPB 2.4 {bench.upper()} class {klass}"
    if exe is not None:
        name = npb.program_name(bench, klass, ranks)
        return {
            "cmd": [exe],
            "result": "npb",
            "labels": {
                "bench": bench,
                "binary": f"NPB {entry.get('version', '?')} {name}",
                "stands_in_for": paper,
                **source_labels(entry),
            },
        }
    opts = stand_in[bench]
    cmd = [kernel("mpi_stencil")]
    for k in ("iters", "cells", "sweeps", "halo_bytes", "allreduce_every", "alltoall_every", "alltoall_bytes"):
        cmd += [f"--{k.replace('_', '-')}", str(opts[k])]
    return {
        "cmd": cmd,
        "result": "json",
        "labels": {"bench": bench, "binary": "corun mpi_stencil", "stands_in_for": paper, "stand_in_reason": why},
    }


def job_stream(wl: dict, n_jobs: int, arrival: str, mean_gap_s: float, rng: random.Random, klass: str) -> list[dict]:
    """The jobs of one run: bench, ranks and submit_s each, in submit order.

    arrival `burst`: all submitted at 0 (the paper's WL1-WL5); `exponential`: inter-arrival
    times drawn with mean `mean_gap_s` (WL6), the first job at 0."""
    choices = []
    for b in wl["apps"]:
        counts = npb_ranks(b, klass, wl["ranks"]) or list(wl["ranks"])
        choices += [(b, p) for p in counts]
    jobs, t = [], 0.0
    for i in range(n_jobs):
        bench, ranks = rng.choice(choices)
        if arrival == "exponential" and i > 0:
            t += rng.expovariate(1.0 / mean_gap_s)
        jobs.append({"bench": bench, "ranks": ranks, "submit_s": round(t, 3)})
    return jobs

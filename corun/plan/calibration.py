"""The file-reading kernel's rate calibration, shared by every experiment that sets an I/O demand
with it (sensitivity_ranking's groups, dynamic_io's file_reader stand-ins).

The kernel's I/O demand is set the paper's way, by the block size and the number of nops
between two reads; the nop count for a target rate comes from a calibration on this machine:

    time per read = t_read + nops * t_nop    ->    nops = (block / rate - t_read) / t_nop
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from corun.errors import CorunError
from corun.run.inputs import fits, write_random
from corun.run.workloads import kernel

MB = 1e6
NOP_PROBE_READS = 32  # reads in the nop-probe file: nop time dominates there


def run_kernel(path: Path, block: int, nops: int, mode: str) -> dict:
    """One run of the sensitivity_ranking kernel; its JSON result line."""
    cmd = [
        kernel("sensitivity_ranking"),
        "--file",
        str(path),
        "--block-size",
        str(block),
        "--nops",
        str(nops),
        "--cache-mode",
        mode,
    ]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode == 4:
        raise CorunError(f"sensitivity_ranking kernel skipped: {res.stderr.strip()}")
    if res.returncode != 0:
        raise CorunError(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def write_calibration_files(data_dir: Path, calibration_bytes: int, block_size: int) -> None:
    """calibration.dat (read time) and calibration_nops.dat (nop time), written when missing."""
    data_dir.mkdir(parents=True, exist_ok=True)
    for name, size in (("calibration.dat", calibration_bytes), ("calibration_nops.dat", NOP_PROBE_READS * block_size)):
        if not fits(data_dir / name, size):
            write_random(data_dir / name, size)


def calibrate_reader(data_dir: Path, block_size: int, cache_mode: str, probe_nops: int) -> dict:
    """Measure t_read (s per block read, nops=0) and t_nop (s per nop) of the kernel on this device,
    from the files of write_calibration_files; the median of three runs each."""
    reads = []
    for _ in range(3):
        r = run_kernel(data_dir / "calibration.dat", block_size, 0, cache_mode)
        reads.append(r["elapsed_s"] / r["reads"])
    t_read = sorted(reads)[1]
    per = []
    for _ in range(3):
        r = run_kernel(data_dir / "calibration_nops.dat", block_size, probe_nops, cache_mode)
        per.append((r["elapsed_s"] / r["reads"] - t_read) / probe_nops)
    t_nop = sorted(per)[1]
    if t_nop <= 0:
        raise CorunError(f"calibration failed: nops did not take time (t_nop={t_nop}); raise calibration_nops")
    return {
        "block_size": block_size,
        "cache_mode": cache_mode,
        "t_read_s": t_read,
        "t_nop_s": t_nop,
        "max_job_rate_mb_s": block_size / t_read / MB,
        "probe_nops": probe_nops,
        "samples": {"t_read_s": reads, "t_nop_s": per},
    }


def nops_for(rate_mb_s: float, cal: dict, runtime_target_s: float) -> tuple[int, bool]:
    """Nops between reads for a per-job rate; (nops, attainable).

    Rate 0 is the control group: one block read, then nops for the whole target
    runtime. Its degradation under stacking is contention that is not I/O (shared
    physical cores of a VM, memory, frequency), the baseline the other groups sit on.
    """
    if rate_mb_s == 0:
        return int(round(runtime_target_s / cal["t_nop_s"])), True
    per_read = cal["block_size"] / (rate_mb_s * MB)
    n = (per_read - cal["t_read_s"]) / cal["t_nop_s"]
    return (max(0, int(round(n))), n >= 0)

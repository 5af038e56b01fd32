"""The Sensitivity_RANKING experiment of paper 000 (section 3.3.2, Figs. 13-14).

Groups of duplicated file-reading kernels with rising I/O demand per CMP are
stacked on k = 1..K CMPs. The kernel's I/O demand is set the paper's way, by the
block size and the number of nops between two reads; the nop count for a target
demand comes from a calibration of the kernel on this machine:

    time per read = t_read + nops * t_nop    ->    nops = (block / rate - t_read) / t_nop

where rate is the per-job demand (per-CMP demand / jobs per CMP). Each job reads
its own file of rate * runtime_target_s bytes, once, bypassing the page cache.
A demand of 0 is a control group (compute only). The demand actually achieved is measured (the kernel reports MB/s) and that
measured value, not the target, is what the analysis plots.

  python -m corun.experiments.sensitivity_ranking data --config C --out-dir D
  python -m corun.experiments.sensitivity_ranking calibrate --config C --data-dir D --out calibration.json
  python -m corun.experiments.sensitivity_ranking specs --config C --calibration F --data-dir D --out-dir S
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

from corun.experiments import machine_cmps
from corun.errors import ConfigError, CorunError
from corun.util import atomic_write_json, atomic_write_text
from corun.run.workloads import kernel

MB = 1e6
CHUNK = 4 << 20
NOP_PROBE_READS = 32  # reads in the nop-probe file: nop time dominates there


def layout(cfg: dict, source: str = "config") -> dict:
    """CMPs, K and jobs per CMP for this machine and config."""
    grouping, cmps = machine_cmps(cfg, source)
    exp = cfg["sensitivity_ranking"]
    k_max = exp["k_max"] or len(cmps)
    if k_max > len(cmps):
        k_max = len(cmps)  # capped at what the machine has; recorded in the plan
    per_cmp = exp["jobs_per_cmp"] or min(len(g) for g in cmps)
    if per_cmp > min(len(g) for g in cmps) * exp["slots_per_core"]:
        raise ConfigError(source, "sensitivity_ranking.jobs_per_cmp", per_cmp,
                          f"an integer <= {min(len(g) for g in cmps) * exp['slots_per_core']} (slots of the smallest CMP)")
    return {"grouping": grouping, "cmps": cmps, "k_max": k_max, "k_requested": exp["k_max"],
            "jobs_per_cmp": per_cmp, "slots": k_max * per_cmp}


def group_plan(cfg: dict, lay: dict) -> list[dict]:
    exp = cfg["sensitivity_ranking"]
    out = []
    for g, d in enumerate(exp["demands_mb_s"]):
        rate = d / lay["jobs_per_cmp"]  # MB/s per job
        size = int(rate * MB * exp["runtime_target_s"])
        bs = exp["block_size"]
        size = max(bs, (size // bs) * bs)  # demand 0 (the control group): one block
        out.append({"group": g, "demand_target_mb_s": d, "job_rate_mb_s": rate, "file_bytes": size})
    return out


def data_file(data_dir: Path, group: int, slot: int) -> Path:
    return data_dir / f"g{group:02d}_s{slot:03d}.dat"


def make_data(cfg: dict, data_dir: Path) -> list[Path]:
    """One file per (group, job slot), written once with incompressible data and fsynced."""
    lay = layout(cfg)
    data_dir.mkdir(parents=True, exist_ok=True)
    made = []
    for gp in group_plan(cfg, lay):
        for s in range(lay["slots"]):
            f = data_file(data_dir, gp["group"], s)
            if f.exists() and f.stat().st_size == gp["file_bytes"]:
                continue
            _write_random(f, gp["file_bytes"])
            made.append(f)
    exp = cfg["sensitivity_ranking"]
    for name, size in (("calibration.dat", exp["calibration_bytes"]),
                       ("calibration_nops.dat", NOP_PROBE_READS * exp["block_size"])):
        cal = data_dir / name
        if not (cal.exists() and cal.stat().st_size == size):
            _write_random(cal, size)
    return made


def _write_random(path: Path, size: int) -> None:
    tmp = path.with_suffix(".tmp")
    with open(tmp, "wb") as fh:
        left = size
        while left:
            n = min(CHUNK, left)
            fh.write(os.urandom(n))
            left -= n
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)


def _run_kernel(path: Path, block: int, nops: int, mode: str) -> dict:
    cmd = [kernel("sensitivity_ranking"), "--file", str(path), "--block-size", str(block), "--nops", str(nops),
           "--cache-mode", mode]
    res = subprocess.run(cmd, capture_output=True, text=True)
    if res.returncode == 4:
        raise CorunError(f"sensitivity_ranking kernel skipped: {res.stderr.strip()}")
    if res.returncode != 0:
        raise CorunError(f"{' '.join(cmd)} exited {res.returncode}: {res.stderr.strip()}")
    return json.loads(res.stdout.strip().splitlines()[-1])


def calibrate(cfg: dict, data_dir: Path) -> dict:
    """Measure t_read (s per block read, nops=0) and t_nop (s per nop) for the kernel on this device."""
    exp = cfg["sensitivity_ranking"]
    bs, mode = exp["block_size"], exp["cache_mode"]
    cal = data_dir / "calibration.dat"
    reads = []
    for _ in range(3):
        r = _run_kernel(cal, bs, 0, mode)
        reads.append(r["elapsed_s"] / r["reads"])
    t_read = sorted(reads)[1]
    probe_nops = exp["calibration_nops"]
    per = []
    for _ in range(3):
        r = _run_kernel(data_dir / "calibration_nops.dat", bs, probe_nops, mode)
        per.append((r["elapsed_s"] / r["reads"] - t_read) / probe_nops)
    t_nop = sorted(per)[1]
    if t_nop <= 0:
        raise CorunError(f"calibration failed: nops did not take time (t_nop={t_nop}); raise calibration_nops")
    return {"block_size": bs, "cache_mode": mode, "t_read_s": t_read, "t_nop_s": t_nop,
            "max_job_rate_mb_s": bs / t_read / MB, "probe_nops": probe_nops,
            "samples": {"t_read_s": reads, "t_nop_s": per}}


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


def matrix(cfg: dict) -> list[tuple[int, int, int]]:
    """(group, k, rep) of every run, reps outermost so repetitions are spread over time."""
    exp = cfg["sensitivity_ranking"]
    lay = layout(cfg)
    return [(g, k, r) for r in range(exp["reps"]) for k in range(1, lay["k_max"] + 1)
            for g in range(len(exp["demands_mb_s"]))]


def spec_name(group: int, k: int, rep: int) -> str:
    return f"g{group:02d}_k{k}_r{rep}.yaml"


def make_spec(cfg: dict, cal: dict, group: int, k: int, rep: int, data_dir: Path) -> dict:
    exp = cfg["sensitivity_ranking"]
    lay = layout(cfg)
    if not 1 <= k <= lay["k_max"]:
        raise ConfigError("config", "k", k, f"an integer from 1 to {lay['k_max']}")
    gp = group_plan(cfg, lay)[group]
    nops, ok = nops_for(gp["job_rate_mb_s"], cal, exp["runtime_target_s"])
    jobs = []
    for slot in range(k * lay["jobs_per_cmp"]):
        jobs.append({
            "name": f"sr-g{group}-s{slot}",
            "cmd": [kernel("sensitivity_ranking"), "--file", str(data_file(data_dir, group, slot).resolve()),
                    "--block-size", str(exp["block_size"]), "--nops", str(nops),
                    "--cache-mode", exp["cache_mode"]],
            "cores": 1, "cmp": slot // lay["jobs_per_cmp"], "result": "json",
            "labels": {"slot": slot},
        })
    spec = {
        "name": f"sensitivity_ranking-g{group}-k{k}-r{rep}",
        "labels": {"experiment": "sensitivity_ranking", "group": group, "k": k, "rep": rep,
                   "demand_target_mb_s": gp["demand_target_mb_s"], "jobs_per_cmp": lay["jobs_per_cmp"],
                   "nops": nops, "target_attainable": ok},
        "placement": {"cmp": dict(cfg["cmp"]), "use_cmps": list(range(k)),
                      "slots_per_core": exp["slots_per_core"]},
        "jobs": jobs,
        "device": {"path": str(data_dir.resolve()), "throttle": exp["throttle"]},
        "scheduler": {"name": exp["scheduler"], "params": exp["scheduler_params"]},
        "monitors": cfg["monitors"],
    }
    return spec


def main(argv: list[str] | None = None) -> int:
    from corun.experiments.workflow_config import load_workflow_config
    ap = argparse.ArgumentParser(prog="corun.experiments.sensitivity_ranking")
    sub = ap.add_subparsers(dest="cmd", required=True)
    d = sub.add_parser("data")
    d.add_argument("--config", required=True)
    d.add_argument("--out-dir", required=True, type=Path)
    c = sub.add_parser("calibrate")
    c.add_argument("--config", required=True)
    c.add_argument("--data-dir", required=True, type=Path)
    c.add_argument("--out", required=True, type=Path)
    s = sub.add_parser("specs", help="write every run spec of the matrix")
    s.add_argument("--config", required=True)
    s.add_argument("--calibration", required=True, type=Path)
    s.add_argument("--data-dir", required=True, type=Path)
    s.add_argument("--out-dir", required=True, type=Path)
    a = ap.parse_args(argv)
    try:
        cfg = load_workflow_config(a.config)
        if a.cmd == "data":
            made = make_data(cfg, a.out_dir)
            lay = layout(cfg)
            atomic_write_json(a.out_dir / "layout.json", {**lay, "groups": group_plan(cfg, lay)})
            print(f"{len(made)} data file(s) written in {a.out_dir}", file=sys.stderr)
        elif a.cmd == "calibrate":
            atomic_write_json(a.out, calibrate(cfg, a.data_dir))
        elif a.cmd == "specs":
            cal = json.loads(a.calibration.read_text())
            for g, k, r in matrix(cfg):
                spec = make_spec(cfg, cal, g, k, r, a.data_dir)
                atomic_write_text(a.out_dir / spec_name(g, k, r), yaml.safe_dump(spec, sort_keys=False))
        return 0
    except CorunError as exc:
        print(f"corun: {exc}", file=sys.stderr)
        return exc.exit_code


if __name__ == "__main__":
    sys.exit(main())

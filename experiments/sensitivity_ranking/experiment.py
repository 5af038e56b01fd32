"""The Sensitivity_RANKING experiment of paper 000 (section 3.3.2, Figs. 13-14).

Groups of duplicated file-reading kernels with rising I/O demand per CMP are
stacked on k = 1..K CMPs. The kernel's I/O demand is set the paper's way, by the
block size and the number of nops between two reads; the nop count for a target
demand comes from a calibration of the kernel on this machine:

    time per read = t_read + nops * t_nop    ->    nops = (block / rate - t_read) / t_nop

where rate is the per-job demand (per-CMP demand / jobs per CMP). Each job reads
its own file of rate * runtime_target_s bytes, once, bypassing the page cache.
A demand of 0 is a control group (compute only). The demand actually achieved is measured
(the kernel reports MB/s) and that measured value, not the target, is what the analysis plots.

  python -m experiments data sensitivity_ranking --config C --data-dir D
  python -m experiments calibrate sensitivity_ranking --config C --data-dir D --out calibration.json
  python -m experiments specs sensitivity_ranking --config C --calibration F --data-dir D --out-dir S
"""

from __future__ import annotations

from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.plan.base import RUN_OVERHEAD_S, Experiment, machine_cmps
from corun.plan.calibration import MB, calibrate_reader, nops_for, write_calibration_files
from corun.plan.device_section import spec_device
from corun.run.inputs import fits, write_random
from corun.run.workloads import kernel
from corun.util import atomic_write_json, atomic_write_text, lazy_module

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)

NAME = "sensitivity_ranking"


def layout(cfg: dict, source: str = "config") -> dict:
    """CMPs, K and jobs per CMP for this machine and config."""
    grouping, cmps = machine_cmps(cfg, source)
    exp = cfg[NAME]
    k_max = exp["k_max"] or len(cmps)
    if k_max > len(cmps):
        k_max = len(cmps)  # capped at what the machine has; recorded in the plan
    per_cmp = exp["jobs_per_cmp"] or min(len(g) for g in cmps)
    if per_cmp > min(len(g) for g in cmps) * exp["slots_per_core"]:
        raise ConfigError(
            source,
            "sensitivity_ranking.jobs_per_cmp",
            per_cmp,
            f"an integer <= {min(len(g) for g in cmps) * exp['slots_per_core']} (slots of the smallest CMP)",
        )
    return {
        "grouping": grouping,
        "cmps": cmps,
        "k_max": k_max,
        "k_requested": exp["k_max"],
        "jobs_per_cmp": per_cmp,
        "slots": k_max * per_cmp,
    }


def group_plan(cfg: dict, lay: dict) -> list[dict]:
    exp = cfg[NAME]
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
            if not fits(f, gp["file_bytes"]):
                write_random(f, gp["file_bytes"])
                made.append(f)
    exp = cfg[NAME]
    write_calibration_files(data_dir, exp["calibration_bytes"], exp["block_size"])
    return made


def calibrate(cfg: dict, data_dir: Path) -> dict:
    """t_read and t_nop of the kernel on this device (corun.plan.calibration)."""
    exp = cfg[NAME]
    return calibrate_reader(data_dir, exp["block_size"], exp["cache_mode"], exp["calibration_nops"])


def matrix(cfg: dict) -> list[tuple[int, int, int]]:
    """(group, k, rep) of every run, reps outermost so repetitions are spread over time."""
    exp = cfg[NAME]
    lay = layout(cfg)
    return [
        (g, k, r)
        for r in range(exp["reps"])
        for k in range(1, lay["k_max"] + 1)
        for g in range(len(exp["demands_mb_s"]))
    ]


def spec_name(group: int, k: int, rep: int) -> str:
    return f"g{group:02d}_k{k}_r{rep}.yaml"


def make_spec(cfg: dict, cal: dict, group: int, k: int, rep: int, data_dir: Path) -> dict:
    exp = cfg[NAME]
    lay = layout(cfg)
    if not 1 <= k <= lay["k_max"]:
        raise ConfigError("config", "k", k, f"an integer from 1 to {lay['k_max']}")
    gp = group_plan(cfg, lay)[group]
    nops, ok = nops_for(gp["job_rate_mb_s"], cal, exp["runtime_target_s"])
    jobs = []
    for slot in range(k * lay["jobs_per_cmp"]):
        jobs.append(
            {
                "name": f"sr-g{group}-s{slot}",
                "cmd": [
                    kernel("sensitivity_ranking"),
                    "--file",
                    str(data_file(data_dir, group, slot).resolve()),
                    "--block-size",
                    str(exp["block_size"]),
                    "--nops",
                    str(nops),
                    "--cache-mode",
                    exp["cache_mode"],
                ],
                "cores": 1,
                "cmp": slot // lay["jobs_per_cmp"],
                "result": "json",
                "labels": {"slot": slot},
            }
        )
    spec = {
        "name": f"sensitivity_ranking-g{group}-k{k}-r{rep}",
        "labels": {
            "experiment": "sensitivity_ranking",
            "group": group,
            "k": k,
            "rep": rep,
            "demand_target_mb_s": gp["demand_target_mb_s"],
            "jobs_per_cmp": lay["jobs_per_cmp"],
            "nops": nops,
            "target_attainable": ok,
        },
        "placement": {"cmp": dict(cfg["cmp"]), "use_cmps": list(range(k)), "slots_per_core": exp["slots_per_core"]},
        "jobs": jobs,
        # the kernel bypasses the page cache itself (cache_mode), so nothing is evicted; on the
        # emulated disk only this run's files are copied onto it
        "device": spec_device(exp, data_dir, [data_file(data_dir, group, s) for s in range(len(jobs))], False),
        "scheduler": {"name": exp["scheduler"], "params": exp["scheduler_params"]},
        "monitors": cfg["monitors"],
    }
    return spec


def check(cfg: dict, source: str) -> None:
    exp = cfg[NAME]
    if exp["cache_mode"] == "direct" and exp["block_size"] % 4096:
        raise ConfigError(source, f"{NAME}.block_size", exp["block_size"], "a multiple of 4096 with cache_mode: direct")


class SensitivityRanking(Experiment):
    name = NAME
    calibrates = True
    step_inputs = ("kernels/build/sensitivity_ranking",)

    def check(self, cfg: dict, source: str) -> None:
        check(cfg, source)

    def data(self, cfg: dict, data_dir: Path) -> str:
        made = make_data(cfg, data_dir)
        lay = layout(cfg)
        atomic_write_json(data_dir / "layout.json", {**lay, "groups": group_plan(cfg, lay)})
        return f"{len(made)} data file(s) written in {data_dir}"

    def calibrate(self, cfg: dict, data_dir: Path) -> dict:
        return calibrate(cfg, data_dir)

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        runs = matrix(cfg)
        for g, k, r in runs:
            spec = make_spec(cfg, calibration, g, k, r, data_dir)
            atomic_write_text(out_dir / spec_name(g, k, r), yaml.safe_dump(spec, sort_keys=False))
        return len(runs)

    def run_names(self, cfg: dict) -> list[str]:
        return [spec_name(*p)[: -len(".yaml")] for p in matrix(cfg)]

    def run_priority(self, cfg: dict) -> dict[str, int]:
        """The runs in the plan's order, reps outermost (each run's priority is its distance from
        the end; measuring rules run one at a time), so a rep's runs at every k and its control's
        are measured close in time and the claims' pairing by rep takes out the machine's drift."""
        names = self.run_names(cfg)
        return {name: len(names) - i for i, name in enumerate(names)}

    def estimate(self, cfg: dict) -> dict:
        runs = matrix(cfg)
        return {
            "runs": len(runs),
            "seconds": len(runs) * (cfg[NAME]["runtime_target_s"] + RUN_OVERHEAD_S),
            "k_dropped": [],
        }

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.sensitivity_ranking.analysis")


EXPERIMENT = SensitivityRanking()

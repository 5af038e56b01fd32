"""Paper 000 section 2.4.2.2 (Fig. 8): graph jobs with file-backed CSR under a memory cap.

Its metrics are read from the monitors' intervals (memory, PSI or iostat), so its runs are sized
in time (corun.run.run_length): the calibrate step times one job of the smallest graph alone on
this machine, and each level runs as many copies of its jobs, one after another in each slot, as
make the run last `min_intervals` monitor intervals or more (at most 64 jobs a run, the paper's
64 graph jobs per workload); the job time, the copies per level and the minimum are recorded in
calibration.json and in every run's labels, and the spec's remeasure.min_measure_s makes the
runner measure a run that still came out shorter again, longer.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from corun.machine import rotating_disk
from corun.plan.base import graph_s
from corun.plan.stacking import StackingExperiment, run_name
from corun.run import run_length, workloads
from corun.util import atomic_write_text, lazy_module

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)


def edges(group: dict) -> int:
    return group["edgefactor"] * 2 ** group["scale"]


def min_measure_s(cfg: dict) -> float:
    """The shortest run its metrics are sized for: min_intervals monitor intervals."""
    return cfg["implicit_io"]["min_intervals"] * cfg["monitors"]["interval_s"]


def copies_per_level(cfg: dict, groups: list[dict], slots: int, job_s_of) -> dict[str, int]:
    """{workload: copies of each slot's job} for runs of at least min_measure_s, from the time of
    one job of each level (`job_s_of(group)`)."""
    want = min_measure_s(cfg)
    return {g["workload"]: run_length.copies_for(job_s_of(g), want, slots) for g in groups}


class ImplicitIo(StackingExperiment):
    name = "implicit_io"
    calibrates = True

    def stack_groups(self, cfg: dict) -> list[dict]:
        return [
            {"workload": f"graph_s{g['scale']}_e{g['edgefactor']}", "scale": g["scale"], "edgefactor": g["edgefactor"]}
            for g in cfg[self.name]["graphs"]
        ]

    def default_k_values(self, K: int) -> list[int]:
        return [K]  # every CMP loaded: the memory cap is shared by all jobs

    def job_for(self, cfg: dict, group: dict, slot: int, data_dir: Path) -> dict:
        e = cfg[self.name]
        t = workloads.graph(group["scale"], group["edgefactor"], (data_dir / "graph").resolve(), e["roots"])
        return {"cmd": t.cmd, "env": t.env, "cores": 1, "result": t.result, "labels": t.labels}

    def monitors(self, cfg: dict) -> dict:
        mon = dict(cfg["monitors"])
        if "memory" not in mon["enabled"]:
            mon["enabled"] = [*mon["enabled"], "memory"]
        return mon

    def job_s(self, cfg: dict, group: dict) -> float:
        return graph_s(group["scale"], group["edgefactor"], cfg[self.name]["roots"])

    # ----------------------------------------------------------------- runs sized in time
    def calibrate(self, cfg: dict, data_dir: Path) -> dict:
        """One job of the smallest graph alone, timed on this machine; the copies every level
        needs to last min_measure_s (a larger graph's job is taken as slower by its edges)."""
        groups = self.stack_groups(cfg)
        small = min(groups, key=edges)
        t = self.job_for(cfg, small, 0, data_dir)
        (data_dir / "graph").mkdir(parents=True, exist_ok=True)
        job_s = run_length.time_job(t["cmd"], t["env"])
        slots = self.layout(cfg)["slots"]
        per_edge = job_s / edges(small)
        return {
            "needed": True,
            "smallest": small["workload"],
            "smallest_job_s": round(job_s, 4),
            "min_measure_s": min_measure_s(cfg),
            "copies": copies_per_level(cfg, groups, slots, lambda g: per_edge * edges(g)),
        }

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        """The stacking specs, each level's jobs repeated by the calibration's copies (or, without
        one, the plan's estimate of the job's time) and labelled with what sized them."""
        groups = self.stack_groups(cfg)
        copies = calibration.get("copies") or self.planned_copies(cfg)
        runs = self.matrix(cfg)
        for g, k, r in runs:
            spec = self.sized_spec(
                cfg, self.make_spec(cfg, g, k, r, data_dir), copies[groups[g]["workload"]], calibration
            )
            atomic_write_text(out_dir / f"{run_name(g, k, r)}.yaml", yaml.safe_dump(spec, sort_keys=False))
        return len(runs)

    def planned_copies(self, cfg: dict) -> dict[str, int]:
        slots = self.layout(cfg)["slots"]
        return copies_per_level(cfg, self.stack_groups(cfg), slots, lambda g: self.job_s(cfg, g))

    def sized_spec(self, cfg: dict, spec: dict, copies: int, calibration: dict) -> dict:
        want = min_measure_s(cfg)
        spec["jobs"] = run_length.repeat_jobs(spec["jobs"], copies)
        spec["labels"].update(
            {
                "copies": copies,
                "min_measure_s": want,
                "smallest_job_s": calibration.get("smallest_job_s", math.nan) if calibration.get("needed") else None,
            }
        )
        spec["remeasure"] = {**cfg["remeasure"], "min_measure_s": want}
        return spec

    def estimate(self, cfg: dict) -> dict:
        """Each run lasts its jobs' copies one after another, at least min_measure_s."""
        gs = self.stack_groups(cfg)
        copies = self.planned_copies(cfg)
        runs = self.matrix(cfg)
        secs = sum(
            max(copies[gs[g]["workload"]] * self.job_s(cfg, gs[g]), min_measure_s(cfg)) + 3.0 for g, _, _ in runs
        )
        return {"runs": len(runs), "seconds": secs, "k_dropped": self.layout(cfg)["k_dropped"]}

    def analysis_inputs(self, cfg: dict, results: str) -> dict:
        """The runs and, when they use an emulated rotating disk of the preset the report calibrates,
        that calibration (a run on a disk that failed it is marked failed)."""
        out = super().analysis_inputs(cfg, results)
        dev = cfg[self.name].get("device") or {}
        report = (cfg.get("report") or {}).get("device") or {}
        preset = (dev.get("rotating_disk") or {}).get("preset", rotating_disk.DEFAULTS["preset"])
        if dev.get("kind") == "rotating_disk" and report.get("enabled") and report.get("preset") == preset:
            out["device_calibration"] = f"{results}/device/calibration.json"
        return out

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.implicit_io.analysis")


EXPERIMENT = ImplicitIo()

"""Paper 000 section 2.4.2.2 (Fig. 8): graph jobs with file-backed CSR under a memory cap."""

from __future__ import annotations

from pathlib import Path

from corun.machine import rotating_disk
from corun.plan.base import graph_s
from corun.plan.stacking import StackingExperiment
from corun.run import workloads


class ImplicitIo(StackingExperiment):
    name = "implicit_io"

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


EXPERIMENT = ImplicitIo()

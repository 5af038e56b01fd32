"""Paper 000 section 2.3.2 (Figs. 2-3): LLC-miss kernels with a nops sweep, stacked."""

from __future__ import annotations

from pathlib import Path

from corun.plan.stacking import StackingExperiment
from corun.run import workloads


class LlcMiss(StackingExperiment):
    name = "llc_miss"

    def stack_groups(self, cfg: dict) -> list[dict]:
        return [{"workload": "llc_miss", "nops": n} for n in cfg[self.name]["nops"]]

    def job_for(self, cfg: dict, group: dict, slot: int, data_dir: Path) -> dict:
        e = cfg[self.name]
        t = workloads.llc_miss(e["mem_size_bytes"], group["nops"], e["iterations"])
        return {"cmd": t.cmd, "env": t.env, "cores": 1, "result": t.result, "labels": t.labels}

    def job_s(self, cfg: dict, group: dict) -> float:
        """About 3 ns per access plus 0.25 ns per nop on a 2-core VM."""
        e = cfg[self.name]
        rows = e["mem_size_bytes"] // 64
        return rows * (e["iterations"] + 1) * (3e-9 + group["nops"] * 0.25e-9)

    def _stacking_table(self, cfg: dict, results: str) -> str | None:
        """cmp_stacking's normalized runtimes, when that experiment runs too (the I/O degradation
        its CC cost is compared with)."""
        if "cmp_stacking" in cfg["experiments"]:
            return f"{results}/cmp_stacking/analysis/normalized_runtime.csv"
        return None

    def analysis_inputs(self, cfg: dict, results: str) -> dict:
        out = super().analysis_inputs(cfg, results)
        table = self._stacking_table(cfg, results)
        if table:
            out["stacking"] = table
        return out


EXPERIMENT = LlcMiss()

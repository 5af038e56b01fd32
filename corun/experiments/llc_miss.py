"""Paper 000 section 2.3.2 (Figs. 2-3): LLC-miss kernels with a nops sweep, stacked."""

from __future__ import annotations

from corun.experiments.stacking import StackingExperiment


class LlcMiss(StackingExperiment):
    name = "llc_miss"
    analysis = "analysis.llc_miss"

    def job_s(self, cfg: dict, group: dict) -> float:
        """About 3 ns per access plus 0.25 ns per nop on a 2-core VM."""
        e = cfg[self.name]
        rows = e["mem_size_bytes"] // 64
        return rows * (e["iterations"] + 1) * (3e-9 + group["nops"] * 0.25e-9)


EXPERIMENT = LlcMiss()

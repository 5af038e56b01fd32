"""Paper 000 section 2.4.2.2 (Fig. 8): graph jobs with file-backed CSR under a memory cap."""

from __future__ import annotations

from corun.experiments.base import graph_s
from corun.experiments.stacking import StackingExperiment


class ImplicitIo(StackingExperiment):
    name = "implicit_io"
    analysis = "analysis.implicit_io"

    def job_s(self, cfg: dict, group: dict) -> float:
        return graph_s(group["scale"], group["edgefactor"], cfg[self.name]["roots"])


EXPERIMENT = ImplicitIo()

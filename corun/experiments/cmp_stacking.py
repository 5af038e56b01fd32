"""Paper 000 section 2.3 (Fig. 1, Table 2): x264 and graph jobs filling k CMPs; T_k-c / T_1-c."""

from __future__ import annotations

from corun.experiments.base import graph_s, x264_s
from corun.experiments.stacking import StackingExperiment


class CmpStacking(StackingExperiment):
    name = "cmp_stacking"
    analysis = "analysis.cmp_stacking"

    def job_s(self, cfg: dict, group: dict) -> float:
        wl = cfg["workloads"][group["workload"]]
        return x264_s(wl) if wl["kind"] == "x264" else graph_s(wl["scale"], wl["edgefactor"], wl.get("roots", 8))


EXPERIMENT = CmpStacking()

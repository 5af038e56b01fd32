"""Paper 000 section 2.3 (Fig. 1, Table 2): x264 and graph jobs filling k CMPs; T_k-c / T_1-c.

Its runs are also io_latency_split's (the waiting and serving time of the same runs' iostat).
They are sized in counts (x264 frames, graph scale), not in time by repeating their jobs
(corun.run.run_length): a copy of an x264 job would read its slot's clip from the page cache,
and a step would run more jobs than the paper's 8 per CMP, all started together (README, "Run
length"). So every spec keeps one job per slot and sets remeasure.min_measure_s aside: the
runner's lengthening repeats jobs. A run shorter than the iostat metrics need is failed, named,
by io_latency_split's analysis.
"""

from __future__ import annotations

import shutil
from pathlib import Path

from corun.errors import ConfigError
from corun.plan.base import graph_s, x264_s
from corun.plan.stacking import StackingExperiment
from corun.run import workloads
from corun.run.inputs import PRESETS, fits, make_y4m, y4m_bytes

PAPER_WORKLOADS = {  # paper 000 Table 2
    "x264_simlarge": (1, {"kind": "x264", "input": "simlarge", "frames": 128}),
    "x264_native": (2, {"kind": "x264", "input": "native", "frames": 512}),
    "graph_s22_e16": (3, {"kind": "graph", "scale": 22, "edgefactor": 16}),
    "graph_s22_e18": (4, {"kind": "graph", "scale": 22, "edgefactor": 18}),
}


def scale_note(name: str, wl: dict) -> str:
    """How a workload differs from the paper's Table 2 sizes ('' when it does not)."""
    if name not in PAPER_WORKLOADS:
        return ""
    paper = PAPER_WORKLOADS[name][1]
    diffs = [f"{k} {wl.get(k)} (paper {v})" for k, v in paper.items() if k != "kind" and wl.get(k) != v]
    return "scaled down: " + ", ".join(diffs) if diffs else ""


def clip_path(data_dir: Path, wl: dict, slot: int | None) -> Path:
    base = f"{wl['input']}_{wl['frames']}f"
    return data_dir / "inputs" / (f"{base}.y4m" if slot is None else f"{base}_s{slot:03d}.y4m")


class CmpStacking(StackingExperiment):
    name = "cmp_stacking"

    def stack_groups(self, cfg: dict) -> list[dict]:
        out = []
        for name in cfg[self.name]["workloads"]:
            if name not in cfg["workloads"]:
                raise ConfigError(
                    "config",
                    "cmp_stacking.workloads",
                    name,
                    "a name defined under workloads: " + ", ".join(cfg["workloads"]),
                )
            out.append({"workload": name})
        return out

    def make_inputs(self, cfg: dict, lay: dict, data_dir: Path) -> list[Path]:
        """Every x264 job reads its own copy of the clip (the disk seeks between k streams)."""
        made = []
        for g in self.stack_groups(cfg):
            wl = cfg["workloads"][g["workload"]]
            if wl["kind"] != "x264" or workloads.parsec_input(wl["input"]):
                continue
            w, h = PRESETS[wl["input"]]
            size = y4m_bytes(w, h, wl["frames"])
            master = clip_path(data_dir, wl, None)
            if not fits(master, size):
                make_y4m(master, w, h, wl["frames"])
                made.append(master)
            for s in range(lay["slots"]):
                p = clip_path(data_dir, wl, s)
                if not fits(p, size):
                    shutil.copyfile(master, p)
                    made.append(p)
        return made

    def job_for(self, cfg: dict, group: dict, slot: int, data_dir: Path) -> dict:
        name = group["workload"]
        wl = cfg["workloads"][name]
        if wl["kind"] == "x264":
            clip = workloads.parsec_input(wl["input"]) or clip_path(data_dir, wl, slot)
            t = workloads.x264(
                wl["input"],
                clip.resolve(),
                (data_dir / "out" / f"x264_s{slot:03d}.264").resolve(),
                wl.get("threads", 1),
            )
            cores = wl.get("threads", 1)
        else:
            t = workloads.graph(wl["scale"], wl["edgefactor"], (data_dir / "graph").resolve(), wl.get("roots", 8))
            cores = 1
        labels = {**t.labels, "workload_id": PAPER_WORKLOADS.get(name, (None,))[0], "scale_note": scale_note(name, wl)}
        return {"cmd": t.cmd, "env": t.env, "cores": cores, "result": t.result, "labels": labels}

    def make_spec(self, cfg: dict, gi: int, k: int, rep: int, data_dir: Path) -> dict:
        """The stacking spec, with remeasure.min_measure_s set aside (None) whatever the
        configuration's remeasure section says: lengthening a short run repeats its jobs, which
        would change what the run measures (module docstring)."""
        spec = super().make_spec(cfg, gi, k, rep, data_dir)
        spec["remeasure"] = {**cfg["remeasure"], "min_measure_s": None}
        return spec

    def job_s(self, cfg: dict, group: dict) -> float:
        wl = cfg["workloads"][group["workload"]]
        return x264_s(wl) if wl["kind"] == "x264" else graph_s(wl["scale"], wl["edgefactor"], wl.get("roots", 8))

    def run_priority(self, cfg: dict) -> dict[str, int]:
        """The runs in the plan's order, reps outermost: each run's priority is its distance from
        the end of the plan (measuring rules run one at a time), so a rep's k = 1 and k > 1 runs
        are measured close in time and the claims' pairing by rep takes out the machine's drift."""
        names = self.run_names(cfg)
        return {name: len(names) - i for i, name in enumerate(names)}

    def analysis_outputs(self, results: str) -> list[str]:
        # llc_miss compares its CC cost with this table
        return [*super().analysis_outputs(results), f"{results}/cmp_stacking/analysis/normalized_runtime.csv"]


EXPERIMENT = CmpStacking()

"""Paper 000 section 2.3 (Fig. 1, Table 2): x264 and graph jobs filling k CMPs; T_k-c / T_1-c.

Its runs are also io_latency_split's (the waiting and serving time of the same runs' iostat), so
they are sized in time, each job made larger, never repeated (experiments/cmp_stacking/sizing.py;
README, "Run length"): a step is 8 jobs per CMP started together, and a copy of an x264 job would
read its slot's clip from the page cache. The calibrate step times one job of each workload alone
and grows it (x264 frames, Graph500's SCALE or graph_bfs's roots) until the k = 1 step lasts
`min_intervals` monitor intervals; the sizes are recorded in calibration.json and every run's
labels, and a run still shorter is measured again as it is (remeasure.lengthen "none"), then
failed, named, by io_latency_split's analysis.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.plan.base import RUN_OVERHEAD_S, graph_s, x264_s
from corun.plan.stacking import StackingExperiment, run_name
from corun.run import workloads
from corun.util import atomic_write_text, lazy_module
from experiments.cmp_stacking import sizing

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)

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
    calibrates = True

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
            slots = [clip_path(data_dir, wl, s) for s in range(lay["slots"])]
            made += sizing.write_clips(clip_path(data_dir, wl, None), slots, wl)
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

    # ----------------------------------------------------------------- jobs sized in time
    def calibrate(self, cfg: dict, data_dir: Path) -> dict:
        """One job of each workload alone, timed on this machine and grown while shorter than
        min_measure_s (sizing.size_job); the clips of the chosen frames written, one per slot."""
        want = sizing.min_measure_s(cfg)
        slots = self.layout(cfg)["slots"]
        for sub in ("graph", "out"):
            (data_dir / sub).mkdir(parents=True, exist_ok=True)
        sizes = {}
        for g in self.stack_groups(cfg):
            name = g["workload"]
            wl = cfg["workloads"][name]
            key = sizing.size_key(wl, "--roots" in self.job_for(cfg, g, 0, data_dir)["cmd"])
            clip = wl["kind"] == "x264" and workloads.parsec_input(wl["input"]) is None  # ours, sized
            have = wl.get(key, 8 if key == "roots" else 1)
            top = sizing.cap(wl, key, PAPER_WORKLOADS.get(name, (0, {}))[1]) if clip or wl["kind"] != "x264" else have
            sizes[name] = sizing.size_job(
                key, have, top, want, lambda n, g=g, key=key, clip=clip: self.time_at(cfg, g, key, n, clip, data_dir)
            )
            if clip:
                sized = {**wl, "frames": sizes[name]["size"]}
                paths = [clip_path(data_dir, sized, s) for s in range(slots)]
                sizing.write_clips(clip_path(data_dir, sized, None), paths, sized)
        return {"needed": True, "min_measure_s": want, "sizes": sizes}

    def time_at(self, cfg: dict, group: dict, key: str, size: int, clip: bool, data_dir: Path) -> dict:
        """One job of `group` at `size` timed alone (sizing.time_alone); a generated clip written
        at that size first, and the time it takes to read through the run's throttle the least."""
        wl = {**cfg["workloads"][group["workload"]], key: size}
        c = {**cfg, "workloads": {**cfg["workloads"], group["workload"]: wl}}
        if clip:
            sizing.write_clips(clip_path(data_dir, wl, None), [clip_path(data_dir, wl, 0)], wl)
        t = sizing.time_alone(self.job_for(c, group, 0, data_dir))
        if clip:
            t["io_s"] = sizing.read_floor_s(cfg, wl)
            t["job_s"] = max(t["job_s"], t["io_s"])
        return t

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        """The stacking specs at the calibration's sizes (the configured ones without one), each
        labelled with what sized it."""
        sized = sizing.sized_config(cfg, calibration)
        groups = self.stack_groups(cfg)
        runs = self.matrix(cfg)
        for g, k, r in runs:
            spec = self.make_spec(sized, g, k, r, data_dir)
            spec["labels"].update(sizing.size_labels(cfg, calibration, groups[g]["workload"]))
            atomic_write_text(out_dir / f"{run_name(g, k, r)}.yaml", yaml.safe_dump(spec, sort_keys=False))
        return len(runs)

    def make_spec(self, cfg: dict, gi: int, k: int, rep: int, data_dir: Path) -> dict:
        """The stacking spec, its remeasure.min_measure_s the minimum its iostat metrics need and
        its lengthen "none": a short run is measured again as it is, since repeating its jobs
        would change what the run measures (module docstring)."""
        spec = super().make_spec(cfg, gi, k, rep, data_dir)
        spec["remeasure"] = {**cfg["remeasure"], "min_measure_s": sizing.min_measure_s(cfg), "lengthen": "none"}
        return spec

    def estimate(self, cfg: dict) -> dict:
        """Each run lasts its job at least, and its k = 1 step min_measure_s (the calibration
        grows a shorter job), k > 1 as long at the least."""
        gs = self.stack_groups(cfg)
        runs = self.matrix(cfg)
        want = sizing.min_measure_s(cfg)
        secs = sum(max(self.job_s(cfg, gs[g]), want) + RUN_OVERHEAD_S for g, _, _ in runs)
        return {"runs": len(runs), "seconds": secs, "k_dropped": self.layout(cfg)["k_dropped"]}

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

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.cmp_stacking.analysis")


EXPERIMENT = CmpStacking()

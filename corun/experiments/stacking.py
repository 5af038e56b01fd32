"""What the CMP-stacking experiments of paper 000 section 2 share (cmp_stacking, llc_miss,
implicit_io; each is its own plugin module built on `StackingExperiment`).

Each point of an experiment's matrix is one run: k CMPs loaded, `jobs_per_cmp` jobs
on each (one per core by default: every CMP fully loaded), all jobs duplicates of
one workload. k = 1 gives T_1-c, larger k gives T_k-c (paper eq. 1).

  python -m corun.experiments data  E --config C --data-dir D
  python -m corun.experiments specs E --config C --data-dir D --out-dir S

Inputs: every x264 job reads its own copy of the clip, and the copies' cached pages are
dropped before each run (`drop_caches`; only the inputs, so programs and libraries stay
cached and are not loaded through the cap), so each job's input really comes from the
device under test, as the paper's explicit-I/O jobs; graph jobs keep their CSR in unlinked files under the data
directory (file-backed shared mmap), the paper's implicit I/O.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.experiments.base import RUN_OVERHEAD_S, Experiment, machine_cmps
from corun.experiments.device import run_device
from corun.run import workloads
from corun.run.inputs import PRESETS, fits, make_y4m, y4m_bytes
from corun.util import atomic_write_json, atomic_write_text

EXPERIMENTS = ("cmp_stacking", "llc_miss", "implicit_io")
PAPER_WORKLOADS = {  # paper 000 Table 2
    "x264_simlarge": (1, {"kind": "x264", "input": "simlarge", "frames": 128}),
    "x264_native": (2, {"kind": "x264", "input": "native", "frames": 512}),
    "graph_s22_e16": (3, {"kind": "graph", "scale": 22, "edgefactor": 16}),
    "graph_s22_e18": (4, {"kind": "graph", "scale": 22, "edgefactor": 18}),
}


def layout(cfg: dict, exp: str, source: str = "config") -> dict:
    grouping, cmps = machine_cmps(cfg, source)
    e = cfg[exp]
    K = len(cmps)
    cores = min(len(g) for g in cmps)
    per_cmp = e["jobs_per_cmp"] or cores
    if per_cmp > cores:
        raise ConfigError(source, f"{exp}.jobs_per_cmp", per_cmp, f"an integer <= {cores} (cores of the smallest CMP)")
    wanted = e["k_values"] or list(range(1, K + 1))
    if exp == "implicit_io" and not e["k_values"]:
        wanted = [K]
    ks = sorted(k for k in wanted if k <= K)
    dropped = sorted(k for k in wanted if k > K)
    if not ks:
        raise ConfigError(source, f"{exp}.k_values", wanted, f"values <= {K} (CMPs on this machine)")
    return {
        "grouping": grouping,
        "cmps": cmps,
        "K": K,
        "jobs_per_cmp": per_cmp,
        "k_values": ks,
        "k_dropped": dropped,
        "slots": max(ks) * per_cmp,
    }


def groups(cfg: dict, exp: str) -> list[dict]:
    """The experiment's groups (the curves of its figure), each a dict of labels."""
    e = cfg[exp]
    if exp == "cmp_stacking":
        out = []
        for name in e["workloads"]:
            if name not in cfg["workloads"]:
                raise ConfigError(
                    "config",
                    "cmp_stacking.workloads",
                    name,
                    "a name defined under workloads: " + ", ".join(cfg["workloads"]),
                )
            out.append({"workload": name})
        return out
    if exp == "llc_miss":
        return [{"workload": "llc_miss", "nops": n} for n in e["nops"]]
    return [
        {"workload": f"graph_s{g['scale']}_e{g['edgefactor']}", "scale": g["scale"], "edgefactor": g["edgefactor"]}
        for g in e["graphs"]
    ]


def matrix(cfg: dict, exp: str) -> list[tuple[int, int, int]]:
    lay = layout(cfg, exp)
    return [(g, k, r) for r in range(cfg[exp]["reps"]) for k in lay["k_values"] for g in range(len(groups(cfg, exp)))]


def run_name(group: int, k: int, rep: int) -> str:
    return f"g{group:02d}_k{k}_r{rep}"


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


def make_data(cfg: dict, exp: str, data_dir: Path) -> dict:
    """Inputs for every job slot; written once (kept while their size matches)."""
    lay = layout(cfg, exp)
    made = []
    (data_dir / "graph").mkdir(parents=True, exist_ok=True)
    (data_dir / "out").mkdir(parents=True, exist_ok=True)
    if exp == "cmp_stacking":
        for g in groups(cfg, exp):
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
    info = {**lay, "groups": groups(cfg, exp), "made": [str(p) for p in made]}
    atomic_write_json(data_dir / "layout.json", info)
    return info


def job_for(cfg: dict, exp: str, group: dict, slot: int, data_dir: Path) -> dict:
    e = cfg[exp]
    if exp == "cmp_stacking":
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
    elif exp == "llc_miss":
        t = workloads.llc_miss(e["mem_size_bytes"], group["nops"], e["iterations"])
        cores, labels = 1, t.labels
    else:
        t = workloads.graph(group["scale"], group["edgefactor"], (data_dir / "graph").resolve(), e["roots"])
        cores, labels = 1, t.labels
    return {
        "name": f"{exp}-s{slot}",
        "cmd": t.cmd,
        "env": t.env,
        "cores": cores,
        "result": t.result,
        "labels": {"slot": slot, **labels},
    }


def make_spec(cfg: dict, exp: str, gi: int, k: int, rep: int, data_dir: Path) -> dict:
    e = cfg[exp]
    lay = layout(cfg, exp)
    group = groups(cfg, exp)[gi]
    jobs = []
    for slot in range(k * lay["jobs_per_cmp"]):
        j = job_for(cfg, exp, group, slot, data_dir)
        j["cmp"] = slot // lay["jobs_per_cmp"]
        jobs.append(j)
    if jobs and jobs[0]["cores"] > 1 and lay["jobs_per_cmp"] * jobs[0]["cores"] > min(len(c) for c in lay["cmps"]):
        raise ConfigError(
            "config",
            f"{exp}.jobs_per_cmp",
            lay["jobs_per_cmp"],
            f"jobs_per_cmp x threads <= cores per CMP ({min(len(c) for c in lay['cmps'])})",
        )
    return {
        "name": f"{exp}-{run_name(gi, k, rep)}",
        "labels": {"experiment": exp, "group": gi, "k": k, "rep": rep, "jobs_per_cmp": lay["jobs_per_cmp"], **group},
        "placement": {"cmp": dict(cfg["cmp"]), "use_cmps": list(range(k))},
        "jobs": jobs,
        # x264 writes into out/, graph jobs build their CSR in graph/: both must exist on the disk
        "device": run_device(
            e, data_dir, [data_dir / "inputs"], e["drop_caches"], [data_dir / "out", data_dir / "graph"]
        ),
        "memory": {"limit_bytes": e.get("memory_limit_bytes")},
        "scheduler": {"name": e["scheduler"], "params": e["scheduler_params"]},
        "monitors": _monitors(cfg, exp),
    }


def _monitors(cfg: dict, exp: str) -> dict:
    mon = dict(cfg["monitors"])
    if exp == "implicit_io" and "memory" not in mon["enabled"]:
        mon["enabled"] = [*mon["enabled"], "memory"]
    return mon


def run_dirs(cfg: dict, exp: str, results: str) -> list[str]:
    """The run folders of an experiment (the workflow's collect inputs)."""
    return [f"{results}/{exp}/runs/{run_name(*p)}" for p in matrix(cfg, exp)]


def analysis_inputs(cfg: dict, exp: str, results: str) -> dict:
    out = {"jobs": f"{results}/{exp}/jobs.csv", "runs": f"{results}/{exp}/runs.csv"}
    if exp == "llc_miss" and "cmp_stacking" in cfg["experiments"]:
        out["stacking"] = f"{results}/cmp_stacking/analysis/normalized_runtime.csv"
    return out


def analysis_outputs(exp: str, results: str) -> list[str]:
    """section.json first; tables other experiments read after it."""
    out = [f"{results}/{exp}/analysis/section.json"]
    if exp == "cmp_stacking":
        out.append(f"{results}/cmp_stacking/analysis/normalized_runtime.csv")
    return out


def analysis_options(cfg: dict, exp: str, results: str) -> str:
    """Command-line options of the experiment's analysis module."""
    if exp == "implicit_io":
        return f"--criterion '{cfg['implicit_io']['criterion']}'"
    opts = f"--tol-pct {cfg[exp]['tol_pct']}"
    if "stacking" in analysis_inputs(cfg, exp, results):
        opts += f" --stacking-degradation {results}/cmp_stacking/analysis/normalized_runtime.csv"
    return opts


class StackingExperiment(Experiment):
    """k CMPs loaded with duplicates of one workload per group; subclasses say how long a job takes."""

    rule_file = "stacking.smk"

    def job_s(self, cfg: dict, group: dict) -> float:
        """Rough time of one job of `group` alone, for the plan."""
        return 0.0

    def data(self, cfg: dict, data_dir: Path) -> str:
        info = make_data(cfg, self.name, data_dir)
        return f"{len(info['made'])} input file(s) written in {data_dir}"

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        runs = matrix(cfg, self.name)
        for g, k, r in runs:
            spec = make_spec(cfg, self.name, g, k, r, data_dir)
            atomic_write_text(out_dir / f"{run_name(g, k, r)}.yaml", yaml.safe_dump(spec, sort_keys=False))
        return len(runs)

    def run_names(self, cfg: dict) -> list[str]:
        return [run_name(*p) for p in matrix(cfg, self.name)]

    def estimate(self, cfg: dict) -> dict:
        gs = groups(cfg, self.name)
        runs = matrix(cfg, self.name)
        secs = sum(self.job_s(cfg, gs[g]) + RUN_OVERHEAD_S for g, _, _ in runs)
        return {"runs": len(runs), "seconds": secs, "k_dropped": layout(cfg, self.name)["k_dropped"]}

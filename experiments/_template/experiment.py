"""An experiment: its plan, which runs, each a spec for `corun run`, and its analysis (analysis.py)
(copy this folder to start one).

The matrix: every variant of `variants` x `reps` repetitions, in a seeded interleaved order so
that a slow drift of the machine lands on every variant alike. Each run: `jobs` copies of the
LLC-miss kernel (kernels/llc_miss.c) at once on the machine, under the run's variant.
"""

from __future__ import annotations

import random
from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.plan.base import RUN_OVERHEAD_S, Experiment
from corun.run import workloads
from corun.util import atomic_write_text, lazy_module

NAME = Path(__file__).resolve().parent.name  # the folder's name: a copy needs no edit here


def run_name(variant: str, rep: int) -> str:
    return f"{variant}_r{rep}"


def matrix(cfg: dict) -> list[tuple[str, int]]:
    """(variant, rep) of every run, reps outermost, each rep's variants in a seeded order."""
    sec = cfg[NAME]
    rng = random.Random(sec["seed"])
    out = []
    for rep in range(sec["reps"]):
        order = list(sec["variants"])
        rng.shuffle(order)
        out += [(v, rep) for v in order]
    return out


def make_spec(cfg: dict, variant: str, rep: int) -> dict:
    sec = cfg[NAME]
    t = workloads.llc_miss(sec["mem_size_bytes"], sec["nops"], sec["iterations"])
    jobs = [
        {"name": f"job-{i}", "cmd": t.cmd, "env": t.env, "result": t.result, "labels": t.labels}
        for i in range(sec["jobs"])
    ]
    return {
        "name": f"{NAME}-{run_name(variant, rep)}",
        "labels": {"experiment": NAME, "variant": variant, "rep": rep},
        "jobs": jobs,
        "scheduler": {"name": variant, "params": (sec["variant_params"] or {}).get(variant, {})},
        "monitors": cfg["monitors"],
    }


class TemplateExperiment(Experiment):
    name = NAME
    data_file = None  # no input files to write (see corun.plan.base.Experiment for the other hooks)

    def check(self, cfg: dict, source: str) -> None:
        sec = cfg[NAME]
        if sec["baseline"] not in sec["variants"]:
            raise ConfigError(source, f"{NAME}.baseline", sec["baseline"], f"one of {NAME}.variants")

    def variant_params(self, cfg: dict, source: str) -> list:
        sec = cfg[NAME]
        out = [(f"{NAME}.variants", v, None, None) for v in sec["variants"]]
        for v, params in (sec["variant_params"] or {}).items():
            out += [(f"{NAME}.variant_params.{v}.{p}", v, p, x) for p, x in params.items()]
        return out

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        runs = matrix(cfg)
        for v, r in runs:
            atomic_write_text(out_dir / f"{run_name(v, r)}.yaml", yaml.safe_dump(make_spec(cfg, v, r), sort_keys=False))
        return len(runs)

    def run_names(self, cfg: dict) -> list[str]:
        return [run_name(v, r) for v, r in matrix(cfg)]

    def estimate(self, cfg: dict) -> dict:
        sec = cfg[NAME]
        job_s = sec["mem_size_bytes"] / 64 * (sec["iterations"] + 1) * (3e-9 + sec["nops"] * 0.25e-9)
        runs = matrix(cfg)
        return {"runs": len(runs), "seconds": len(runs) * (job_s + RUN_OVERHEAD_S), "k_dropped": []}

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module(f"experiments.{NAME}.analysis")


EXPERIMENT = TemplateExperiment()

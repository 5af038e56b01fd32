"""Paper 000 section 2.3.2 (Figs. 2-3): LLC-miss kernels with a nops sweep, stacked.

The LLC miss rate is read from the perf monitor's intervals in the k = 1 runs, so those runs are
sized in time (corun.run.run_length): the calibrate step times one job of each group alone on
this machine, and each group's k = 1 run repeats its jobs, one after another in each slot, enough
to last `min_intervals` monitor intervals; the job times, the copies and the minimum are recorded
in calibration.json, and the copies, the minimum and the fewest nops' job time in the k = 1 runs'
labels, and their spec's remeasure.min_measure_s makes the runner measure a run that
still came out shorter again, longer. The runs at k > 1 feed only the CC cost, the kernel's own
timed passes: one job per slot, as before.
"""

from __future__ import annotations

import math
from pathlib import Path

import yaml

from corun.plan.base import RUN_OVERHEAD_S
from corun.plan.stacking import StackingExperiment, run_name
from corun.run import run_length, workloads
from corun.util import atomic_write_text, lazy_module

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)


def min_measure_s(cfg: dict) -> float:
    """The shortest k = 1 run its miss rate is sized for: min_intervals monitor intervals."""
    return cfg["llc_miss"]["min_intervals"] * cfg["monitors"]["interval_s"]


class LlcMiss(StackingExperiment):
    name = "llc_miss"
    calibrates = True
    step_inputs = ("kernels/build/llc_miss",)  # the calibrate step times its kernel

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

    # ----------------------------------------------------------------- k = 1 runs sized in time
    def copies_per_group(self, cfg: dict, job_s_of) -> dict[str, int]:
        """{nops<N>: copies of each slot's job in the k = 1 run} for runs of min_measure_s."""
        per_cmp = self.layout(cfg)["jobs_per_cmp"]
        want = min_measure_s(cfg)
        return {f"nops{g['nops']}": run_length.copies_for(job_s_of(g), want, per_cmp) for g in self.stack_groups(cfg)}

    def calibrate(self, cfg: dict, data_dir: Path) -> dict:
        """One job of each group alone, timed on this machine (the plan's cost model is off by a
        factor that differs with the nops); the copies each group's k = 1 run needs to last
        min_measure_s."""
        job_s = {}
        for g in self.stack_groups(cfg):
            t = self.job_for(cfg, g, 0, data_dir)
            job_s[f"nops{g['nops']}"] = round(run_length.time_job(t["cmd"], t["env"]), 4)
        small = min(self.stack_groups(cfg), key=lambda g: g["nops"])
        return {
            "needed": True,
            "smallest": f"nops{small['nops']}",
            "smallest_job_s": job_s[f"nops{small['nops']}"],
            "job_s": job_s,
            "min_measure_s": min_measure_s(cfg),
            "copies": self.copies_per_group(cfg, lambda g: job_s[f"nops{g['nops']}"]),
        }

    def planned_copies(self, cfg: dict) -> dict[str, int]:
        return self.copies_per_group(cfg, lambda g: self.job_s(cfg, g))

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        """The stacking specs; each k = 1 run's jobs repeated by the calibration's copies (or,
        without one, the plan's estimate of the job's time) and labelled with what sized them."""
        copies = calibration.get("copies") or self.planned_copies(cfg)
        groups = self.stack_groups(cfg)
        want = min_measure_s(cfg)
        runs = self.matrix(cfg)
        for g, k, r in runs:
            spec = self.make_spec(cfg, g, k, r, data_dir)
            n = copies[f"nops{groups[g]['nops']}"] if k == 1 else 1
            spec["jobs"] = run_length.repeat_jobs(spec["jobs"], n)
            spec["labels"]["copies"] = n
            if k == 1:
                measured = calibration.get("smallest_job_s", math.nan) if calibration.get("needed") else None
                spec["labels"].update({"min_measure_s": want, "smallest_job_s": measured})
                spec["remeasure"] = {**cfg["remeasure"], "min_measure_s": want}
            atomic_write_text(out_dir / f"{run_name(g, k, r)}.yaml", yaml.safe_dump(spec, sort_keys=False))
        return len(runs)

    def estimate(self, cfg: dict) -> dict:
        """A k = 1 run lasts its jobs' copies one after another, at least min_measure_s."""
        gs = self.stack_groups(cfg)
        copies = self.planned_copies(cfg)
        runs = self.matrix(cfg)
        secs = 0.0
        for g, k, _ in runs:
            job = self.job_s(cfg, gs[g])
            secs += (max(copies[f"nops{gs[g]['nops']}"] * job, min_measure_s(cfg)) if k == 1 else job) + RUN_OVERHEAD_S
        return {"runs": len(runs), "seconds": secs, "k_dropped": self.layout(cfg)["k_dropped"]}

    def _stacking_table(self, cfg: dict, results: str) -> str | None:
        """cmp_stacking's section, when that experiment runs too: its normalized_runtime.csv beside
        it has the I/O degradation the CC cost is compared with."""
        if "cmp_stacking" in cfg["experiments"]:
            return f"{results}/cmp_stacking/analysis/section.json"
        return None

    def analysis_inputs(self, cfg: dict, results: str) -> dict:
        out = super().analysis_inputs(cfg, results)
        table = self._stacking_table(cfg, results)
        if table:
            out["stacking"] = table
        return out

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.llc_miss.analysis")


EXPERIMENT = LlcMiss()

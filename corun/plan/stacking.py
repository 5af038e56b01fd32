"""CMP stacking, the design of paper 000 section 2 (cmp_stacking, llc_miss and implicit_io build
on it, each in its own folder under experiments/): `StackingExperiment`.

Each point of an experiment's matrix is one run: k CMPs loaded, `jobs_per_cmp` jobs
on each (one per core by default: every CMP fully loaded), all jobs duplicates of
one workload (a group: one curve of the figure). k = 1 gives T_1-c, larger k gives T_k-c
(paper eq. 1). A subclass says what its groups are (`stack_groups`), what one job of a group
runs (`job_for`), which inputs it writes once (`make_inputs`) and how long a job takes alone
(`job_s`, for the plan).

  python -m experiments data  E --config C --data-dir D
  python -m experiments specs E --config C --data-dir D --out-dir S

Inputs: every x264 job reads its own copy of the clip, and the copies' cached pages are
dropped before each run (`drop_caches`; only the inputs, so programs and libraries stay
cached and are not loaded through the cap), so each job's input really comes from the
device under test, as the paper's explicit-I/O jobs; graph jobs keep their CSR in unlinked files under the data
directory (file-backed shared mmap), the paper's implicit I/O.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from corun.errors import ConfigError
from corun.plan.base import RUN_OVERHEAD_S, Experiment, machine_cmps
from corun.plan.device_section import spec_device
from corun.util import atomic_write_json, atomic_write_text


def run_name(group: int, k: int, rep: int) -> str:
    return f"g{group:02d}_k{k}_r{rep}"


class StackingExperiment(Experiment):
    """k CMPs loaded with duplicates of one workload per group."""

    # ----------------------------------------------------------------- what a subclass says
    def stack_groups(self, cfg: dict) -> list[dict]:
        """The experiment's groups (the curves of its figure), each a dict of labels."""
        raise NotImplementedError

    def job_for(self, cfg: dict, group: dict, slot: int, data_dir: Path) -> dict:
        """One job of `group` in job slot `slot`: {cmd, env, cores, result, labels}."""
        raise NotImplementedError

    def make_inputs(self, cfg: dict, lay: dict, data_dir: Path) -> list[Path]:
        """Write the inputs every job slot reads, once (kept while their size matches); the files made."""
        return []

    def default_k_values(self, K: int) -> list[int]:
        """The k values when the config gives none: every k up to this machine's CMPs."""
        return list(range(1, K + 1))

    def monitors(self, cfg: dict) -> dict:
        return dict(cfg["monitors"])

    def job_s(self, cfg: dict, group: dict) -> float:
        """Rough time of one job of `group` alone, for the plan."""
        return 0.0

    # ----------------------------------------------------------------- the design
    def layout(self, cfg: dict, source: str = "config") -> dict:
        exp = self.name
        grouping, cmps = machine_cmps(cfg, source)
        e = cfg[exp]
        K = len(cmps)
        cores = min(len(g) for g in cmps)
        per_cmp = e["jobs_per_cmp"] or cores
        if per_cmp > cores:
            raise ConfigError(
                source, f"{exp}.jobs_per_cmp", per_cmp, f"an integer <= {cores} (cores of the smallest CMP)"
            )
        wanted = e["k_values"] or self.default_k_values(K)
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

    def matrix(self, cfg: dict) -> list[tuple[int, int, int]]:
        lay = self.layout(cfg)
        n = len(self.stack_groups(cfg))
        return [(g, k, r) for r in range(cfg[self.name]["reps"]) for k in lay["k_values"] for g in range(n)]

    def make_data(self, cfg: dict, data_dir: Path) -> dict:
        lay = self.layout(cfg)
        (data_dir / "graph").mkdir(parents=True, exist_ok=True)
        (data_dir / "out").mkdir(parents=True, exist_ok=True)
        made = self.make_inputs(cfg, lay, data_dir)
        info = {**lay, "groups": self.stack_groups(cfg), "made": [str(p) for p in made]}
        atomic_write_json(data_dir / "layout.json", info)
        return info

    def make_spec(self, cfg: dict, gi: int, k: int, rep: int, data_dir: Path) -> dict:
        exp = self.name
        e = cfg[exp]
        lay = self.layout(cfg)
        group = self.stack_groups(cfg)[gi]
        jobs = []
        for slot in range(k * lay["jobs_per_cmp"]):
            t = self.job_for(cfg, group, slot, data_dir)
            jobs.append(
                {
                    "name": f"{exp}-s{slot}",
                    "cmd": t["cmd"],
                    "env": t["env"],
                    "cores": t["cores"],
                    "result": t["result"],
                    "labels": {"slot": slot, **t["labels"]},
                    "cmp": slot // lay["jobs_per_cmp"],
                }
            )
        smallest = min(len(c) for c in lay["cmps"])
        if jobs and jobs[0]["cores"] > 1 and lay["jobs_per_cmp"] * jobs[0]["cores"] > smallest:
            raise ConfigError(
                "config",
                f"{exp}.jobs_per_cmp",
                lay["jobs_per_cmp"],
                f"jobs_per_cmp x threads <= cores per CMP ({smallest})",
            )
        return {
            "name": f"{exp}-{run_name(gi, k, rep)}",
            "labels": {
                "experiment": exp,
                "group": gi,
                "k": k,
                "rep": rep,
                "jobs_per_cmp": lay["jobs_per_cmp"],
                **group,
            },
            "placement": {"cmp": dict(cfg["cmp"]), "use_cmps": list(range(k))},
            "jobs": jobs,
            # x264 writes into out/, graph jobs build their CSR in graph/: both must exist on the disk
            "device": spec_device(
                e, data_dir, [data_dir / "inputs"], e["drop_caches"], [data_dir / "out", data_dir / "graph"]
            ),
            "memory": {"limit_bytes": e.get("memory_limit_bytes")},
            "scheduler": {"name": e["scheduler"], "params": e["scheduler_params"]},
            "monitors": self.monitors(cfg),
        }

    # ----------------------------------------------------------------- the workflow's steps
    def data(self, cfg: dict, data_dir: Path) -> str:
        info = self.make_data(cfg, data_dir)
        return f"{len(info['made'])} input file(s) written in {data_dir}"

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        runs = self.matrix(cfg)
        for g, k, r in runs:
            spec = self.make_spec(cfg, g, k, r, data_dir)
            atomic_write_text(out_dir / f"{run_name(g, k, r)}.yaml", yaml.safe_dump(spec, sort_keys=False))
        return len(runs)

    def run_names(self, cfg: dict) -> list[str]:
        return [run_name(*p) for p in self.matrix(cfg)]

    def estimate(self, cfg: dict) -> dict:
        gs = self.stack_groups(cfg)
        runs = self.matrix(cfg)
        secs = sum(self.job_s(cfg, gs[g]) + RUN_OVERHEAD_S for g, _, _ in runs)
        return {"runs": len(runs), "seconds": secs, "k_dropped": self.layout(cfg)["k_dropped"]}

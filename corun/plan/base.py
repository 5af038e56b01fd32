"""The interface every experiment has, and what the experiments share.

An experiment is a folder experiments/<name>/ whose experiment.py defines `EXPERIMENT`, an
instance of a subclass of `Experiment`; `experiments.registry()` finds them all. The one object
holds the experiment's plan (its data, calibrate and specs steps) and its analysis: its
`analysis`, the experiment's analysis.py loaded with corun.util.lazy_module (so that only the
analyze step imports pandas and SciPy), gives `analyse`, `job_text` and `run_text`. The workflow's
generic code (config validation, the plan, the one rule file that makes data, calibrates, writes
specs, runs, collects and analyses every experiment, the multi-host rules, the report) loops over
the registry and names no experiment. See docs/howto/add-an-experiment.md.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import ModuleType

import yaml

from corun import config
from corun.errors import ConfigError
from corun.layout import Layout
from corun.machine import topology
from corun.run import workloads
from corun.util import atomic_write_text

RUN_OVERHEAD_S = 3.0  # per-run cost beyond the jobs (start, set-up, settle, teardown), for the plan


class Experiment:
    """One experiment of the workflow. Subclasses set the class attributes and override what they need.

    name         its folder under experiments/, its config section and its results folder
    runs_of      the experiment whose runs it analyses (io_latency_split: cmp_stacking), else itself
    host_runs    its runs can run on any host of `hosts` as they are (all_hosts); False when a run
                 uses several hosts by itself (mpl_sweep: MPI jobs across an inventory) or needs
                 hosts the experiment sets up itself (sais: its file system and cluster)
    data_file    the file its data step writes in its data folder, last: its runs depend on it
                 (None: no data step)
    calibrates   it has a calibrate step (calibration.json, read by its specs step)
    step_inputs  files the data and calibrate steps need besides the config (kernels they run)
    spec_files   files its specs step writes beside the run specs (plan.json, groups.json ...)
    run_inputs   files every run needs besides its spec (the kernels it runs)
    folder       experiments/<name> (set by the registry)
    variant_kinds the kinds of scheduler variant its config names (an unknown name is answered
                 with the nearest variants of these kinds)
    analysis     its analysis.py (corun.util.lazy_module): analyse(inputs) -> Result, JOB_TEXT
                 (the columns of its jobs.csv read as text, besides those every analysis reads:
                 analysis.experiment) and RUN_TEXT (the same of its runs.csv)
    """

    name: str = ""
    runs_of: str | None = None
    host_runs: bool = True
    data_file: str | None = "layout.json"
    calibrates: bool = False
    step_inputs: tuple[str, ...] = ()
    spec_files: tuple[str, ...] = ()
    run_inputs: tuple[str, ...] = ()
    folder: Path | None = None
    variant_kinds: tuple[str, ...] | None = None
    analysis: ModuleType | None = None

    # ----------------------------------------------------------------- configuration
    def prepare_config(self, raw: dict, section_schema: dict) -> dict:
        """The raw configuration before schema validation (e.g. catalogs merged over defaults)."""
        return raw

    def check(self, cfg: dict, source: str) -> None:
        """Cross-key checks the schema cannot express; raise a one-line ConfigError."""

    def variant_params(self, cfg: dict, source: str) -> list[tuple[str, str, str | None, object]]:
        """(config key, variant, param, value) of every scheduler parameter its runs pass, and
        (key, variant, None, None) for each variant they use; checked against the variants'
        manifests before anything runs. Default: the section's `scheduler` and `scheduler_params`."""
        sec = cfg.get(self.name) or {}
        if "scheduler" not in sec:
            return []
        variant = sec["scheduler"]
        given = sec.get("scheduler_params") or {}
        return [(f"{self.name}.scheduler", variant, None, None)] + [
            (f"{self.name}.scheduler_params.{p}", variant, p, v) for p, v in given.items()
        ]

    # ----------------------------------------------------------------- hosts (the estimate)
    def hosts_held(self, cfg: dict) -> int:
        """The hosts its largest run spans on a testbed inventory: 1 for a single-node run, and
        for a cluster emulated on one machine (network namespaces)."""
        return 1

    def inventory_hosts(self, cfg: dict) -> int:
        """The hosts of its own cluster inventory when its runs span one; 0 when they do not, or
        the inventory is not written yet (a testbed's is, once its nodes are reserved)."""
        return 0

    # ----------------------------------------------------------------- the rules' steps
    def data(self, cfg: dict, data_dir: Path) -> str:
        """Write the input files; a one-line summary."""
        return "no input files"

    def calibrate(self, cfg: dict, data_dir: Path) -> dict:
        """Measure what the specs need on this machine (calibration.json)."""
        return {"needed": False}

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        """Write every run spec of the experiment into out_dir; how many."""
        return 0

    def run_names(self, cfg: dict) -> list[str]:
        """The names of its run folders (results/<profile>/<name>/runs/<run>)."""
        return []

    def estimate(self, cfg: dict) -> dict | None:
        """{"runs", "seconds", "k_dropped"} for the plan, or None when it makes no runs of its own."""
        return None

    def run_figures(self, cfg: dict) -> dict[str, list[str]]:
        """run -> the paper's figures it serves, from the section's `figures` (corun.plan.figures);
        empty without them. By default a figure whose slice is empty ({}: the whole matrix)
        serves every run; an experiment whose figures cut its matrix says which run each holds."""
        shown = (cfg.get(self.name) or {}).get("figures") or {}
        whole = [f for f, cut in shown.items() if not cut]
        return {r: list(whole) for r in self.run_names(cfg)} if whole else {}

    # ----------------------------------------------------------------- how the workflow runs it
    def group_runs(self, cfg: dict) -> dict[str, list[str]]:
        """Runs measured together by one invocation (a cluster and file system brought up around
        them: corun.testbed.pfs_runs), {group: [run names]}; the other runs are run one by one."""
        return {}

    def run_command(self, cfg: dict, state_dir: str) -> str:
        """The Python arguments that run one spec (`<python> <these> SPEC --out DIR`)."""
        return "-m corun run"

    def run_variants(self, cfg: dict, run: str) -> list[str]:
        """The scheduler variants a run uses (their manifests are inputs of the run: an edited
        manifest measures its runs again). By default the variants of `variant_params` whose name
        stands in the run's name between _ or - (the longest where names overlap); all of them
        when none does."""
        variants = sorted({v for _, v, _, _ in self.variant_params(cfg, "config")})
        hits = [v for v in variants if re.search(rf"(^|[_-]){re.escape(v)}([_-]|$)", run)]
        hits = [v for v in hits if not any(v != w and v in w for w in hits)]
        return hits or variants

    def run_priority(self, cfg: dict) -> dict[str, int]:
        """Snakemake priorities of its runs (higher first); empty: no order."""
        return {}

    def analysis_inputs(self, cfg: dict, results: str) -> dict[str, str | list[str]]:
        """Files its analysis reads (the workflow's inputs of its analyse step)."""
        owner, lay = self.runs_of or self.name, Layout(results)
        return {"jobs": lay.table(owner, "jobs"), "runs": lay.table(owner, "runs")}

    def analysis_outputs(self, results: str) -> list[str]:
        """Files its analysis writes: section.json first, then tables other experiments read."""
        return [Layout(results).section(self.name)]

    # ----------------------------------------------------------------- its analysis
    def _analysis(self) -> ModuleType:
        if self.analysis is None:
            raise ConfigError(
                f"experiments/{self.name}/experiment.py",
                "analysis",
                None,
                "its analysis.py, loaded with lazy_module: analyse(inputs) -> Result (analysis.experiment)",
            )
        return self.analysis

    def analyse(self, inputs):
        """Its metrics from its collected runs: an analysis.experiment.Result for the
        analysis.experiment.Inputs given (analysis.experiment judges the claims and writes the
        section)."""
        return self._analysis().analyse(inputs)

    @property
    def job_text(self) -> list[str]:
        return list(self._analysis().JOB_TEXT)

    @property
    def run_text(self) -> list[str]:
        return list(self._analysis().RUN_TEXT)


def machine_cmps(cfg: dict, source: str = "config") -> tuple[str, list[list[int]]]:
    """(grouping, CMPs) of this machine, or of the machine `plan_for` describes (for planning)."""
    pc = cfg["cmp"]
    if cfg.get("plan_for"):
        n, c = (int(x) for x in cfg["plan_for"].split("x"))
        return "assumed", [list(range(i * c, (i + 1) * c)) for i in range(n)]
    return topology.cmp_groups(topology.discover(), pc["grouping"], pc.get("cores_per_cmp"), pc.get("groups"), source)


def x264_s(wl: dict) -> float:
    """Rough time of one x264 job alone (PARSEC's options at about 4 Mpixel/s on a 2-core VM)."""
    w, h = {"simlarge": (640, 360), "native": (1920, 1080)}[wl["input"]]
    return w * h * wl["frames"] / 4e6


def graph_s(scale: int, ef: int, roots: int) -> float:
    """Rough time of one graph job alone: Graph500 2.1.4's seq-csr where the graph500 role built
    it (64 validated BFS, unoptimised as upstream's make.inc: about 9 us per edge on a 2-core VM,
    bench/upstream_vs_stand_in.py), else graph_bfs (about 0.6 us per edge plus BFS)."""
    edges = ef * 2**scale
    if workloads.upstream_program("graph500", "seq-csr")[0] is not None:
        return edges * 9e-6
    return edges * (0.6e-6 + roots * 0.02e-6)


def stamp_remeasure(out_dir: Path, remeasure: dict) -> int:
    """Write the configuration's `remeasure` section into every run spec of a specs step (its
    *.yaml files with jobs), so that `corun run SPEC` by hand measures again exactly as the
    workflow does. A run of a file-system group (groups.json, a group with `pfs`) is measured
    once: corun.testbed.pfs_runs reads the servers' counters around each run, and a second
    attempt would count the requests of both. A spec that already has the section keeps it.
    Every spec is checked against the run spec schema. Returns the number of specs written."""
    once = set()
    groups = out_dir / "groups.json"
    if groups.is_file():
        for g in json.loads(groups.read_text()).get("groups", []):
            if g.get("pfs") is not None:
                suffixes = [""] + [c["suffix"] for c in g.get("companions") or []]
                once.update(f"{run}{s}" for run in g["runs"] for s in suffixes)
    n = 0
    for path in sorted(out_dir.glob("*.yaml")):
        spec = yaml.load(path.read_text(), Loader=config.SafeLoader)
        if not isinstance(spec, dict) or "jobs" not in spec:
            continue
        if "remeasure" not in spec:
            spec["remeasure"] = (
                {**remeasure, "max_steal_pct": None, "max_foreign_pct": None} if path.stem in once else dict(remeasure)
            )
            atomic_write_text(path, yaml.safe_dump(spec, sort_keys=False))
            n += 1
        # a bad spec stops the specs step here, before any run (`corun run` checks it again)
        config.validate(spec, "run_spec", str(path))
    return n

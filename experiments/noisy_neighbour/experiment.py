"""Paper 003: noisy neighbours from persistent-memory I/O, placement across SMT, LLC and NUMA.

Runs, for each CPU-bound workload of graded cache sensitivity (experiments.noisy_neighbour.workloads):

- alone runs: the workload alone, and the fio random-write task alone, `alone_reps` times each,
  for the normalised performance of the pairs;
- pair runs: `cpu_tasks` copies of the workload beside `io_tasks` fio random-write tasks under
  each placement variant of each domain (smt, llc, numa), `reps` times, in a seeded order.

A (domain, variant) point this machine cannot express (no SMT, one LLC group, one NUMA node) is
not run: `noisy_workloads.plan` gives the reason, and `plan.json` beside the specs records it
for the analysis, which lists the point as missing with its reason (the claims that need SMT or
NUMA nodes say "not measurable here" from the machine description themselves).
"""

from __future__ import annotations

import math
import random
from pathlib import Path

import yaml

from corun import config
from corun.errors import ConfigError
from corun.machine.placement_domains import Domains, read_domains
from corun.plan.base import RUN_OVERHEAD_S, Experiment
from corun.run.inputs import unpack_tar
from corun.util import atomic_write_json, atomic_write_text, lazy_module
from experiments.noisy_neighbour import sizing
from experiments.noisy_neighbour import workloads as nw

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)

NAME = "noisy_neighbour"
PLAN_FILE = "plan.json"


def section(cfg: dict) -> dict:
    return cfg[NAME]


def workloads_used(sec: dict) -> list[dict]:
    use = sec["use_workloads"]
    ws = sec["cpu_workloads"]
    return ws if use is None else [w for w in ws if w["name"] in use]


def domains_here(cfg: dict) -> Domains:
    return read_domains("/")


def alone_points(sec: dict) -> list[dict]:
    """(kind, workload, rep) of every alone run, reps outermost."""
    pts = []
    for r in range(sec["alone_reps"]):
        for w in workloads_used(sec):
            pts.append({"kind": "alone_cpu", "workload": w["name"], "rep": r})
        pts.append({"kind": "alone_io", "workload": sec["io_workload"]["name"], "rep": r})
    return pts


def plan_rows(sec: dict, domains: Domains) -> list[dict]:
    """noisy_workloads.plan over the workloads used."""
    sub = {**sec, "cpu_workloads": workloads_used(sec)}
    return nw.plan(sub, domains)


def pair_points(sec: dict, rows: list[dict]) -> list[dict]:
    """The measurable plan rows x reps, in a seeded order within each rep."""
    ok = [r for r in rows if r["not_measurable"] is None]
    rng = random.Random(sec["seed"])
    pts = []
    for rep in range(sec["reps"]):
        order = list(ok)
        rng.shuffle(order)
        pts += [{**r, "kind": "pair", "rep": rep} for r in order]
    return pts


def run_name(p: dict) -> str:
    if p["kind"] == "alone_cpu":
        return f"alone_{p['workload']}_r{p['rep']}"
    if p["kind"] == "alone_io":
        return f"alone_io_r{p['rep']}"
    return f"{p['domain']}_{p['variant']}_{p['workload']}_r{p['rep']}"


def all_points(cfg: dict, domains: Domains | None = None) -> list[dict]:
    sec = section(cfg)
    rows = plan_rows(sec, domains or domains_here(cfg))
    return alone_points(sec) + pair_points(sec, rows)


def cpu_template(sec: dict, w: dict, data_dir: Path) -> dict:
    """The job of one CPU workload: SPEC CPU, PARSEC (run in its unpacked input) or llc_miss."""
    if sec["stand_in_accesses"] is not None and w["stand_in"]["kind"] == "llc_miss":
        w = {**w, "stand_in": {**w["stand_in"], "accesses": sec["stand_in_accesses"]}}
    job = nw.cpu_job(w, nw.llc_size_bytes())
    tar = job.pop("input_tar", None)
    if tar is not None:
        job["cwd"] = str(parsec_dir(data_dir, w["name"]).resolve())
        job["tar"] = tar
    return job


def parsec_dir(data_dir: Path, workload: str) -> Path:
    return data_dir / "parsec" / workload


def job_entry(name: str, t: dict, extra_labels: dict) -> dict:
    j = {
        "name": name,
        "cmd": [str(c) for c in t["cmd"]],
        "env": {k: str(v) for k, v in (t.get("env") or {}).items()},
        "result": t.get("result", "none"),
        "labels": {**t["labels"], **extra_labels},
    }
    if t.get("cwd"):
        j["cwd"] = t["cwd"]
    return j


def make_spec(cfg: dict, p: dict, data_dir: Path, ncpus: int, cal: dict | None = None, cpu: int = 0) -> dict:
    """A run's spec; an alone CPU run's job repeated by the calibration's copies on CPU `cpu`
    (experiments.noisy_neighbour.sizing)."""
    sec = section(cfg)
    by_name = {w["name"]: w for w in sec["cpu_workloads"]}
    io = sec["io_workload"]
    labels = {
        "experiment": NAME,
        "kind": p["kind"],
        "domain": p.get("domain", ""),
        "variant": p.get("variant", "linux"),
        "workload": p["workload"],
        "rep": p["rep"],
    }
    jobs = []
    if p["kind"] == "alone_cpu":
        jobs.append(job_entry(f"{p['workload']}-0", cpu_template(sec, by_name[p["workload"]], data_dir), {}))
    elif p["kind"] == "alone_io":
        jobs.append(job_entry(f"{io['name']}-0", nw.io_job(io, data_dir, 0), {}))
    else:
        for t in p["tasks"].split(","):
            kind, name = t.split(":", 1)
            i = int(name.rsplit("-", 1)[1])
            tmpl = cpu_template(sec, by_name[p["workload"]], data_dir) if kind == "cpu" else nw.io_job(io, data_dir, i)
            jobs.append(job_entry(name, tmpl, {}))
    for j in jobs:
        j["labels"].pop("file", None)
    monitors = sec["monitors"] if sec["monitors"] is not None else cfg["monitors"]["enabled"]
    spec = {
        "name": f"{NAME}-{run_name(p)}",
        "labels": labels,
        "placement": {"slots_per_core": max(1, math.ceil(len(jobs) / max(1, ncpus)))},
        "jobs": jobs,
        "device": {"path": str(data_dir.resolve())},
        "monitors": {
            "enabled": list(monitors),
            "interval_s": cfg["monitors"]["interval_s"],
            "perf_events": cfg["monitors"]["perf_events"],
        },
    }
    if p["kind"] == "pair":
        spec["scheduler"] = {"name": p["variant"], "params": {"tasks": p["tasks"]}}
    if p["kind"] == "alone_cpu":  # its bandwidth is read from perf's intervals: sized in time
        spec = sizing.sized_alone(cfg, spec, p["workload"], cal, cpu)
    return spec


class NoisyNeighbour(Experiment):
    name = NAME
    calibrates = True
    variant_kinds = ("placement",)
    data_file = PLAN_FILE
    spec_files = ("plan.json",)

    def analysis_inputs(self, cfg: dict, results: str) -> dict:
        """The runs' tables, the plan (what this machine cannot express, and why) and the
        premise's folders, one per layout and repetition (experiments/noisy_neighbour/rules.smk
        measures them)."""
        d = f"{results}/{NAME}"
        prem = section(cfg)["premise"]
        return {
            **super().analysis_inputs(cfg, results),
            "specs": f"{d}/specs",  # its plan.json
            "premise": [f"{d}/premise/{layout}/r{rep}" for layout in prem["layouts"] for rep in range(prem["reps"])],
        }

    def prepare_config(self, raw: dict, section_schema: dict) -> dict:
        """Without cpu_workloads, the catalog of experiments/noisy_neighbour/catalog.yaml."""
        sec = raw[NAME]
        if "cpu_workloads" not in sec:
            catalog = config.read_document(nw.CONFIG)[NAME]
            raw = {**raw, NAME: {**sec, "cpu_workloads": catalog["cpu_workloads"]}}
        return raw

    def check(self, cfg: dict, source: str) -> None:
        sec = section(cfg)
        nw.fill_defaults(sec)
        names = [w["name"] for w in sec["cpu_workloads"]]
        for i, n in enumerate(sec["use_workloads"] or []):
            if n not in names:
                raise ConfigError(source, f"{NAME}.use_workloads[{i}]", n, f"one of {', '.join(names)}")
        for dom, d in sec["domains"].items():
            for i, v in enumerate(d["policies"]):
                if v not in nw.VARIANT_POLICY:
                    raise ConfigError(source, f"{NAME}.domains.{dom}.policies[{i}]", v, "a placement variant")

    def variant_params(self, cfg: dict, source: str) -> list[tuple[str, str, str | None, object]]:
        out = []
        for dom, d in section(cfg)["domains"].items():
            for i, v in enumerate(d["policies"]):
                out.append((f"{NAME}.domains.{dom}.policies[{i}]", v, None, None))
        return out

    def data(self, cfg: dict, data_dir: Path) -> str:
        """The plan on this machine, and PARSEC inputs unpacked where a PARSEC program runs."""
        sec = section(cfg)
        data_dir.mkdir(parents=True, exist_ok=True)
        made = []
        for w in workloads_used(sec):
            t = cpu_template(sec, w, data_dir)
            if "tar" in t:
                dest = parsec_dir(data_dir, w["name"])
                mark = dest / ".corun-unpacked"
                if not mark.exists():
                    unpack_tar(Path(t["tar"]), dest)
                    mark.write_text(f"{t['tar']}\n")
                    made.append(str(dest))
        domains = domains_here(cfg)
        rows = plan_rows(sec, domains)
        atomic_write_json(data_dir / PLAN_FILE, {"domains": domains.as_dict(), "rows": rows, "made": made})
        bad = sum(r["not_measurable"] is not None for r in rows)
        return f"{len(rows)} (domain, policy, workload) points, {bad} not measurable here; {len(made)} input set(s)"

    def calibrate(self, cfg: dict, data_dir: Path) -> dict:
        """One job of each CPU workload timed alone on this machine, and the copies its alone run
        repeats to last min_intervals monitor intervals (experiments.noisy_neighbour.sizing)."""
        sec = section(cfg)
        return sizing.calibrate(cfg, workloads_used(sec), lambda w: cpu_template(sec, w, data_dir))

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        out_dir.mkdir(parents=True, exist_ok=True)
        domains = domains_here(cfg)
        pts = all_points(cfg, domains)
        for p in pts:
            spec = make_spec(cfg, p, data_dir, len(domains.cpus), calibration, min(domains.cpus))
            atomic_write_text(out_dir / f"{run_name(p)}.yaml", yaml.safe_dump(spec, sort_keys=False))
        sec = section(cfg)
        rows = plan_rows(sec, domains)
        for r in rows:
            r["runs"] = [
                run_name(p)
                for p in pts
                if p["kind"] == "pair"
                and p["variant"] == r["variant"]
                and p["domain"] == r["domain"]
                and p["workload"] == r["workload"]
            ]
        atomic_write_json(out_dir / PLAN_FILE, {"domains": domains.as_dict(), "rows": rows})
        return len(pts)

    def run_names(self, cfg: dict) -> list[str]:
        return [run_name(p) for p in all_points(cfg)]

    def estimate(self, cfg: dict) -> dict:
        sec = section(cfg)
        pts = all_points(cfg)
        io_s = sec["io_workload"]["runtime_s"]
        n_io = sum(p["kind"] != "alone_cpu" for p in pts)
        n_alone = sum(p["kind"] == "alone_cpu" for p in pts)  # each at least min_measure_s
        prem = sec["premise"]
        premise_s = (
            prem["reps"] * prem["duration_s"] * (3 * ("alone" in prem["layouts"]) + ("together" in prem["layouts"]))
        )
        return {
            "runs": len(pts),
            "seconds": len(pts) * RUN_OVERHEAD_S + n_io * io_s + n_alone * sizing.min_measure_s(cfg) + premise_s,
            "k_dropped": [],
        }

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.noisy_neighbour.analysis")


EXPERIMENT = NoisyNeighbour()

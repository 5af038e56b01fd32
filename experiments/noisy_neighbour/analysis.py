"""Noisy neighbours from persistent-memory I/O (paper 003): placement across SMT, LLC and NUMA.

Inputs: the collected jobs.csv and runs.csv of the noisy_neighbour runs, the experiment's
plan.json (every (domain, variant, workload) point, with the reason when this machine cannot
express it; the machine's cores) and the premise folders of corun.monitors.pelt (one
summary.json per layout and repetition). The metrics are defined in
experiments/noisy_neighbour/metrics.py.

Evidence the claims (claims.yaml) read, judged by analysis.verdicts:
  runs      one row per pair run: overall performance and its parts, failed and why;
  pairing   one row per cfs run whose tasks met on a core: the same-type share of the pairs
            placed together, against chance;
  premise   one row per premise repetition and task: PELT's mean util_avg, where the load/store
            task wrote;
  numa_gain one row per program and rep with both NUMA placements: spread over concentrate,
            beside the program's memory bandwidth alone (perf's LLC misses).

Run by the workflow: python -m experiments analyze noisy_neighbour.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from analysis import runtables as rt
from analysis.common import AnalysisInputError, fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from corun import config as corun_config
from experiments.noisy_neighbour import figures as nf
from experiments.noisy_neighbour import metrics as nm
from experiments.noisy_neighbour import workloads as nw

JOB_TEXT = ["kind", "domain", "variant", "workload", "task_type", "result_check"]
RUN_TEXT = ["kind", "domain", "workload"]
NAME = "noisy_neighbour"


def read_plan(path: str | Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise AnalysisInputError(f"{path}: not readable ({exc}) (expected the experiment's plan.json)") from None


def section_of(inputs: Inputs) -> dict:
    return (inputs.config or {}).get(NAME) or {}


def workload_names(sec: dict) -> set[str]:
    """Every CPU workload a claim may name: the configuration's and the catalog's."""
    catalog = corun_config.read_document(nw.CONFIG)[NAME]["cpu_workloads"]
    return {w["name"] for w in [*catalog, *(sec.get("cpu_workloads") or [])]}


def levels(sec: dict, runs: pd.DataFrame) -> dict[str, set]:
    return {
        "variant": set(nw.VARIANT_POLICY),
        "domain": {"smt", "llc", "numa"},
        "workload": workload_names(sec) | set(runs["workload"]),
        "task": set(nm.PREMISE_TASKS),
        "layout": {"alone", "together"},
        "store_medium": {"pmem", "memory"},
        "io_medium": {"pmem", "memory", "disk"},
        "cache_sensitivity": {"low", "medium", "high"},
    }


def setup(inputs: Inputs, sec: dict, runs: pd.DataFrame) -> pd.DataFrame:
    """The paper's setup beside ours: what is compared, never judged."""
    v = inputs.claims.values
    used = sec.get("use_workloads") or [w["name"] for w in sec.get("cpu_workloads") or []]
    numa = (sec.get("domains") or {}).get("numa") or {}
    programs = len(used) or runs["workload"].nunique()
    tasks = f"{numa['cpu_tasks']} cpu + {numa['io_tasks']} io" if numa else "not run"
    return setup_frame(
        [
            ("CPU-bound programs of graded cache sensitivity", v["cpu_programs"], programs),
            ("tasks of each type per NUMA run", v["numa_tasks_per_type"], tasks),
        ]
    )


def analyse(inputs: Inputs) -> Result:
    jobs, runs_csv = inputs.jobs, inputs.runs
    plan = read_plan(Path(inputs.files["specs"]) / "plan.json")
    sec = section_of(inputs)
    log = rt.MissingLog()
    dirs = inputs.run_dirs
    measures = nm.job_measures(jobs, dirs, log) if len(jobs) else pd.DataFrame(columns=["kind", "why"])
    base = nm.baselines(measures) if len(measures) else {"cpu_s": {}, "io_mb_s": float("nan"), "failed": []}
    runs = nm.normalise(measures, base) if len(measures) else pd.DataFrame(columns=nm.RUN_COLUMNS)
    table = nm.points(runs, plan)
    pairs, apart = nm.pairing(runs, jobs, dirs, plan, log)
    # the bandwidth alone only of the programs run at the NUMA level (the trend's x)
    numa_programs = set(runs[runs["domain"] == "numa"]["workload"]) if len(runs) else set()
    of_numa = measures[measures["workload"].isin(numa_programs)] if numa_programs else measures.iloc[0:0]
    bandwidth = nm.cpu_bandwidth(of_numa, runs_csv, dirs, log) if len(of_numa) else {}
    gains = nm.numa_gain(runs, bandwidth)
    premise, summaries = nm.premise(inputs.files.get("premise") or [], log)
    for r in plan["rows"]:
        if r["not_measurable"]:
            log.add(f"{r['domain']} {r['variant']}", r["not_measurable"], "corun.machine.placement_domains", "plan")
    n_meas = int((table["not_measurable"] == "").sum())
    n_failed = int(runs["failed"].sum())
    media = sorted({s.get("store_medium", "?") for s in summaries})
    summary = [
        f"{len(table)} (domain, placement, workload) point(s), {n_meas} that this machine can express; "
        f"{len(runs)} pair run(s), {n_failed} failed.",
        "Alone: CPU workloads "
        + (", ".join(f"{k} {fmt_num(v)} s" for k, v in sorted(base["cpu_s"].items())) or "none")
        + f"; fio random writes {fmt_num(base['io_mb_s'])} MB/s"
        + (f"; failed alone runs: {', '.join(base['failed'])}" if base["failed"] else "")
        + ".",
        f"CFS's placement: {len(pairs)} cfs run(s) whose tasks met on a core"
        + (f", {len(apart)} whose tasks never did ({', '.join(apart[:3])})" if apart else "")
        + ".",
        f"Premise: {premise['run_id'].nunique()} measurement(s), the load/store task writing to "
        + ("; ".join(media) if media else "nothing (not measured)")
        + ".",
    ]
    notes = [
        "Normalised performance: CPU task = its time alone over its time in the pair (result_elapsed_s, "
        "else runtime_s); fio = its write bandwidth in the pair over alone; overall = their mean over "
        "the run's tasks. A pair run with a failed job, a failed kernel check, no fio output or no alone "
        "run to normalise by is failed (the claims on it say so, the runs named).",
        "overlap_pct: the first task's end over the last task's end, in %: how much of the run the "
        "tasks shared; the rest ran with fewer neighbours.",
        "Points not run: this machine cannot express the placement (reason in points.csv); the claims "
        "that need SMT or two NUMA nodes say so from the machine description.",
        "CFS pairing: at every sample of the cfs runs' cpu_samples.csv, every two tasks whose threads "
        "last ran on one physical core are a pair placed together (with one hardware thread per core "
        "they time-share it); a job's worker thread stands for it. same_type_excess = the same-type "
        "share of these pairs over the share that random placement gives.",
        "NUMA gain: per program and rep, numa_spread's overall performance over numa_concentrate's; the "
        f"program's memory bandwidth alone is (LLC-load-misses + LLC-store-misses) x {nm.LINE_BYTES} B per "
        f"second from perf's intervals inside its alone runs (at least {nm.MIN_PERF_INTERVALS}; fewer: the "
        "rows are failed with that reason).",
        "Premise: PELT's util_avg (0-1024) of each task alone, after the warm-up, per repetition of "
        "corun.monitors.pelt; the load/store task is the paper's PM I/O task only on a DAX mount of "
        "persistent memory (store_medium pmem).",
        *run_checks(jobs, runs_csv),
    ]
    outputs = {
        "points.csv": table,
        "pair_runs.csv": runs,
        "pairing.csv": pairs,
        "premise.csv": premise,
        "numa_gain.csv": gains,
        "setup.csv": setup(inputs, sec, runs),
    }
    tables = [
        {"title": "Placements: normalised performance over the runs that did not fail, or why not run here",
         "csv": "points.csv"},
        {"title": "Pair runs (failed ones with the reason)", "csv": "pair_runs.csv"},
        {"title": "CFS's placement: pairs of tasks on one core, same-type share against chance", "csv": "pairing.csv"},
        {"title": "Premise: PELT's util_avg per task and repetition", "csv": "premise.csv"},
        {"title": "NUMA: spread over concentrate per program and rep, beside its memory bandwidth alone",
         "csv": "numa_gain.csv"},
        {"title": "The paper's setup beside this run's (compared, not judged)", "csv": "setup.csv"},
    ]  # fmt: skip
    figures = [
        Figure(nf.PERF_FIG, "Overall performance of each measured pair placement (1 = as fast as alone); "
               "error bars: 95% t-interval over reps.", lambda out: nf.plot_points(table, out)),
        Figure(nf.PREMISE_FIG, "PELT's util_avg of the CPU, load/store and psync tasks, each alone; one "
               "point per repetition.", lambda out: nf.plot_premise(premise, out)),
    ]  # fmt: skip
    return Result(
        summary=summary,
        evidence={"runs": runs, "pairing": pairs, "premise": premise, "numa_gain": gains},
        levels=levels(sec, runs),
        outputs=outputs,
        tables=tables,
        figures=figures,
        notes=notes,
        log=log,
    )

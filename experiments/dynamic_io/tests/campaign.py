"""A hand-made dynamic_io campaign on disk, with hand-computed answers (test_analysis.py).

Workload w01 (two x264 jobs), variants linux and dynamic_io, reps 0-2, and two alone runs of
x264 under linux with reps 0 and 1 (1.9 s and 2.1 s: T_alone = 2.0 s).

  run                  runtimes (s)  T_wl  thr     avg  x = T/T_alone  sum 1/x  mean x  Jain
  linux r0             4, 5          5     0.4     4.5  2, 2.5         0.9      2.25    20.25/20.5
  linux r1             4, 4          4     0.5     4.0  2, 2           1.0      2.0     1
  linux r2             6, 4          6     1/3     5.0  3, 2           5/6      2.5     25/26
  dynamic_io r0        3, 3          3     2/3     3.0  1.5, 1.5       4/3      1.5     1
  dynamic_io r1        2, 4          4     0.5     3.0  1, 2           1.5      1.5     0.9
  dynamic_io r2        4, 4          4     0.5     4.0  2, 2           1.0      2.0     1

`overhead` {(timeslice_s, rep): [runtimes]} adds overhead runs of w01 (dynamic_io, no job over
its bound), each with a daemon summary of `suspends` 0 unless {(timeslice_s, rep): n} says more.
"""

import json
from pathlib import Path

import pandas as pd

from analysis.experiment import read_inputs, write
from experiments import PAPERS_DIR
from experiments.dynamic_io import analysis as dio

FOLDER = Path(__file__).resolve().parents[1]
RUNTIMES = {
    ("linux", 0): [4, 5],
    ("linux", 1): [4, 4],
    ("linux", 2): [6, 4],
    ("dynamic_io", 0): [3, 3],
    ("dynamic_io", 1): [2, 4],
    ("dynamic_io", 2): [4, 4],
}
WAIT = {"linux": (100.0, 200.0), "dynamic_io": (50.0, 50.0)}  # at 10 and 30 requests/s
TOPOLOGY = {"cpus": 2, "cmps": [[0], [1]], "cmp_grouping": "cores", "smt": False, "numa_nodes": 1}


def job_row(rid, i, t, app, workload, variant, exit_code=0):
    return {
        "run_id": rid,
        "job_id": f"000{i}-j",
        "runtime_s": float(t),
        "exit_code": exit_code,
        "start_s": 0.0,
        "end_s": float(t),
        "app": app,
        "job_index": i,
        "workload": workload,
        "wtype": "D",
        "variant": variant,
        "experiment": "dynamic_io",
        "binary": "debian x264",
        "stands_in_for": "PARSEC x264 simlarge",
        "scale_note": "scaled down",
        "threads": 1,
    }


def write_campaign(
    root, runtimes=None, decisions_for=("r0", "r1"), topology=TOPOLOGY, exit_codes=None, overhead=None, suspends=None
):
    """jobs.csv, runs.csv and the run folders of the campaign; `runtimes` {(variant, rep): [s]}
    replaces RUNTIMES (variant names other than linux are runs of that variant), `exit_codes`
    {(variant, rep): {job: code}} fails jobs."""
    runtimes = runtimes or RUNTIMES
    jobs, runs = [], []

    def run_dir(rid, variant, kind, rep, duration, workload, timeslice_s=0.5):
        d = root / "runs" / rid
        (d / "tidy").mkdir(parents=True)
        meta = {
            "run_id": rid,
            "scheduler": {"name": variant},
            "missing": [],
            "start_epoch_s": 1000.0 + 10 * len(runs),
            "topology": topology,
        }
        (d / "metadata.json").write_text(json.dumps(meta))
        runs.append(
            {
                "run_id": rid,
                "experiment": "dynamic_io",
                "run_kind": kind,
                "workload": workload,
                "variant": variant,
                "rep": rep,
                "order": len(runs),
                "duration_s": duration,
                "device": "vda",
                "throttle_read_bps": 8000000,
                "timeslice_s": timeslice_s if variant != "linux" else None,
                "io_bound_mbps": 6.0 if variant != "linux" else None,
                "batch_length": 2 if kind == "campaign" else 1,
                "paper_batch_length": 128 if kind == "campaign" else None,
                "metadata_path": f"runs/{rid}/metadata.json",
                "run_dir": f"runs/{rid}",
            }
        )
        return d

    for rep, t in ((0, 1.9), (1, 2.1)):
        rid = f"alone-x264-r{rep}"
        run_dir(rid, "linux", "alone", rep, t, "alone")
        jobs.append(job_row(rid, 0, t, "x264", "alone", "linux"))
    for (variant, rep), times in runtimes.items():
        rid = f"w01-{variant}-r{rep}"
        d = run_dir(rid, variant, "campaign", rep, max(times), "w01")
        codes = (exit_codes or {}).get((variant, rep), {})
        for i, t in enumerate(times):
            jobs.append(job_row(rid, i, t, "x264", "w01", variant, codes.get(i, 0)))
        w1, w2 = WAIT.get(variant, WAIT["dynamic_io"])
        pd.DataFrame(
            {
                "time_epoch_s": [1.0, 2.0, 3.0, 9.0],
                "t_s": [1.0, 2.0, 2.5, 99.0],
                "device": ["vda", "vda", "vdb", "vda"],
                "r_per_s": [10.0, 30.0, 50.0, 50.0],
                "w_per_s": [0.0, 0.0, 0.0, 0.0],
                "await_ms": [w1 + 1, w2 + 2, 9.0, 9.0],
                "svc_ms": [1.0, 2.0, 9.0, 9.0],
                "wait_ms": [w1, w2, 0.0, 0.0],
                "util_pct": [1.0, 6.0, 1.0, 1.0],
            }
        ).to_csv(d / "tidy" / "iostat.csv", index=False)
        if variant != "linux" and f"r{rep}" in decisions_for:
            write_decisions(d)
    for (ts, rep), times in (overhead or {}).items():
        rid = f"w01-dynamic_io-overhead-ts{ts:g}-r{rep}"
        d = run_dir(rid, "dynamic_io", "overhead", rep, max(times), "w01", timeslice_s=ts)
        for i, t in enumerate(times):
            jobs.append(job_row(rid, i, t, "x264", "w01", "dynamic_io"))
        write_decisions(d, suspends=(suspends or {}).get((ts, rep), 0))
    pd.DataFrame(jobs).to_csv(root / "jobs.csv", index=False)
    pd.DataFrame(runs).to_csv(root / "runs.csv", index=False)
    return root / "jobs.csv", root / "runs.csv"


def write_decisions(d, suspends=1):
    state = d / "sched" / "state"
    state.mkdir(parents=True)
    lines = [
        {"q": 1, "t_s": None, "suspended": 0, "running": 0, "throttled": 0, "actions": []},
        {"note": "refused", "job_id": "x", "reason": "process gone"},
        {"q": 2, "t_s": 0.5, "suspended": 1, "running": 1, "throttled": 0,
         "actions": [{"job_id": "0000-j", "action": "suspend"}]},
        {"q": 3, "t_s": 1.0, "suspended": 0, "running": 2, "throttled": 0, "actions": []},
    ]  # fmt: skip
    (state / "decisions.jsonl").write_text("\n".join(json.dumps(x) for x in lines) + "\n")
    summary = {"quanta": 3, "suspends": suspends, "resumes": suspends, "forced_resumes": 0, "throttles": 0,
               "cpu_user_s": 0.01, "cpu_sys_s": 0.01, "wall_s": 4.0, "jobs": {}}  # fmt: skip
    (state / "summary.json").write_text(json.dumps(summary))


def analysed(root, config=None, edit_jobs=None, **campaign):
    """(inputs, result, section, out) of the campaign written under root: read, analysed, judged;
    `edit_jobs` changes the jobs table first (failing the alone runs, say)."""
    jobs_csv, runs_csv = write_campaign(root, **campaign)
    if edit_jobs is not None:
        jobs = pd.read_csv(jobs_csv)
        edit_jobs(jobs)
        jobs.to_csv(jobs_csv, index=False)
    inputs = read_inputs(
        "dynamic_io",
        FOLDER,
        PAPERS_DIR,
        jobs_csv,
        runs_csv,
        job_text=dio.JOB_TEXT,
        run_text=dio.RUN_TEXT,
        config=config,
    )
    result = dio.analyse(inputs)
    out = root / "out"
    section = write(out, inputs, result)
    return inputs, result, section, out

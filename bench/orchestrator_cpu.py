#!/usr/bin/env python3
"""The CPU share of the orchestrator and of all foreign processes while runs measure.

    .venv/bin/python bench/orchestrator_cpu.py [--interval S] [--json OUT] -- CMD ...
    .venv/bin/python bench/orchestrator_cpu.py --runs RESULTS_DIR

The first form starts CMD (a Snakemake campaign: `.venv/bin/snakemake --profile
workflows/profiles/smoke all --config results_dir=... data_dir=...`) and samples /proc every S
seconds (default 0.2). A run measures while one of CMD's descendants is in a run's cgroup
(corun/<run id> in its blkio or memory hierarchy); each interval that begins and ends within
one run's measuring is that run's. Per run it sums, in % of ONE CPU:

- snakemake: CMD's own process (all its threads: the scheduler, its timers);
- orchestration: CMD and its descendants that are not a runner's: the rules' shells, a group
  runner (corun.testbed.pfs_runs), Snakemake;
- corun: the runner (the jobs' parent) and its descendants outside the run's cgroup: monitors
  and a variant's daemon, if any;

and, in % of the MACHINE (all CPUs, as steal), foreign: the machine's process time (/proc/stat
user, nice, system) less the jobs' (the cgroup's processes and the runner's reaped children),
kernel threads and the sampler itself included (the runs' own metadata.json has the finer
figure: the second form). Then the mean and max over the runs, the same shares over all the runs'
measuring time together (a 10 ms clock tick is 1 % of one CPU in a one-second run, so a short
run's own figure is coarse), and the most threads CMD had.

    .venv/bin/python bench/orchestrator_cpu.py --toy N [--plain]

The toy form isolates Snakemake's own cost as a campaign goes on: a workflow of N jobs run one at
a time (cores 1, testbed=1, as the measuring profiles), most of them 20 ms long and every 25th
a 3 s "measurement" (sleep), in a temporary folder, with corun's scheduler patch
(workflows/rules/scheduler.smk) or, with --plain, without it. For each long job it prints how
many jobs had finished before it, Snakemake's CPU meanwhile (% of one CPU) and its threads.

The metadata form reads every run's metadata.json (machine_cpu: foreign_pct, corun_pct,
orchestrator_pct, other_pct, what the runner recorded itself) and prints their mean and max.
Other processes on the machine (other users' tests) are in `foreign`: read it with that in mind.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.machine.foreign_cpu import Proc, descendants, parse_stat, processes  # noqa: E402
from corun.machine.host import cpu_ticks  # noqa: E402

NCPU = os.cpu_count() or 1
HZ = os.sysconf("SC_CLK_TCK")


def _run_cgroup(pid: int) -> str | None:
    """The run id of PID's corun cgroup (blkio, memory or unified), or None."""
    try:
        text = Path(f"/proc/{pid}/cgroup").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        path = line.split(":", 2)[-1]
        if path.startswith("/corun/"):
            return path.split("/")[2]
    return None


def _children_ticks(pid: int) -> int:
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return 0
    f = text[text.rindex(")") + 2 :].split()
    return int(f[13]) + int(f[14])


def _threads(pid: int) -> int:
    try:
        return len(os.listdir(f"/proc/{pid}/task"))
    except OSError:
        return 0


def _tree(root: int, procs: dict[int, Proc]) -> set[int]:
    return {root} | descendants(root, procs)


class ProcCache:
    """Parents of every process, kept across samples: each sample lists /proc and reads the stat
    of new processes only, then the stat of CMD's tree (the sampler itself must stay light: it
    is an ancestor of every run, so the runs count it as orchestration)."""

    def __init__(self):
        self.known: dict[int, Proc] = {}

    def refresh(self) -> dict[int, Proc]:
        live = {int(e) for e in os.listdir("/proc") if e.isdigit()}
        for pid in set(self.known) - live:
            del self.known[pid]
        for pid in live - set(self.known):
            p = _stat(pid)
            if p is not None:
                self.known[pid] = p
        return self.known


def _stat(pid: int) -> Proc | None:
    try:
        return parse_stat(Path(f"/proc/{pid}/stat").read_text())
    except (OSError, ValueError, IndexError):
        return None


def sample(root: int, cache: ProcCache) -> dict:
    known = cache.refresh()
    tree = _tree(root, known) if root in known else set()
    procs = {pid: p for pid in tree if (p := _stat(pid)) is not None}  # their CPU time now
    jobs = {pid: run for pid in procs if (run := _run_cgroup(pid)) is not None}
    runners = {procs[p].ppid for p in jobs if procs[p].ppid not in jobs and procs[p].ppid in procs}
    runner_tree = set().union(*(_tree(r, procs) for r in runners)) if runners else set()
    return {
        "machine": cpu_ticks(),
        "procs": procs,
        "run": next(iter(sorted(set(jobs.values()))), None),
        "jobs": set(jobs),
        "runners": runners,
        "corun": runner_tree - set(jobs),
        "orch": set(procs) - runner_tree,
        "reaped": {r: _children_ticks(r) for r in runners},
        "threads": _threads(root),
    }


def _ticks(pids: set[int], a: dict, b: dict) -> int:
    n = 0
    for pid in pids:
        q = b["procs"].get(pid)
        if q is None:
            continue
        p = a["procs"].get(pid)
        n += q.cpu_ticks if p is None or p.starttime != q.starttime else max(0, q.cpu_ticks - p.cpu_ticks)
    return n


def interval(root: int, a: dict, b: dict) -> dict:
    """What one interval between samples A and B held, in clock ticks."""
    total = sum(b["machine"][k] - a["machine"][k] for k in b["machine"])
    process = sum(b["machine"][k] - a["machine"][k] for k in ("user", "nice", "system"))
    reaped = sum(max(0, b["reaped"][r] - a["reaped"].get(r, b["reaped"][r])) for r in b["reaped"])
    jobs = _ticks(b["jobs"], a, b) + reaped
    return {
        "total": total,
        "wall_ticks": total / NCPU,
        "snakemake": _ticks({root}, a, b),
        "orch": _ticks(b["orch"], a, b),
        "corun": _ticks(b["corun"], a, b),
        "foreign": max(0, process - jobs),
    }


def summarise(runs: dict[str, dict], max_threads: int) -> dict:
    rows = {}
    for run, s in runs.items():
        if s["wall_ticks"] <= 0:
            continue
        rows[run] = {
            "measuring_s": round(s["wall_ticks"] / HZ, 2),
            "snakemake_pct_cpu": round(100 * s["snakemake"] / s["wall_ticks"], 2),
            "orchestration_pct_cpu": round(100 * s["orch"] / s["wall_ticks"], 2),
            "corun_pct_cpu": round(100 * s["corun"] / s["wall_ticks"], 2),
            "foreign_pct_machine": round(100 * s["foreign"] / s["total"], 2),
        }
    keys = ["snakemake_pct_cpu", "orchestration_pct_cpu", "corun_pct_cpu", "foreign_pct_machine"]
    summary = {
        k: {
            "mean": round(statistics.fmean(r[k] for r in rows.values()), 2) if rows else None,
            "max": max((r[k] for r in rows.values()), default=None),
        }
        for k in keys
    }
    # all the runs' measuring time at once: a 10 ms clock tick is 1 % of one CPU over a second,
    # so a short run's own figure is coarse; the sum over the campaign is not
    tot = {
        k: sum(s[k] for s in runs.values()) for k in ("wall_ticks", "total", "snakemake", "orch", "corun", "foreign")
    }
    if tot["wall_ticks"] > 0:
        summary["all_runs"] = {
            "measuring_s": round(tot["wall_ticks"] / HZ, 2),
            "snakemake_pct_cpu": round(100 * tot["snakemake"] / tot["wall_ticks"], 2),
            "orchestration_pct_cpu": round(100 * tot["orch"] / tot["wall_ticks"], 2),
            "corun_pct_cpu": round(100 * tot["corun"] / tot["wall_ticks"], 2),
            "foreign_pct_machine": round(100 * tot["foreign"] / tot["total"], 2),
        }
    return {"runs": rows, "summary": summary, "max_threads": max_threads}


def watch(argv: list[str], every: float) -> tuple[dict, int]:
    proc = subprocess.Popen(argv)
    runs: dict[str, dict] = {}
    cache = ProcCache()
    prev = sample(proc.pid, cache)
    max_threads = prev["threads"]
    while proc.poll() is None:
        time.sleep(every)
        cur = sample(proc.pid, cache)
        max_threads = max(max_threads, cur["threads"])
        if prev["run"] is not None and prev["run"] == cur["run"]:
            d = interval(proc.pid, prev, cur)
            acc = runs.setdefault(cur["run"], dict.fromkeys(d, 0))
            for k, v in d.items():
                acc[k] += v
        prev = cur
    return summarise(runs, max_threads), proc.returncode


TOY = """
rule all:
    input:
        expand("out/{i}.txt", i=range(NJOBS)),


rule one:
    output:
        "out/{i}.txt",
    resources:
        testbed=1,
    params:
        s=lambda w: SLEEP,
    shell:
        "sleep {params.s}; touch {output}"
"""
# The toy's job lengths in seconds, a Python expression of the wildcards `w`: 20 ms, every 25th
# 3 s (the "measurement" _is_long finds by its `sleep 3`).
TOY_SLEEP = '"3" if int(w.i) % 25 == 24 else "0.02"'


def write_toy(folder: Path, n_jobs: int, patched: bool, sleep: str = TOY_SLEEP) -> Path:
    """The toy workflow's Snakefile, written into FOLDER: N jobs, each `sleep S; touch out/I.txt`
    with S the expression SLEEP, each taking testbed=1; corun's scheduler patch
    (workflows/rules/scheduler.smk) included first when PATCHED. Also the workflow of
    tests/instrument/test_snakemake_scheduler.py."""
    root = Path(__file__).resolve().parent.parent
    head = f'include: "{root / "workflows" / "rules" / "scheduler.smk"}"\n\n' if patched else ""
    path = folder / "Snakefile"
    path.write_text(head + TOY.replace("NJOBS", str(n_jobs)).replace("SLEEP", sleep))
    return path


def _is_long(pid: int, procs: dict[int, Proc]) -> bool:
    """Whether PID is a toy's long job (sleep 3)."""
    if procs[pid].comm != "sleep":
        return False
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")[1:2] == [b"3"]
    except OSError:
        return False


def toy(n_jobs: int, patched: bool, every: float = 0.1) -> list[dict]:
    import tempfile

    root = Path(__file__).resolve().parent.parent
    with tempfile.TemporaryDirectory(prefix="orchestrator-cpu-") as tmp:
        write_toy(Path(tmp), n_jobs, patched)
        argv = [str(Path(sys.executable).parent / "snakemake"), "--cores", "1", "--resources", "testbed=1", "-q"]
        env = dict(os.environ, PYTHONPATH=str(root))
        proc = subprocess.Popen(argv, cwd=tmp, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        rows: list[dict] = []
        prev = None
        try:
            while proc.poll() is None:
                procs = processes()
                me = procs.get(proc.pid)
                long_job = next((pid for pid in _tree(proc.pid, procs) if _is_long(pid, procs)), None) if me else None
                cur = (long_job, me.cpu_ticks if me else 0, time.monotonic(), _threads(proc.pid))
                if long_job is not None and prev is not None and prev[0] == long_job:
                    if not rows or rows[-1]["pid"] != long_job:
                        done = len(list((Path(tmp) / "out").glob("*.txt")))
                        rows.append({"pid": long_job, "finished_before": done, "ticks": 0, "wall_s": 0.0, "threads": 0})
                    r = rows[-1]
                    r["ticks"] += cur[1] - prev[1]
                    r["wall_s"] += cur[2] - prev[2]
                    r["threads"] = max(r["threads"], cur[3])
                prev = cur
                time.sleep(every)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
    return [
        {
            "finished_before": r["finished_before"],
            "snakemake_pct_cpu": round(100 * r["ticks"] / HZ / r["wall_s"], 2) if r["wall_s"] else None,
            "threads": r["threads"],
        }
        for r in rows
    ]


def from_metadata(results: Path) -> dict:
    keys = ["foreign_pct", "corun_pct", "orchestrator_pct", "other_pct", "kernel_pct", "steal_pct"]
    rows = []
    for meta in sorted(results.rglob("metadata.json")):
        cpu = json.loads(meta.read_text()).get("machine_cpu") or {}
        if cpu.get("foreign_pct") is not None:
            rows.append({k: cpu.get(k) for k in keys})
    return {
        "runs": len(rows),
        "summary": {
            k: {
                "mean": round(statistics.fmean(v), 2) if (v := [r[k] for r in rows if r[k] is not None]) else None,
                "max": max(v) if v else None,
            }
            for k in keys
        },
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--interval", type=float, default=0.2, help="seconds between samples (default 0.2)")
    ap.add_argument("--json", type=Path, help="also write the figures to this file")
    ap.add_argument("--runs", type=Path, help="read the runs' metadata.json under this folder instead")
    ap.add_argument("--toy", type=int, metavar="N", help="run the toy workflow of N jobs instead")
    ap.add_argument("--plain", action="store_true", help="the toy workflow without corun's scheduler patch")
    ap.add_argument("cmd", nargs=argparse.REMAINDER, help="-- the command to run and watch")
    a = ap.parse_args()
    cmd = a.cmd[1:] if a.cmd[:1] == ["--"] else a.cmd
    if a.toy is not None:
        rows, rc = toy(a.toy, patched=not a.plain), 0
        out = {"toy_jobs": a.toy, "patched": not a.plain, "long_jobs": rows}
        print(f"toy workflow, {a.toy} jobs, {'without' if a.plain else 'with'} corun's scheduler patch")
        print(f"{'finished before':>16} {'snakemake % of one CPU':>24} {'threads':>8}")
        for r in rows:
            print(f"{r['finished_before']:16d} {r['snakemake_pct_cpu']:24.2f} {r['threads']:8d}")
    elif a.runs is not None:
        out, rc = from_metadata(a.runs), 0
        print(f"{out['runs']} runs with foreign CPU recorded under {a.runs} (% of the machine)")
        for k, v in out["summary"].items():
            print(f"  {k:18} mean {v['mean']}  max {v['max']}")
    elif cmd:
        out, rc = watch(cmd, a.interval)
        print(f"{len(out['runs'])} runs measured; CMD's most threads: {out['max_threads']}")
        print(f"{'run':40} {'s':>7} {'snakemake':>10} {'orchestr.':>10} {'corun':>7} {'foreign':>8}")
        for run, r in out["runs"].items():
            print(
                f"{run[:40]:40} {r['measuring_s']:7.1f} {r['snakemake_pct_cpu']:10.2f} "
                f"{r['orchestration_pct_cpu']:10.2f} {r['corun_pct_cpu']:7.2f} {r['foreign_pct_machine']:8.2f}"
            )
        print("(snakemake, orchestration, corun: % of one CPU; foreign: % of the machine)")
        for k, v in out["summary"].items():
            if k == "all_runs":
                print("  all runs' measuring time together: " + ", ".join(f"{a} {b}" for a, b in v.items()))
            else:
                print(f"  {k:22} mean {v['mean']}  max {v['max']}")
    else:
        ap.error("give --runs RESULTS_DIR or -- CMD ...")
    if a.json:
        a.json.write_text(json.dumps(out, indent=1) + "\n")
    return rc


if __name__ == "__main__":
    sys.exit(main())

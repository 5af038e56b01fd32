"""The metrics of paper 003's experiment, from the collected runs, the plan and the premise folders.

Definitions
  CPU time         the kernel's timed passes (result_elapsed_s) when it reports them, else the
                   job's wall time (runtime_s).
  fio bandwidth    the write bandwidth fio reports in its JSON output (jobs/<job>.out), MB/s
                   (10^6 B/s).
  normalised perf  CPU task: the mean CPU time of the workload's alone runs over the task's time
                   in the pair; fio task: its bandwidth over the mean of the alone fio runs.
                   1 = as fast as alone.
  overall          a pair run's mean normalised performance over all its tasks (the paper does
                   not define "overall performance"; this is corun's reading, experiments/_papers).
  failed           a pair run with a job that did not exit 0, a CPU task whose kernel check
                   failed, a fio task without its JSON output, or no alone run to normalise by.
  io medium        where a pair run's fio tasks wrote: pmem (libpmem on a DAX mount of persistent
                   memory), memory (mmap on tmpfs, the stand-in) or disk (psync), from the jobs'
                   `binary` label; "" when the run has no I/O task.
  NUMA gain        per program and rep at the NUMA level: overall performance under numa_spread
                   over numa_concentrate in that rep (both runs of one rep, neither failed).
  CPU bandwidth    a CPU program's memory bandwidth alone, MB/s: (LLC-load-misses +
                   LLC-store-misses) x 64 B per second, from the perf monitor's intervals inside
                   each of its alone runs (system-wide counts; hardware prefetches the events do
                   not count are not in it), the mean over its alone runs that have at least
                   MIN_PERF_INTERVALS such intervals; fewer: missing with that reason, and the
                   program's NUMA gain rows are failed (a run shorter than the metric needs);
                   an alone run that lasted fewer than MIN_PERF_INTERVALS monitor intervals is
                   named so (analysis.run_length), apart from a machine perf counts nothing on.
  same-type pairs  in a cfs run, at each sample instant, every two of the run's tasks whose
                   threads last ran on one physical core (sibling hardware threads, or one CPU
                   they time-share) form a pair placed together; same_type_share = the same-type
                   share of these pairs over the run, random_share = the same-type share of all
                   pairs of the run's tasks (what placing them at random gives),
                   same_type_excess = same_type_share - random_share. A cfs run with fewer
                   than MIN_SAMPLE_INSTANTS sample instants is failed (too short for the
                   placement daemon's samples), never pooled.
  premise          per repetition of corun.monitors.pelt: the mean util_avg of each task (the
                   load/store task `store`, the conventional `psync` task, the CPU task `cpu`);
                   a task with fewer than MIN_PELT_SAMPLES samples after the warm-up is failed
                   (the premise run, premise.duration_s long, was shorter than the metric needs).
"""

from __future__ import annotations

import itertools
import json
import math
import re
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.run_length import short_run_reason
from analysis.stats import t_interval
from corun.machine.topology import parse_cpulist
from corun.monitors.perf import derive_perf_rates

SOURCE = "experiments.noisy_neighbour.metrics"
RUN_COLUMNS = ["run_id", "domain", "variant", "workload", "cache_sensitivity", "io_medium", "rep", "cpu_norm",
               "io_norm", "overall", "overlap_pct", "failed", "failed_reason"]  # fmt: skip
POINT_COLUMNS = ["domain", "variant", "workload", "n_reps", "cpu_norm", "io_norm", "overall", "ci95_low",
                 "ci95_high", "overlap_pct", "not_measurable"]  # fmt: skip
PAIRING_COLUMNS = ["run_id", "domain", "variant", "workload", "io_medium", "rep", "instants", "pairs_together",
                   "same_type_pairs", "same_type_share", "random_share", "same_type_excess", "failed",
                   "failed_reason"]  # fmt: skip
GAIN_COLUMNS = ["run_id", "domain", "workload", "cache_sensitivity", "io_medium", "rep", "gain", "cpu_bw_mb_s",
                "failed", "failed_reason"]  # fmt: skip
IO_MEDIUM = {"fio libpmem": "pmem", "fio mmap": "memory", "fio psync": "disk"}
LINE_BYTES = 64  # one LLC miss moves one cache line
MIN_PERF_INTERVALS = 3  # a bandwidth from fewer of perf's intervals inside the run is not one
MIN_SAMPLE_INSTANTS = 4  # a placement from fewer of the daemon's samples is not one
MIN_PELT_SAMPLES = 5  # a task's util_avg from fewer of corun.monitors.pelt's samples is not one
PREMISE_COLUMNS = ["run_id", "layout", "rep", "task", "util_avg", "store_medium", "failed", "failed_reason"]
PREMISE_TASKS = ("store", "psync", "cpu")


def fio_write_mb_s(out_file: Path) -> tuple[float | None, str | None]:
    """fio's total write bandwidth from its JSON output, or (None, why)."""
    try:
        text = out_file.read_text(errors="replace")
        doc = json.loads(text[text.index("{") :])
        bw = sum(float(j["write"]["bw_bytes"]) for j in doc["jobs"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"no fio JSON in {out_file.name} ({type(exc).__name__})"
    return bw / 1e6, None


def _text(v) -> str:
    return v if isinstance(v, str) else ""


def job_measures(jobs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog) -> pd.DataFrame:
    """One row per job: its kind of task, its performance measure (CPU time or MB/s) and, when it
    has none, why (`why`: the job failed, its check failed, fio wrote no JSON)."""
    rows = []
    for r in jobs.to_dict(orient="records"):
        why = ""
        value = None
        if r.get("exit_code") != 0:
            why = f"job {r['job_id']} exited {r.get('exit_code')}"
        elif r["task_type"] == "cpu":
            el = r.get("result_elapsed_s")
            value = el if isinstance(el, float) and math.isfinite(el) and el > 0 else r.get("runtime_s")
            if _text(r.get("result_check")) not in ("", "ok", "nan"):
                why, value = f"job {r['job_id']}'s kernel check: {r['result_check']}", None
        else:
            d = dirs.get(r["run_id"])
            value, bad = fio_write_mb_s(d / "jobs" / f"{r['job_id']}.out") if d else (None, "no run folder")
            if bad:
                why = f"job {r['job_id']}: {bad}"
                log.add("fio write bandwidth", bad, SOURCE, r["run_id"])
        rows.append(
            {
                "run_id": r["run_id"],
                "kind": r["kind"],
                "domain": _text(r.get("domain")),
                "variant": r["variant"],
                "workload": r["workload"],
                "rep": int(r["rep"]),
                "task_type": r["task_type"],
                "binary": _text(r.get("binary")),
                "cache_sensitivity": _text(r.get("cache_sensitivity")),
                "value": value if not why else None,
                "why": why,
                "end_s": r.get("end_s"),
            }
        )
    return pd.DataFrame(rows)


def baselines(m: pd.DataFrame) -> dict:
    """The alone runs that succeeded: mean CPU time per workload and mean fio bandwidth, and the
    alone runs that did not."""
    alone = m[m["kind"].isin(["alone_cpu", "alone_io"])]
    ok = alone[alone["why"] == ""]
    cpu = ok[ok["kind"] == "alone_cpu"].groupby("workload")["value"].mean().to_dict()
    io = ok[ok["kind"] == "alone_io"]["value"]
    failed = sorted(set(alone[alone["why"] != ""]["run_id"]))
    return {"cpu_s": cpu, "io_mb_s": float(io.mean()) if len(io) else math.nan, "failed": failed}


def normalise(m: pd.DataFrame, base: dict) -> pd.DataFrame:
    """One row per pair run: cpu_norm, io_norm, overall, overlap, failed and why."""
    out = []
    for run_id, g in m[m["kind"] == "pair"].groupby("run_id", sort=True):
        first = g.iloc[0]
        reasons = [w for w in g["why"] if w]
        t_alone = base["cpu_s"].get(first["workload"], math.nan)
        if not math.isfinite(t_alone):
            reasons.append(f"no alone run of {first['workload']} succeeded (the CPU baseline)")
        if (g["task_type"] == "io").any() and not math.isfinite(base["io_mb_s"]):
            reasons.append("no alone fio run succeeded (the I/O baseline)")
        cpu = [t_alone / v for v in g[g["task_type"] == "cpu"]["value"] if v and v > 0]
        io = [v / base["io_mb_s"] for v in g[g["task_type"] == "io"]["value"] if v is not None]
        ends = pd.to_numeric(g["end_s"], errors="coerce").dropna()
        vals = [x for x in cpu + io if math.isfinite(x)]
        failed = bool(reasons)
        media = sorted({IO_MEDIUM.get(b, b) for b in g[g["task_type"] == "io"].get("binary", pd.Series(dtype=str))})
        sens = sorted({x for x in g[g["task_type"] == "cpu"].get("cache_sensitivity", pd.Series(dtype=str)) if x})
        out.append(
            {
                "run_id": run_id,
                "domain": first["domain"],
                "variant": first["variant"],
                "workload": first["workload"],
                "cache_sensitivity": "/".join(sens),
                "io_medium": "/".join(media),
                "rep": int(first["rep"]),
                "cpu_norm": float(np.mean(cpu)) if cpu and not failed else math.nan,
                "io_norm": float(np.mean(io)) if io and not failed else math.nan,
                "overall": float(np.mean(vals)) if vals and not failed else math.nan,
                "overlap_pct": 100 * ends.min() / ends.max() if len(ends) and ends.max() > 0 else math.nan,
                "failed": failed,
                "failed_reason": "; ".join(reasons),
            }
        )
    return pd.DataFrame(out, columns=RUN_COLUMNS)


def points(runs: pd.DataFrame, plan: dict) -> pd.DataFrame:
    """Every plan row: the mean over its runs that did not fail and a 95% t-interval (for
    reading: the claims are judged on the runs themselves), or why this machine cannot run it."""
    rows = []
    for p in plan["rows"]:
        sel = runs[
            (runs["domain"] == p["domain"]) & (runs["variant"] == p["variant"]) & (runs["workload"] == p["workload"])
        ]
        sel = sel[~sel["failed"]]
        vals = sel["overall"].dropna().tolist()
        lo, hi = t_interval(vals) if len(vals) >= 2 else (math.nan, math.nan)
        rows.append(
            {
                "domain": p["domain"],
                "variant": p["variant"],
                "workload": p["workload"],
                "n_reps": len(vals),
                "cpu_norm": sel["cpu_norm"].mean() if len(sel) else math.nan,
                "io_norm": sel["io_norm"].mean() if len(sel) else math.nan,
                "overall": float(np.mean(vals)) if vals else math.nan,
                "ci95_low": lo,
                "ci95_high": hi,
                "overlap_pct": sel["overlap_pct"].mean() if len(sel) else math.nan,
                "not_measurable": p["not_measurable"] or "",
            }
        )
    return pd.DataFrame(rows, columns=POINT_COLUMNS)


def core_of(domains: dict | None) -> dict[int, int]:
    """CPU -> its physical core (the first CPU of its sibling list), from the plan's domains;
    empty when the plan has none (then every CPU is its own core)."""
    out = {}
    for group in (domains or {}).get("cores") or []:
        cpus = parse_cpulist(group)
        for c in cpus:
            out[c] = min(cpus)
    return out


def _placed_threads(s: pd.DataFrame) -> pd.DataFrame:
    """One row per (instant, job): the job's worker thread when it has several (fio's main
    thread waits while its worker writes), else its only thread."""
    s = s.assign(main=s["tid"] == s["pid"]) if {"tid", "pid"} <= set(s.columns) else s.assign(main=False)
    return s.sort_values(["t_s", "job", "main"], kind="stable").drop_duplicates(["t_s", "job"], keep="first")


def run_pairing(samples: pd.DataFrame, types: dict[str, str], cores: dict[int, int]) -> dict:
    """Pairs of the run's tasks placed on one physical core at a sample instant, the same-type
    ones among them, and the same-type share of all pairs of the run's tasks."""
    s = samples.copy()
    s["type"] = s["job"].astype(str).map(types)
    s = _placed_threads(s.dropna(subset=["type"]))
    s["core"] = [cores.get(int(c), int(c)) for c in s["cpu"]]
    together = same = 0
    for _, at_core in s.groupby(["t_s", "core"]):
        kinds = list(at_core["type"])
        for a, b in itertools.combinations(kinds, 2):
            together += 1
            same += a == b
    pairs = list(itertools.combinations(list(types.values()), 2))
    chance = sum(a == b for a, b in pairs) / len(pairs) if pairs else math.nan
    share = same / together if together else math.nan
    return {
        "instants": int(s["t_s"].nunique()),
        "pairs_together": together,
        "same_type_pairs": same,
        "same_type_share": share,
        "random_share": chance,
        "same_type_excess": share - chance,
    }


def pairing(
    runs: pd.DataFrame, jobs: pd.DataFrame, dirs: dict[str, Path], plan: dict, log: rt.MissingLog
) -> tuple[pd.DataFrame, list[str]]:
    """One row per cfs pair run whose tasks met on a core at least once, and the runs left out
    because they never did (nothing to compare: more cores than tasks). A run without its
    cpu_samples.csv has no value (the claim on it says failed)."""
    cores = core_of(plan.get("domains"))
    rows, apart = [], []
    for r in runs[runs["variant"] == "cfs"].to_dict(orient="records"):
        jt = jobs[jobs["run_id"] == r["run_id"]]
        types = dict(zip(jt["job_id"].astype(str), jt["task_type"]))
        f = dirs[r["run_id"]] / "sched" / "state" / "cpu_samples.csv" if r["run_id"] in dirs else None
        base = {k: r[k] for k in ("run_id", "domain", "variant", "workload", "io_medium", "rep")}
        if f is None or not f.is_file():
            why = "absent: the placement daemon wrote no samples"
            log.add("CFS placement (cpu_samples.csv)", why, SOURCE, r["run_id"])
            rows.append(
                {**base, "same_type_excess": math.nan, "failed": r["failed"], "failed_reason": r["failed_reason"]}
            )
            continue
        p = run_pairing(pd.read_csv(f, dtype={"job": str}), types, cores)
        if p["pairs_together"] == 0:
            apart.append(r["run_id"])
            continue
        reasons = [r["failed_reason"]] if r["failed"] else []
        if p["instants"] < MIN_SAMPLE_INSTANTS:
            reasons.append(
                f"{p['instants']} placement sample instant(s), fewer than the {MIN_SAMPLE_INSTANTS} CFS's pairing "
                "needs (the run was shorter than the metric needs: measure it longer)"
            )
        rows.append({**base, **p, "failed": bool(reasons), "failed_reason": "; ".join(reasons)})
    return pd.DataFrame(rows, columns=PAIRING_COLUMNS), apart


def cpu_bandwidth(
    measures: pd.DataFrame, runs_csv: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog
) -> dict[str, tuple[float, str]]:
    """workload -> (its memory bandwidth alone in MB/s, "") or (NaN, why), from the perf
    monitor's LLC misses in each of its alone runs (module doc: CPU bandwidth)."""
    durations, records = {}, {}
    if {"run_id", "duration_s"} <= set(runs_csv.columns):
        durations = dict(zip(runs_csv["run_id"].astype(str), pd.to_numeric(runs_csv["duration_s"], errors="coerce")))
        records = {str(r["run_id"]): r for r in rt.records(runs_csv)}
    per: dict[str, list[float]] = {}
    why: dict[str, str] = {}
    alone = measures[(measures["kind"] == "alone_cpu") & (measures["why"] == "")] if len(measures) else measures
    for run_id, g in alone.groupby("run_id", sort=True):
        workload = str(g.iloc[0]["workload"])
        # a run too short for the intervals is named so, apart from a machine perf counts nothing on
        short = short_run_reason(records.get(str(run_id), {}), MIN_PERF_INTERVALS, "perf")
        bw, bad = (math.nan, short) if short else _run_bandwidth(dirs.get(run_id), durations.get(run_id))
        if bad:
            why.setdefault(workload, f"alone run {run_id}: {bad}")
            log.add("CPU program's memory bandwidth (perf LLC misses)", bad, SOURCE, run_id)
        else:
            per.setdefault(workload, []).append(bw)
    out = {w: (float(np.mean(v)), "") for w, v in per.items()}
    for w, text in why.items():
        out.setdefault(w, (math.nan, text))
    return out


def _run_bandwidth(run_dir: Path | None, duration_s: float | None) -> tuple[float, str]:
    if run_dir is None:
        return math.nan, "no run folder"
    df, bad = rt.load_tidy(run_dir, "perf")
    if df is None:
        return math.nan, bad or "no perf table"
    rates = derive_perf_rates(rt.in_run(df, duration_s))
    ok = rates[rates["llc_misses_per_s"].notna() & (rates["interval_s"] > 0)]
    if len(ok) < MIN_PERF_INTERVALS:
        return math.nan, (
            f"{len(ok)} perf interval(s) with LLC-load-misses and LLC-store-misses counted inside the run, fewer "
            f"than the {MIN_PERF_INTERVALS} a bandwidth needs (no PMU counter, or a run shorter than the metric needs)"
        )
    misses = float((ok["llc_misses_per_s"] * ok["interval_s"]).sum() / ok["interval_s"].sum())
    return misses * LINE_BYTES / 1e6, ""


def numa_gain(runs: pd.DataFrame, bandwidth: dict[str, tuple[float, str]]) -> pd.DataFrame:
    """One row per (program, rep) with both NUMA placements run: numa_spread's overall
    performance over numa_concentrate's, beside the program's bandwidth alone; failed (why) when
    either run failed or the bandwidth is missing."""
    rows = []
    numa = runs[(runs["domain"] == "numa") & runs["variant"].isin(["numa_spread", "numa_concentrate"])]
    for (workload, rep), g in numa.groupby(["workload", "rep"], sort=True):
        by = {r["variant"]: r for r in g.to_dict(orient="records")}
        if len(by) < 2:
            continue
        sp, co = by["numa_spread"], by["numa_concentrate"]
        bw, bw_why = bandwidth.get(str(workload), (math.nan, f"no alone run of {workload} succeeded"))
        reasons = [f"{r['run_id']}: {r['failed_reason']}" for r in (sp, co) if r["failed"]]
        if bw_why:
            reasons.append(f"no bandwidth of {workload} ({bw_why})")
        ok = not reasons and co["overall"] > 0
        rows.append(
            {
                "run_id": f"{sp['run_id']} / {co['run_id']}",
                "domain": "numa",
                "workload": workload,
                "cache_sensitivity": sp["cache_sensitivity"],
                "io_medium": sp["io_medium"] if sp["io_medium"] == co["io_medium"] else "mixed",
                "rep": int(rep),
                "gain": sp["overall"] / co["overall"] if ok else math.nan,
                "cpu_bw_mb_s": bw,
                "failed": bool(reasons),
                "failed_reason": "; ".join(reasons),
            }
        )
    return pd.DataFrame(rows, columns=GAIN_COLUMNS)


_REP = re.compile(r"^r(\d+)$")


def premise(folders: list[str | Path], log: rt.MissingLog) -> tuple[pd.DataFrame, list[dict]]:
    """One row per (premise folder, task): the mean util_avg after the warm-up, the medium the
    load/store task wrote to (pmem only on a DAX mount of persistent memory), and the folders'
    summaries."""
    rows, summaries = [], []
    for folder in map(Path, folders):
        m = _REP.match(folder.name)
        rep = int(m.group(1)) if m else 0
        layout = folder.parent.name if m else folder.name
        run_id = f"premise/{layout}/{folder.name}" if m else f"premise/{layout}"
        f = folder / "summary.json"
        try:
            s = json.loads(f.read_text())
        except (OSError, ValueError) as exc:
            why = f"{f.name} not readable ({type(exc).__name__})"
            log.add("premise (PELT util_avg)", why, "corun.monitors.pelt", run_id)
            rows += [{"run_id": run_id, "layout": layout, "rep": rep, "task": t, "util_avg": math.nan,
                      "store_medium": "", "failed": True, "failed_reason": why} for t in PREMISE_TASKS]  # fmt: skip
            continue
        summaries.append(s)
        on_pmem = s.get("store_on_pmem", s.get("store_engine") == "libpmem")
        for t in PREMISE_TASKS:
            task = (s.get("tasks") or {}).get(t) or {}
            u = task.get("util_avg_mean")
            n = task.get("samples") if isinstance(task.get("samples"), int) else None
            short = ""
            if t in (s.get("tasks") or {}) and (n is not None and n < MIN_PELT_SAMPLES or u is None):
                short = (
                    f"{n or 0} PELT sample(s) after the warm-up, fewer than the {MIN_PELT_SAMPLES} its util_avg "
                    "needs (the premise run was shorter than the metric needs: raise premise.duration_s)"
                )
                log.add("premise (PELT util_avg)", short, "corun.monitors.pelt", run_id)
            rows.append(
                {
                    "run_id": run_id,
                    "layout": s.get("layout", layout),
                    "rep": rep,
                    "task": t,
                    "util_avg": float(u) if isinstance(u, (int, float)) and not short else math.nan,
                    "store_medium": "pmem" if on_pmem else "memory",
                    "failed": bool(short),
                    "failed_reason": short,
                }
            )
        for miss in s.get("missing", []):
            log.add(f"premise: {miss['metric']}", miss["reason"], miss.get("source", ""), run_id)
    return pd.DataFrame(rows, columns=PREMISE_COLUMNS), summaries

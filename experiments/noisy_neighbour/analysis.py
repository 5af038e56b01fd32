"""Noisy neighbours from persistent-memory I/O (paper 003): placement across SMT, LLC and NUMA.

Inputs: the collected jobs.csv and runs.csv of the noisy_neighbour runs, the experiment's
plan.json (every (domain, variant, workload) point, with the reason when this machine cannot
express it) and the premise folders of corun.monitors.pelt (summary.json).

Definitions
  CPU time         the kernel's timed passes (result_elapsed_s) when it reports them, else the
                   job's wall time (runtime_s).
  fio bandwidth    the write bandwidth fio reports in its JSON output (jobs/<job>.out), MB/s
                   (10^6 B/s).
  normalised perf  CPU task: mean CPU time of the workload's alone runs over the task's time in
                   the pair; fio task: its bandwidth over the mean of the alone fio runs. 1 = as
                   fast as alone.
  overall          the mean of the run's normalised performances over all its tasks (the paper
                   does not define "overall performance"; this is corun's reading).
  point            (domain, variant, workload): mean over reps, 95% t-interval over reps.
  mixed vs same    SMT: 100 x (overall(smt_mixed) / overall(smt_same_type) - 1), mean over the
                   workloads measured under both; NUMA: overall(numa_spread) /
                   overall(numa_concentrate), largest over the workloads.
  CFS pairing      from the cfs runs' cpu_samples.csv: at each sample instant, every CPU that
                   ran two or more of the run's tasks counts as same-type (all one type) or mixed;
                   the share of same-type CPU-instants against the share expected if tasks were
                   paired at random.
  premise          the pelt summary of the `alone` layout: util_avg of the load/store task over
                   that of the CPU task, and over that of the psync task.

Verdict rules
  SMT +18% and NUMA 16.6x: not measurable here when this machine cannot express either policy
    of the pair (the plan's reason); else reproduced in direction when the measured gain is
    above 0% (1x), not reproduced otherwise.
  PELT sees PM I/O as busy: reproduced in direction when the store task's util_avg is at least
    PREMISE_BUSY of the CPU task's and above PREMISE_OVER_PSYNC times the psync task's; not
    reproduced otherwise; not measurable without the premise. Persistent memory or not is said.
  CFS pairs same types: reproduced in direction when the same-type share exceeds the random
    share, not reproduced otherwise; not measurable when no CPU ever ran two tasks.

CLI: python -m experiments.noisy_neighbour.analysis --jobs J --runs R --plan PLAN [--premise DIR ...] --out-dir D
"""

from __future__ import annotations

import itertools
import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import runtables as rt  # noqa: E402
from analysis.common import (  # noqa: E402
    VERDICT_DIRECTION,
    VERDICT_NOT,
    VERDICT_UNMEASURABLE,
    AnalysisInputError,
    base_parser,
    cli,
    fmt_num,
    read_csv,
    resolve_run_paths,
    run_checks,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402
from analysis.stats import t_interval  # noqa: E402

EXPERIMENT = "noisy_neighbour"
PAPER_ID = "003"
FIG_NAME = "normalised_performance.png"
PREMISE_BUSY = 0.75  # store util_avg at least 3/4 of a CPU task's: "seen as busy"
PREMISE_OVER_PSYNC = 1.25  # and clearly above the conventional I/O task's
TEXT = ["run_id", "job_id", "name", "kind", "domain", "variant", "workload", "task_type", "result_check"]
POINT_COLUMNS = [
    "domain",
    "variant",
    "workload",
    "n_reps",
    "cpu_norm",
    "io_norm",
    "overall",
    "ci95_low",
    "ci95_high",
    "overlap_pct",
    "not_measurable",
]


def fio_write_mb_s(out_file: Path) -> tuple[float | None, str | None]:
    """fio's total write bandwidth from its JSON output, or (None, why)."""
    try:
        text = out_file.read_text(errors="replace")
        doc = json.loads(text[text.index("{") :])
        bw = sum(float(j["write"]["bw_bytes"]) for j in doc["jobs"])
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, f"no fio JSON in {out_file.name} ({type(exc).__name__})"
    return bw / 1e6, None


def job_measures(jobs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog) -> pd.DataFrame:
    """One row per job: its kind of task and its performance measure (CPU time or MB/s)."""
    rows = []
    for r in jobs.to_dict(orient="records"):
        ok = r.get("exit_code") == 0
        value = None
        if r["task_type"] == "cpu":
            el = r.get("result_elapsed_s")
            good = str(r.get("result_check", "ok")) in ("ok", "nan")
            value = el if isinstance(el, float) and math.isfinite(el) and el > 0 else r.get("runtime_s")
            if not good:
                ok = False
        else:
            value, why = fio_write_mb_s(dirs[r["run_id"]] / "jobs" / f"{r['job_id']}.out")
            if why:
                log.add("fio write bandwidth", why, "experiments.noisy_neighbour.analysis", r["run_id"])
        rows.append(
            {
                "run_id": r["run_id"],
                "kind": r["kind"],
                "domain": r.get("domain") if isinstance(r.get("domain"), str) else "",
                "variant": r["variant"],
                "workload": r["workload"],
                "rep": r["rep"],
                "task_type": r["task_type"],
                "value": value if ok else None,
                "end_s": r.get("end_s"),
            }
        )
    return pd.DataFrame(rows)


def normalise(m: pd.DataFrame) -> tuple[pd.DataFrame, dict]:
    """Per pair run: cpu_norm, io_norm, overall, overlap; and the alone baselines."""
    alone_cpu = m[m["kind"] == "alone_cpu"].groupby("workload")["value"].mean().to_dict()
    io_alone = m[m["kind"] == "alone_io"]["value"].mean()
    base = {"cpu_s": alone_cpu, "io_mb_s": io_alone}
    out = []
    for run_id, g in m[m["kind"] == "pair"].groupby("run_id", sort=False):
        first = g.iloc[0]
        t_alone = alone_cpu.get(first["workload"], math.nan)
        cpu = [t_alone / v for v in g[g["task_type"] == "cpu"]["value"] if v and v > 0]
        io = [v / io_alone for v in g[g["task_type"] == "io"]["value"] if v is not None and io_alone > 0]
        ends = pd.to_numeric(g["end_s"], errors="coerce").dropna()
        overlap = 100 * ends.min() / ends.max() if len(ends) and ends.max() > 0 else math.nan
        vals = [x for x in cpu + io if math.isfinite(x)]
        out.append(
            {
                "run_id": run_id,
                "domain": first["domain"],
                "variant": first["variant"],
                "workload": first["workload"],
                "rep": first["rep"],
                "cpu_norm": float(np.mean(cpu)) if cpu else math.nan,
                "io_norm": float(np.mean(io)) if io else math.nan,
                "overall": float(np.mean(vals)) if vals else math.nan,
                "overlap_pct": overlap,
            }
        )
    return pd.DataFrame(out), base


def points(runs: pd.DataFrame, plan: dict) -> pd.DataFrame:
    """Every plan row: measured (mean and CI over reps) or not measurable with the reason."""
    rows = []
    for p in plan["rows"]:
        sel = (
            runs[
                (runs["domain"] == p["domain"])
                & (runs["variant"] == p["variant"])
                & (runs["workload"] == p["workload"])
            ]
            if len(runs)
            else runs
        )
        vals = sel["overall"].dropna().tolist() if len(sel) else []
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


def gain(table: pd.DataFrame, better: str, worse: str, how: str) -> tuple[float | None, str]:
    """mixed-vs-same (%) or spread-vs-concentrate (x) over the workloads measured under both."""
    reasons = sorted({r for r in table[table["variant"].isin([better, worse])]["not_measurable"] if r})
    if reasons:
        return None, "; ".join(reasons)
    ratios = []
    for _, g in table.groupby("workload"):
        b = g[g["variant"] == better]["overall"]
        c = g[g["variant"] == worse]["overall"]
        if len(b) and len(c) and c.iloc[0] > 0 and math.isfinite(b.iloc[0]):
            ratios.append(b.iloc[0] / c.iloc[0])
    if not ratios:
        present = set(table["variant"])
        if better not in present or worse not in present:
            return None, f"{better} and {worse} are not both in the configuration's policies"
        return None, "no workload measured under both policies"
    if how == "pct":
        return 100 * (float(np.mean(ratios)) - 1), f"mean over {len(ratios)} workload(s)"
    return float(max(ratios)), f"largest over {len(ratios)} workload(s)"


def cfs_pairing(run_dirs: list[Path], types: dict[str, dict[str, str]]) -> dict:
    """Same-type and mixed CPU-instants in the cfs runs, and the share expected at random."""
    same = mixed = 0
    chance = []
    for d in run_dirs:
        f = d / "sched" / "state" / "cpu_samples.csv"
        if not f.is_file():
            continue
        s = pd.read_csv(f, dtype={"job": str})
        jt = types.get(d.name, {})
        s["type"] = s["job"].map(jt)
        s = s.dropna(subset=["type"]).drop_duplicates(["t_s", "job"], keep="first")
        for _, inst in s.groupby("t_s"):
            for _, on_cpu in inst.groupby("cpu"):
                if len(on_cpu) >= 2:
                    if on_cpu["type"].nunique() == 1:
                        same += 1
                    else:
                        mixed += 1
        kinds = list(jt.values())
        if len(kinds) >= 2:
            pairs = list(itertools.combinations(kinds, 2))
            chance.append(sum(a == b for a, b in pairs) / len(pairs))
    n = same + mixed
    return {
        "cpu_instants_shared": n,
        "same_type_share": same / n if n else None,
        "random_share": float(np.mean(chance)) if chance else None,
    }


def read_premise(dirs: list[str]) -> dict | None:
    for d in dirs:
        f = Path(d) / "summary.json"
        if f.is_file():
            s = json.loads(f.read_text())
            if s.get("layout") == "alone":
                return s
    return None


def compare(table: pd.DataFrame, premise: dict | None, pairing: dict, paper: dict) -> pd.DataFrame:
    vals = experiment_values(paper, EXPERIMENT)
    v, claims = vals["values"], vals["claims"]
    rows = []
    for quantity, key, better, worse, unit, neutral in (
        (
            "SMT: overall performance, mixed pairs over same-type pairs",
            "smt_mixed_over_same_type_pct",
            "smt_mixed",
            "smt_same_type",
            "%",
            0.0,
        ),
        (
            "NUMA: overall performance, types spread over types concentrated",
            "numa_spread_over_concentrate_max_x",
            "numa_spread",
            "numa_concentrate",
            "x",
            1.0,
        ),
    ):
        got, why = gain(table, better, worse, "pct" if unit == "%" else "x")
        rows.append(
            {
                "quantity": quantity,
                "paper_value": v[key]["value"],
                "measured_value": got,
                "unit": unit,
                "verdict": VERDICT_UNMEASURABLE if got is None else VERDICT_DIRECTION if got > neutral else VERDICT_NOT,
                "note": why,
            }
        )
    if premise is None:
        rows.append(
            {
                "quantity": "premise: " + claims["pelt_sees_pm_io_as_busy"]["statement"].strip(),
                "paper_value": "yes",
                "measured_value": None,
                "unit": "",
                "verdict": VERDICT_UNMEASURABLE,
                "note": "no premise measured (noisy_neighbour.premise.layouts has no 'alone')",
            }
        )
    else:
        c = premise.get("comparisons", {})
        busy, over = c.get("store_util_over_cpu_util"), c.get("store_util_over_psync_util")
        ok = busy is not None and over is not None and busy >= PREMISE_BUSY and over >= PREMISE_OVER_PSYNC
        rows.append(
            {
                "quantity": "premise: " + claims["pelt_sees_pm_io_as_busy"]["statement"].strip(),
                "paper_value": "yes",
                "measured_value": f"store/cpu util_avg {fmt_num(busy)}, store/psync {fmt_num(over)}",
                "unit": "ratio",
                "verdict": VERDICT_UNMEASURABLE
                if busy is None or over is None
                else VERDICT_DIRECTION
                if ok
                else VERDICT_NOT,
                "note": f"rule: store/cpu >= {PREMISE_BUSY} and store/psync >= {PREMISE_OVER_PSYNC}; "
                f"the load/store task wrote to {premise.get('store_medium', '?')}",
            }
        )
    share, chance = pairing["same_type_share"], pairing["random_share"]
    rows.append(
        {
            "quantity": "CFS: " + claims["cfs_pairs_same_types"]["statement"].strip(),
            "paper_value": "yes",
            "measured_value": None if share is None else round(share, 4),
            "unit": "share of shared CPU-instants that are same-type",
            "verdict": VERDICT_UNMEASURABLE
            if share is None or chance is None
            else VERDICT_DIRECTION
            if share > chance
            else VERDICT_NOT,
            "note": "no cfs run had two tasks on one CPU at a sample"
            if share is None
            else f"{pairing['cpu_instants_shared']} CPU-instants with 2+ tasks; at random {fmt_num(chance)}. "
            "With as many tasks on every CPU the load is balanced from the start and CFS has little reason "
            "to move a task, so the pairing largely keeps where the runner started the jobs (in spec "
            "order); the paper's observation is about SMT siblings of a larger machine",
        }
    )
    return pd.DataFrame(rows)


def plot(table: pd.DataFrame, out: Path) -> None:
    m = table[table["not_measurable"] == ""]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    if m.empty:
        rt.no_data(ax, "no measurable placement on this machine")
    else:
        labels = [f"{r['domain']}/{r['variant']}\n{r['workload']}" for _, r in m.iterrows()]
        x = np.arange(len(m))
        err = np.array(
            [
                [r["overall"] - r["ci95_low"] if math.isfinite(r["ci95_low"]) else 0 for _, r in m.iterrows()],
                [r["ci95_high"] - r["overall"] if math.isfinite(r["ci95_high"]) else 0 for _, r in m.iterrows()],
            ]
        )
        ax.bar(x, m["overall"], yerr=err, color="#4a7ab5", capsize=3)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_ylabel("overall performance (1 = alone)")
    ax.set_title("Pairs under each measurable placement")
    fig.tight_layout()
    rt.save_png(fig, out)


def run(jobs_csv: str, runs_csv: str, plan_json: str, premise_dirs: list[str], out_dir: str, paper_id: str) -> dict:
    jobs = read_csv(jobs_csv, TEXT)
    runs = read_csv(runs_csv, ["run_id", "variant"])
    try:
        plan = json.loads(Path(plan_json).read_text())
    except (OSError, ValueError) as exc:
        raise AnalysisInputError(f"{plan_json}: not readable ({exc}) (expected the experiment's plan.json)") from None
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    dirs = rt.run_dirs(runs, runs_csv)
    log = rt.MissingLog()
    measures = job_measures(jobs, dirs, log)
    per_run, base = normalise(measures)
    table = points(per_run, plan)
    types = {rid: dict(zip(g["job_id"], g["task_type"])) for rid, g in jobs.groupby("run_id")}
    cfs_dirs = [dirs[r] for r in per_run[per_run["variant"] == "cfs"]["run_id"]] if len(per_run) else []
    pairing = cfs_pairing(cfs_dirs, types)
    premise = read_premise(premise_dirs)
    paper = load_paper_values(paper_id)
    comparison = compare(table, premise, pairing, paper)
    for r in plan["rows"]:
        if r["not_measurable"]:
            log.add(f"{r['domain']} {r['variant']}", r["not_measurable"], "corun.machine.placement_domains", "plan")
    for m in (premise or {}).get("missing", []):
        log.add(f"premise: {m['metric']}", m["reason"], m.get("source", ""), "premise")
    n_meas = int((table["not_measurable"] == "").sum())
    summary = [
        f"{len(table)} (domain, placement, workload) point(s); {n_meas} measurable on this machine, "
        f"{len(table) - n_meas} not (no SMT, LLC or NUMA domain to place across: see the table).",
        f"Alone: CPU workloads {', '.join(f'{k} {fmt_num(v)} s' for k, v in base['cpu_s'].items())}; "
        f"fio random writes {fmt_num(base['io_mb_s'])} MB/s.",
    ]
    if premise is not None:
        summary.append(f"Premise measured with the load/store task on {premise.get('store_medium', '?')}.")
    notes = [
        "Normalised performance: CPU task = its time alone over its time in the pair (result_elapsed_s, "
        "else runtime_s); fio = its write bandwidth in the pair over alone; overall = their mean over "
        "the run's tasks. 95% CI: t-interval over reps.",
        "overlap_pct: the first task's end over the last task's end, in %: how much of the run the "
        "tasks shared; the rest ran with fewer neighbours.",
        "Rows marked not measurable were not run: this machine cannot express the policy (reason in "
        "the table). experiments/noisy_neighbour/README.md gives a configuration for a machine with "
        "SMT, two NUMA nodes and persistent memory.",
        *(n.strip() for n in paper.get("notes", [])),
        *run_checks(jobs, runs),
    ]
    section = rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=[
            {
                "path": FIG_NAME,
                "caption": "Overall performance of each measurable pair placement (1 = as fast as alone); "
                "error bars: 95% t-interval over reps.",
            }
        ],
        comparison=comparison,
        tables=[
            {"title": "Placements: normalised performance, or why not measurable here", "csv": "points.csv"},
            {"title": "Pair runs", "csv": "pair_runs.csv"},
        ],
        metadata_paths=metadata_paths,
        log=log,
        notes=notes,
    )
    rt.write_outputs(
        out_dir,
        section,
        {"points.csv": table, "pair_runs.csv": per_run},
        [lambda out: plot(table, out / FIG_NAME)],
    )
    return {"table": table, "comparison": comparison, "pairing": pairing, "base": base}


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "experiments.noisy_neighbour.analysis",
        "Noisy neighbours (paper 003): normalised performance of CPU + fio pairs under each placement.",
    )
    parser.add_argument("--plan", required=True, metavar="JSON", help="the experiment's specs/plan.json")
    parser.add_argument("--premise", action="append", default=[], metavar="DIR", help="a corun.monitors.pelt folder")
    return cli(parser, argv, PAPER_ID, lambda a: run(a.jobs, a.runs, a.plan, a.premise, a.out_dir, a.paper_id))


if __name__ == "__main__":
    sys.exit(main())

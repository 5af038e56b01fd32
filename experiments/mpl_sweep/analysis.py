"""The MPL sweep of paper 001: MPI coscheduling schemes x multi-programming level x workload.

Inputs: the collected jobs.csv and runs.csv of the mpl_sweep runs and the experiment's
plan.json; each run's metadata.json holds the node daemons' summaries (cluster.daemons).

Definitions
  response time    per job: end - submit (waiting in the FIFO queue + execution), the paper's
                   main metric; a run's value is the mean over its jobs (exit 0 only).
  execution time   per job: end - start (runtime_s); waiting time: start - submit (wait_s).
  BCR              over the run's nodes: context switches of ranks taken while bcr_min_pending
                   or more ranks of the node had pending messages, over all context switches
                   of the node's ranks (the daemons' conflict_context_switches and
                   context_switches, sampled every tick from /proc/<pid>/schedstat).
  MD               the mean, over every request completed in a wrapped blocking MPI call, of
                   completion time - the call's entry (the interposition library's md_mean_us
                   per rank, weighted by its msgs), microseconds.
  counters         boosts, conflicts (ticks with a conflict), reordered (CC decisions that put
                   a later arrival first), context switches: sums over the run's nodes.
  point            (workload, load, scheme, MPL): mean over reps, 95% t-interval over reps.
  ratio            head / base of a metric over the reps both ran, paired by rep (the same
                   job stream): the ratio of the two means, and a 95% t-interval of the per-rep
                   log ratios, exponentiated. A percentile bootstrap of 3 pairs spans little
                   more than the 3 per-rep ratios (3 of 3 below 1 read as a gain, when a sign
                   test gives p = 1/8); the t-interval with 2 degrees of freedom says how
                   little 3 reps decide.

Claims (claims.yaml, judged by analysis.verdicts): each at the paper's point (WL6 under heavy
load at MPL 5 for Figs. 7-8, WL1-WL5 at MPL 5 for Fig. 9, MPL 3 and 5 for Figs. 10-11), head over
base paired by rep; BCR only when the base counted enough conflict context switches. Claims on
every pair of schemes (blocking against spinning, CC-B against every other scheme, each CC scheme
against the others of its kind) judge each contest of the `pairs` table on its own
(experiments.mpl_sweep.contests); CC's gain growing with the MPL as the ratio of the two MPLs'
paired ratios, with the communication intensity as the rank trend of the `gains` table's ratios
over Table 3's order. A run with a failed job is failed (`failed`, `failed_reason`): its mean
over the jobs that exited 0 would favour a scheme whose slow jobs fail.

Run by the workflow: python -m experiments analyze mpl_sweep (inputs: jobs.csv, runs.csv, the plan).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.common import AnalysisInputError, fmt_num, run_checks
from analysis.experiment import Figure, Inputs, Result
from analysis.figures import no_data, plt, save_png
from analysis.stats import t_interval
from experiments.mpl_sweep import contests
from experiments.mpl_sweep import model as mpl_model

JOB_TEXT = ["workload", "load", "scheme", "bench", "hosts"]
RUN_TEXT = ["workload", "load", "scheme"]
KEYS = ["workload", "load", "scheme", "mpl"]
BLOCKING = contests.BLOCKING
SPINNING = contests.SPINNING
SCHEME_ORDER = ["batch", "local", "dcs", "pb", "cc_s", "ib", "sb", "hybrid", "cc_b", "gang"]
COUNTERS = ["boosts", "conflicts", "reordered", "context_switches", "conflict_context_switches", "arrivals"]
METRICS = ["response_s", "exec_s", "wait_s", "makespan_s", "bcr", "md_us", *COUNTERS]


def scheme_kind(scheme: str) -> str:
    """blocking (SB, HYBRID, CC-B), spinning (LOCAL, DCS, PB, CC-S) or other (BATCH, IB, gang)."""
    return "blocking" if scheme in BLOCKING else "spinning" if scheme in SPINNING else "other"


def daemon_measures(meta: dict) -> tuple[dict, str | None]:
    """BCR, MD and the counters of one run from its daemons' summaries, or why not."""
    daemons = (meta.get("cluster") or {}).get("daemons")
    if not daemons:
        return {}, "no node daemon summaries (not a daemon variant, or the run had no cluster)"
    absent = [d["missing"] for d in daemons if "missing" in d]
    if absent:
        return {}, absent[0]
    out = {k: sum(int(d.get(k) or 0) for d in daemons) for k in COUNTERS}
    cs = out["context_switches"]
    out["bcr"] = out["conflict_context_switches"] / cs if cs else math.nan
    msgs, md = 0, 0.0
    for d in daemons:
        for r in d.get("ranks", []):
            n = int(r.get("msgs") or 0)
            v = r.get("md_mean_us")
            if n and v is not None and math.isfinite(float(v)):
                msgs += n
                md += n * float(v)
    out["md_us"] = md / msgs if msgs else math.nan
    out["bcr_min_pending"] = daemons[0].get("bcr_min_pending")
    return out, None


def stand_in_note(plan: dict) -> str:
    """Which benchmarks corun's mpi_stencil stands in for (no NPB binary at their rank counts)."""
    benches = plan.get("npb_benches")
    if benches is None:  # plans written before npb_benches
        benches = dict.fromkeys(("bt", "sp", "ft", "is", "cg"), bool(plan.get("npb")))
    stand = sorted(b.upper() for b, real in benches.items() if not real)
    if not stand:
        return ""
    return f" (corun's mpi_stencil stands in for {', '.join(stand)}: no NPB binary at their rank counts)"


def per_run(jobs: pd.DataFrame, runs: pd.DataFrame, metas: dict[str, dict], log: rt.MissingLog) -> pd.DataFrame:
    """One row per run: its labels, mean response/execution/waiting time over its jobs, BCR, MD,
    counters, and whether it failed (a job that did not exit 0, or no job at all)."""
    rows = []
    for _, r in runs.iterrows():
        rid = r["run_id"]
        js = jobs[jobs["run_id"] == rid]
        ok = js[js["exit_code"] == 0]
        n_failed = int((js["exit_code"] != 0).sum())
        row = {k: r[k] for k in KEYS + ["rep"]}
        reason = f"{n_failed} of {len(js)} jobs failed" if n_failed else "no job" if not len(js) else ""
        row.update(
            {
                "run_id": rid,
                "scheme_kind": scheme_kind(str(r["scheme"])),
                "n_jobs": len(js),
                "n_failed": n_failed,
                "failed": bool(reason),
                "failed_reason": reason,
                "response_s": float(ok["response_s"].mean()) if len(ok) else math.nan,
                "exec_s": float(ok["runtime_s"].mean()) if len(ok) else math.nan,
                "wait_s": float(ok["wait_s"].mean()) if len(ok) else math.nan,
                "makespan_s": float(js["end_s"].max()) if len(js) else math.nan,
            }
        )
        m, why = daemon_measures(metas.get(rid, {}))
        if why:
            log.add("BCR, MD and daemon counters", why, "metadata.json cluster.daemons", rid)
        for k in COUNTERS + ["bcr", "md_us"]:
            row[k] = m.get(k, math.nan)
        rows.append(row)
    out = pd.DataFrame(rows)
    if len(out):
        out["mpl"] = out["mpl"].astype(int)
        out["rep"] = out["rep"].astype(int)
    return out


def points(runs: pd.DataFrame) -> pd.DataFrame:
    """(workload, load, scheme, mpl): means over reps and 95% t-intervals of the response time."""
    rows = []
    for key, g in runs.groupby(KEYS, sort=True):
        low, high = (
            t_interval(g["response_s"].dropna().to_numpy())
            if g["response_s"].notna().sum() > 1
            else (
                math.nan,
                math.nan,
            )
        )
        row = dict(zip(KEYS, key))
        row.update(
            {
                "n_reps": len(g),
                "response_s": g["response_s"].mean(),
                "ci95_low": low,
                "ci95_high": high,
                "exec_s": g["exec_s"].mean(),
                "wait_s": g["wait_s"].mean(),
                "bcr": g["bcr"].mean(),
                "md_us": g["md_us"].mean(),
                **{k: g[k].mean() for k in COUNTERS},
            }
        )
        rows.append(row)
    return pd.DataFrame(rows)


def _order(schemes) -> list[str]:
    return sorted(set(schemes), key=lambda s: SCHEME_ORDER.index(s) if s in SCHEME_ORDER else 99)


def plot_bars(table: pd.DataFrame, col: str, ylabel: str, title: str, out: Path, err: bool = False) -> None:
    """One panel per (workload, load): bars per scheme, grouped by MPL."""
    streams = sorted(set(zip(table["workload"], table["load"]))) if len(table) else []
    fig, axes = plt.subplots(1, max(1, len(streams)), figsize=(4.2 * max(1, len(streams)), 3.4), squeeze=False)
    if not streams:
        no_data(axes[0][0], "no runs")
    for ax, (w, load) in zip(axes[0], streams):
        t = table[(table["workload"] == w) & (table["load"] == load)]
        schemes = _order(t["scheme"])
        mpls = sorted(set(t["mpl"]))
        width = 0.8 / max(1, len(mpls))
        x = np.arange(len(schemes))
        for i, m in enumerate(mpls):
            tm = t[t["mpl"] == m].set_index("scheme")
            ys = [tm[col].get(s, math.nan) for s in schemes]
            yerr = None
            if err:
                yerr = np.array(
                    [
                        [max(0.0, y - tm["ci95_low"].get(s, math.nan)) if math.isfinite(y) else 0 for s, y in
                         zip(schemes, ys)],
                        [max(0.0, tm["ci95_high"].get(s, math.nan) - y) if math.isfinite(y) else 0 for s, y in
                         zip(schemes, ys)],
                    ]
                )  # fmt: skip
                yerr = np.nan_to_num(yerr)
            ax.bar(x + i * width, ys, width, yerr=yerr, capsize=2, label=f"MPL {m}")
        ax.set_xticks(x + width * (len(mpls) - 1) / 2, schemes, fontsize=7, rotation=30)
        ax.set_title(f"{w} {load}", fontsize=9)
        ax.set_ylabel(ylabel)
        ax.legend(fontsize=7)
    fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    save_png(fig, out)


def read_plan(path: str | Path) -> dict:
    """The experiment's specs/plan.json (what the model needs besides the runs), one-line errors."""
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise AnalysisInputError(f"{path}: not readable ({exc}) (expected the experiment's plan.json)") from None


def levels(runs: pd.DataFrame) -> dict[str, set]:
    """What a claim may select: every scheme, workload and load corun knows (the manifests and the
    paper's Table 3), and the kinds of scheme."""
    return {
        "scheme": set(SCHEME_ORDER),
        "scheme_kind": {"blocking", "spinning", "other"},
        "workload": {f"wl{i}" for i in range(1, 7)} | set(runs.get("workload", pd.Series(dtype=str)).dropna()),
        "load": {"heavy", "light", "burst"} | set(runs.get("load", pd.Series(dtype=str)).dropna()),
        "contest": set(contests.CONTESTS),
        "side": {"head", "base"},
    }


def model_check(model: dict | None, why: str | None) -> dict:
    """The discrete-event model against the runs it was not fitted on: pass or fail against its
    tolerance (a check of corun's model, not a paper claim)."""
    if model is None:
        return {"check": "the model predicts the held-out runs' response time", "expected": None,
                "measured": None, "tolerance": "", "passed": None, "note": f"not checked: {why}"}  # fmt: skip
    v = model["validation"]
    if v["held_out"] == 0:
        return {"check": "the model predicts the held-out runs' response time", "expected": None,
                "measured": None, "tolerance": f"+-{model['tolerance_pct']:g} %", "passed": None,
                "note": f"not checked: {v['why']}"}  # fmt: skip
    return {
        "check": "the model predicts the held-out runs' response time",
        "expected": f"every point within +-{model['tolerance_pct']:g} %",
        "measured": f"worst point {fmt_num(v['worst_pct'])} %",
        "tolerance": f"+-{model['tolerance_pct']:g} %",
        "passed": bool(v["within"]),
        "note": f"fitted on {v['fitted']} run(s) ({v['fit_reps']}), checked on {v['held_out']} held-out run(s) "
        f"({v['held_out_reps']}); the projection is shown only when the check passes",
    }


def analyse(inputs: Inputs) -> Result:
    jobs, runs, metas = inputs.jobs, inputs.runs, inputs.metas
    plan = read_plan(Path(inputs.files["specs"]) / "plan.json") if inputs.files.get("specs") else {}
    log = rt.MissingLog()
    by_run = per_run(jobs, runs, metas, log)
    table = points(by_run)
    pair_rows = contests.pairs(by_run)
    bmp = sorted({m.get("bcr_min_pending") for m in [daemon_measures(x)[0] for x in metas.values()] if m} - {None})
    bmp_text = ", ".join(str(b) for b in bmp) if bmp else str(plan.get("bcr_min_pending", 2))
    reading = "two or more" if bmp_text == "2" else f"{bmp_text} or more"
    programs = sorted(set(jobs["binary"].dropna())) if "binary" in jobs else []
    n_jobs = int(by_run["n_jobs"].sum()) if len(by_run) else 0
    n_failed = int(by_run["n_failed"].sum()) if len(by_run) else 0
    summary = [
        f"{len(by_run)} run(s): {len(table)} (workload, load, scheme, MPL) point(s), {n_jobs} jobs, {n_failed} failed.",
        f"Programs: {', '.join(programs) or 'none'}" + stand_in_note(plan) + ".",
        f"BCR counts a boost conflict when {reading} ranks of a node have pending messages at a context "
        f"switch (bcr_min_pending = {bmp_text}).",
    ]
    notes = [
        "Response time = waiting in the FIFO queue + execution (end - submit); execution = end - start; "
        "per run the mean over its jobs; a run with a failed job counts as failed; per point the mean over "
        "reps, 95% t-interval.",
        "Ratios are paired by rep: every scheme and MPL of a rep ran the same seeded job stream.",
        "BCR and MD come from the node daemons and the interposition library (docs/schedulers/mpi_cosched.md): "
        "context switches are sampled every daemon tick from /proc/<pid>/schedstat, not seen one by one as "
        "in the paper's goodness() hook; MD includes sends waited on together with receives (MPI_Waitall).",
        "The mechanism differs from the paper's Myrinet/GM firmware and Linux 2.4 hook: see "
        "experiments/mpl_sweep/README.md and docs/schedulers/mpi_cosched.md.",
        *run_checks(jobs, runs),
    ]
    outputs = {"points.csv": table, "runs_table.csv": by_run}
    tables = [
        {"title": "Points: response, execution and waiting time, BCR, MD, daemon counters", "csv": "points.csv"},
        {"title": "Runs", "csv": "runs_table.csv"},
    ]
    model, why = None, None
    try:
        model = mpl_model.run_model(jobs, by_run, plan, cache_dir=inputs.files.get("cache_dir"))
    except mpl_model.ModelInputError as exc:
        why = str(exc)
        log.add("model: predicted vs measured, projection", why, "experiments.mpl_sweep.model", "-")
    checks = [model_check(model, why)]
    if model is not None:
        m_summary, m_notes = mpl_model.describe(model)
        summary += m_summary
        notes += m_notes
        outputs["model_fit.csv"] = model["table"]
        tables.append(
            {
                "title": "Model (discrete-event, fitted on some reps) beside the measurements: measured_*, "
                "model_* and error_*_pct = model / measured - 1 (BCR: error_bcr_abs = model - measured), per "
                "scheme and MPL; held_out says which points the model was not fitted on",
                "csv": "model_fit.csv",
            }
        )
        if model["projection"] is not None:
            outputs["model_projection.csv"] = model["projection"]
            tables.append(
                {
                    "title": "Model projection: model values only, not measurements (the calibrated "
                    "benchmarks on the projection's nodes and MPLs)",
                    "csv": "model_projection.csv",
                }
            )
    figures = [
        Figure("response_time.png", "Average job response time per scheme and MPL, each job stream (Figs. 7 and "
               "10); error bars: 95% t-interval over reps.",
               lambda out: plot_bars(table, "response_s", "response time (s)", "Average job response time", out,
                                     err=True)),
        Figure("execution_time.png", "Average job execution time per scheme and MPL (Fig. 9).",
               lambda out: plot_bars(table, "exec_s", "execution time (s)", "Average job execution time", out)),
        Figure("bcr.png", "Boost conflict ratio per scheme and MPL (Figs. 8 and 11).",
               lambda out: plot_bars(table, "bcr", "BCR", "Boost conflict ratio", out)),
        Figure("md.png", "Message delay per scheme and MPL, microseconds (Figs. 8 and 11).",
               lambda out: plot_bars(table, "md_us", "MD (us)", "Message delay", out)),
    ]  # fmt: skip
    return Result(
        summary=summary,
        evidence={"runs": by_run, "pairs": pair_rows, "gains": contests.gains(pair_rows)},
        levels=levels(by_run),
        outputs=outputs,
        tables=tables,
        figures=figures,
        notes=notes,
        log=log,
        checks=checks,
    )

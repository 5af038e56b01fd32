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

Verdict rules
  "X reduces Y by p% against Z" (paper p < 0): not measurable when X or Z was not run on that
    stream; reproduced in direction when the ratio's CI lies below 1 (with one rep, no CI:
    when the ratio is below 1, said in the note; with a per-rep value of 0, which has no log
    ratio: when X is below Z in every rep); not reproduced otherwise. The comparison uses
    the highest MPL measured (the paper's: 5).
  BCR is a share of rare events: its comparison is not measurable when Z's runs counted fewer
    than MIN_BCR_EVENTS conflict context switches over the paired reps, and says so (a few
    conflicts in one rep would decide it).
  blocking beats spinning: per rep, the mean response of the blocking schemes run (sb, hybrid,
    cc_b) over that of the spinning ones run (local, dcs, pb, cc_s), WL6 heavy, highest MPL;
    reproduced in direction when the t-interval of the per-rep log ratios lies below 1 (one
    rep: the ratio below 1).
  CC's gain grows with MPL: ratio cc_b / sb at the highest MPL below that at the lowest.

CLI: python -m analysis.mpl_sweep --jobs J --runs R --plan PLAN --out-dir D
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from analysis import mpl_model  # noqa: E402
from analysis import runtables as rt  # noqa: E402
from analysis.common import (  # noqa: E402
    VERDICT_DIRECTION,
    VERDICT_NOT,
    VERDICT_UNMEASURABLE,
    AnalysisInputError,
    base_parser,
    cli,
    fmt_num,
    paper_note,
    read_csv,
    resolve_run_paths,
    run_checks,
)
from analysis.paper import experiment_values, load_paper_values  # noqa: E402
from analysis.stats import paired_ratio_t, t_interval  # noqa: E402

EXPERIMENT = "mpl_sweep"
PAPER_ID = "001"
TEXT = ["run_id", "job_id", "name", "workload", "load", "scheme", "bench", "binary", "stands_in_for", "hosts"]
KEYS = ["workload", "load", "scheme", "mpl"]
BLOCKING = ("sb", "hybrid", "cc_b")
SPINNING = ("local", "dcs", "pb", "cc_s")
SCHEME_ORDER = ["batch", "local", "dcs", "pb", "cc_s", "ib", "sb", "hybrid", "cc_b", "gang"]
COUNTERS = ["boosts", "conflicts", "reordered", "context_switches", "conflict_context_switches", "arrivals"]


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


def per_run(jobs: pd.DataFrame, runs: pd.DataFrame, metas: dict[str, dict], log: rt.MissingLog) -> pd.DataFrame:
    """One row per run: its labels, mean response/execution/waiting time, BCR, MD, counters."""
    rows = []
    for _, r in runs.iterrows():
        rid = r["run_id"]
        js = jobs[jobs["run_id"] == rid]
        ok = js[js["exit_code"] == 0]
        row = {k: r[k] for k in KEYS + ["rep"]}
        row.update(
            {
                "run_id": rid,
                "n_jobs": len(js),
                "n_failed": int((js["exit_code"] != 0).sum()),
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


def stream(runs: pd.DataFrame, workload: str, load: str, mpl: int) -> pd.DataFrame:
    """The runs of one job stream at one MPL."""
    return runs[(runs["workload"] == workload) & (runs["load"] == load) & (runs["mpl"] == mpl)]


def per_rep_values(runs: pd.DataFrame, workload: str, load: str, mpl: int, head: str, base: str, col: str):
    """(head, base): col of the reps both ran, as arrays in rep order."""
    sel = stream(runs, workload, load, mpl)
    h = sel[sel["scheme"] == head].set_index("rep")[col].dropna()
    b = sel[sel["scheme"] == base].set_index("rep")[col].dropna()
    reps = sorted(set(h.index) & set(b.index))
    return h.loc[reps].to_numpy(float), b.loc[reps].to_numpy(float)


def paired_ratio(runs: pd.DataFrame, workload: str, load: str, mpl: int, head: str, base: str, col: str):
    """(ratio, low, high, n reps) of col, head over base, paired by rep; None when one is absent."""
    h, b = per_rep_values(runs, workload, load, mpl, head, base, col)
    if not len(h):
        return None
    r, lo, hi = paired_ratio_t(b, h)
    return r, lo, hi, len(h)


def top_mpl(runs: pd.DataFrame, workload: str, load: str) -> int | None:
    sel = runs[(runs["workload"] == workload) & (runs["load"] == load) & (runs["scheme"] != "batch")]
    return int(sel["mpl"].max()) if len(sel) else None


MIN_BCR_EVENTS = 20  # conflict context switches of the base scheme, over the paired reps


def base_events(runs: pd.DataFrame, workload: str, load: str, mpl: int, head: str, base: str, col: str) -> float:
    """The base scheme's `col` summed over the reps both schemes ran."""
    sel = stream(runs, workload, load, mpl)
    reps = set(sel.loc[sel["scheme"] == head, "rep"]) & set(sel.loc[sel["scheme"] == base, "rep"])
    return float(sel.loc[(sel["scheme"] == base) & sel["rep"].isin(reps), col].fillna(0).sum())


def ratio_row(runs, quantity, item, workload, load, head, base, col, events: str | None = None) -> dict:
    """A "head reduces col against base" row; with `events`, a share of rare events: not
    measurable when base counted fewer than MIN_BCR_EVENTS of them over the paired reps."""
    mpl = top_mpl(runs, workload, load)
    h, b = per_rep_values(runs, workload, load, mpl, head, base, col) if mpl is not None else ([], [])
    row = {"quantity": quantity, "paper_value": item["value"], "unit": item["unit"]}
    if not len(h):
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{head} and {base} were not both run on {workload} {load} in this configuration. " + paper_note(item),
        )
        return row
    r, lo, hi = paired_ratio_t(b, h)
    n = len(h)
    if events is not None:
        count = base_events(runs, workload, load, mpl, head, base, events)
        if count < MIN_BCR_EVENTS:
            row.update(
                measured_value=None,
                verdict=VERDICT_UNMEASURABLE,
                note=f"{head}/{base} on {workload} {load}, MPL {mpl}: {base} counted {int(count)} {events} over "
                f"{n} reps, fewer than the {MIN_BCR_EVENTS} a comparison of shares needs (rare events at this "
                "scale). " + paper_note(item),
            )
            return row
    if not math.isfinite(r):
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note=f"{head}/{base} on {workload} {load}, MPL {mpl}: undefined ({base} measured {col} = 0 or "
            "nothing). " + paper_note(item),
        )
        return row
    pct = 100 * (r - 1)
    if math.isfinite(hi):
        ok = hi < 1
        ci = f"ratio {fmt_num(r)} [{fmt_num(lo)}, {fmt_num(hi)}] (95% t-interval of the per-rep log ratios, {n} reps)"
    elif n >= 2:  # a per-rep value of 0 has no log ratio: below in every rep, or not
        below = int((h < b).sum())
        ok = below == n
        ci = f"ratio {fmt_num(r)}, no CI (a per-rep value is 0): {head} below {base} in {below} of {n} reps"
    else:
        ok = r < 1
        ci = f"ratio {fmt_num(r)}, {n} rep: no CI, the direction alone decides"
    row.update(
        measured_value=round(pct, 2) if math.isfinite(pct) else None,
        verdict=VERDICT_DIRECTION if ok else VERDICT_NOT,
        note=f"{head}/{base} on {workload} {load}, MPL {mpl}: {ci}. " + paper_note(item),
    )
    return row


def blocking_row(runs: pd.DataFrame, c: dict) -> dict:
    """Blocking beats spinning: per rep, the mean response of the blocking schemes run against
    that of the spinning ones (WL6 heavy, the highest MPL), paired by rep: reproduced when the
    t-interval of the per-rep log ratios lies below 1. A bare comparison of the two means flipped
    from one run to the next where they were 2 % apart."""
    row = {
        "quantity": "blocking vs spinning schemes: average response time",
        "paper_value": "blocking shorter",
        "unit": "s",
    }
    mpl = top_mpl(runs, "wl6", "heavy")
    sel = stream(runs, "wl6", "heavy", mpl) if mpl is not None else runs.iloc[0:0]
    blk = sel[sel["scheme"].isin(BLOCKING)].groupby("rep")["response_s"].mean().dropna()
    spn = sel[sel["scheme"].isin(SPINNING)].groupby("rep")["response_s"].mean().dropna()
    reps = sorted(set(blk.index) & set(spn.index))
    if not reps:
        row.update(
            measured_value=None,
            verdict=VERDICT_UNMEASURABLE,
            note="needs a blocking and a spinning scheme on wl6 heavy. " + paper_note(c),
        )
        return row
    b, s_ = blk.loc[reps].to_numpy(float), spn.loc[reps].to_numpy(float)
    r, lo, hi = paired_ratio_t(s_, b)
    n = len(reps)
    if math.isfinite(hi):
        ok = hi < 1
        ci = f"ratio {fmt_num(r)} [{fmt_num(lo)}, {fmt_num(hi)}] (95% t-interval of the per-rep log ratios, {n} reps)"
    else:
        ok = r < 1
        ci = f"ratio {fmt_num(r)}, {n} rep: no CI, the direction alone decides"
    schemes = (
        sorted(set(sel[sel["scheme"].isin(BLOCKING)]["scheme"])),
        sorted(set(sel[sel["scheme"].isin(SPINNING)]["scheme"])),
    )
    row.update(
        measured_value=f"blocking {fmt_num(b.mean())} s, spinning {fmt_num(s_.mean())} s",
        verdict=VERDICT_DIRECTION if ok else VERDICT_NOT,
        note=f"MPL {mpl}, blocking run: {', '.join(schemes[0])}; spinning run: {', '.join(schemes[1])}; "
        f"blocking / spinning: {ci}. " + paper_note(c),
    )
    return row


def compare(runs: pd.DataFrame, paper: dict) -> pd.DataFrame:
    vals = experiment_values(paper, EXPERIMENT)
    v, claims = vals["values"], vals["claims"]
    rows = [
        ratio_row(runs, "CC-B vs SB: average response time", v["cc_b_over_sb_response_pct"], "wl6", "heavy",
                  "cc_b", "sb", "response_s"),
        ratio_row(runs, "CC-B vs HYBRID: average response time", v["cc_b_over_hybrid_response_pct"], "wl6",
                  "heavy", "cc_b", "hybrid", "response_s"),
        ratio_row(runs, "CC-S vs PB: average response time", v["cc_s_over_pb_response_pct"], "wl6", "heavy",
                  "cc_s", "pb", "response_s"),
        ratio_row(runs, "CC-B vs SB: boost conflict ratio", v["cc_b_over_sb_bcr_pct"], "wl6", "heavy", "cc_b",
                  "sb", "bcr", events="conflict_context_switches"),
        ratio_row(runs, "CC-B vs SB: message delay", v["cc_b_over_sb_md_pct"], "wl6", "heavy", "cc_b", "sb",
                  "md_us"),
        ratio_row(runs, "CC-B vs SB: execution time, WL5 (CG)", v["cc_b_over_sb_exec_wl5_pct"], "wl5", "burst",
                  "cc_b", "sb", "exec_s"),
        ratio_row(runs, "CC-B vs HYBRID: execution time, WL5 (CG)", v["cc_b_over_hybrid_exec_wl5_pct"], "wl5",
                  "burst", "cc_b", "hybrid", "exec_s"),
    ]  # fmt: skip
    rows.append(blocking_row(runs, claims["blocking_beats_spinning"]))
    c = claims["cc_gain_grows_with_mpl"]
    sel = runs[(runs["workload"] == "wl6") & (runs["load"] == "heavy")]
    mpls = sorted(set(sel[sel["scheme"] != "batch"]["mpl"]))
    lo_r = paired_ratio(runs, "wl6", "heavy", mpls[0], "cc_b", "sb", "response_s") if mpls else None
    hi_r = paired_ratio(runs, "wl6", "heavy", mpls[-1], "cc_b", "sb", "response_s") if mpls else None
    if len(mpls) < 2 or lo_r is None or hi_r is None:
        rows.append(
            {
                "quantity": "CC-B's gain over SB grows with the MPL",
                "paper_value": "yes",
                "measured_value": None,
                "unit": "ratio",
                "verdict": VERDICT_UNMEASURABLE,
                "note": "needs cc_b and sb at two MPLs or more on wl6 heavy. " + paper_note(c),
            }
        )
    else:
        rows.append(
            {
                "quantity": "CC-B's gain over SB grows with the MPL",
                "paper_value": "yes",
                "measured_value": f"MPL {mpls[0]}: {fmt_num(lo_r[0])}, MPL {mpls[-1]}: {fmt_num(hi_r[0])}",
                "unit": "ratio cc_b/sb of response time",
                "verdict": VERDICT_DIRECTION if hi_r[0] < lo_r[0] else VERDICT_NOT,
                "note": "a smaller ratio is a larger gain. " + paper_note(c),
            }
        )
    return pd.DataFrame(rows)


def _order(schemes) -> list[str]:
    return sorted(set(schemes), key=lambda s: SCHEME_ORDER.index(s) if s in SCHEME_ORDER else 99)


def plot_bars(table: pd.DataFrame, col: str, ylabel: str, title: str, out: Path, err: bool = False) -> None:
    """One panel per (workload, load): bars per scheme, grouped by MPL."""
    streams = sorted(set(zip(table["workload"], table["load"]))) if len(table) else []
    fig, axes = plt.subplots(1, max(1, len(streams)), figsize=(4.2 * max(1, len(streams)), 3.4), squeeze=False)
    if not streams:
        rt.no_data(axes[0][0], "no runs")
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
    rt.save_png(fig, out)


def run(jobs_csv: str, runs_csv: str, plan_json: str, out_dir: str, paper_id: str) -> dict:
    jobs = read_csv(jobs_csv, TEXT)
    runs = read_csv(runs_csv, ["run_id", "variant", "workload", "load", "scheme"])
    try:
        plan = json.loads(Path(plan_json).read_text())
    except (OSError, ValueError) as exc:
        raise AnalysisInputError(f"{plan_json}: not readable ({exc}) (expected the experiment's plan.json)") from None
    metadata_paths = resolve_run_paths(runs, runs_csv, "metadata_path")
    metas = {}
    for rid, p in zip(runs["run_id"], metadata_paths):
        try:
            metas[rid] = json.loads(Path(p).read_text())
        except (OSError, ValueError) as exc:
            raise AnalysisInputError(f"{p}: not readable ({exc}) (expected a run's metadata.json)") from None
    log = rt.MissingLog()
    by_run = per_run(jobs, runs, metas, log)
    table = points(by_run)
    paper = load_paper_values(paper_id)
    comparison = compare(by_run, paper)
    bmp = sorted({m.get("bcr_min_pending") for m in [daemon_measures(x)[0] for x in metas.values()] if m} - {None})
    bmp_text = ", ".join(str(b) for b in bmp) if bmp else str(plan.get("bcr_min_pending", 2))
    reading = "two or more" if bmp_text == "2" else f"{bmp_text} or more"
    stand_in = sorted(set(jobs["binary"].dropna())) if "binary" in jobs else []
    n_jobs = int(by_run["n_jobs"].sum()) if len(by_run) else 0
    n_failed = int(by_run["n_failed"].sum()) if len(by_run) else 0
    summary = [
        f"{len(by_run)} run(s): {len(table)} (workload, load, scheme, MPL) point(s), {n_jobs} jobs, {n_failed} failed.",
        f"Programs: {', '.join(stand_in) or 'none'}"
        + ("" if plan.get("npb") else " (NPB not provisioned: corun's mpi_stencil stands in for BT, SP, FT, IS and CG)")
        + ".",
        f"BCR counts a boost conflict when {reading} ranks of a node have pending messages at a context "
        f"switch (bcr_min_pending = {bmp_text}).",
    ]
    notes = [
        "Response time = waiting in the FIFO queue + execution (end - submit); execution = end - start; "
        "per run the mean over its jobs that exited 0; per point the mean over reps, 95% t-interval.",
        "Ratios are paired by rep: every scheme and MPL of a rep ran the same seeded job stream; CI: "
        "95% t-interval of the per-rep log ratios, exponentiated.",
        "BCR and MD come from the node daemons and the interposition library (docs/schedulers/mpi_cosched.md): "
        "context switches are sampled every daemon tick from /proc/<pid>/schedstat, not seen one by one as "
        "in the paper's goodness() hook; MD includes sends waited on together with receives (MPI_Waitall).",
        "The mechanism differs from the paper's Myrinet/GM firmware and Linux 2.4 hook: see "
        "docs/experiments/mpl_sweep.md and docs/schedulers/mpi_cosched.md.",
        *(n.strip() for n in paper.get("notes", [])),
        *run_checks(jobs, runs),
    ]
    outputs = {"points.csv": table, "runs_table.csv": by_run}
    tables = [
        {"title": "Points: response, execution and waiting time, BCR, MD, daemon counters", "csv": "points.csv"},
        {"title": "Runs", "csv": "runs_table.csv"},
    ]
    model = None
    try:
        model = mpl_model.run_model(jobs, by_run, plan)
    except mpl_model.ModelInputError as exc:
        log.add("model: predicted vs measured, projection", str(exc), "analysis.mpl_model", "-")
    if model is not None:
        m_summary, m_notes = mpl_model.describe(model)
        summary += m_summary
        notes += m_notes
        outputs["model_fit.csv"] = model["table"]
        outputs["model_projection.csv"] = model["projection"]
        tables += [
            {
                "title": "Model (discrete-event, calibrated on these runs) beside the measurements: "
                "measured_*, model_* and error_*_pct = model / measured - 1 (BCR: error_bcr_abs = "
                "model - measured), per scheme and MPL",
                "csv": "model_fit.csv",
            },
            {
                "title": "Model projection: model values only, not measurements (the calibrated "
                "benchmarks on the projection's nodes and MPLs)",
                "csv": "model_projection.csv",
            },
        ]
    section = rt.section(
        EXPERIMENT,
        paper,
        summary,
        figures=[
            {
                "path": "response_time.png",
                "caption": "Average job response time per scheme and MPL, each job "
                "stream (Figs. 7 and 10); error bars: 95% t-interval over reps.",
            },
            {"path": "execution_time.png", "caption": "Average job execution time per scheme and MPL (Fig. 9)."},
            {"path": "bcr.png", "caption": "Boost conflict ratio per scheme and MPL (Figs. 8 and 11)."},
            {"path": "md.png", "caption": "Message delay per scheme and MPL, microseconds (Figs. 8 and 11)."},
        ],  # fmt: skip
        comparison=comparison,
        tables=tables,
        metadata_paths=metadata_paths,
        log=log,
        notes=notes,
    )
    rt.write_outputs(
        out_dir,
        section,
        outputs,
        [
            lambda out: plot_bars(
                table,
                "response_s",
                "response time (s)",
                "Average job response time",
                out / "response_time.png",
                err=True,
            ),
            lambda out: plot_bars(
                table, "exec_s", "execution time (s)", "Average job execution time", out / "execution_time.png"
            ),
            lambda out: plot_bars(table, "bcr", "BCR", "Boost conflict ratio", out / "bcr.png"),
            lambda out: plot_bars(table, "md_us", "MD (us)", "Message delay", out / "md.png"),
        ],  # fmt: skip
    )
    return {"runs": by_run, "table": table, "comparison": comparison, "model": model}


def main(argv: list[str] | None = None) -> int:
    parser = base_parser(
        "analysis.mpl_sweep",
        "The MPL sweep (paper 001): response time, execution time, BCR and MD per scheme and MPL.",
    )
    parser.add_argument("--plan", required=True, metavar="JSON", help="the experiment's specs/plan.json")
    return cli(parser, argv, PAPER_ID, lambda a: run(a.jobs, a.runs, a.plan, a.out_dir, a.paper_id))


if __name__ == "__main__":
    sys.exit(main())

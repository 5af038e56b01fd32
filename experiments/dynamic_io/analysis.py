"""The dynamic I/O-aware scheduler against Linux (paper 000, section 4, Table 3, Figs. 16-24).

Reads the dynamic_io campaign (jobs.csv and runs.csv of analysis.collect), each run's tidy iostat
table and, for the variants with a scheduler daemon, its sched/state/decisions.jsonl and
summary.json. The metrics of a run, a job and a workload are defined in
experiments.dynamic_io.metrics; this module turns them into the evidence the claims read
(claims.yaml, judged by analysis.verdicts), the tables, the figures and the notes.

Evidence (one row per measured unit, paired by rep)
  runs       one row per campaign run: workload, variant, paper_role, rep, failed, eq. 3 and 5,
             the latencies, the daemon's counters and CPU share.
  slowdown   the same runs' eq. 4 slowdown, mean slowdown and Jain's index; a row also fails
             when a job type of the run has no T_alone (its alone runs named).
  per_job    one row per job of a campaign run: its runtime, by job index (Figs. 23-24).
  overhead   the overhead runs' makespans beside the baseline's, per TIMESLICE (Sec. 3.5);
  gain       per workload and rep, its sensitivity under Linux and the scheduler's speed-up
             (Sec. 4.4). Both are formed in experiments.dynamic_io.evidence.
Alone runs (T_alone) run under the baseline variant but never enter these tables.

paper_role says which runs stand for the paper's two schedulers: `dynamic` for the runs of
dynamic_io.paper_variant (by default dynamic_io, else the one variant besides the baseline: a
campaign of a new variant against linux judges that variant), `linux` for those of
dynamic_io.baseline, `other` for the rest, which appear in the tables and figures only.

Improvement in the paper's form, derived from its own numbers (Sec. 4.2.2 and 4.3.2: its waiting
and serving times are (old - new) / old; its throughput and slowdown gains exceed 100 %, which
only (new - old) / old allows): higher is better (throughput, eq. 4 slowdown, Jain): ratio - 1;
lower is better (runtimes, latencies): 1 - ratio. improvement.csv gives it, with the 95 %
t-interval of the per-rep log ratios, for every variant; the claims are decided by the engine.

Run by the workflow: python -m experiments analyze dynamic_io (inputs: jobs.csv, runs.csv).
"""

from __future__ import annotations

import math

import pandas as pd

from analysis import runtables as rt
from analysis.common import fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from experiments.dynamic_io import evidence as ev
from experiments.dynamic_io import figures as fg
from experiments.dynamic_io import metrics as mx
from experiments.dynamic_io import plan

JOB_TEXT = ["app", "workload", "variant", "result_check", "scale_note", "wtype"]
RUN_TEXT = ["run_kind", "workload", "variant", "device", "metadata_path", "run_dir", "job_type", "wtype", "status"]
TABLE3 = [f"w{i:02d}" for i in range(1, 16)]
FIG_IMPROVEMENT = "fig16_17_20_improvement.png"
FIG_SUSPENDED = "suspended_jobs.png"


def roles(inputs: Inputs, runs: pd.DataFrame) -> tuple[str, str | None, list[str]]:
    """(baseline, paper variant, variants): from the effective config's dynamic_io section, else
    from the runs (linux as the baseline)."""
    sec = (inputs.config or {}).get("dynamic_io") or {}
    measured = sorted(runs.loc[runs["run_kind"] == "campaign", "variant"].dropna().astype(str).unique())
    baseline = sec.get("baseline") or "linux"
    configured = list(sec.get("variants") or measured)
    paper = plan.paper_variant(sec.get("paper_variant"), configured, baseline)
    variants = sorted(set(measured) | set(configured), key=lambda v: (v != baseline, v != paper, v))
    return baseline, paper, variants


def levels(inputs: Inputs, by_run: pd.DataFrame, variants: list[str]) -> dict[str, set]:
    """What a claim may select: the paper's roles, every Table 3 workload, the variants."""
    sec = (inputs.config or {}).get("dynamic_io") or {}
    return {
        "paper_role": set(mx.ROLES),
        "arm": set(ev.ARMS),
        "workload": set(TABLE3) | set(sec.get("table3") or ()) | set(by_run["workload"].astype(str)),
        "variant": set(variants),
    }


def setup_table(values: dict, runs: pd.DataFrame, metas: dict[str, dict]) -> pd.DataFrame:
    """The paper's setup beside this campaign's (no verdict): TIMESLICE, IO_BOUND_INTERVAL, the
    machine and each workload's batch length."""
    camp = runs[runs["run_kind"] == "campaign"]

    def distinct(col: str) -> str:
        if col not in camp.columns:
            return "not recorded"
        v = sorted({fmt_num(float(x)) for x in pd.to_numeric(camp[col], errors="coerce").dropna()})
        return ", ".join(v) if v else "not recorded"

    machines = set()
    for m in metas.values():
        t = m.get("topology") or {}
        if t.get("cpus") is not None and isinstance(t.get("cmps"), list):
            machines.add(f"{t['cpus']} cores, {len(t['cmps'])} CMPs ({t.get('cmp_grouping', 'grouping not recorded')})")
    rows = [
        ("TIMESLICE", values["timeslice_s"], distinct("timeslice_s")),
        ("IO_BOUND_INTERVAL", values["io_bound_mb_s"], distinct("io_bound_mbps")),
        ("machine", values["cores"], "; ".join(sorted(machines)) or "not recorded"),
    ]
    if {"paper_batch_length", "batch_length"} <= set(camp.columns):
        for w, g in camp.groupby("workload", sort=True):
            paper = pd.to_numeric(g["paper_batch_length"], errors="coerce").dropna()
            here = pd.to_numeric(g["batch_length"], errors="coerce").dropna()
            if len(paper):
                item = {"value": int(paper.iloc[0]), "unit": "jobs", "source": "Table 3"}
                rows.append(
                    (f"batch length {fg.workload_name(w)}", item, ", ".join(sorted({str(int(x)) for x in here})))
                )
    return setup_frame(rows)


def pick(workloads: list[str], preferred: str, wtype: str, types: dict[str, str]) -> str | None:
    """The paper's workload for a figure if measured, else the first measured one of its type."""
    if preferred in workloads:
        return preferred
    return next((w for w in workloads if types.get(w) == wtype), None)


def improvement_text(t: pd.DataFrame, w: str, variant: str | None, metric: str) -> str:
    hit = t[(t["workload"] == w) & (t["variant"] == variant) & (t["metric"] == metric)]
    if hit.empty or not math.isfinite(hit["improvement_pct"].iloc[0]):
        return "missing"
    r = hit.iloc[0]
    ci = (
        f" [{fmt_num(r['improvement_ci95_low'])}, {fmt_num(r['improvement_ci95_high'])}]"
        if math.isfinite(r["improvement_ci95_low"])
        else ""
    )
    return (
        f"{'+' if r['improvement_pct'] >= 0 else ''}{fmt_num(r['improvement_pct'])} %{ci} ({r['n_pairs']} paired reps)"
    )


def form_note(values: dict) -> str:
    """How the paper's own latency numbers fix the form of its improvement (from claims.yaml)."""

    def one(w: str, name: str) -> str:
        old, new, pct = (values[f"{w}_{name}_{k}"]["value"] for k in ("linux_ms", "dynamic_ms", "pct"))
        form = fmt_num(100 * (old - new) / old)
        return f"{fmt_num(old)} -> {fmt_num(new)} ms: (old - new) / old = {form} %, its {fmt_num(pct)} %"

    return (
        "Improvement: (new - old) / old for higher-is-better metrics (throughput, eq. 4 slowdown, Jain), "
        "(old - new) / old for runtimes and latencies; the paper's own numbers fit these forms ("
        + "; ".join(one(w, n) for w, n in (("w01", "wait"), ("w01", "svc"), ("w11", "wait"), ("w11", "svc")))
        + "), and its throughput and slowdown gains above 100 % fit only (new - old) / old."
    )


def coverage_note(claims: dict, workloads: list[str]) -> str:
    """Which measured workloads each claim on a group of workloads is judged on (the engine's
    `over` judges every measured point of the group), from the claims' own selections."""
    groups: dict[tuple, list[str]] = {}
    for cid, c in claims.items():
        members = (c.get("where") or {}).get("workload")
        if "workload" in (c.get("over") or []) and isinstance(members, list):
            groups.setdefault(tuple(members), []).append(cid)
    parts = []
    for members, ids in groups.items():
        have = [fg.workload_name(w) for w in members if w in workloads]
        of = ", ".join(fg.workload_name(w) for w in members)
        parts.append(f"{', '.join(ids)}: {', '.join(have) if have else 'none'} of {of}")
    return (
        "A claim on a group of workloads is judged on every measured workload of the group: "
        + "; ".join(parts)
        + ". A workload not in the campaign is not judged (n = 0 when the group has none)."
    )


def analyse(inputs: Inputs) -> Result:
    jobs, runs = mx.checked_tables(
        inputs.jobs, inputs.runs, str(inputs.runs_csv.with_name("jobs.csv")), str(inputs.runs_csv)
    )
    baseline, paper, variants = roles(inputs, runs)
    log = rt.MissingLog()
    dirs = rt.run_dirs(runs, inputs.runs_csv)
    m = mx.per_run(jobs, runs, dirs, log, paper, baseline)
    # a run measured again longer keeps its latency, not its wall-time metrics (sizing.py)
    unmarked = m["runs"]
    by_run, slowdown = ev.mark_lengthened(m["runs"], runs), ev.mark_lengthened(m["slowdown"], runs)
    pj = mx.per_job(jobs, by_run)
    overhead = ev.overhead_table(jobs, runs, by_run, dirs, log)
    gain = ev.gain_table(by_run, slowdown)
    means = mx.per_job_means(pj)
    improvement = mx.improvement_table(by_run, baseline)
    workloads = sorted(by_run["workload"].dropna().astype(str).unique())
    types = dict(zip(by_run["workload"], by_run["wtype"]))
    reps = int(by_run["rep"].nunique()) if len(by_run) else 0
    n_alone = int((runs["run_kind"] == "alone").sum())
    values = inputs.claims.values

    summary = [
        f"{len(workloads)} Table 3 workload(s) ({', '.join(fg.workload_name(w) for w in workloads) or 'none'}) "
        f"under {len(variants)} variant(s) ({', '.join(variants)}), {reps} interleaved rep(s), T_alone from "
        f"{n_alone} alone run(s), {int((runs['run_kind'] == 'overhead').sum())} overhead run(s) (Sec. 3.5); "
        f"{int(by_run['failed'].sum())} of {len(by_run)} campaign run(s) failed.",
        (
            f"The claims compare {paper} (paper_role dynamic: the paper's scheduler, dynamic_io.paper_variant) "
            f"with {baseline} (paper_role linux: its Linux, dynamic_io.baseline), rep by rep."
            if paper
            else f"No variant stands for the paper's scheduler (dynamic_io.paper_variant): every comparison with "
            f"{baseline} measured nothing (n = 0)."
        ),
    ]
    if paper:
        summary.append(
            f"Average runtime, improvement of {paper} over {baseline}: "
            + "; ".join(
                f"{fg.workload_name(w)} {improvement_text(improvement, w, paper, 'avg_runtime_s')}" for w in workloads
            )
            + "."
        )
    caps = rt.throttle_values(runs) if "throttle_read_bps" in runs.columns else []
    notes = [
        "Slowdown is the paper's eq. 4, the SUM over jobs of T_alone / T_k-c: it grows when jobs slow down "
        "less, so higher is better; mean_slowdown (mean of T_k-c / T_alone) is the conventional form.",
        form_note(values),
        "Comparisons pair rep i of the two schedulers (the campaign interleaves the reps and orders the "
        "variants of a rep from its seed). Each run's row fails when one of its jobs failed or the runner did "
        "not finish it; a claim that reads a failed row says failed and names the run.",
        coverage_note(inputs.claims.claims, workloads),
        "T_workload is the last job's end; every job is submitted at t = 0 and the runner's FCFS queue starts "
        "them as cores free up (single-threaded D-TYPE jobs one per core, the others one per CMP).",
        rt.device_note(inputs.metadata_paths),
        "Waiting and serving time are derived from iostat (sysstat has no svctm): svc = 10 x %util / IOPS, "
        "wait = await - svc; the claims read their means over the run's sampled intervals with I/O "
        '(wait_iv_ms, svc_iv_ms: the paper\'s "average waiting time from all sampled intervals"), the tables '
        "also the means over requests (wait_ms, svc_ms).",
        "The scheduler's overhead (Sec. 3.5) is its cost to the makespan: the overhead runs run the workload "
        "under dynamic_io with IO_BOUND_INTERVAL at its maximum (every job sampled each TIMESLICE, none "
        "suspended) against the rep's linux run; the delay before a signalled job stops, which the paper also "
        "counts, does not occur there. "
        + ("; ".join(ev.overhead_summary(overhead)) or "This campaign has no overhead run.")
        + ".",
        "The trend of gain with sensitivity (Sec. 4.4) ranks, per workload and rep, Linux's average runtime over "
        "the scheduler's against the workload's mean slowdown under Linux (mean T_k-c / T_alone over its "
        "reps).",
        "Variants other than the two compared appear in improvement.csv and the figures, without claims: the "
        "paper has no numbers for them.",
        *run_checks(jobs, runs),
        *rt.throttle_note(
            caps,
            ": requests over the cap wait in the cgroup's throttle before the device queue, where iostat "
            "cannot see them.",
            lead="The runs share a cgroup read cap of",
        ),
    ]

    figures = [
        Figure(
            FIG_IMPROVEMENT,
            f"Improvement of every variant over {baseline} per workload in the paper's form ((new - old) / old "
            "for throughput, slowdown of eq. 4 and fairness; (old - new) / old for the average runtime), 95% "
            "t-intervals of the per-rep log ratios. Compare paper Figs. 16, 17 and 20.",
            lambda out: fg.plot_improvement(improvement, baseline, variants, out),
        )
    ]
    if paper:
        for pref, wtype, figs, kind in (
            ("w01", "D", "Figs. 18-19", "latency"),
            ("w11", "M", "Figs. 21-22", "latency"),
            ("w08", "D", "Fig. 23", "per_job"),
            ("w15", "M", "Fig. 24", "per_job"),
        ):
            w = pick(workloads, pref, wtype, types)
            if w is None:
                continue
            other = "" if w == pref else f" (the paper shows {fg.workload_name(pref)}, not in this campaign)"
            if kind == "latency":
                caption = (f"I/O waiting and serving time over time of workload {fg.workload_name(w)} under "
                           f"{baseline} and {paper} (first rep with both; iostat, derived). Compare paper "
                           f"{figs}{other}.")  # fmt: skip
                plot = lambda out, w=w, figs=figs: fg.plot_latency(by_run, m["series"], w, baseline, paper, out, figs)  # noqa: E731
            else:
                caption = (f"Runtime of each job of workload {fg.workload_name(w)} (mean over reps) under {baseline} "
                           f"and {paper}. Compare paper {figs}{other}.")  # fmt: skip
                plot = lambda out, w=w, figs=figs: fg.plot_per_job(means, w, baseline, paper, out, figs)  # noqa: E731
            figures.append(Figure(f"{kind}_{w}.png", caption, plot))
    figures.append(
        Figure(
            FIG_SUSPENDED,
            "Jobs suspended (or throttled) by each variant with a scheduler daemon over the first rep of each "
            "workload, from the daemon's decisions.jsonl.",
            lambda out: fg.plot_suspended(by_run, m["decisions"], variants, out),
        )
    )
    latency = ev.latency_table(unmarked, runs)
    outputs = {
        "runs_metrics.csv": by_run,
        "slowdown.csv": slowdown,
        "latency.csv": latency,
        "summary.csv": mx.summary_table(by_run),
        "improvement.csv": improvement,
        "per_job.csv": pj,
        "overhead.csv": overhead,
        "gain.csv": gain,
        "per_job_means.csv": means,
        "t_alone.csv": m["t_alone"],
        "apps.csv": mx.apps_table(jobs),
        "setup.csv": setup_table(values, runs, inputs.metas),
    }
    tables = [
        {"title": "Improvement over the baseline per workload, variant and metric (descriptive)",
         "csv": "improvement.csv"},
        {"title": "Means over reps with 95% t-intervals (runs that did not fail)", "csv": "summary.csv"},
        {"title": "Metrics per run (the claims' evidence)", "csv": "runs_metrics.csv"},
        {"title": "Slowdown (eq. 4) and fairness per run (the claims' evidence)", "csv": "slowdown.csv"},
        {"title": "I/O waiting and serving time per run, a run too short for them failed (the claims' evidence)",
         "csv": "latency.csv"},
        {"title": "T_alone per job type", "csv": "t_alone.csv"},
        {"title": "Applications: what ran each one here and what it stands in for", "csv": "apps.csv"},
        {"title": "Per-job runtimes per run (the claims' evidence)", "csv": "per_job.csv"},
        {"title": "Overhead runs: makespans beside the baseline's per TIMESLICE (the claims' evidence)",
         "csv": "overhead.csv"},
        {"title": "Gain against sensitivity per workload and rep (the claims' evidence)", "csv": "gain.csv"},
        {"title": "Per-job runtimes, means over reps", "csv": "per_job_means.csv"},
        {"title": "Setup: paper vs this run (no verdict)", "csv": "setup.csv"},
    ]  # fmt: skip
    return Result(
        summary=summary,
        evidence={
            "runs": by_run,
            "slowdown": slowdown,
            "latency": latency,
            "per_job": pj,
            "overhead": overhead,
            "gain": gain,
        },
        levels=levels(inputs, by_run, variants),
        outputs=outputs,
        tables=tables,
        figures=figures,
        notes=notes,
        log=log,
        checks=[mx.order_check(runs, inputs.metas), mx.quanta_check(by_run)],
    )

"""Sensitivity_RANKING (paper 000, Sec. 3.3.2 and 3.4.2, Figs. 13-14).

Groups of identical file-reading kernels, each group with its own per-CMP I/O demand, are run
on k = 1..K loaded CMPs. For every group and k we recompute the paper's average runtime
degradation, find the per-CMP demand below which no degradation appears, and derive the
IO_BOUND_INTERVAL the dynamic scheduler would use on this machine (descriptive). The metrics
are defined in experiments/sensitivity_ranking/metrics.py.

Claims (claims.yaml, judged by analysis.verdicts) on the per-rep slowdown of each demand group
(table slowdown: each run at k over the group's k = 1 run of the same rep, over the compute-only
control's at the same k and rep when there is one): the slowdown rises with the demand at the
highest k measured and at every k > 1 (Spearman's rank trend over group x rep points); the
groups below the paper's no-degradation demand stay within 5 % at every k; the highest-demand
group degrades by more than 5 % at k = 2. A run with a failed job is failed.

Outputs: degradation.csv, threshold.json, runs_table.csv, slowdown.csv, setup.csv and
fig14_degradation.png. Run by the workflow: python -m experiments analyze sensitivity_ranking.
"""

from __future__ import annotations

import json
from pathlib import Path

import pandas as pd

from analysis import runtables as rt
from analysis.common import dumps_json, fmt_num, run_checks, setup_frame
from analysis.experiment import Figure, Inputs, Result
from experiments.sensitivity_ranking import metrics as m
from experiments.sensitivity_ranking.figures import FIG_NAME, plot_fig14

NAME = "sensitivity_ranking"
FOLDER = Path(__file__).resolve().parent
JOB_TEXT = m.JOB_TEXT
RUN_TEXT = m.RUN_TEXT


def throttle(runs: pd.DataFrame) -> tuple[float | None, str | None]:
    """The runs' one read cap (B/s), or None and why there is none to derive a threshold from."""
    values = runs["throttle_read_bps"]
    distinct = sorted(values.dropna().unique().tolist())
    if not distinct:
        return None, None
    if len(distinct) == 1 and values.notna().all():
        return float(distinct[0]), None
    return None, (
        f"runs differ in throttle_read_bps ({', '.join(f'{v:g}' for v in distinct)}"
        f"{' and none' if values.isna().any() else ''}): no expected threshold from the cap"
    )


def control_note(thr: dict) -> str | None:
    """The compute-only control's degradation at k = K in one sentence; None without control."""
    if thr["control_group"] is None:
        return None
    K, tol, group = thr["K"], thr["tol_pct"], thr["control_group"]
    at = m.control_at(thr, K)
    if at is None or at["degradation_pct"] is None:
        why = (at or {}).get("reason") or f"no run at k = {K}"
        return (
            f"The compute-only control (group {group}) has no degradation at k = {K} ({why}), so "
            "the slowdown beyond it is undefined there."
        )
    ci = ""
    if at["ci95_low_pct"] is not None:
        ci = f" (95% CI {fmt_num(at['ci95_low_pct'])} to {fmt_num(at['ci95_high_pct'])} %)"
    if at["degraded"]:
        return (
            f"Compute-only control (group {group}) degrades {fmt_num(at['degradation_pct'])} %{ci} at k = {K}, "
            f"its interval above the {fmt_num(tol)} % tolerance: stacking CMPs on this machine costs time without "
            "any I/O, which the paper assumes away (co-running jobs slow each other only through I/O)."
        )
    return (
        f"Compute-only control (group {group}) degrades {fmt_num(at['degradation_pct'])} %{ci} at k = {K}, "
        f"its interval not above the {fmt_num(tol)} % tolerance."
    )


def _shown(value: float | int | None) -> str | None:
    """A number rounded for reading (3 significant digits), None as None."""
    return None if value is None else fmt_num(value)


def setup_table(thr: dict, values: dict) -> pd.DataFrame:
    """Design parameters and the values derived here beside the paper's, rounded for reading: no
    verdict."""
    demands = [r["demand_per_cmp_mb_s"] for r in thr["groups"]]
    counted = "groups with a valid k=1 run"
    if thr["control_group"] is not None:
        counted = "demand groups with a valid k=1 run (control excluded)"
    top = thr["groups"][-1] if thr["groups"] else None
    rows = [
        (counted, values["n_groups"], thr["n_groups"]),
        ("lowest per-CMP demand", values["demand_min_mb_s"], _shown(min(demands)) if demands else None),
        ("highest per-CMP demand", values["demand_max_mb_s"], _shown(max(demands)) if demands else None),
        ("K, most CMPs loaded at once", values["k_max"], thr["K"]),
        (
            "derived: per-CMP demand below which no group is marked degraded (a lower bound when none is)",
            values["no_degradation_below_mb_s"],
            _shown(thr["no_degradation_demand_mb_s"]),
        ),
        (
            "derived: first k the highest-demand group is marked degraded (none: not up to K)",
            values["highest_group_onset_k"],
            None if top is None else top["onset_k"],
        ),
        (
            "derived: IO_BOUND_INTERVAL = that demand x K (the paper set its policy's value)",
            values["io_bound_interval_mb_s"],
            _shown(thr["suggested_io_bound_interval_mb_s"]),
        ),
    ]
    return setup_frame(rows)


def summary_and_notes(table: pd.DataFrame, thr: dict, by_run: pd.DataFrame, inputs: Inputs) -> tuple[list, list]:
    runs = inputs.runs
    tol, K = thr["tol_pct"], thr["K"]
    demands = [r["demand_per_cmp_mb_s"] for r in thr["groups"]]
    excess = thr["basis"] == m.BASIS_EXCESS
    plus_control = f" plus a compute-only control (group {thr['control_group']})" if excess else ""
    if demands:
        summary = [
            f"{thr['n_groups']} demand groups with a valid k=1 run{plus_control}, measured per-CMP demand "
            f"{fmt_num(min(demands))} to {fmt_num(max(demands))} MB/s, run on k = 1..{K} loaded CMPs with "
            f"{int(runs['rep'].nunique())} rep(s)."
        ]
    else:
        summary = [
            "No demand group has a valid k=1 run, so T_1-c and every degradation are undefined; see the "
            "reason column of the degradation table."
        ]
    summary.append(
        f"{int(by_run['failed'].sum())} of {len(by_run)} run(s) failed (a job with an exit code other than 0 or "
        "a self-check other than ok, no job, or a status other than ok): a claim on them says failed."
    )
    if excess:
        summary.append(
            f"{control_note(thr)} The claims read each group's slowdown over the control's in the same rep "
            f"(basis: {m.BASIS_EXCESS}); the raw degradation stays in the table."
        )
    if thr["expected_threshold_from_cap_mb_s"] is not None:
        summary.append(
            f"The device was throttled to {fmt_num(thr['throttle_cap_mb_s'])} MB/s, so cap / K = "
            f"{fmt_num(thr['expected_threshold_from_cap_mb_s'])} MB/s per CMP is the threshold expected from the cap."
        )
    notes = [
        "Degradation follows paper eq. (1): T_k-c / T_1-c - 1. The figure and degradation.csv pool the reps "
        "(T_1-c the mean runtime of the group's valid k=1 jobs over all reps, T_k-c that of its valid jobs at "
        "k; 95% t-interval over per-rep degradations with T_1-c held fixed). The claims pair each run with "
        "the k = 1 run of its rep (slowdown.csv): the engine's estimate is the geometric mean of the ratios.",
        f"The degraded column, the threshold and the onset in threshold.json and setup.csv, and the figure's "
        f"dashed line use the tolerance sensitivity_ranking.tol_pct ({fmt_num(tol)} %): descriptive, no "
        "verdict; the claims declare their own null and margin in claims.yaml.",
        f"{int(table['n_failed'].sum())} job(s) failed (exit code not 0 or self-check not 'ok') and are left "
        "out of the pooled means; the n_failed column counts them per group and k.",
        "Scheduler variant: " + ", ".join(sorted(runs["variant"].dropna().astype(str).unique())) + ".",
        rt.device_note(inputs.metadata_paths),
        *run_checks(inputs.jobs, runs),
    ]
    if thr["control_group"] is not None:
        ctrl = thr["control"]
        notes += [
            f"Group {ctrl['group']} has demand_target_mb_s = 0: the compute-only control (measured demand "
            f"{fmt_num(ctrl['demand_per_cmp_mb_s'])} MB/s per CMP). It is left out of the threshold and of the "
            "claims' groups; a group's excess degradation is its degradation minus the control's at the same k "
            "(columns control_degradation_pct, excess_degradation_pct), its interval paired by rep "
            "(excess_ci_method says when a Welch interval stands in).",
            control_note(thr),
        ]
    for excluded in thr["excluded_groups"]:
        notes.append(f"Group {excluded['group']} left out of the threshold: {excluded['reason']}.")
    return summary, notes


def analyse(inputs: Inputs) -> Result:
    jobs = m.check_jobs(inputs.jobs, str(inputs.runs_csv.with_name("jobs.csv")))
    runs = m.check_runs(inputs.runs, str(inputs.runs_csv))
    rt.one_variant(runs, inputs.runs_csv)
    tol_pct = float(rt.config_section(inputs.config, NAME, FOLDER / "config.schema.json")["tol_pct"])
    values = inputs.claims.values
    cap_bps, cap_note = throttle(runs)
    table = m.degradation_table(jobs, tol_pct)
    thr = m.threshold(table, tol_pct, cap_bps)
    by_run = m.per_run(jobs, runs)
    slowdown = m.slowdown(by_run, table, float(values["no_degradation_below_mb_s"]["value"]))
    control = m.control_slowdown(by_run, table)
    summary, notes = summary_and_notes(table, thr, by_run, inputs)
    if cap_note:
        notes.append(cap_note)
    excess = thr["basis"] == m.BASIS_EXCESS
    caption = (
        f"Average runtime degradation of each demand group as k CMPs are loaded (k = 1..{thr['K']}), reps "
        f"pooled; legend: measured demand in MB/s per CMP; error bars: 95% t-interval across reps; dashed line: "
        f"tolerance {fmt_num(tol_pct)} %. "
        + (
            f"Dashed black curve: {m.CONTROL_LABEL}, group {thr['control_group']}; a group's excess degradation "
            "is its height above that curve. "
            if excess
            else ""
        )
        + f"Compare paper Fig. 14 (k = 1..{values['k_max']['value']})."
    )
    threshold_json = {**thr, "onset_k": {str(g): k for g, k in thr["onset_k"].items()}}
    return Result(
        summary=summary,
        evidence={"slowdown": slowdown, "control": control},
        levels={"below_paper_threshold": {True, False}},
        outputs={
            "degradation.csv": table,
            "threshold.json": dumps_json(json.loads(json.dumps(threshold_json))),
            "runs_table.csv": by_run,
            "slowdown.csv": slowdown,
            "setup.csv": setup_table(thr, values),
        },
        tables=[
            {"title": "Degradation per demand group and k, reps pooled", "csv": "degradation.csv"},
            {"title": "Runs: mean runtime of the valid jobs, failed", "csv": "runs_table.csv"},
            {
                "title": "Slowdown per rep: each run at k over the k = 1 run of its rep (and over the control's)",
                "csv": "slowdown.csv",
            },
            {"title": "Setup and derived values: paper vs this run (no verdict)", "csv": "setup.csv"},
        ],
        figures=[Figure(FIG_NAME, caption, lambda out: plot_fig14(table, out, tol_pct))],
        notes=notes,
    )

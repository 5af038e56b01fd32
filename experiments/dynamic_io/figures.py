"""The dynamic_io figures: improvement per workload (Figs. 16, 17, 20), I/O latency over time
(Figs. 18-19, 21-22), per-job runtimes (Figs. 23-24) and the jobs each dynamic variant held."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.common import fmt_num
from analysis.figures import no_data, plt, save_png
from experiments.dynamic_io.metrics import METRICS, weighted

IMPROVEMENT_METRICS = ["throughput_jobs_per_s", "slowdown_sum", "avg_runtime_s", "jain_fairness"]


def colors(variants: list[str]) -> dict[str, str]:
    cmap = plt.get_cmap("tab10")
    return {v: cmap(i % 10) for i, v in enumerate(variants)}


def workload_name(w: str | None) -> str:
    return f"#{int(w[1:])}" if w and w[1:].isdigit() else str(w)


def legend_or_note(ax, drawn: bool, note: str, fontsize: int = 8) -> None:
    """The legend of what was drawn, or the note saying why nothing was."""
    if drawn:
        ax.legend(fontsize=fontsize)
    else:
        no_data(ax, note)


def plot_improvement(improvement: pd.DataFrame, baseline: str, variants: list[str], path: Path) -> None:
    """Figs. 16, 17, 20: improvement over the baseline per workload, one bar per variant."""
    t = improvement
    others = [v for v in variants if v != baseline]
    wls = sorted(t["workload"].unique()) if len(t) else []
    col = colors(variants)
    fig, axes = plt.subplots(2, 2, figsize=(11.0, 7.5), dpi=110)
    for ax, metric in zip(axes.flat, IMPROVEMENT_METRICS):
        if not wls or not others:
            no_data(ax, f"no paired runs of a variant and {baseline}")
        width = 0.8 / max(1, len(others))
        for i, v in enumerate(others):
            sub = t[(t["variant"] == v) & (t["metric"] == metric)].set_index("workload").reindex(wls)
            x = np.arange(len(wls)) + (i - (len(others) - 1) / 2) * width
            y = sub["improvement_pct"].to_numpy(float)
            err = np.vstack(
                [y - sub["improvement_ci95_low"].to_numpy(float), sub["improvement_ci95_high"].to_numpy(float) - y]
            )
            err = np.where(np.isfinite(err), err, 0.0)
            ax.bar(x, np.nan_to_num(y), width, yerr=err, color=col[v], label=v, capsize=2)
        ax.axhline(0, color="black", lw=0.6)
        ax.set_xticks(np.arange(len(wls)))
        ax.set_xticklabels([workload_name(w) for w in wls])
        ax.set_ylabel(f"improvement over {baseline} (%)")
        ax.set_title(METRICS[metric][1], fontsize=9)
        ax.grid(axis="y", alpha=0.3)
    if others and wls:
        axes.flat[0].legend(fontsize=7)
    fig.suptitle(
        f"Improvement over {baseline} (paper form; 95% paired t-intervals). Compare Figs. 16, 17, 20", fontsize=10
    )
    fig.tight_layout()
    save_png(fig, path)


def first_rep_pair(by_run: pd.DataFrame, w: str, baseline: str, variant: str) -> tuple[str | None, str | None]:
    """The run ids of the first rep in which both variants ran workload w."""
    r = by_run
    for rep in sorted(r.loc[r["workload"] == w, "rep"].unique()):
        a = r[(r["workload"] == w) & (r["variant"] == baseline) & (r["rep"] == rep)]
        b = r[(r["workload"] == w) & (r["variant"] == variant) & (r["rep"] == rep)]
        if len(a) and len(b):
            return str(a["run_id"].iloc[0]), str(b["run_id"].iloc[0])
    return None, None


def plot_latency(
    by_run: pd.DataFrame, series: dict, w: str, baseline: str, variant: str, path: Path, figs: str
) -> None:
    """Figs. 18-19 / 21-22: waiting and serving time over the run, baseline and variant (first rep
    with both)."""
    fig, axes = plt.subplots(1, 2, figsize=(11.0, 4.2), dpi=110)
    ids = first_rep_pair(by_run, w, baseline, variant)
    for ax, col, title in (
        (axes[0], "wait_ms", "waiting time (derived: await - svc)"),
        (axes[1], "svc_ms", "serving time (derived: 10 x %util / IOPS)"),
    ):
        drawn = False
        for rid, who, color in zip(ids, (baseline, variant), ("tab:red", "tab:blue")):
            s = series.get(rid) if rid is not None else None
            if s is None or s.empty:
                continue
            s = s[s["req"] > 0]
            mean = weighted(s[col], s["req"])
            ax.plot(s["t_s"], s[col], marker=".", lw=1.2, color=color, label=f"{who} (mean {fmt_num(mean)} ms)")
            drawn = True
        legend_or_note(ax, drawn, "no paired runs with iostat intervals")
        ax.set_xlabel("time since the run start (s)")
        ax.set_ylabel("ms per request")
        ax.set_title(title, fontsize=9)
        ax.grid(alpha=0.3)
    fig.suptitle(
        f"I/O latency over time, workload {workload_name(w)} (first rep with both runs). Compare {figs}", fontsize=10
    )
    fig.tight_layout()
    save_png(fig, path)


def plot_per_job(means: pd.DataFrame, w: str, baseline: str, variant: str, path: Path, fig_name: str) -> None:
    """Figs. 23-24: each job's runtime (mean over reps) under the baseline and the variant."""
    fig, ax = plt.subplots(figsize=(9.0, 4.2), dpi=110)
    drawn = False
    for who, color, marker in ((baseline, "tab:red", "o"), (variant, "tab:blue", "s")):
        g = means[(means["workload"] == w) & (means["variant"] == who)]
        if len(g):
            ax.plot(g["job_index"], g["runtime_s"], marker=marker, ls="", color=color, label=who, ms=4)
            drawn = True
    legend_or_note(ax, drawn, "no runs of this workload")
    ax.set_xlabel("job (submit order)")
    ax.set_ylabel("runtime T_k-c (s), mean over reps")
    ax.set_title(f"Per-job runtimes, workload {workload_name(w)}. Compare {fig_name}", fontsize=10)
    ax.grid(alpha=0.3)
    fig.tight_layout()
    save_png(fig, path)


def plot_suspended(by_run: pd.DataFrame, decisions: dict, variants: list[str], path: Path) -> None:
    """Suspended (and throttled) jobs over time from decisions.jsonl, first rep of each workload,
    for every variant that wrote a decision log."""
    r = by_run
    wls = sorted(r["workload"].unique())
    col = colors(variants)
    logged = [v for v in variants if any(str(x) in decisions for x in r.loc[r["variant"] == v, "run_id"])]
    n = max(1, len(wls))
    fig, axes = plt.subplots(n, 1, figsize=(9.0, 2.6 * n), dpi=110, squeeze=False)
    for ax, w in zip(axes[:, 0], wls or [None]):
        drawn = False
        for v in logged:
            sub = r[(r["workload"] == w) & (r["variant"] == v)].sort_values("rep")
            for rid in sub["run_id"]:
                dec = decisions.get(str(rid))
                if dec is None:
                    continue
                y = dec["suspended"].fillna(0) + dec["throttled"].fillna(0) if "throttled" in dec else dec["suspended"]
                ax.step(dec["t_s"], y, where="post", color=col[v], label=v)
                drawn = True
                break
        legend_or_note(ax, drawn, "no decision log (sched/state/decisions.jsonl) of a scheduler daemon", fontsize=7)
        ax.set_ylim(bottom=0, top=max(1.0, ax.get_ylim()[1]))
        ax.yaxis.get_major_locator().set_params(integer=True)
        ax.set_ylabel("jobs suspended\nor throttled")
        ax.set_title(f"workload {workload_name(w)}" if w else "no workload", fontsize=9)
        ax.grid(alpha=0.3)
    axes[-1, 0].set_xlabel("time since the run start (s)")
    fig.tight_layout()
    save_png(fig, path)

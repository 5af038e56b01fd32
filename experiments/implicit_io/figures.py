"""The implicit_io section's figure (paper 000 Fig. 8): the share of sampling intervals with I/O
contention against memory utilization, every run and every level."""

from __future__ import annotations

import os

import pandas as pd

from analysis.common import fmt_num
from analysis.figures import no_data, plt, save_png


def plot_fig8(levels: pd.DataFrame, runs: pd.DataFrame, criterion: str, onset_pct: float, path: str | os.PathLike):
    """Contention share (% of intervals) against memory utilization (%); failed runs hollow."""
    fig, ax = plt.subplots(figsize=(8.0, 5.0), dpi=110)
    pts = runs[runs["mem_util_pct"].notna() & runs["contention_share"].notna()]
    for failed, style in (
        (False, {"color": "grey", "label": "one run"}),
        (True, {"facecolors": "none", "edgecolors": "tab:red", "label": "one run, failed"}),
    ):
        p = pts[pts["failed"] == failed]
        if len(p):
            ax.scatter(p["mem_util_pct"], 100 * p["contention_share"], s=16, alpha=0.7, **style)
    lv = levels[levels["mem_util_pct"].notna() & levels["contention_share"].notna()].sort_values("mem_util_pct")
    if len(lv):
        ax.plot(
            lv["mem_util_pct"],
            100 * lv["contention_share"],
            marker="o",
            ms=7,
            color="tab:red",
            lw=1.2,
            label="level (reps pooled)",
        )
        for x, y, name in zip(lv["mem_util_pct"], 100 * lv["contention_share"], lv["level"]):
            ax.annotate(name, (x, y), textcoords="offset points", xytext=(5, 6), fontsize=8)
    else:
        no_data(ax, "no run with both a memory utilization and a contention share")
    ax.axvline(onset_pct, color="grey", ls="--", lw=1, label=f"{fmt_num(onset_pct)} % utilization (the paper's onset)")
    bases = sorted(set(runs["memory_basis"]))
    basis = bases[0] if len(bases) == 1 else "mixed: " + ", ".join(bases)
    ax.set_xlabel(f"memory utilization, % (mean over the run; basis: {basis})", fontsize=9)
    ax.set_ylabel("intervals with I/O contention (% of the run's intervals)")
    ax.set_title(f"Memory utilization against I/O contention; contention: {criterion}", fontsize=10)
    ax.set_xlim(0, max(100.0, float(pts["mem_util_pct"].max()) + 5 if len(pts) else 100.0))
    ax.set_ylim(-3, 103)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save_png(fig, path)

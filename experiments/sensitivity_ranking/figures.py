"""Fig. 14 of paper 000: average runtime degradation against k, one curve per demand group."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from analysis.common import fmt_num
from analysis.figures import ci_errorbar, plt, save_png
from experiments.sensitivity_ranking.metrics import CONTROL_LABEL, control_group

FIG_NAME = "fig14_degradation.png"


def plot_fig14(table: pd.DataFrame, path: str | os.PathLike, tol_pct: float | None = None) -> None:
    """Fig. 14 style: degradation % against k, one curve per group, 95% CI error bars; PNG.
    A compute-only control is a dashed black curve labelled CONTROL_LABEL."""
    control = control_group(table)
    known = table[table["demand_per_cmp_mb_s"].notna()]
    order = known.groupby("group")["demand_per_cmp_mb_s"].first().sort_values(kind="stable")
    fig, ax = plt.subplots(figsize=(8.5, 5.0), dpi=110)
    n_colored = len(order) - int(control in order.index)
    colors = iter(plt.cm.viridis(np.linspace(0.0, 0.9, max(n_colored, 1))))
    # a small sideways offset per group keeps overlapping error bars apart
    dodge = np.linspace(-0.12, 0.12, len(order)) if len(order) > 1 else np.zeros(1)
    for dx, (group, demand) in zip(dodge, order.items()):
        g = known[known["group"] == group].sort_values("k")
        g = g[g["degradation_pct"].notna()]
        if group == control:
            style = {"color": "black", "ls": "--", "zorder": 3, "label": CONTROL_LABEL}
        else:
            style = {"color": next(colors), "label": f"{fmt_num(demand)}"}
        ci_errorbar(ax, g["k"] + dx, g["degradation_pct"], g["ci95_low_pct"], g["ci95_high_pct"], **style)
    if tol_pct is not None:
        ax.axhline(tol_pct, color="grey", ls="--", lw=1, label=f"tolerance {fmt_num(tol_pct)} %")
    ax.axhline(0, color="black", lw=0.6)
    ks = sorted(table["k"].unique())
    ax.set_xticks(ks)
    ax.set_xlabel("k, number of loaded CMPs")
    ax.set_ylabel("average runtime degradation, T_k-c / T_1-c - 1 (%)")
    ax.set_title(f"Average runtime degradation in k-CMP configuration, k = {ks[0]}..{ks[-1]}")
    ax.grid(alpha=0.3)
    ax.legend(
        title="demand (MB/s per CMP)",
        loc="upper left",
        bbox_to_anchor=(1.01, 1.0),
        fontsize=8,
        title_fontsize=8,
    )
    fig.tight_layout()
    save_png(fig, path)

"""Fig. 1 of paper 000: normalized runtime against the number of loaded CMPs."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from analysis.common import fmt_num
from analysis.figures import ci_errorbar, log2_k_axis, no_data, plt, save_png

FIG_NAME = "fig1_normalized_runtime.png"


def plot_fig1(table: pd.DataFrame, path: str | os.PathLike, tol_pct: float | None = None) -> None:
    """Normalized runtime against k (log2 axis), one curve per workload, 95% CI bars; PNG."""
    fig, ax = plt.subplots(figsize=(8.5, 5.0), dpi=110)
    names = table[["workload_id", "workload"]].drop_duplicates().to_records(index=False)
    colors = plt.cm.tab10(np.arange(max(len(names), 1)) % 10)
    dodge = np.linspace(-0.04, 0.04, len(names)) if len(names) > 1 else np.zeros(1)
    drawn = 0
    for color, dx, (wid, workload) in zip(colors, dodge, names):
        g = table[(table["workload"] == workload) & table["normalized_runtime"].notna()].sort_values("k")
        if g.empty:
            continue
        drawn += 1
        ci_errorbar(
            ax,
            g["k"].to_numpy() * 2.0**dx,
            g["normalized_runtime"],
            g["ci95_low"],
            g["ci95_high"],
            color=color,
            label=f"#{wid} {workload}" if pd.notna(wid) else workload,
        )
    if not drawn:
        no_data(ax, "no normalized runtime: no valid k = 1 job")
    ax.axhline(1.0, color="black", lw=0.6)
    if tol_pct is not None:
        ax.axhline(1 + tol_pct / 100, color="grey", ls="--", lw=1, label=f"1 + tolerance ({fmt_num(tol_pct)} %)")
    ks = sorted(int(k) for k in table["k"].unique())
    log2_k_axis(ax, ks)
    ax.set_xlabel("k, number of loaded CMPs (log2 scale)")
    ax.set_ylabel("normalized runtime, T_k-c / T_1-c")
    ax.set_title(f"Normalized runtime while stacking CMPs, k = {', '.join(map(str, ks))}")
    ax.grid(alpha=0.3)
    ax.legend(title="workload (Table 2)", loc="upper left", fontsize=8, title_fontsize=8)
    fig.tight_layout()
    save_png(fig, path)

"""The llc_miss section's figure (paper 000 Fig. 2): the CC cost of each nops group against its LLC
miss rate (or, where perf cannot count LLC misses, the kernel's own access rate), one curve per k."""

from __future__ import annotations

import os

import numpy as np
import pandas as pd

from analysis.figures import ci_errorbar, no_data, plt, save_png
from experiments.llc_miss.metrics import ACCESS, MISS


def axis_of(points: pd.DataFrame) -> str:
    """The miss rate when perf counted it for every group, else the access rate."""
    k1 = points[points["k"] == 1]
    return MISS if len(k1) and k1[MISS].notna().all() else ACCESS


def axis_label(axis: str) -> tuple[str, str]:
    if axis == MISS:
        return (
            "LLC misses per cycle per CMP at k = 1, (load + store misses) / (cycles / busy CPUs)",
            "CC cost against the LLC miss rate per CMP",
        )
    return (
        "kernel access rate at k = 1, accesses/s per CMP (perf could not count LLC misses)",
        "CC cost against the LLC-miss kernel's access rate per CMP\n(LLC misses not counted on this machine)",
    )


def plot_fig2(points: pd.DataFrame, path: str | os.PathLike) -> None:
    """CC cost % (mean over reps, 95 % t-interval) against the x axis, one curve per k > 1; PNG."""
    axis = axis_of(points)
    xlabel, title = axis_label(axis)
    fig, ax = plt.subplots(figsize=(8.5, 5.0), dpi=110)
    ks = sorted(k for k in points["k"].unique() if k > 1)
    colors = plt.cm.viridis(np.linspace(0.0, 0.85, max(len(ks), 1)))
    xs = []
    for color, k in zip(colors, ks):
        g = points[(points["k"] == k) & points["cc_cost_pct"].notna() & points[axis].notna()].sort_values(axis)
        if g.empty:
            continue
        y = g["cc_cost_pct"].to_numpy(float)
        ci_errorbar(ax, g[axis], y, g["ci95_low_pct"], g["ci95_high_pct"], color=color, label=f"k = {k}")
        for x, v, nops in zip(g[axis], y, g["nops"]):
            ax.annotate(f"nops {nops}", (x, v), textcoords="offset points", xytext=(4, 4), fontsize=7)
        xs.extend(g[axis].tolist())
    if not xs:
        no_data(ax, "no CC cost with a known x value")
    elif min(xs) > 0 and max(xs) / min(xs) > 20:
        ax.set_xscale("log")
    ax.axhline(0, color="black", lw=0.6)
    ax.set_xlabel(xlabel, fontsize=9)
    ax.set_ylabel("CC cost, 100 x (T_k / T_1 - 1) (%)")
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    if xs:
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save_png(fig, path)

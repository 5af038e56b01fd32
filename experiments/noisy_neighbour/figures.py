"""The figures of paper 003's experiment (matplotlib through analysis.figures)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis.figures import no_data, plt, save_png

PERF_FIG = "normalised_performance.png"
PREMISE_FIG = "premise_util_avg.png"
TASK_ORDER = ("cpu", "store", "psync")


def plot_points(table: pd.DataFrame, out: Path) -> None:
    """Overall performance of every measured placement, 1 = as fast as alone."""
    m = table[(table["not_measurable"] == "") & (table["n_reps"] > 0)]
    fig, ax = plt.subplots(figsize=(7, 3.5))
    if m.empty:
        no_data(ax, "no measured placement")
    else:
        labels = [f"{r['domain']}/{r['variant']}\n{r['workload']}" for _, r in m.iterrows()]
        x = np.arange(len(m))
        lo = [r["overall"] - r["ci95_low"] if math.isfinite(r["ci95_low"]) else 0 for _, r in m.iterrows()]
        hi = [r["ci95_high"] - r["overall"] if math.isfinite(r["ci95_high"]) else 0 for _, r in m.iterrows()]
        ax.bar(x, m["overall"], yerr=np.array([lo, hi]), color="#4a7ab5", capsize=3)
        ax.axhline(1.0, color="grey", lw=0.8, ls="--")
        ax.set_xticks(x, labels, fontsize=7)
        ax.set_ylabel("overall performance (1 = alone)")
    ax.set_title("Pairs under each measured placement")
    fig.tight_layout()
    save_png(fig, out)


def plot_premise(rows: pd.DataFrame, out: Path) -> None:
    """PELT's util_avg of each task alone, one point per repetition."""
    alone = rows[(rows["layout"] == "alone")].dropna(subset=["util_avg"])
    fig, ax = plt.subplots(figsize=(5, 3.2))
    if alone.empty:
        no_data(ax, "no premise measured alone")
    else:
        tasks = [t for t in TASK_ORDER if t in set(alone["task"])]
        for i, t in enumerate(tasks):
            v = alone[alone["task"] == t]["util_avg"]
            ax.scatter(np.full(len(v), i), v, color=f"C{i}", s=18)
            ax.hlines(v.mean(), i - 0.25, i + 0.25, color=f"C{i}")
        medium = ", ".join(sorted(set(alone["store_medium"])))
        ax.set_xticks(range(len(tasks)), [f"{t}\n(on {medium})" if t == "store" else t for t in tasks], fontsize=8)
        ax.set_ylim(0, 1100)
        ax.set_ylabel("util_avg (0-1024)")
    ax.set_title("How PELT sees each task alone")
    fig.tight_layout()
    save_png(fig, out)

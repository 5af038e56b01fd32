"""The figures of paper 002's experiment (matplotlib through analysis.figures)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd

from analysis.figures import no_data, plt, save_png

GAIN_FIG = "throughput.png"
HIST_FIG = "aggregation.png"


def plot_gains(pts: pd.DataFrame, out: Path, baseline: str) -> None:
    """Each policy's throughput gain over the baseline per point, with the t-interval of the
    per-rep log ratios (the bar is the ratio of the means: it may lie outside it)."""
    fig, ax = plt.subplots(figsize=(8, 3.5))
    sub = pts.dropna(subset=["speedup_pct"]) if len(pts) and "speedup_pct" in pts else pd.DataFrame()
    if sub.empty:
        no_data(ax, f"no policy measured beside {baseline}")
    else:
        labels = [
            f"{r.pattern[:3]} {r.op[0]} {r.request_size_bytes // 1024}K c{r.clients} a{r.apps}"
            for r in sub.itertuples()
        ]
        x = np.arange(len(sub))
        err = np.vstack([sub["speedup_pct"] - sub["speedup_ci_low"], sub["speedup_ci_high"] - sub["speedup_pct"]])
        colors = {p: f"C{i}" for i, p in enumerate(sorted(sub["policy"].unique()))}
        ax.bar(x, sub["speedup_pct"], yerr=np.clip(np.nan_to_num(err), 0, None), capsize=2,
               color=[colors[p] for p in sub["policy"]])  # fmt: skip
        ax.set_xticks(x, labels, rotation=60, ha="right", fontsize=7)
        for p, c in colors.items():
            ax.bar([], [], color=c, label=p)
        ax.legend(fontsize=7)
    ax.axhline(0, color="k", lw=0.5)
    ax.set_ylabel(f"throughput gain over {baseline} (%)")
    fig.tight_layout()
    save_png(fig, out)


def plot_hist(hist: pd.DataFrame, out: Path) -> None:
    """aioli's aggregation sizes performed against those its arrivals allowed."""
    fig, ax = plt.subplots(figsize=(6, 3))
    h = hist[hist["policy"] == "aioli"] if len(hist) else hist
    if h.empty:
        no_data(ax, "no translator counters of aioli runs")
    else:
        by = h.groupby("size")[["performed_pct", "possible_pct"]].mean()
        x = np.arange(len(by))
        ax.bar(x - 0.2, by["performed_pct"], 0.4, label="performed")
        ax.bar(x + 0.2, by["possible_pct"], 0.4, label="possible (arrivals)")
        ax.set_xticks(x, [str(s) for s in by.index])
        ax.legend()
    ax.set_xlabel("aggregation size (requests)")
    ax.set_ylabel("% of aggregations")
    fig.tight_layout()
    save_png(fig, out)

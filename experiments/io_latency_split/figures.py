"""Figs. 5-7 of paper 000: waiting and serving time per k, and their growth, for one workload."""

from __future__ import annotations

import math
import os

import pandas as pd

from analysis.common import fmt_num
from analysis.figures import log2_k_axis, no_data, plt, save_png

FIG_LATENCY = "fig5_6_wait_serve.png"
FIG_GROWTH = "fig7_growth.png"


def plot_latency(table: pd.DataFrame, workload: str, path: str | os.PathLike) -> None:
    """Fig. 5 and 6 style: waiting and serving time against k (log2 axis), one workload."""
    g = table[table["workload"] == workload].sort_values("k")
    ks = sorted(int(k) for k in table["k"].unique())
    fig, axes = plt.subplots(1, 2, figsize=(10.0, 4.4), dpi=110)
    for ax, column, title, color in (
        (axes[0], "wait_ms", "Waiting time (derived: await - svc)", "tab:red"),
        (axes[1], "svc_ms", "Serving time (derived: 10 x %util / IOPS)", "tab:blue"),
    ):
        known = g[g[column].notna()]
        if known.empty:
            no_data(ax, "no iostat interval with I/O")
        else:
            ax.plot(known["k"], known[column], marker="o", color=color, lw=1.6)
            for k, v in zip(known["k"], known[column]):
                ax.annotate(
                    f"{fmt_num(v)} ms",
                    (k, v),
                    textcoords="offset points",
                    xytext=(0, 6),
                    ha="center",
                    fontsize=8,
                )
        log2_k_axis(ax, ks)
        ax.set_xlabel("k, number of loaded CMPs (log2 scale)")
        ax.set_ylabel("ms per request (request-weighted mean)")
        ax.set_title(title, fontsize=10)
        top = known[column].max() if len(known) else math.nan
        ax.set_ylim(0, top * 1.15 if math.isfinite(top) and top > 0 else 1.0)
        ax.grid(alpha=0.3)
    fig.suptitle(f"I/O latency parts of workload {workload} in k-CMP configurations", fontsize=11)
    fig.tight_layout()
    save_png(fig, path)


def plot_growth(table: pd.DataFrame, workload: str, path: str | os.PathLike) -> None:
    """Fig. 7 style: growth factors of waiting and serving time against k."""
    g = table[table["workload"] == workload].sort_values("k")
    ks = sorted(int(k) for k in table["k"].unique())
    fig, ax = plt.subplots(figsize=(7.5, 4.6), dpi=110)
    drawn = []
    for column, label, color, style in (
        ("ratio_wait", "waiting time", "tab:red", "-"),
        ("ratio_svc", "serving time", "tab:blue", "-"),
        ("ratio_await", "await (waiting + serving)", "grey", "--"),
    ):
        known = g[g[column].notna()]
        if len(known):
            ax.plot(known["k"], known[column], marker="o", color=color, ls=style, label=label)
            drawn.extend(known[column].tolist())
    if not drawn:
        no_data(ax, "no growth factor: no I/O at k = 1 or at k > 1")
    elif max(drawn) / max(min(drawn), 1e-9) > 20:
        ax.set_yscale("log", base=2)
    ax.axhline(1.0, color="black", lw=0.6)
    log2_k_axis(ax, ks)
    ax.set_xlabel("k, number of loaded CMPs (log2 scale)")
    ax.set_ylabel("growth factor, value at k / value at k = 1")
    ax.set_title(f"Growth of waiting and serving time, workload {workload}", fontsize=11)
    ax.grid(alpha=0.3)
    if drawn:
        ax.legend(fontsize=8, loc="upper left")
    fig.tight_layout()
    save_png(fig, path)

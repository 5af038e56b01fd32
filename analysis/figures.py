"""Figures, set up in one place: matplotlib without a display (Agg), stable PNG bytes, and the axes
and notes the experiments' figures share."""

from __future__ import annotations

import os

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from matplotlib.ticker import FixedLocator, NullLocator  # noqa: E402

from corun.util import atomic_path  # noqa: E402

__all__ = ["plt", "save_png", "no_data", "log2_k_axis", "ci_errorbar"]


def log2_k_axis(ax, ks: list[int]) -> None:
    """x = k on a log2 axis with one tick per measured k (paper 000 Figs. 1, 5-7)."""
    ks = sorted({int(k) for k in ks})
    ax.set_xscale("log", base=2)
    ax.xaxis.set_major_locator(FixedLocator(ks))
    ax.xaxis.set_minor_locator(NullLocator())
    ax.set_xticklabels([str(k) for k in ks])
    if len(ks) == 1:
        ax.set_xlim(ks[0] / 1.5, ks[0] * 1.5)
    else:
        ax.set_xlim(ks[0] / 1.2, ks[-1] * 1.2)


def ci_errorbar(ax, x, y, low, high, **style) -> None:
    """Points y at x with error bars from low to high (a confidence interval; a NaN bound draws no
    bar, a bound on the wrong side of y a zero one), drawn alike in every figure that has them."""
    y = np.asarray(y, float)
    below = np.clip(y - np.asarray(low, float), 0, None)
    above = np.clip(np.asarray(high, float) - y, 0, None)
    ax.errorbar(x, y, yerr=np.nan_to_num(np.vstack([below, above])), marker="o", ms=4, capsize=3, lw=1.5, **style)


def no_data(ax, text: str) -> None:
    """A grey note in the middle of an empty plot."""
    ax.text(0.5, 0.5, text, ha="center", va="center", transform=ax.transAxes, color="grey")


def save_png(fig, path: str | os.PathLike) -> None:
    """Write a figure atomically, without a Software tag (stable bytes for one matplotlib)."""
    with atomic_path(path) as tmp:
        fig.savefig(tmp, format="png", metadata={"Software": None})
    plt.close(fig)

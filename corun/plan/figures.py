"""Which of the paper's figures each run serves: an experiment section's `figures`.

A profile that measures a paper's figures (profiles/paper.yaml) names them, each with the slice of
the experiment's matrix it shows:

    figures:
      "Fig. 7": {workload: [wl6], load: [heavy, light], mpl: [1, 5]}
      "Fig. 9": {workload: [wl1, wl2, wl3, wl4, wl5], mpl: [5], scheme: [local, dcs, ...]}

A slice maps an axis of the experiment's points (the keys its experiment.py gives a run: workload,
scheme, servers ...) to the values the figure shows; an axis it does not name is every value of
the matrix. A figure may take a list of slices (the runs of its bars and those its metric needs
besides, such as dynamic_io's runs alone for the slowdown). With `figures` the runs are the
matrix's points that lie in some slice (the union of the figures, not the crossing of the axes),
and each run records the figures it serves (the campaign plan's `figures` per run). Without it
(null, the other profiles) every point of the matrix runs and names no figure. The experiment's
config schema types each slice's axes; its check() calls `check`.
"""

from __future__ import annotations

from corun.errors import ConfigError


def served(point: dict, figures: dict | None) -> list[str]:
    """The figures whose slice holds POINT, in the order the profile names them."""
    return [f for f, cut in (figures or {}).items() if served_by([point], cut)]


def select(points: list[dict], figures: dict | None) -> list[dict]:
    """The points of the matrix some figure shows (every point without figures)."""
    if not figures:
        return points
    return [p for p in points if served(p, figures)]


def check(points: list[dict], figures: dict | None, source: str, key: str) -> None:
    """Some figure shows some point of the matrix: one line otherwise. A figure alone may show
    none (a configuration over the profile that cuts its axes, as Fig. 12's own matrix of sais
    does, serves the figures its points lie in)."""
    if figures and not select(points, figures):
        raise ConfigError(
            source, f"{key}.figures", ", ".join(figures), "figures whose slices hold some run of the matrix"
        )


def served_by(points: list[dict], cut: dict | list[dict]) -> list[dict]:
    """The points a figure's slice holds (a list of slices: the points any of them holds)."""
    cuts = cut if isinstance(cut, list) else [cut]
    return [p for p in points if any(all(p.get(k) in vs for k, vs in c.items()) for c in cuts)]

"""A rough duration estimate of a configuration's runs, printed with `snakemake -n`.

Per-job times are coarse models calibrated on a 2-core VM (x264 with PARSEC's options
at about 4 Mpixel/s, graph jobs at about 0.6 us per edge plus BFS, the LLC-miss kernel
at about 3 ns per access plus 0.25 ns per nop; for dynamic_io also the paper_similar and
kmeans kernels and the file-reading stand-ins at their configured time alone) plus a fixed
per-run cost of the instrument (corun.plan.base.RUN_OVERHEAD_S). Each experiment's
`estimate` gives its runs and seconds. They assume no contention: runs that contend take longer,
which is what the experiments measure, so the estimate is a lower bound.
"""

from __future__ import annotations

from experiments import looks, registry


def estimate(cfg: dict) -> list[dict]:
    """{"experiment", "runs", "seconds", "k_dropped"} of every selected experiment that makes runs."""
    exps = registry()
    out = []
    for name in cfg["experiments"]:
        row = exps[name].estimate(cfg)
        if row is not None:
            plan = looks.reps_per_look(cfg, name)
            if len(plan) > 1:  # the sequential design's cap: what the last look would reach
                cap = exps[name].estimate(looks.at_reps(cfg, name, plan[-1]))
                row = {**row, "looks": len(plan), "cap_runs": cap["runs"], "cap_seconds": cap["seconds"]}
            out.append({"experiment": name, **row})
    return out


def describe(cfg: dict) -> str:
    rows = estimate(cfg)
    total = sum(r["seconds"] for r in rows)
    parts = ", ".join(
        f"{r['experiment']} {r['runs']} runs ~{_fmt(r['seconds'])}"
        + (
            f" (up to {r['cap_runs']} runs ~{_fmt(r['cap_seconds'])} in {r['looks']} looks while a claim is undecided)"
            if r.get("looks")
            else ""
        )
        + (
            f" (k = {', '.join(map(str, r['k_dropped']))} dropped: more CMPs than this machine has;"
            " plan for another with --config plan_for=NxC)"
            if r["k_dropped"]
            else ""
        )
        for r in rows
    )
    return (
        f"corun plan: {sum(r['runs'] for r in rows)} runs, at least {_fmt(total)} of measuring "
        f"without contention ({parts})"
    )


def _fmt(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"

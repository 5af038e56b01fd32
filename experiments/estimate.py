"""A rough duration estimate of a configuration's runs, printed with `snakemake -n`.

Per-job times are coarse models calibrated on a 2-core VM (x264 with PARSEC's options
at about 4 Mpixel/s, graph jobs at about 0.6 us per edge plus BFS, the LLC-miss kernel
at about 3 ns per access plus 0.25 ns per nop; for dynamic_io also the paper_similar and
kmeans kernels and the file-reading stand-ins at their configured time alone) plus a fixed
per-run cost of the instrument (corun.plan.base.RUN_OVERHEAD_S). Each experiment's
`estimate` gives its runs and seconds. They assume no contention: runs that contend take longer,
which is what the experiments measure, so the estimate is a lower bound.

Spread over nodes (`nodes`, else the hosts of `hosts`), the wall clock is a list schedule
(`spread`): each multi-node experiment (mpl_sweep, sais, aioli: its runs span hosts) is one job
holding the hosts its largest run needs (at most the nodes there are) for its whole time, the
widest first (the longest among equals), each on the nodes that free up first; then every run of
the single-node experiments (an experiment's time split evenly over its runs), longest first, on
the node that frees up first. The campaign ends when the last node does. A node left idle until a
multi-node experiment can start is not backfilled, so the schedule can be beaten by a little;
its run times are the no-contention ones above, so it stays short of what a campaign takes.
"""

from __future__ import annotations

import heapq

from corun.testbed import inventory
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
    nodes = node_count(cfg)
    wall, short = spread(rows, {r["experiment"]: hosts_held(cfg, r["experiment"]) for r in rows}, nodes)
    over = "".join(f"; {name} needs {need} hosts, held {nodes}" for name, need in short.items())
    return (
        f"corun plan: {sum(r['runs'] for r in rows)} runs, at least {_fmt(total)} of measuring "
        f"without contention on one machine, at least {_fmt(wall)} on {nodes} node{'s' * (nodes > 1)}"
        f"{over} ({parts})"
    )


def node_count(cfg: dict) -> int:
    """`nodes`, else the hosts `hosts` names (an inventory's group), else the most hosts an
    experiment's own cluster inventory holds (mpl_sweep, sais and aioli on a testbed), else 1."""
    if cfg.get("nodes"):
        return cfg["nodes"]
    if cfg.get("hosts"):
        return len(inventory.resolve(cfg["hosts"], "config: hosts"))
    exps = registry()
    return max([1, *(exps[name].inventory_hosts(cfg) for name in cfg.get("experiments", []) if name in exps)])


def hosts_held(cfg: dict, name: str) -> int:
    """The hosts the largest run of experiment NAME spans (its Experiment.hosts_held)."""
    return registry()[name].hosts_held(cfg)


def spread(rows: list[dict], held: dict[str, int], nodes: int) -> tuple[float, dict[str, int]]:
    """The wall clock of `rows` on `nodes` nodes by the module's list schedule, and the
    experiments that need more hosts than there are (name -> hosts)."""
    free = [0.0] * nodes
    short = {}
    multi = sorted(
        (r for r in rows if held[r["experiment"]] > 1),
        key=lambda r: (-min(held[r["experiment"]], nodes), -r["seconds"]),
    )
    for r in multi:
        need = held[r["experiment"]]
        if need > nodes:
            short[r["experiment"]] = need
        free.sort()
        width = min(need, nodes)
        end = free[width - 1] + r["seconds"]
        free[:width] = [end] * width
    runs = sorted(
        (r["seconds"] / r["runs"] for r in rows if held[r["experiment"]] <= 1 and r["runs"] for _ in range(r["runs"])),
        reverse=True,
    )
    heapq.heapify(free)
    for seconds in runs:
        heapq.heapreplace(free, free[0] + seconds)
    return max(free), short


def _fmt(s: float) -> str:
    if s < 120:
        return f"{s:.0f} s"
    if s < 7200:
        return f"{s / 60:.0f} min"
    return f"{s / 3600:.1f} h"


def progress_plan(cfg: dict, plan: dict | None = None) -> dict:
    """What the progress display needs (workflows/logger): the estimate per experiment, the rules
    of experiments.smk that measure runs (`run` and `run_across_hosts` one run a job, `run_groups`
    a look's groups: its runs per experiment and look) and, from the campaign's plan where given,
    each experiment's measuring jobs as [output, runs, rule, look]."""
    rows = [
        {"name": r["experiment"], "runs": r["runs"], "seconds": r["seconds"], "cap_runs": r.get("cap_runs", r["runs"])}
        for r in estimate(cfg)
    ]
    per_look: dict[str, int] = {}
    outputs: dict[str, list] = {}
    rule = {"one": "run", "the experiment's": "run_across_hosts"}
    for exp, p in (plan or {}).get("runs", {}).items():
        outputs[exp] = [
            [r["dir"], 1, rule[r["needs"]["hosts"]], r["look"]] for r in p.get("runs", []) if r.get("group") is None
        ]
        for g in p.get("groups", []):
            key = f"{exp}/{g['look']}"
            per_look[key] = per_look.get(key, 0) + len(g["runs"])
        # each look lists the group folders up to it: the one it adds holds its own groups
        before: set[str] = set()
        for look in p.get("looks", []):
            n = per_look.get(f"{exp}/{look['look']}", 0)
            outputs[exp] += [[f, n, "run_groups", look["look"]] for f in look["groups"] if f not in before]
            before.update(look["groups"])
    steps = {"run": {}, "run_across_hosts": {}, "run_groups": {"runs": per_look}}
    return {"experiments": rows, "steps": steps, "outputs": outputs}

"""Adaptive repetition of a campaign (corun.results.campaign): from the runs so far, is every
variant's 95% CI half-width (relative to its centre) under the target, or the cap reached?

`decide(values_by_variant, target, max_reps)` on values; `decide_from_runs(sources, by, metric,
...)` on finished runs (folders or an index); `decider(metric, by)` is what
`corun.results.campaign.run_campaign(..., decide=...)` calls between blocks.
"""

from __future__ import annotations

from pathlib import Path

from analysis import compare_runs, runindex
from analysis import metrics as metrics_mod
from analysis.stats import repetition_decision
from corun.errors import ConfigError


def decide(
    values_by_variant: dict[str, list[float]],
    target: float,
    max_reps: int,
    min_reps: int = 3,
    aggregation: str = "arithmetic",
) -> dict:
    """{'decision': 'more' | 'stop', 'variants': {name: analysis.stats.repetition_decision}}:
    stop when every variant is under the target or at the cap."""
    if not 0 < target < 1:
        raise ConfigError("campaign", "target", target, "a relative half-width between 0 and 1, e.g. 0.02")
    if max_reps < min_reps:
        raise ConfigError("campaign", "max_reps", max_reps, f"an integer >= min_reps ({min_reps})")
    per = {
        v: repetition_decision(vals, target, max_reps, min_reps, aggregation) for v, vals in values_by_variant.items()
    }
    return {
        "decision": "stop" if per and all(d["decision"] == "stop" for d in per.values()) else "more",
        "variants": per,
    }


def decide_from_runs(
    sources: list[Path], by: str, metric: str, target: float, max_reps: int, min_reps: int = 3, where: str | None = None
) -> dict:
    """`decide` on finished runs (folders or an index), grouped by `by`; warm-up, unverified
    and failed runs do not count."""
    m = metrics_mod.get(metric)
    records = runindex.load_runs(sources)
    if where:
        records = runindex.select(records, runindex.parse_selector(where, what="--where"), what="--where")
    values: dict[str, list[float]] = {}
    for r in records:
        if not r.has(by):
            continue
        key = runindex.as_text(r.get(by))
        values.setdefault(key, [])
        if compare_runs.exclusion(r) is None and r.metrics.get(metric) is not None:
            values[key].append(float(r.metrics[metric]))
    if not values:
        raise ConfigError("command line", "--by", by, "a key recorded by the runs (variant, labels.k ...)")
    out = decide(values, target, max_reps, min_reps, m.aggregation)
    out.update(metric=metric, by=by)
    return out


def decider(metric: str):
    """decide(runs_dir, by, target, max_reps, min_reps) for run_campaign; checks the metric name now."""
    metrics_mod.get(metric)

    def decide_runs(runs_dir: Path, by: str, target: float, max_reps: int, min_reps: int) -> dict:
        return decide_from_runs([runs_dir], by, metric, target, max_reps, min_reps=min_reps)

    return decide_runs

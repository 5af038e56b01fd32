"""The metric registry: per-run performance metrics, each with its unit, its direction (is
higher or lower better) and how runs are aggregated (analysis.stats.aggregate).

| metric | unit | better | aggregation | per run |
| --- | --- | --- | --- | --- |
| runtime_s | s | lower | arithmetic | mean runtime of the run's jobs |
| makespan_s | s | lower | arithmetic | last job end - first job start |
| cpu_s | s | lower | arithmetic | mean user + system CPU time of the run's jobs |
| throughput_jobs_per_s | jobs/s | higher | harmonic | jobs / makespan |
| io_read_mb_s | MB/s | higher | harmonic | bytes the jobs read from the device / makespan (missing when none) |
| unfairness_ratio | ratio | lower | geometric | slowest job runtime / fastest job runtime (missing with one job) |

Times are averaged arithmetically, rates harmonically (a rate is work / time, and the mean
time per unit of work is what the runs share), ratios geometrically (a ratio and its inverse
average to inverses). A metric that cannot be computed for a run is None there (missing, with
the run listed), never zero.

Validity is not a metric: a run whose jobs failed, whose variant was not verified in effect or
that is a warm-up run is excluded from comparisons and listed (analysis.runindex.exclusion).

Other modules register their own metrics with `register(Metric(...))`.
"""

from __future__ import annotations

import hashlib
import json
import math
from collections.abc import Callable
from dataclasses import dataclass, field

from analysis.stats import AGGREGATIONS
from corun.errors import ConfigError

DIRECTIONS = ("lower", "higher")


@dataclass(frozen=True)
class Metric:
    name: str
    unit: str
    better: str  # "lower" or "higher"
    aggregation: str  # "arithmetic", "harmonic" or "geometric"
    description: str
    compute: Callable[[list[dict], dict], float | None] = field(compare=False, repr=False)

    def __post_init__(self) -> None:
        if self.better not in DIRECTIONS:
            raise ValueError(f"metric {self.name}: better: {self.better!r} (expected lower or higher)")
        if self.aggregation not in AGGREGATIONS:
            raise ValueError(
                f"metric {self.name}: aggregation: {self.aggregation!r} (expected one of {', '.join(AGGREGATIONS)})"
            )

    def describe(self) -> dict:
        return {
            "name": self.name,
            "unit": self.unit,
            "better": self.better,
            "aggregation": self.aggregation,
            "description": self.description,
        }


METRICS: dict[str, Metric] = {}


def register(metric: Metric) -> Metric:
    METRICS[metric.name] = metric
    return metric


def get(name: str, source: str = "command line") -> Metric:
    if name not in METRICS:
        raise ConfigError(source, "metric", name, f"one of {', '.join(sorted(METRICS))}")
    return METRICS[name]


def select(names: list[str] | None, source: str = "command line") -> list[Metric]:
    """The named metrics (all registered ones when `names` is empty)."""
    return [get(n, source) for n in names] if names else list(METRICS.values())


def registry_hash() -> str:
    """Changes when a metric is added, removed or redefined (the run index recomputes then)."""
    text = json.dumps([m.describe() for m in sorted(METRICS.values(), key=lambda m: m.name)])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


# ----------------------------------------------------------------------------- per-run values


def _num(value: object) -> float | None:
    if value is None or value == "":
        return None
    try:
        x = float(value)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def _column(jobs: list[dict], name: str) -> list[float]:
    return [x for x in (_num(j.get(name)) for j in jobs) if x is not None]


def _mean(values: list[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _makespan(jobs: list[dict]) -> float | None:
    starts, ends = _column(jobs, "start_s"), _column(jobs, "end_s")
    if not starts or not ends or max(ends) <= min(starts):
        return None
    return max(ends) - min(starts)


def _throughput(jobs: list[dict], meta: dict) -> float | None:
    span = _makespan(jobs)
    done = [j for j in jobs if _num(j.get("end_s")) is not None]
    return len(done) / span if span and done else None


def _read_mb_s(jobs: list[dict], meta: dict) -> float | None:
    span = _makespan(jobs)
    read = sum(_column(jobs, "io_read_bytes"))
    return read / 1e6 / span if span and read > 0 else None


def _unfairness(jobs: list[dict], meta: dict) -> float | None:
    times = [t for t in _column(jobs, "runtime_s") if t > 0]
    return max(times) / min(times) if len(times) >= 2 else None


register(
    Metric(
        "runtime_s",
        "s",
        "lower",
        "arithmetic",
        "mean runtime of the run's jobs",
        lambda jobs, meta: _mean(_column(jobs, "runtime_s")),
    )
)
register(
    Metric(
        "makespan_s", "s", "lower", "arithmetic", "last job end - first job start", lambda jobs, meta: _makespan(jobs)
    )
)
register(
    Metric(
        "cpu_s",
        "s",
        "lower",
        "arithmetic",
        "mean user + system CPU time of the run's jobs",
        lambda jobs, meta: _mean(_column(jobs, "cpu_s")),
    )
)
register(Metric("throughput_jobs_per_s", "jobs/s", "higher", "harmonic", "jobs / makespan", _throughput))
register(
    Metric("io_read_mb_s", "MB/s", "higher", "harmonic", "bytes the jobs read from the device / makespan", _read_mb_s)
)
register(
    Metric("unfairness_ratio", "ratio", "lower", "geometric", "slowest job runtime / fastest job runtime", _unfairness)
)


def run_metrics(jobs: list[dict], meta: dict) -> dict[str, float | None]:
    """Every registered metric for one run (jobs.csv rows as dicts, its metadata.json)."""
    out = {}
    for m in METRICS.values():
        value = m.compute(jobs, meta)
        out[m.name] = value if value is None or math.isfinite(value) else None
    return out

"""A run shorter than its metric needs is failed, with that reason, never pooled.

A metric read from a monitor's intervals (the memory, PSI, iostat, pidstat tables) has no value,
or one from a sample too small to mean anything, when the run's measuring phase (its jobs'
`duration_s`) lasts fewer of the monitors' intervals than the metric needs. The analysis then
marks the run failed with the reason (`short_run_reason`), and the verdict engine reports every
claim that reads it as failed, naming the run; the plan sizes runs so that this does not happen
(corun.run.run_length), and the runner measures a short run again longer.
"""

from __future__ import annotations

import math

DEFAULT_INTERVAL_S = 1.0  # the run spec schema's monitors.interval_s default


def _number(v) -> float | None:
    try:
        x = float(v)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def short_run_reason(run: dict, need_intervals: int, what: str = "monitor") -> str:
    """ "" when the run (a runs.csv row: duration_s, monitor_interval_s) lasted at least
    `need_intervals` monitor intervals, else why not, in one phrase naming both lengths."""
    d = _number(run.get("duration_s"))
    interval = _number(run.get("monitor_interval_s")) or DEFAULT_INTERVAL_S
    if d is None:
        return ""  # no duration recorded: the metric's own check says what is missing
    need = need_intervals * interval
    if d >= need:
        return ""
    return (
        f"run shorter than the {need_intervals} {what} intervals its metric needs "
        f"({d:.2f} s measured, {need_intervals} x {interval:g} s = {need:g} s)"
    )

"""Monitors: record what the machine did while the runner's jobs ran.

    monitors = make_monitors(["iostat", "pidstat", "psi", "perf"], MonitorContext(raw_dir))
    for m in monitors: m.start()
    try: ...run jobs...
    finally:
        for m in reversed(monitors): m.stop()
    tables = {m.name: m.tidy(t0_epoch) for m in monitors}    # (Table, [missing records])

Every tidy table has ``time_epoch_s`` (end of the sampling interval) and ``t_s``
(``time_epoch_s - t0_epoch``). Parsing is plain Python (`Table.write_csv` writes the run's
``tidy/<monitor>.csv`` without pandas). The parsers also work on a run folder alone:
``parse_iostat(raw_dir, t0)``, ``parse_pidstat``, ``parse_psi``, ``parse_perf``,
``parse_memory``, ``parse_cpustat`` give pandas DataFrames (``Table.to_frame()``).
"""

from __future__ import annotations

import shutil

from corun.errors import ConfigError, MissingTool
from corun.monitors.base import Monitor, MonitorContext
from corun.monitors.cpustat import CpustatMonitor, parse_cpustat
from corun.monitors.iostat import DERIVED_COLUMNS as IOSTAT_DERIVED_COLUMNS
from corun.monitors.iostat import IostatMonitor, parse_iostat
from corun.monitors.memory import MemoryMonitor, parse_memory
from corun.monitors.perf import DERIVED_COLUMNS as PERF_DERIVED_COLUMNS
from corun.monitors.perf import PerfMonitor, derive_perf_rates, parse_perf
from corun.monitors.pidstat import PidstatMonitor, parse_pidstat
from corun.monitors.psi import PsiMonitor, parse_psi

MONITORS: dict[str, type[Monitor]] = {
    "iostat": IostatMonitor,
    "pidstat": PidstatMonitor,
    "psi": PsiMonitor,
    "perf": PerfMonitor,
    "memory": MemoryMonitor,
    "cpustat": CpustatMonitor,
}


def make_monitors(names: list[str], ctx: MonitorContext) -> list[Monitor]:
    """Monitors for `names`, in order; MissingTool if a program they need is not on PATH."""
    monitors = []
    for name in names:
        cls = MONITORS.get(name)
        if cls is None:
            raise ConfigError("monitors", "name", name, f"one of {', '.join(MONITORS)}")
        if cls.tool and shutil.which(cls.tool) is None:
            raise MissingTool(cls.tool, cls.role or cls.tool, cls.purpose)
        monitors.append(cls(ctx))
    return monitors


__all__ = [
    "IOSTAT_DERIVED_COLUMNS",
    "MONITORS",
    "PERF_DERIVED_COLUMNS",
    "Monitor",
    "MonitorContext",
    "derive_perf_rates",
    "make_monitors",
    "parse_cpustat",
    "parse_iostat",
    "parse_memory",
    "parse_perf",
    "parse_pidstat",
    "parse_psi",
]

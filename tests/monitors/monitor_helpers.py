"""Helpers for the monitor tests: a small disk-I/O load around a running monitor, and the check of
a parse that found nothing."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

from corun.monitors import MonitorContext

FIXTURES = Path(__file__).resolve().parent.parent / "fixtures" / "monitors"
LIVE_S = 2.5


def write_and_fsync(path: Path, seconds: float, size: int = 1 << 18) -> int:
    """Rewrite `path` and fsync it in a loop for `seconds`; returns the number of writes."""
    deadline = time.monotonic() + seconds
    n = 0
    block = os.urandom(size)
    while time.monotonic() < deadline:
        with open(path, "wb") as f:
            f.write(block)
            f.flush()
            os.fsync(f.fileno())
        n += 1
    return n


def run_live(monitor, workdir: Path, seconds: float = LIVE_S) -> tuple[float, float]:
    """Start `monitor`, load the disk for `seconds`, stop it twice; returns (t0, t_stop)."""
    t0 = time.time()
    monitor.start()
    stop = threading.Event()

    def load() -> None:
        while not stop.is_set():
            write_and_fsync(workdir / "load.bin", 0.2)

    worker = threading.Thread(target=load)
    worker.start()
    try:
        time.sleep(seconds)
    finally:
        stop.set()
        worker.join()
        monitor.stop()
    t_stop = time.time()
    monitor.stop()  # idempotent
    return t0, t_stop


def run_live_in(tmp_path: Path, monitor_class, interval_s: float = 1.0):
    """A MONITOR_CLASS writing into TMP_PATH/raw, run as run_live does; returns (the raw folder,
    the monitor, t0, t_stop)."""
    raw = tmp_path / "raw"
    raw.mkdir()
    mon = monitor_class(MonitorContext(raw, interval_s=interval_s))
    t0, t_stop = run_live(mon, tmp_path)
    return raw, mon, t0, t_stop


def assert_nothing_parsed(df, records, columns: list[str], metric: str, reason: str) -> None:
    """A parse that found nothing: an empty table with the monitor's COLUMNS, and a first record
    of METRIC missing whose reason holds REASON (the tool's own message)."""
    assert df.empty and list(df.columns) == columns
    assert records[0]["metric"] == metric
    assert reason in records[0]["reason"]

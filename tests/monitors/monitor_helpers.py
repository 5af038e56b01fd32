"""Helpers for the live monitor tests: a small disk-I/O load around a running monitor."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

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

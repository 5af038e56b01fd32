"""The first job waits for the monitors' start-up, not for a fixed time: `wait_started`."""

from __future__ import annotations

import sys
import time

from corun.monitors.base import MonitorContext, ProcessMonitor, wait_started

BUSY_THEN_ASLEEP = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < {busy}: pass\ntime.sleep(30)\n"


class Busy(ProcessMonitor):
    """A stand-in program that computes for `busy` seconds, then sleeps like a sampler."""

    name = "busy"

    def __init__(self, ctx, busy):
        super().__init__(ctx)
        self.busy = busy

    def command(self):
        return [sys.executable, "-c", BUSY_THEN_ASLEEP.format(busy=self.busy)]


def test_waits_until_the_program_is_asleep(tmp_path):
    m = Busy(MonitorContext(raw_dir=tmp_path), busy=0.3)
    m.start()
    try:
        assert not m.started()
        waited = wait_started([m], timeout_s=5.0)
        assert 0.25 <= waited < 5.0
        assert m.started()
    finally:
        m.stop()


def test_the_limit_caps_the_wait(tmp_path):
    m = Busy(MonitorContext(raw_dir=tmp_path), busy=10.0)
    m.start()
    try:
        t = time.monotonic()
        waited = wait_started([m], timeout_s=0.2)
        assert 0.2 <= waited < 1.0 and time.monotonic() - t < 1.0
        assert not m.started()
    finally:
        m.stop()


def test_an_ended_program_does_not_hold_the_run(tmp_path):
    class Ends(ProcessMonitor):
        name = "ends"

        def command(self):
            return ["/bin/false"]

    m = Ends(MonitorContext(raw_dir=tmp_path))
    m.start()
    try:
        assert wait_started([m], timeout_s=5.0) < 2.0
    finally:
        m.stop()

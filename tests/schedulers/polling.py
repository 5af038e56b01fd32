"""Waiting for a condition in the scheduler tests."""

import time


def wait_for(pred, timeout=10.0, step=0.02):
    """PRED()'s first true value within TIMEOUT seconds, polled every STEP seconds; else its last
    value (false)."""
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(step)
    return pred()

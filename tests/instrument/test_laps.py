"""corun.util.Laps: the wall time of consecutive steps, a step lapped twice adding up."""

import time

from corun.util import Laps


def test_laps_add_the_time_since_the_last_lap_or_restart():
    laps = Laps()
    time.sleep(0.05)
    laps.restart()  # what came before is no step's
    time.sleep(0.05)
    laps.lap("a")
    time.sleep(0.02)
    laps.lap("b")
    time.sleep(0.05)
    laps.lap("a")
    assert list(laps.steps) == ["a", "b"]
    assert 0.1 <= laps.steps["a"] < 0.2 and 0.02 <= laps.steps["b"] < 0.05

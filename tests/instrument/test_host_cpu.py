"""corun.machine.host's CPU accounting over a run: /proc/stat's aggregate line, two readings."""

import pytest

from corun.machine import host

STAT_0 = """cpu  1000 10 300 5000 40 5 15 30 7 0
cpu0 500 5 150 2500 20 2 7 15 0 0
intr 12345
"""
# 1,000 ticks later over both CPUs: user +300, nice +0, system +100, idle +450, iowait +50,
# irq +0, softirq +25, steal +75; guest (the 9th column, already in user) +20 is not counted again
STAT_1 = """cpu  1300 10 400 5450 90 5 40 105 27 0
cpu0 650 5 200 2725 45 2 20 52 10 0
"""


def test_cpu_ticks_reads_the_aggregate_line_only():
    t = host.cpu_ticks(STAT_0)
    assert t == {
        "user": 1000,
        "nice": 10,
        "system": 300,
        "idle": 5000,
        "iowait": 40,
        "irq": 5,
        "softirq": 15,
        "steal": 30,
    }
    assert host.cpu_ticks("intr 1\n") is None


def test_cpu_shares_by_hand():
    s = host.cpu_shares(host.cpu_ticks(STAT_0), host.cpu_ticks(STAT_1), 5.0)
    # total 1000 ticks: busy 300 + 100 + 25 = 425
    assert s == {"interval_s": 5.0, "busy_pct": 42.5, "iowait_pct": 5.0, "idle_pct": 45.0, "steal_pct": 7.5}


def test_cpu_shares_without_a_steal_column_says_why():
    old = "cpu  100 0 50 800 10 0 0\n"
    new = "cpu  150 0 60 880 10 0 0\n"
    s = host.cpu_shares(host.cpu_ticks(old), host.cpu_ticks(new), 1.0)
    assert s["steal_pct"] is None and "no steal column" in s["reason"]
    assert s["busy_pct"] == pytest.approx(100 * 60 / 140, abs=0.01)


@pytest.mark.parametrize(
    ("before", "after", "reason"),
    [(None, {"user": 1}, "no cpu line"), ({"user": 5, "idle": 5}, {"user": 5, "idle": 5}, "no clock ticks")],
)
def test_cpu_shares_unknown_is_none_with_a_reason(before, after, reason):
    s = host.cpu_shares(before, after, 0.5)
    assert s["busy_pct"] is None and s["steal_pct"] is None and reason in s["reason"]


def test_cpu_ticks_of_this_machine():
    t = host.cpu_ticks()
    assert t is not None and t["idle"] > 0

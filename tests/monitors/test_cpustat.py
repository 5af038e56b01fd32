"""cpustat monitor: the three /proc parsers, shares and rates from a hand-made sample pair, a live run."""

from __future__ import annotations

import json
import time

import pytest

from corun.monitors import MonitorContext, parse_cpustat
from corun.monitors.cpustat import COLUMNS, CpustatMonitor, parse_softirqs, parse_softnet, parse_stat

STAT = """cpu  10 0 10 80 0 0 0 0 0 0
cpu0 5 0 5 40 0 0 0 0 0 0
cpu1 5 0 5 40 0 0 0 0 0 0
intr 1
"""
SOFTIRQS = """                    CPU0       CPU1
          HI:          0          0
      NET_TX:          1          2
      NET_RX:        100        200
"""
ZEROS = " ".join(["00000000"] * 10)
SOFTNET = f"00000010 00000000 {ZEROS} 00000000\n00000020 00000001 {ZEROS} 00000001\n"


def test_parsers():
    assert parse_stat(STAT) == {
        0: {"user": 5, "nice": 0, "system": 5, "idle": 40, "iowait": 0, "irq": 0, "softirq": 0, "steal": 0},
        1: {"user": 5, "nice": 0, "system": 5, "idle": 40, "iowait": 0, "irq": 0, "softirq": 0, "steal": 0},
    }
    assert parse_softirqs(SOFTIRQS) == {0: {"net_tx": 1, "net_rx": 100}, 1: {"net_tx": 2, "net_rx": 200}}
    assert parse_softnet(SOFTNET) == {
        0: {"softnet_processed": 16, "softnet_dropped": 0},
        1: {"softnet_processed": 32, "softnet_dropped": 1},
    }


def write_proc(root, stat, softirqs, softnet):
    (root / "net").mkdir(parents=True, exist_ok=True)
    (root / "stat").write_text(stat)
    (root / "softirqs").write_text(softirqs)
    (root / "net" / "softnet_stat").write_text(softnet)


def test_sample_pair_by_hand(tmp_path):
    proc, raw = tmp_path / "proc", tmp_path / "raw"
    write_proc(proc, STAT, SOFTIRQS, SOFTNET)
    mon = CpustatMonitor(MonitorContext(raw, interval_s=3600), root=proc)
    mon.start()
    assert mon.started()
    # CPU 1 over the interval: 20 ticks, 10 of them softirq, 5 system, 5 idle; 400 NET_RX.
    write_proc(
        proc,
        STAT.replace("cpu1 5 0 5 40 0 0 0 0", "cpu1 5 0 10 45 0 0 10 0"),
        SOFTIRQS.replace("200", "600"),
        SOFTNET.replace("00000020 00000001", "00000120 00000001"),
    )
    mon.stop()
    start = json.loads((raw / "cpustat.meta.json").read_text())["start_epoch_s"]
    df, records = parse_cpustat(raw, start)
    assert records == []
    assert list(df.columns) == COLUMNS
    one = df[df.cpu == 1].iloc[0]
    assert one.softirq_pct == pytest.approx(50) and one.system_pct == pytest.approx(25)
    assert one.idle_pct == pytest.approx(25) and one.busy_pct == pytest.approx(75)
    assert one.net_rx_per_s == pytest.approx(400 / one.interval_s)
    assert one.softnet_processed_per_s == pytest.approx(256 / one.interval_s)
    assert df[df.cpu == 0].iloc[0].net_rx_per_s == 0


def test_unreadable_softnet_is_missing(tmp_path):
    proc, raw = tmp_path / "proc", tmp_path / "raw"
    write_proc(proc, STAT, SOFTIRQS, SOFTNET)
    (proc / "net" / "softnet_stat").unlink()
    mon = CpustatMonitor(MonitorContext(raw, interval_s=3600), root=proc)
    mon.start()
    mon.stop()
    df, records = parse_cpustat(raw, 0)
    assert [r["metric"] for r in records] == ["cpustat_net_softnet_stat"]
    assert df["softnet_processed_per_s"].isna().all()


def test_live(tmp_path):
    mon = CpustatMonitor(MonitorContext(tmp_path, interval_s=0.1))
    mon.start()
    time.sleep(0.35)
    mon.stop()
    df, records = parse_cpustat(tmp_path, 0)
    assert records == []
    assert len(df) >= 2 and df["busy_pct"].between(0, 100).all()

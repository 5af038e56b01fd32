"""psi monitor: /proc/pressure parsing, exact shares from a recorded sample pair, live runs."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest
from monitor_helpers import run_live

from corun.monitors import MonitorContext, parse_psi
from corun.monitors.psi import COLUMNS, CPU_FULL_REASON, PsiMonitor, parse_pressure


def test_parse_pressure_file(fixtures):
    io = parse_pressure((fixtures / "psi" / "proc_pressure" / "io").read_text())
    assert io["some"] == {"avg10": 9.15, "avg60": 3.12, "avg300": 1.16, "total": 7479207}
    assert io["full"]["total"] == 6633019
    # an older kernel: no 'full' line for cpu
    assert "full" not in parse_pressure("some avg10=0.50 avg60=0.10 avg300=0.02 total=1234\n")


def test_sample_pair_by_hand(fixtures):
    raw = fixtures / "psi" / "pair"
    start = json.loads((raw / "psi.meta.json").read_text())["start_epoch_s"]
    df, records = parse_psi(raw, t0_epoch=start)
    assert list(df.columns) == COLUMNS
    assert len(df) == 3  # one interval per resource; the first sample has no delta
    by = df.set_index("resource")
    # io: some total 7479207 -> 7585972 us, full 6633019 -> 6720393 us,
    # monotonic 532.716220932 -> 533.521557226 s
    dt_io = 533.521557226 - 532.716220932  # 0.805336 s
    assert by.loc["io", "interval_s"] == pytest.approx(dt_io)
    assert by.loc["io", "some_pct"] == pytest.approx(100 * 106765 / (dt_io * 1e6))  # 13.257 %
    assert by.loc["io", "full_pct"] == pytest.approx(100 * 87374 / (dt_io * 1e6))  # 10.849 %
    assert by.loc["io", "some_avg10_pct"] == 9.66 and by.loc["io", "full_avg10_pct"] == 7.22
    # cpu: some 11266305 -> 11330636 us over 533.521428035 - 532.716145122 s
    dt_cpu = 533.521428035 - 532.716145122
    assert by.loc["cpu", "some_pct"] == pytest.approx(100 * 64331 / (dt_cpu * 1e6))  # 7.989 %
    assert by.loc["cpu", "time_epoch_s"] == 1795279755.4390073
    assert by.loc["cpu", "t_s"] == pytest.approx(1795279755.4390073 - start)
    # memory: no stall at all, a measured zero
    assert by.loc["memory", "some_pct"] == 0.0 and by.loc["memory", "full_pct"] == 0.0
    # system-wide cpu full is undefined: the kernel's zeros are not passed on
    assert by.loc[["cpu"], ["full_pct", "full_avg10_pct"]].isna().all().all()
    assert records == [{"metric": "psi_cpu_full", "reason": CPU_FULL_REASON, "source": "psi"}]


def test_no_proc_pressure(tmp_path):
    mon = PsiMonitor(MonitorContext(tmp_path), root=tmp_path / "no-pressure")
    mon.start()
    mon.stop()
    mon.stop()
    df, records = mon.parse(time.time())
    assert df.empty and list(df.columns) == COLUMNS
    assert [r["metric"] for r in records] == ["psi_cpu", "psi_io", "psi_memory"]
    assert "kernel without CONFIG_PSI" in records[0]["reason"]


def test_unreadable_file_and_missing_full_line(tmp_path):
    root = tmp_path / "pressure"
    root.mkdir()
    (root / "cpu").write_text("some avg10=1.00 avg60=0.50 avg300=0.10 total=5000\n")
    (root / "io").mkdir()  # reading it fails: IsADirectoryError
    (root / "memory").write_text(
        "some avg10=0.00 avg60=0.00 avg300=0.00 total=0\nfull avg10=0.00 avg60=0.00 avg300=0.00 total=0\n"
    )
    raw = tmp_path / "raw"
    raw.mkdir()
    mon = PsiMonitor(MonitorContext(raw, interval_s=0.1), root=root)
    mon.start()
    time.sleep(0.35)
    mon.stop()
    df, records = mon.parse(time.time())
    assert set(df["resource"]) == {"cpu", "memory"}
    assert df[df["resource"] == "cpu"]["full_pct"].isna().all()
    metrics = {r["metric"]: r["reason"] for r in records}
    assert set(metrics) == {"psi_io", "psi_cpu_full"}
    assert "IsADirectoryError" in metrics["psi_io"]
    assert metrics["psi_cpu_full"] == "psi: no 'full' line for cpu"


def test_pacing_does_not_drift(tmp_path):
    mon = PsiMonitor(MonitorContext(tmp_path, interval_s=0.05))
    mon.start()
    time.sleep(0.52)
    mon.stop()
    raw = (tmp_path / "psi.csv").read_text().splitlines()[1:]
    mono = sorted({float(line.split(",")[1]) for line in raw if ",cpu," in line})
    ticks = mono[:-1]  # the last sample is the one taken at stop()
    assert len(ticks) >= 9
    # tick k is due at start + k * 0.05 s: no accumulated lateness
    late = [m - (ticks[0] + k * 0.05) for k, m in enumerate(ticks)]
    assert max(late) < 0.04


@pytest.mark.skipif(not Path("/proc/pressure").is_dir(), reason="kernel without PSI")
def test_live_run_writes_raw_file_and_meta(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    mon = PsiMonitor(MonitorContext(raw, interval_s=0.5))
    t0, t_stop = run_live(mon, tmp_path)
    df, records = mon.parse(t0)
    assert set(df["resource"]) == {"cpu", "io", "memory"}
    assert len(df) >= 3 * 5  # samples at 0.5 s .. 2.5 s and one at stop
    assert df["t_s"].between(0.4, t_stop - t0).all()
    # stall totals and wall time are read a few microseconds apart: an interval of total stall
    # can come out slightly above 100 %; the value is kept as measured
    assert df["some_pct"].between(0, 110).all()
    assert [r["metric"] for r in records] == ["psi_cpu_full"]

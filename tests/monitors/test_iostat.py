"""iostat monitor: parser on recorded sysstat 12.6.1 output, and one live run."""

from __future__ import annotations

import json
import math
import shutil
from datetime import UTC, datetime

import pytest
from monitor_helpers import assert_nothing_parsed, run_live_in

from corun.monitors import MonitorContext, parse_iostat
from corun.monitors.iostat import COLUMNS, DERIVED_COLUMNS, IostatMonitor, read_reports


def epoch(*args: int) -> float:
    return datetime(*args, tzinfo=UTC).timestamp()


def test_complete_report_columns_and_devices(fixtures):
    df, records = parse_iostat(fixtures / "iostat" / "complete", t0_epoch=1795279745.0)
    assert list(df.columns) == COLUMNS
    assert len(df) == 6  # 3 reports (since-boot report dropped by -y) x vda, zram0
    assert sorted(set(df["device"])) == ["vda", "zram0"]
    # sdz was asked for but does not exist: iostat ignores it, the parser says so
    assert records == [{"metric": "iostat_sdz", "reason": "iostat: device sdz not reported", "source": "iostat"}]


def test_derived_columns_by_hand(fixtures):
    df, _ = parse_iostat(fixtures / "iostat" / "complete", t0_epoch=0.0)
    row = df[df["device"] == "vda"].iloc[0]
    # first report, vda: r/s 0, w/s 1317, d/s 443, f/s 437; w_await 0.16, d_await 0.17,
    # f_await 0.07 ms; util 30.40 %
    assert (row.r_per_s, row.w_per_s, row.d_per_s, row.f_per_s) == (0.0, 1317.0, 443.0, 437.0)
    assert row.wmib_s == 220.23 and row.aqu_sz == 0.32 and row.util_pct == 30.40
    iops = 1317 + 443 + 437  # 2197 requests/s
    # await: I/O-weighted mean = (1317*0.16 + 443*0.17 + 437*0.07) / 2197 = 316.62 / 2197
    assert row.await_ms == pytest.approx(316.62 / iops)
    # svc = 10 * util / iops = 304 / 2197 = 0.13837 ms
    assert row.svc_ms == pytest.approx(304.0 / iops)
    assert row.svc_ms == pytest.approx(0.138370, abs=1e-6)
    # wait = await - svc = 12.62 / 2197 = 0.005744 ms
    assert row.wait_ms == pytest.approx(12.62 / iops)
    assert set(DERIVED_COLUMNS) == {"await_ms", "svc_ms", "wait_ms"}


def test_no_io_gives_nan_not_zero(fixtures):
    df, _ = parse_iostat(fixtures / "iostat" / "complete", t0_epoch=0.0)
    idle = df[df["device"] == "zram0"]
    assert len(idle) == 3
    assert idle[["await_ms", "svc_ms", "wait_ms"]].isna().all().all()
    assert (idle["util_pct"] == 0).all()  # measured zeros stay zeros


def test_time_base(fixtures):
    raw = fixtures / "iostat" / "complete"
    start = json.loads((raw / "iostat.meta.json").read_text())["start_epoch_s"]
    df, _ = parse_iostat(raw, t0_epoch=start)
    vda = df[df["device"] == "vda"]
    printed = [epoch(2026, 11, 21, 16, 49, s) for s in (6, 7, 8)]
    # report k ends at start + k s; iostat printed the whole second it fell in
    assert vda["time_epoch_s"].tolist() == pytest.approx([start + 1, start + 2, start + 3])
    for t, p in zip(vda["time_epoch_s"], printed):
        assert p <= t < p + 1
    assert vda["t_s"].tolist() == pytest.approx([1.0, 2.0, 3.0])


def test_without_meta_uses_printed_seconds(fixtures, tmp_path):
    shutil.copy(fixtures / "iostat" / "complete" / "iostat.json", tmp_path)
    df, records = parse_iostat(tmp_path, t0_epoch=0.0)
    assert df["time_epoch_s"].iloc[0] == epoch(2026, 11, 21, 16, 49, 6)
    assert records == []


def test_truncated_by_sigterm(fixtures):
    text = (fixtures / "iostat" / "truncated" / "iostat.json").read_text()
    with pytest.raises(ValueError):
        json.loads(text)
    reports, complete = read_reports(text)
    assert len(reports) == 2 and not complete
    df, records = parse_iostat(fixtures / "iostat" / "truncated", t0_epoch=0.0)
    assert len(df) == 2 and records == []
    assert df["w_per_s"].tolist() == [1384.0, 1473.27]


def test_cut_mid_report(fixtures, tmp_path):
    text = (fixtures / "iostat" / "complete" / "iostat.json").read_text()
    third = text.index('"timestamp": "2026-11-21T16:49:08')
    (tmp_path / "iostat.json").write_text(text[: third + 120])
    df, _ = parse_iostat(tmp_path, t0_epoch=0.0)
    assert len(df) == 4  # two complete reports x two devices


def test_nothing_written(tmp_path):
    (tmp_path / "iostat.json").write_text('{"sysstat": {\n\t"hosts": [\n')
    (tmp_path / "iostat.stderr").write_text("Cannot open /proc/diskstats\n")
    df, records = parse_iostat(tmp_path, t0_epoch=0.0)
    assert_nothing_parsed(df, records, COLUMNS, "iostat", "Cannot open /proc/diskstats")


def test_interval_rounded_up(tmp_path):
    mon = IostatMonitor(MonitorContext(tmp_path, interval_s=0.3, devices=["vda"]))
    assert mon.command() == ["iostat", "-dxmt", "-y", "-o", "JSON", "1", "1000000", "vda"]
    assert IostatMonitor(MonitorContext(tmp_path, interval_s=2.5)).interval_s == 3


@pytest.mark.skipif(shutil.which("iostat") is None, reason="sysstat not installed")
def test_live_run_writes_raw_file_and_meta(tmp_path):
    raw, mon, t0, t_stop = run_live_in(tmp_path, IostatMonitor)
    meta = json.loads((raw / "iostat.meta.json").read_text())
    assert meta["returncode"] == 0  # SIGINT: iostat ends cleanly ...
    _, complete = read_reports((raw / "iostat.json").read_text())
    assert complete  # ... and closes the JSON document
    df, records = mon.parse(t0)
    assert records == []
    assert len(set(df["time_epoch_s"])) == 2  # 2.5 s at 1 s
    assert df["t_s"].between(0.9, t_stop - t0 + 0.1).all()
    assert (df["w_per_s"] > 0).any()
    busy = df[df["w_per_s"] > 0]
    assert busy["svc_ms"].notna().all() and not math.isnan(busy["await_ms"].iloc[0])

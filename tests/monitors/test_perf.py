"""perf monitor: parser on recorded and hand-written perf 6.1 CSV, failures, one live run."""

from __future__ import annotations

import json
import math
import os
import shutil
from pathlib import Path

import pytest
from monitor_helpers import run_live

from corun.monitors import MonitorContext, derive_perf_rates, parse_perf
from corun.monitors.base import DEFAULT_PERF_EVENTS
from corun.monitors.perf import (
    COLUMNS,
    NOT_SUPPORTED_REASON,
    RATE_COLUMNS,
    PerfMonitor,
)

START = 1795280000.0  # start_epoch_s of the hand-written fixture


def system_wide_allowed() -> bool:
    """perf stat -a needs root (or CAP_PERFMON) unless kernel.perf_event_paranoid <= 0."""
    if os.geteuid() == 0:
        return True
    try:
        return int(Path("/proc/sys/kernel/perf_event_paranoid").read_text()) <= 0
    except (OSError, ValueError):
        return False


def test_not_supported_everywhere(fixtures):
    df, records = parse_perf(fixtures / "perf" / "not_supported", t0_epoch=0.0)
    assert df.empty and list(df.columns) == COLUMNS
    assert records == [{"metric": e, "reason": NOT_SUPPORTED_REASON, "source": "perf"} for e in DEFAULT_PERF_EVENTS]
    rates = derive_perf_rates(df)
    assert rates.empty and list(rates.columns) == RATE_COLUMNS


def test_numeric_counts(fixtures):
    df, records = parse_perf(fixtures / "perf" / "numeric", t0_epoch=START)
    assert list(df.columns) == COLUMNS
    assert len(df) == 12
    cycles = df[df["event"] == "cycles"]
    assert cycles["value"].tolist() == [4001000000.0, 4000000000.0, 1001000000.0]
    assert cycles["time_epoch_s"].tolist() == pytest.approx([START + 1.00025, START + 2.0005, START + 2.25075])
    assert cycles["t_s"].tolist() == pytest.approx([1.00025, 2.0005, 2.25075])
    # interval lengths: from perf start, then between timestamps; the last one is partial
    assert cycles["interval_s"].tolist() == pytest.approx([1.00025, 1.00025, 0.25025])
    assert set(df["unit"]) == {"count"}
    loads = df[df["event"] == "LLC-load-misses"]
    assert loads["running_pct"].tolist() == [100.0, 50.0, 100.0]
    # <not counted>: a NaN row, never a zero, and a record naming the interval
    stores = df[df["event"] == "LLC-store-misses"]
    assert math.isnan(stores["value"].iloc[1])
    assert stores["value"].iloc[[0, 2]].tolist() == [300250.0, 250250.0]
    assert len(records) == 1
    assert records[0]["metric"] == "LLC-store-misses"
    assert "<not counted> in 1 of 3 intervals" in records[0]["reason"]
    assert "perf t = 2.000500 s" in records[0]["reason"]


def test_rates_by_hand(fixtures):
    df, _ = parse_perf(fixtures / "perf" / "numeric", t0_epoch=START)
    rates = derive_perf_rates(df)
    assert list(rates.columns) == RATE_COLUMNS
    assert len(rates) == 3
    last = rates.iloc[2]
    # 0.25025 s: LLC misses 500500 + 250250 = 750750, cycles 1001000000, instr 500500000
    assert last.llc_misses_per_s == pytest.approx(3.0e6)
    assert last.cycles_per_s == pytest.approx(4.0e9)
    assert last.instructions_per_s == pytest.approx(2.0e9)
    assert last.llc_misses_per_cycle == pytest.approx(0.00075)
    assert last.instructions_per_cycle == pytest.approx(0.5)
    first = rates.iloc[0]
    assert first.llc_misses_per_s == pytest.approx((1201000 + 300250) / 1.00025)
    # store misses not counted in the second interval: the sum is unknown, not a partial sum
    second = rates.iloc[1]
    assert math.isnan(second.llc_misses_per_s) and math.isnan(second.llc_misses_per_cycle)
    assert second.cycles_per_s == pytest.approx(4.0e9 / 1.00025)


def test_rates_without_inputs_are_nan(fixtures):
    df, _ = parse_perf(fixtures / "perf" / "numeric", t0_epoch=START)
    rates = derive_perf_rates(df[df["event"] == "cycles"])
    assert rates["llc_misses_per_s"].isna().all()
    assert rates["instructions_per_cycle"].isna().all()
    assert rates["cycles_per_s"].notna().all()


def test_permission_denied(fixtures):
    df, records = parse_perf(fixtures / "perf" / "denied", t0_epoch=0.0)
    assert df.empty
    assert [r["metric"] for r in records] == ["cycles", "task-clock"]
    reason = records[0]["reason"]
    assert reason.startswith("perf: Access to performance monitoring and observability operations is limited.")
    assert "perf_event_paranoid setting is 2" in reason


def test_cgroup_not_applied_is_recorded(fixtures, tmp_path):
    for name in ("perf.csv", "perf.meta.json"):
        shutil.copy(fixtures / "perf" / "numeric" / name, tmp_path)
    meta = json.loads((tmp_path / "perf.meta.json").read_text())
    meta["cgroup_requested"] = "job1"
    (tmp_path / "perf.meta.json").write_text(json.dumps(meta))
    _, records = parse_perf(tmp_path, t0_epoch=START)
    assert records[0]["metric"] == "perf_cgroup_job1"


def test_command_line_from_interval_and_events(tmp_path):
    mon = PerfMonitor(MonitorContext(tmp_path, interval_s=0.25))
    assert mon.command() == [
        "perf", "stat", "-a", "-x,", "-I", "250", "-o", "perf.csv",
        "-e", "LLC-load-misses,LLC-store-misses,cycles,instructions",
    ]  # fmt: skip


def test_launch_failure_never_raises(tmp_path, monkeypatch):
    mon = PerfMonitor(MonitorContext(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path / "empty"))
    mon.start()
    mon.stop()
    df, records = mon.parse(0.0)
    assert df.empty
    assert [r["metric"] for r in records] == DEFAULT_PERF_EVENTS
    assert "FileNotFoundError" in records[0]["reason"]


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")
def test_unknown_event_never_raises(tmp_path):
    mon = PerfMonitor(MonitorContext(tmp_path, perf_events=["no-such-event-xyz"]))
    mon.start()
    mon._proc.wait(timeout=10)
    mon.stop()
    df, records = mon.parse(0.0)
    assert df.empty
    assert records == [{"metric": "no-such-event-xyz", "reason": records[0]["reason"], "source": "perf"}]
    assert "no-such-event-xyz" in records[0]["reason"]


@pytest.mark.skipif(shutil.which("perf") is None, reason="perf not installed")
@pytest.mark.skipif(not system_wide_allowed(), reason="perf stat -a needs root here")
def test_live_run_writes_raw_file_and_meta(tmp_path):
    raw = tmp_path / "raw"
    raw.mkdir()
    events = [*DEFAULT_PERF_EVENTS, "task-clock"]
    mon = PerfMonitor(MonitorContext(raw, interval_s=0.5, perf_events=events))
    t0, t_stop = run_live(mon, tmp_path)
    df, records = mon.parse(t0)
    clock = df[df["event"] == "task-clock"]
    assert len(clock) >= 5  # 0.5 s intervals over 2.5 s, plus the partial one at SIGINT
    assert (clock["value"] > 0).all() and set(clock["unit"]) == {"msec"}
    assert df["t_s"].between(0.4, t_stop - t0 + 0.1).all()
    missing = {r["metric"]: r["reason"] for r in records}
    for event in DEFAULT_PERF_EVENTS:
        values = df.loc[df["event"] == event, "value"]
        if missing.get(event) == NOT_SUPPORTED_REASON:
            assert values.empty  # no PMU counter here: recorded as missing, not as zeros
        else:
            assert len(values) and (values.dropna() > 0).all()

"""pidstat monitor: parser on recorded sysstat 12.6.1 output, and one live run."""

from __future__ import annotations

import json
import os
import shutil

import pytest
from monitor_helpers import assert_nothing_parsed, run_live_in

from corun.monitors import MonitorContext, parse_pidstat
from corun.monitors.pidstat import COLUMNS, PidstatMonitor

HEADER = (
    "# Time        UID       PID    %usr %system  %guest   %wait    %CPU   CPU   kB_rd/s   "
    "kB_wr/s kB_ccwr/s iodelay  Command"
)


def test_parse_recorded_output(fixtures):
    raw = fixtures / "pidstat" / "basic"
    start = json.loads((raw / "pidstat.meta.json").read_text())["start_epoch_s"]
    df, records = parse_pidstat(raw, t0_epoch=start)
    assert records == []
    assert list(df.columns) == COLUMNS
    assert len(df) == 8  # 3 + 5 processes over two intervals
    writer = df[df["command"] == "python"].iloc[0]
    # 1795279752 0 10826 4.00 65.00 0.00 0.00 69.00 1 0.00 228352.00 0.00 0 python
    assert (writer.pid, writer.uid, writer.cpu, writer.iodelay_ticks) == (10826, 0, 1, 0)
    assert (writer.usr_pct, writer.system_pct, writer.wait_pct, writer.cpu_pct) == (
        4.0, 65.0, 0.0, 69.0,
    )  # fmt: skip
    assert (writer.rd_kb_s, writer.wr_kb_s, writer.ccwr_kb_s) == (0.0, 228352.0, 0.0)
    # interval k ends at start + k s, inside the printed second
    assert writer.time_epoch_s == pytest.approx(start + 1)
    assert 1795279752 <= writer.time_epoch_s < 1795279753
    assert sorted(set(df["t_s"].round(6))) == pytest.approx([1.0, 2.0])
    assert df["pid"].dtype == "int64"
    assert "kworker/u8:2-ext4-rsv-conversion" in set(df["command"])


def test_headers_blank_lines_spaces_and_unavailable_io(tmp_path):
    text = "\n".join(
        [
            "Linux 6.1.0-13-amd64 (host) \t11/21/26 \t_x86_64_\t(2 CPU)",
            "",
            HEADER,
            "1795280001      0      4242   10.00    5.00    0.00    1.00   15.00     0"
            "     -1.00     -1.00     -1.00       3  Web Content",
            "1795280001   1000      4243    0.50    0.25    0.00    0.00    0.75     1"
            "      8.00     16.00      0.00       0  dd",
            "",
            HEADER,
            "",
            HEADER,
            "1795280003   1000      4243    1.00    0.00    0.00    0.00    1.00     1"
            "      0.00      4.00      0.00       0  dd",
            "1795280003   1000      42",  # cut short when pidstat was stopped
        ]
    )
    (tmp_path / "pidstat.txt").write_text(text)
    df, records = parse_pidstat(tmp_path, t0_epoch=1795280000.0)
    assert len(df) == 3
    web = df[df["pid"] == 4242].iloc[0]
    assert web.command == "Web Content"
    assert web.iodelay_ticks == 3 and web.cpu_pct == 15.0
    assert web[["rd_kb_s", "wr_kb_s", "ccwr_kb_s"]].isna().all()  # -1: not available
    assert records == [
        {
            "metric": "pidstat_io",
            "reason": "pidstat: I/O statistics not available (printed as -1) for 1 of 3 process rows",
            "source": "pidstat",
        }
    ]
    # no meta file: whole seconds as printed
    assert df["t_s"].tolist() == [1.0, 1.0, 3.0]


def test_no_output(tmp_path):
    (tmp_path / "pidstat.stderr").write_text("Requested activities not available\n")
    df, records = parse_pidstat(tmp_path, t0_epoch=0.0)
    assert_nothing_parsed(df, records, COLUMNS, "pidstat", "Requested activities not available")


def test_command_line_and_c_locale(tmp_path):
    mon = PidstatMonitor(MonitorContext(tmp_path, interval_s=1.5))
    assert mon.command() == ["pidstat", "-d", "-u", "-h", "-H", "2"]
    env = mon.env()
    assert env["LC_ALL"] == "C" and env["LANG"] == "C"


@pytest.mark.skipif(shutil.which("pidstat") is None, reason="sysstat not installed")
def test_live_run_writes_raw_file_and_meta(tmp_path):
    raw, mon, t0, t_stop = run_live_in(tmp_path, PidstatMonitor)
    assert json.loads((raw / "pidstat.meta.json").read_text())["returncode"] == 0
    df, records = mon.parse(t0)
    assert not df.empty
    assert len(set(df["time_epoch_s"])) == 2
    assert df["t_s"].between(0.9, t_stop - t0 + 0.1).all()
    me = df[df["pid"] == os.getpid()]
    assert (me["wr_kb_s"] > 0).any()  # the fsync loop runs in this process

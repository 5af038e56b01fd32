"""iostat monitor: extended per-device statistics from sysstat (Debian 12: 12.6.1).

Command: ``iostat -dxmt -y -o JSON <interval> 1000000 [device ...]`` with S_TIME_FORMAT=ISO, so
each report carries an ISO 8601 timestamp with UTC offset. ``-y`` drops the first report (the
average since boot). The interval is whole seconds >= 1 (rounded up; the meta file records both
the requested and the used value). The count is large and the monitor is stopped with SIGINT.

Raw files: ``iostat.json`` (stdout), ``iostat.stderr``, ``iostat.meta.json``.

Flushing and stopping, checked against sysstat 12.6.1 (rw_io_stat_loop): iostat calls
``setbuf(stdout, NULL)`` before its loop, so every report reaches the file as it is printed even
when stdout is a regular file (no stdbuf needed). On SIGINT it leaves its pause at once, prints
no further report and closes the JSON document; SIGTERM or SIGKILL leave the document open after
the last report, and a signal that lands mid-report (or before iostat installs its handler)
leaves half a report. The parser reads every complete report of such a file, ignores the rest.

Time: iostat prints whole seconds; the sub-second phase comes from the launch epoch in the meta
file (see `refine_whole_seconds`). ``time_epoch_s`` is the end of each interval.

Units: sysstat's "MB" is 2^20 bytes (sectors / 2048), so ``rmib_s`` is MiB/s.

Derived columns: svctm was removed from sysstat in 12.1.2, so service and waiting times are
computed here from %util and the request rates; they are derived, not measured, and the report
must say so (``DERIVED_COLUMNS`` gives the formulas). ``svc_ms`` assumes the device serves one
request at a time: for devices with internal parallelism (NVMe, virtio with a deep queue) %util
saturates and ``svc_ms`` underestimates, so ``wait_ms`` overestimates, the real split.
"""

from __future__ import annotations

import json
from datetime import datetime
from pathlib import Path

from corun.errors import missing
from corun.monitors.base import (
    NAN,
    SysstatMonitor,
    Table,
    finish_table,
    isnan,
    no_report_reason,
    read_meta,
    read_text,
    refine_whole_seconds,
)

NAME = "iostat"
RAW_FILE = "iostat.json"
COUNT = 10**6

# iostat 12.6.1 JSON key -> tidy column
KEYS = {
    "r/s": "r_per_s",
    "w/s": "w_per_s",
    "d/s": "d_per_s",
    "f/s": "f_per_s",
    "rMB/s": "rmib_s",
    "wMB/s": "wmib_s",
    "dMB/s": "dmib_s",
    "r_await": "r_await_ms",
    "w_await": "w_await_ms",
    "d_await": "d_await_ms",
    "f_await": "f_await_ms",
    "aqu-sz": "aqu_sz",
    "util": "util_pct",
}

DERIVED_COLUMNS = {
    "await_ms": (
        "(r_await_ms*r_per_s + w_await_ms*w_per_s + d_await_ms*d_per_s + f_await_ms*f_per_s)"
        " / (r_per_s + w_per_s + d_per_s + f_per_s); I/O-weighted mean await, NaN when no I/O"
    ),
    "svc_ms": (
        "10 * util_pct / (r_per_s + w_per_s + d_per_s + f_per_s); derived service time "
        "(iostat's svctm, removed in sysstat 12.1.2), NaN when no I/O"
    ),
    "wait_ms": "await_ms - svc_ms; derived time spent queued, NaN when no I/O",
}

# the tidy table: time, device, the columns of the JSON keys, then the derived ones
COLUMNS = ["time_epoch_s", "t_s", "device", *KEYS.values(), *DERIVED_COLUMNS]


class IostatMonitor(SysstatMonitor):
    name = NAME
    purpose = "per-device I/O statistics"
    stdout_file = RAW_FILE

    def command(self) -> list[str]:
        return ["iostat", "-dxmt", "-y", "-o", "JSON", str(self.interval_s), str(COUNT)] + list(self.ctx.devices)

    def env(self) -> dict[str, str]:
        env = super().env()
        env["S_TIME_FORMAT"] = "ISO"
        return env

    def meta_extra(self) -> dict:
        return {**super().meta_extra(), "devices": list(self.ctx.devices)}

    @classmethod
    def tidy_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[Table, list[dict]]:
        return tidy_iostat(raw_dir, t0_epoch)


def read_reports(text: str) -> tuple[list[dict], bool]:
    """The reports (``statistics[]`` entries) of iostat's JSON, and whether it was complete.

    A file cut short (iostat killed) is read report by report up to the last complete one.
    """
    try:
        doc = json.loads(text)
        return list(doc["sysstat"]["hosts"][0]["statistics"]), True
    except (ValueError, KeyError, IndexError, TypeError):
        pass
    start = text.find('"statistics"')
    if start < 0:
        return [], False
    pos = text.find("[", start)
    if pos < 0:
        return [], False
    pos += 1
    decoder = json.JSONDecoder()
    reports = []
    while True:
        while pos < len(text) and text[pos] in " \t\r\n,":
            pos += 1
        if pos >= len(text) or text[pos] == "]":
            break
        try:
            obj, pos = decoder.raw_decode(text, pos)
        except ValueError:
            break  # the report being written when iostat was stopped
        if isinstance(obj, dict):
            reports.append(obj)
    return reports, False


def parse_timestamp(value: str) -> float:
    """iostat's ISO timestamp (S_TIME_FORMAT=ISO), e.g. 2026-11-21T16:44:55+0000 -> epoch."""
    return datetime.strptime(value, "%Y-%m-%dT%H:%M:%S%z").timestamp()


def derive(row: dict) -> dict:
    """Add await_ms, svc_ms and wait_ms to one row (see DERIVED_COLUMNS)."""
    kinds = ["r", "w", "d", "f"]
    rates = {k: row[f"{k}_per_s"] for k in kinds}
    iops = sum(0.0 if isnan(rates[k]) else rates[k] for k in kinds)
    weighted = sum(0.0 if isnan(x := rates[k] * row[f"{k}_await_ms"]) else x for k in kinds)
    if iops > 0:
        row["await_ms"] = weighted / iops
        row["svc_ms"] = 10.0 * row["util_pct"] / iops
    else:
        row["await_ms"] = row["svc_ms"] = NAN
    row["wait_ms"] = row["await_ms"] - row["svc_ms"]
    return row


def tidy_iostat(raw_dir: Path, t0_epoch: float) -> tuple[Table, list[dict]]:
    """Tidy per-device table from iostat.json (+ meta); see COLUMNS and DERIVED_COLUMNS."""
    raw_dir = Path(raw_dir)
    meta = read_meta(raw_dir, NAME)
    reports, _complete = read_reports(read_text(raw_dir / RAW_FILE) or "")
    if not reports:
        return finish_table([], COLUMNS, t0_epoch), [missing(NAME, no_report_reason(raw_dir, NAME, meta), NAME)]
    records: list[dict] = []

    rows = []
    bad_stamps = 0
    for k, report in enumerate(reports, start=1):
        try:
            printed = parse_timestamp(report["timestamp"])
        except (KeyError, TypeError, ValueError):
            bad_stamps += 1
            continue
        for disk in report.get("disk", []):
            row = {"printed_s": printed, "k": k, "device": disk.get("disk_device")}
            for key, col in KEYS.items():
                value = disk.get(key)
                row[col] = float(value) if value is not None else NAN
            rows.append(row)
    if bad_stamps:
        records.append(
            missing(
                "iostat",
                f"{bad_stamps} of {len(reports)} reports without an ISO timestamp (S_TIME_FORMAT=ISO not honoured?)",
                NAME,
            )
        )
    interval = meta.get("interval_s", 1)
    stamps = refine_whole_seconds(
        [r["printed_s"] for r in rows], [r["k"] for r in rows], meta.get("start_epoch_s"), interval
    )
    for row, stamp in zip(rows, stamps):
        row["time_epoch_s"] = stamp
        derive(row)

    seen = {r["device"] for r in rows}
    for dev in meta.get("devices", []):
        if dev.removeprefix("/dev/") not in seen:
            records.append(missing(f"iostat_{dev}", f"iostat: device {dev} not reported", NAME))
    return finish_table(rows, COLUMNS, t0_epoch), records


parse_iostat = IostatMonitor.parse_raw  # tidy_iostat as a pandas DataFrame

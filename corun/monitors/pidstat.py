"""pidstat monitor: per-process CPU and block I/O from sysstat (Debian 12: 12.6.1).

Command: ``pidstat -d -u -h -H <interval>`` with LC_ALL=C (decimal points): all processes that
were active in the interval, one line per process per interval (``-h``), epoch timestamps
(``-H``). sysstat 12.6.1 has no JSON output for pidstat (added in 12.7.7), so the text is parsed
by its ``#`` header, which is repeated before every interval. The interval is whole seconds >= 1
(rounded up; both values are in the meta file). Stopped with SIGINT; with ``-h`` pidstat prints
no "Average:" block. The output reaches the file interval by interval while pidstat runs.

Raw files: ``pidstat.txt`` (stdout), ``pidstat.stderr``, ``pidstat.meta.json``.

Columns: ``cpu_pct`` is pidstat's %CPU, summed over cores (up to 100 x cores); ``cpu`` is the
core the task last ran on; ``iodelay_ticks`` is block I/O delay in clock ticks; ``*_kb_s`` are
KiB/s (bytes / 1024). pidstat prints -1 for the I/O rates of a task whose /proc/<pid>/io it
could not read: those become NaN and one missing record. Time: whole seconds as printed,
refined as in `refine_whole_seconds`.
"""

from __future__ import annotations

from pathlib import Path

from corun.errors import missing
from corun.monitors.base import (
    NAN,
    SysstatMonitor,
    Table,
    finish_table,
    no_report_reason,
    read_meta,
    read_text,
    refine_whole_seconds,
    to_number,
)

NAME = "pidstat"
RAW_FILE = "pidstat.txt"

# pidstat header field -> tidy column
HEADER = {
    "Time": "printed_s",
    "UID": "uid",
    "PID": "pid",
    "%usr": "usr_pct",
    "%system": "system_pct",
    "%guest": "guest_pct",
    "%wait": "wait_pct",
    "%CPU": "cpu_pct",
    "CPU": "cpu",
    "kB_rd/s": "rd_kb_s",
    "kB_wr/s": "wr_kb_s",
    "kB_ccwr/s": "ccwr_kb_s",
    "iodelay": "iodelay_ticks",
    "Command": "command",
}
INTEGER_COLUMNS = ["uid", "pid", "cpu", "iodelay_ticks"]
IO_COLUMNS = ["rd_kb_s", "wr_kb_s", "ccwr_kb_s"]

COLUMNS = [
    "time_epoch_s",
    "t_s",
    "pid",
    "uid",
    "command",
    "usr_pct",
    "system_pct",
    "guest_pct",
    "wait_pct",
    "cpu_pct",
    "cpu",
    "rd_kb_s",
    "wr_kb_s",
    "ccwr_kb_s",
    "iodelay_ticks",
]


class PidstatMonitor(SysstatMonitor):
    name = NAME
    purpose = "per-process CPU and I/O statistics"
    stdout_file = RAW_FILE

    def command(self) -> list[str]:
        return ["pidstat", "-d", "-u", "-h", "-H", str(self.interval_s)]

    @classmethod
    def tidy_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[Table, list[dict]]:
        return tidy_pidstat(raw_dir, t0_epoch)


def _column_name(field: str) -> str:
    """Tidy name for a header field this parser does not know (a newer sysstat)."""
    if field in HEADER:
        return HEADER[field]
    name = field.replace("%", "").replace("/s", "_per_s").replace("/", "_").lower()
    return name + "_pct" if field.startswith("%") else name


def read_rows(text: str) -> list[dict]:
    """One dict per process line; `k` numbers the intervals (1-based, one header each)."""
    rows: list[dict] = []
    fields: list[str] | None = None
    k = 0
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped:
            continue
        if stripped.startswith("#"):
            fields = stripped[1:].split()
            k += 1
            continue
        if fields is None or stripped.startswith("Average"):
            continue  # banner line before the first header, or a summary
        parts = stripped.split(None, len(fields) - 1)
        if len(parts) != len(fields):
            continue  # a line cut short when pidstat was stopped
        row = {_column_name(f): v for f, v in zip(fields, parts)}
        try:
            row["printed_s"] = int(row["printed_s"])
        except (KeyError, ValueError):
            continue
        row["k"] = k
        rows.append(row)
    return rows


def tidy_pidstat(raw_dir: Path, t0_epoch: float) -> tuple[Table, list[dict]]:
    """Tidy per-process table from pidstat.txt (+ meta); see COLUMNS."""
    raw_dir = Path(raw_dir)
    meta = read_meta(raw_dir, NAME)
    text = read_text(raw_dir / RAW_FILE) or ""
    records: list[dict] = []
    rows = read_rows(text)
    if not rows:
        headers = sum(1 for line in text.splitlines() if line.lstrip().startswith("#"))
        if headers == 0:
            records.append(missing(NAME, no_report_reason(raw_dir, NAME, meta), NAME))
        return finish_table([], COLUMNS, t0_epoch), records

    seen: dict[str, None] = {}  # every column, in the order the rows first name them
    for row in rows:
        seen.update(dict.fromkeys(row))
    numeric = [c for c in seen if c not in ("command", "printed_s", "k")]
    unavailable = 0
    for row in rows:
        neg = False
        for col in numeric:
            row[col] = v = to_number(row.get(col))
            if col in IO_COLUMNS and v < 0:
                row[col], neg = NAN, True
        unavailable += neg
    if unavailable:
        records.append(
            missing(
                "pidstat_io",
                f"pidstat: I/O statistics not available (printed as -1) for {unavailable} of {len(rows)} process rows",
                NAME,
            )
        )
    if "wait_pct" not in seen:
        records.append(missing("pidstat_wait", "pidstat: no %wait column in this sysstat version", NAME))
    stamps = refine_whole_seconds(
        [r["printed_s"] for r in rows], [r["k"] for r in rows], meta.get("start_epoch_s"), meta.get("interval_s", 1)
    )
    for row, stamp in zip(rows, stamps):
        row["time_epoch_s"] = stamp
    extra = [c for c in seen if c not in COLUMNS and c not in ("printed_s", "k")]
    out = finish_table(rows, COLUMNS + extra, t0_epoch)
    for col in INTEGER_COLUMNS:  # whole numbers, unless one is missing (then NaN, as in pandas)
        values = out.column(col)
        if col in seen and not any(isinstance(v, float) and v != v for v in values):
            for r, v in zip(out.rows, values):
                r[col] = int(v)
    return out, records


parse_pidstat = PidstatMonitor.parse_raw  # tidy_pidstat as a pandas DataFrame

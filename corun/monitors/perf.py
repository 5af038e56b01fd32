"""perf monitor: system-wide hardware/software event counts per interval (Debian 12: perf 6.1).

Command: ``perf stat -a -x, -I <interval_ms> -o perf.csv -e <event>,...``; stopped with SIGINT,
on which perf prints the last (partial) interval and exits. perf writes each interval to the
file as it ends. The launch epoch is read just before the launch and stored in perf.meta.json;
perf's interval timestamps are seconds since it started counting, so
``time_epoch_s = start_epoch_s + t``: early by perf's own start-up time (about 15 ms on a
Debian 12 VM: the first interval line reached the file 15 ms after launch + t).

Raw files: ``perf.csv``, ``perf.stderr``, ``perf.meta.json``.

CSV line (perf 6.1, ``-x,`` with ``-I``)::

    <t>,<count>,<unit>,<event>,<run time ns>,<% running>,<metric value>,<metric unit>

Tidy (long) columns: time_epoch_s, t_s, event, value (float, as perf printed it: already scaled
if the event was multiplexed), unit ("count" when perf prints none), running_pct (share of the
interval the counter was scheduled), interval_s (length of the interval the value covers).

Missing, never zero:
- ``<not supported>`` in every interval (no PMU counter, typical in VMs): no rows, one missing
  record for the event;
- ``<not counted>`` (multiplexing, or the counter was never scheduled): NaN rows and one missing
  record naming the intervals;
- perf could not start (permission, perf_event_paranoid, unknown event): one missing record per
  event, with perf's error line as the reason. start() never raises for that.
- ``MonitorContext.cgroup`` is not applied yet: counts are system-wide and a missing record says
  that the per-cgroup count was not made.
"""

from __future__ import annotations

from pathlib import Path

from corun.errors import missing
from corun.monitors.base import (
    MonitorContext,
    ProcessMonitor,
    Table,
    as_frame,
    finish_table,
    isnan,
    read_meta,
    read_text,
    to_float,
    to_number,
)
from corun.util import lazy_module

np = lazy_module("numpy")  # derive_perf_rates (analysis) only
pd = lazy_module("pandas")

NAME = "perf"
RAW_FILE = "perf.csv"
NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"
NOT_SUPPORTED_REASON = "perf: <not supported> on this machine (no PMU counter; typical in VMs)"
MIN_INTERVAL_MS = 10  # perf stat -I refuses less

COLUMNS = ["time_epoch_s", "t_s", "event", "value", "unit", "running_pct", "interval_s"]

DERIVED_COLUMNS = {
    "llc_misses_per_s": "(LLC-load-misses + LLC-store-misses) / interval_s; NaN unless both counted",
    "cycles_per_s": "cycles / interval_s",
    "instructions_per_s": "instructions / interval_s",
    "llc_misses_per_cycle": "(LLC-load-misses + LLC-store-misses) / cycles",
    "instructions_per_cycle": "instructions / cycles",
}

# derive_perf_rates' table: the interval, then every derived column
RATE_COLUMNS = ["time_epoch_s", "t_s", "interval_s", *DERIVED_COLUMNS]


class PerfMonitor(ProcessMonitor):
    name = NAME
    raw_files = [RAW_FILE, f"{NAME}.stderr", f"{NAME}.meta.json"]
    tool = "perf"
    role = "perf"
    purpose = "hardware event counts"

    def __init__(self, ctx: MonitorContext):
        super().__init__(ctx)
        self.interval_ms = max(MIN_INTERVAL_MS, round(ctx.interval_s * 1000))
        self.events = list(ctx.perf_events)

    def command(self) -> list[str]:
        return [
            "perf", "stat", "-a", "-x,", "-I", str(self.interval_ms),
            "-o", RAW_FILE, "-e", ",".join(self.events),
        ]  # fmt: skip

    def meta_extra(self) -> dict:
        return {
            "interval_ms": self.interval_ms,
            "interval_s_requested": self.ctx.interval_s,
            "events": self.events,
            "cgroup_requested": self.ctx.cgroup,
        }

    @classmethod
    def tidy_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[Table, list[dict]]:
        return tidy_perf(raw_dir, t0_epoch)


def perf_error_reason(stderr: str | None) -> str:
    """perf's error as one line, e.g. 'perf: Access to performance monitoring ... is limited.'"""
    lines = [line.strip() for line in (stderr or "").splitlines() if line.strip()]
    lines = [line for line in lines if line not in ("Error:",)]
    if not lines:
        return "perf: did not start and printed no error"
    reason = f"perf: {lines[0]}"
    paranoid = next((x for x in lines if x.startswith("perf_event_paranoid setting is")), None)
    if paranoid:
        reason += f" ({paranoid.rstrip(':')})"
    return reason


def read_lines(text: str) -> list[dict]:
    """Data lines of perf's interval CSV as dicts (t, raw value, unit, event, run, pct)."""
    rows = []
    for line in text.splitlines():
        if not line.strip() or line.lstrip().startswith("#"):
            continue
        parts = line.strip().split(",")
        if len(parts) < 6:
            continue  # a line cut short
        # event names may contain commas (cpu/event=0x3c,umask=0/): take the fixed fields from
        # both ends; the last four are run time, % running, metric value, metric unit
        t, value, unit = parts[0], parts[1], parts[2]
        if len(parts) >= 8:
            event = ",".join(parts[3:-4])
            run, pct = parts[-4], parts[-3]
        else:
            event, run, pct = parts[3], parts[4], parts[5]
        if not value and not event:
            continue  # continuation line of a multi-value metric
        try:
            t_rel = float(t)
        except ValueError:
            continue
        rows.append(
            {"t_rel_s": t_rel, "raw": value.strip(), "unit": unit, "event": event,
             "run_ns": run, "running_pct": pct}
        )  # fmt: skip
    return rows


def parse_perf(raw_dir: Path, t0_epoch: float):
    """tidy_perf as a pandas DataFrame."""
    return as_frame(*tidy_perf(raw_dir, t0_epoch))


def tidy_perf(raw_dir: Path, t0_epoch: float) -> tuple[Table, list[dict]]:
    """Tidy long table from perf.csv (+ meta); see COLUMNS and the module docstring."""
    raw_dir = Path(raw_dir)
    meta = read_meta(raw_dir, NAME)
    events: list[str] = list(meta.get("events", []))
    records: list[dict] = []
    empty = finish_table([], COLUMNS, t0_epoch)
    if meta.get("cgroup_requested"):
        records.append(
            missing(
                f"perf_cgroup_{meta['cgroup_requested']}",
                "perf: per-cgroup counting not implemented yet; counts are system-wide",
                NAME,
            )
        )
    rows = read_lines(read_text(raw_dir / RAW_FILE) or "")
    if not rows:
        if meta.get("launch_error"):
            reason = f"perf: {meta['launch_error']}"
        else:
            reason = perf_error_reason(read_text(raw_dir / f"{NAME}.stderr"))
            if reason == "perf: did not start and printed no error":
                reason = "perf wrote no interval (run shorter than one interval?)"
        for event in events or ["perf"]:
            records.append(missing(event, reason, NAME))
        return empty, records

    start = meta.get("start_epoch_s")
    if start is None:
        records.append(missing("perf_time", "perf: no start epoch in perf.meta.json; t is perf-relative", NAME))
        start = 0.0
    # interval length: from the previous interval's end (perf start for the first)
    stamps = sorted({r["t_rel_s"] for r in rows})
    lengths = dict(zip(stamps, (b - a for a, b in zip([0.0, *stamps], stamps))))
    by_event: dict[str, list[dict]] = {}
    for r in rows:
        r["interval_s"] = lengths[r["t_rel_s"]]
        r["time_epoch_s"] = float(start) + r["t_rel_s"]
        r["value"] = to_number(r["raw"])
        r["running_pct"] = to_float(r["running_pct"])
        r["unit"] = r["unit"] or "count"
        by_event.setdefault(r["event"], []).append(r)

    dropped: set[str] = set()
    for event, sub in by_event.items():
        if all(r["raw"] == NOT_SUPPORTED for r in sub):
            dropped.add(event)
            records.append(missing(event, NOT_SUPPORTED_REASON, NAME))
            continue
        odd = [r for r in sub if isnan(r["value"])]
        if odd:
            kinds = sorted({r["raw"] for r in odd})
            why = "multiplexing or counter not scheduled" if kinds == [NOT_COUNTED] else "no number in perf's output"
            stamps_odd = [f"{r['t_rel_s']:.6f}" for r in odd]
            when = ", ".join(stamps_odd[:5]) + (", ..." if len(stamps_odd) > 5 else "")
            records.append(
                missing(
                    event,
                    f"perf: {'/'.join(kinds)} in {len(odd)} of {len(sub)} intervals ({why}; perf t = {when} s)",
                    NAME,
                )
            )
    for event in events:
        if event not in by_event:
            records.append(missing(event, "perf: event absent from perf's output", NAME))
    return finish_table([r for r in rows if r["event"] not in dropped], COLUMNS, t0_epoch), records


def derive_perf_rates(df: pd.DataFrame) -> pd.DataFrame:
    """Wide table, one row per interval: rates and ratios where their inputs were counted.

    See DERIVED_COLUMNS; every output is NaN where an input is absent or NaN (never zero).
    """
    if df.empty:
        return pd.DataFrame({c: pd.Series(dtype=float) for c in RATE_COLUMNS})
    wide = (
        df.groupby(["time_epoch_s", "t_s", "interval_s", "event"], sort=True)["value"]
        .first()  # NaN stays NaN (a sum would turn it into 0)
        .unstack("event")
        .reset_index()
    )

    def col(event: str) -> pd.Series:
        return wide[event] if event in wide.columns else pd.Series(np.nan, index=wide.index)

    llc = col("LLC-load-misses") + col("LLC-store-misses")
    cycles = col("cycles").where(col("cycles") > 0)
    out = pd.DataFrame(
        {
            "time_epoch_s": wide["time_epoch_s"],
            "t_s": wide["t_s"],
            "interval_s": wide["interval_s"],
            "llc_misses_per_s": llc / wide["interval_s"],
            "cycles_per_s": col("cycles") / wide["interval_s"],
            "instructions_per_s": col("instructions") / wide["interval_s"],
            "llc_misses_per_cycle": llc / cycles,
            "instructions_per_cycle": col("instructions") / cycles,
        }
    )
    out.columns.name = None
    return out.sort_values("time_epoch_s").reset_index(drop=True)

"""psi monitor: pressure stall information from /proc/pressure/{cpu,io,memory}.

No external tool: a thread reads the three files every interval, paced on time.monotonic()
(tick k is due at start + k x interval, so there is no drift; ticks missed while the machine
stalled are skipped, not bunched; see base.SampledMonitor), and appends the raw values to
``psi.csv``. stop() takes one last sample, so the table covers the run up to the stop.

Raw files: ``psi.csv`` (one row per resource per sample: epoch_s, monotonic_s, resource,
some/full avg10/avg60/avg300 in %, some/full total in microseconds, error), ``psi.meta.json``.

Tidy columns: ``some_pct`` / ``full_pct`` are exact shares of the interval, from the delta of
the kernel's cumulative stall time (``total``, us) over the delta of monotonic wall time; the
first sample has no delta and is dropped. ``some_avg10_pct`` / ``full_avg10_pct`` are the
kernel's own 10 s running averages at the end of the interval. ``interval_s`` is the length of
the interval the shares cover.

Missing, never zero: no /proc/pressure (kernel without PSI, or booted with psi=0) or an unreadable
file -> missing(psi_<resource>). CPU "full" is undefined at the system level: kernels before 5.13
print no such line and later ones print zeros for compatibility, so system-wide cpu full is NaN
with a missing(psi_cpu_full) record; a "full" line absent for another resource likewise.
"""

from __future__ import annotations

import time
from pathlib import Path

from corun.errors import missing
from corun.monitors import base
from corun.monitors.base import NAN, diff, div, isnan, nan_last, to_float

NAME = "psi"
RAW_FILE = "psi.csv"
RESOURCES = ("cpu", "io", "memory")
PROC_PRESSURE = Path("/proc/pressure")

RAW_FIELDS = [
    "epoch_s",
    "monotonic_s",
    "resource",
    "some_avg10",
    "some_avg60",
    "some_avg300",
    "some_total_us",
    "full_avg10",
    "full_avg60",
    "full_avg300",
    "full_total_us",
    "error",
]

COLUMNS = [
    "time_epoch_s",
    "t_s",
    "resource",
    "some_pct",
    "full_pct",
    "some_avg10_pct",
    "full_avg10_pct",
    "interval_s",
]

CPU_FULL_REASON = (
    "psi: cpu 'full' is undefined at the system level (kernels >= 5.13 print zeros for "
    "compatibility, older ones no line)"
)


def parse_pressure(text: str) -> dict[str, dict[str, float]]:
    """``some avg10=1.20 avg60=0.61 avg300=0.51 total=3697370`` lines -> {kind: {key: value}}."""
    out: dict[str, dict[str, float]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or parts[0] not in ("some", "full"):
            continue
        values = {}
        for item in parts[1:]:
            key, _, value = item.partition("=")
            values[key] = int(value) if key == "total" else float(value)
        out[parts[0]] = values
    return out


def pressure_row(resource: str, text: str | None, error: str = "") -> dict:
    """One raw CSV row from a pressure file's text (or an error)."""
    row = {f: "" for f in RAW_FIELDS}
    row["resource"] = resource
    row["error"] = error
    if text is not None:
        parsed = parse_pressure(text)
        for kind in ("some", "full"):
            values = parsed.get(kind, {})
            for key in ("avg10", "avg60", "avg300"):
                if key in values:
                    row[f"{kind}_{key}"] = values[key]
            if "total" in values:
                row[f"{kind}_total_us"] = values["total"]
    return row


class PsiMonitor(base.SampledMonitor):
    name = NAME
    raw_csv = RAW_FILE
    purpose = "pressure stall information"
    default_root = PROC_PRESSURE

    def begin(self) -> list[str] | None:
        self._meta.update(
            root=str(self.root),
            scope="system" if self.root == PROC_PRESSURE else "custom",
            resources=list(RESOURCES),
        )
        if not self.root.is_dir():
            self._meta["unavailable"] = f"psi: no {self.root} (kernel without CONFIG_PSI, or booted with psi=0)"
            return None
        return RAW_FIELDS

    def sample(self) -> list[dict]:
        rows = []
        for resource in RESOURCES:
            try:
                text = (self.root / resource).read_text()
                error = ""
            except OSError as exc:
                text, error = None, base.os_error_text(exc)
            row = pressure_row(resource, text, error)
            row["epoch_s"] = repr(time.time())
            row["monotonic_s"] = repr(time.monotonic())
            rows.append(row)
        return rows

    @classmethod
    def tidy_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[base.Table, list[dict]]:
        """Tidy per-resource table from psi.csv (+ meta); see COLUMNS."""
        meta, _, raw, why = base.read_sampled(raw_dir, NAME, RAW_FILE)
        resources = meta.get("resources", list(RESOURCES))
        if why:
            return base.finish_table([], COLUMNS, t0_epoch), [missing(f"psi_{r}", why, NAME) for r in resources]

        system = meta.get("scope", "system") == "system"
        records = base.sampling_stopped(meta, NAME)
        out: list[dict] = []
        for resource in resources:
            rows = [r for r in raw if r.get("resource") == resource]
            bad = [r for r in rows if r.get("error")]
            ok = [r for r in rows if not r.get("error")]
            ok.sort(key=lambda r: nan_last(to_float(r.get("monotonic_s"))))
            if bad:
                records.append(
                    missing(
                        f"psi_{resource}",
                        f"psi: /proc/pressure/{resource} unreadable in {len(bad)} of {len(rows)} "
                        f"samples ({bad[0]['error']})",
                        NAME,
                    )
                )
            if not rows:
                records.append(missing(f"psi_{resource}", "psi: no samples recorded", NAME))
                continue
            mono = [to_float(r.get("monotonic_s")) for r in ok]
            clock = mono if not any(isnan(x) for x in mono) else [to_float(r.get("epoch_s")) for r in ok]
            dt = diff(clock)
            some, full = (
                diff([to_float(r.get("some_total_us")) for r in ok]),
                diff([to_float(r.get("full_total_us")) for r in ok]),
            )
            cpu_full_undefined = resource == "cpu" and system
            for i in range(1, len(ok)):
                r = ok[i]
                out.append(
                    {
                        "time_epoch_s": to_float(r.get("epoch_s")),
                        "resource": resource,
                        "some_pct": div(100.0 * some[i], dt[i] * 1e6),
                        "full_pct": NAN if cpu_full_undefined else div(100.0 * full[i], dt[i] * 1e6),
                        "some_avg10_pct": to_float(r.get("some_avg10")),
                        "full_avg10_pct": NAN if cpu_full_undefined else to_float(r.get("full_avg10")),
                        "interval_s": dt[i],
                    }
                )
            if cpu_full_undefined:
                records.append(missing("psi_cpu_full", CPU_FULL_REASON, NAME))
            elif ok and all(isnan(to_float(r.get("full_total_us"))) for r in ok):
                records.append(missing(f"psi_{resource}_full", f"psi: no 'full' line for {resource}", NAME))
        return base.finish_table(out, COLUMNS, t0_epoch), records


parse_psi = PsiMonitor.parse_raw  # tidy_raw as a pandas DataFrame

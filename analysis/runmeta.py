"""Run metadata (one run's metadata.json) as the report shows it, and missing measurements.

`summarize_metadata` turns one metadata.json into a flat record for the report's run table;
`collect_missing` merges the runs' `missing` lists into one list with a run count per entry.
A key the runner did not record stays None (the report shows "not recorded"); nothing is filled in.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path

from analysis.common import AnalysisInputError, read_json


def load_metadata(path: str | os.PathLike) -> dict:
    """Read one metadata.json; a missing or malformed file is a one-line error naming it."""
    path = Path(path)
    data = read_json(path, "run metadata not found (expected a metadata.json)")
    if not isinstance(data, dict):
        raise AnalysisInputError(f"{path}: (top level): {type(data).__name__} (expected an object)")
    return data


def _iso_utc(epoch: object) -> str | None:
    if isinstance(epoch, bool) or not isinstance(epoch, (int, float)):
        return None
    return datetime.fromtimestamp(epoch, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _text(value: object) -> str | None:
    return None if value is None else str(value)


def _number(value: object) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def format_throttle(throttle: object) -> str | None:
    """'read 50 MB/s (50000000 B/s)' for a read cap, 'none' when the run had no throttle."""
    if throttle is None:
        return "none"
    if not isinstance(throttle, dict):
        return str(throttle)
    parts = []
    for key, value in throttle.items():
        if key not in ("read_bps", "write_bps", "read_iops", "write_iops"):
            continue  # cgroup path, version, read-back: the same cap on every run
        if key.endswith("_bps") and isinstance(value, (int, float)) and not isinstance(value, bool):
            raw = f"{value:.0f}" if float(value).is_integer() else f"{value}"
            parts.append(f"{key[:-4]} {value / 1e6:g} MB/s ({raw} B/s)")
        elif value is not None:
            parts.append(f"{key} {value}")
    return ", ".join(parts) if parts else "none"


def summarize_metadata(path: str | os.PathLike) -> dict:
    """One run's metadata.json as a flat record (the `runs` items of a report section)."""
    meta = load_metadata(path)
    host = meta.get("host") or {}
    device = meta.get("device") or {}
    sched = meta.get("scheduler") or {}
    advice = meta.get("advice") or []
    return {
        "run_id": str(meta.get("run_id") or Path(path).parent.name),
        "host": _text(host.get("hostname")),
        "kernel_release": _text(host.get("kernel_release")),
        "cpu_model": _text(host.get("cpu_model")),
        "device": _text(device.get("name")),
        "elevator": _text(device.get("elevator")),
        "throttle": format_throttle(meta.get("throttle")),
        "scheduler": _text(sched.get("name")),
        "params": sched.get("params") if isinstance(sched.get("params"), dict) else None,
        "start": _iso_utc(meta.get("start_epoch_s")),
        "end": _iso_utc(meta.get("end_epoch_s")),
        "advice": [str(a) for a in advice] if isinstance(advice, list) else [str(advice)],
        "steal_pct": _number((meta.get("machine_cpu") or {}).get("steal_pct")),
        # processes that were not the run's own, and corun's runner and monitors among them
        # (corun.machine.foreign_cpu), in % of the CPUs' time while the jobs ran
        "foreign_pct": _number((meta.get("machine_cpu") or {}).get("foreign_pct")),
        "corun_pct": _number((meta.get("machine_cpu") or {}).get("corun_pct")),
        # attempts set aside for their steal or foreign CPU before this one was kept (corun run's remeasure)
        "remeasured": len((meta.get("remeasured") or {}).get("earlier") or []),
        "git_describe": _text(meta.get("git_describe")),
        "corun_version": _text(meta.get("corun_version")),
    }


def collect_missing(metadata_paths: Iterable[str | os.PathLike]) -> list[dict]:
    """The runs' missing measurements, deduplicated on (metric, reason, source), first-seen order.

    Each entry gets `runs`: how many runs recorded it (a run listing it twice counts once).
    """
    counts: dict[tuple[str, str, str], int] = {}
    for path in metadata_paths:
        entries = load_metadata(path).get("missing") or []
        if not isinstance(entries, list):
            raise AnalysisInputError(f"{path}: missing: {type(entries).__name__} (expected a list)")
        seen = set()
        for i, entry in enumerate(entries):
            if not isinstance(entry, dict) or not entry.get("metric") or not entry.get("reason"):
                raise AnalysisInputError(
                    f"{path}: missing[{i}]: {entry!r} (expected an object with metric, reason, source)"
                )
            key = (str(entry["metric"]), str(entry["reason"]), str(entry.get("source") or ""))
            if key not in seen:
                seen.add(key)
                counts[key] = counts.get(key, 0) + 1
    return [{"metric": m, "reason": r, "source": s, "runs": n} for (m, r, s), n in counts.items()]

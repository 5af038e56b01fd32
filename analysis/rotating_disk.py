"""The report section "the device": the emulated rotating disk's calibration beside its preset.

Reads the JSON of bench/rotating_disk_calibration.py and writes, in --out-dir, a section.json
(analysis/schemas/section.schema.json), device.png (aggregate bandwidth of concurrent sequential
readers with the prototype's figures; every check's measured value over the value it expects) and
device.csv (every row of the calibration, with the bench's own PASS / FAIL / info).

The section has no paper claims: the calibration's checks are corun's own instrument against its
tolerance, pass or fail (`checks`), never a paper verdict. A failed check leaves the runs on an
emulated disk of that preset unvouched: `failed_runs` names them for an experiment's analysis,
which marks them failed (`failed`, `failed_reason`) so every claim on them says *failed*, with
the check that failed.

    python -m analysis.rotating_disk --calibration results/bench/rotating_disk_calibration.json \
        --out-dir results/local/device
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

import pandas as pd

from analysis.common import dumps_json, fmt_num, table_to_csv, validate, write_atomic
from analysis.figures import no_data, plt, save_png
from corun.errors import CorunError, one_line_errors

TITLE = "The device: the emulated rotating disk against its preset"
PAPER = "Ruemmler & Wilkes, An introduction to disk drive modeling, IEEE Computer 1994"
BENCH = "bench/rotating_disk_calibration.py"
SOURCE = (
    "the preset's datasheet figures (docs/emulators/rotating_disk.md) and the prototype measured on this kind of VM"
)
_READERS = re.compile(r"^(\d+) readers? ")
_PLUS_MINUS = re.compile(r"^\+-(\d+(?:\.\d+)?) %")


# ----------------------------------------------------------------------------- the checks


def _with_unit(v, unit: str):
    """A value as the report shows it: numbers rounded for reading, with their unit."""
    if isinstance(v, bool) or v is None:
        return v
    if isinstance(v, (int, float)):
        return f"{fmt_num(v)} {unit}".strip()
    return f"{v} {unit}".strip() if unit and str(v) not in ("ok", "failed") else str(v)


def _rows(cal: dict) -> list[dict]:
    rows = cal.get("checks") if isinstance(cal, dict) else None
    if not isinstance(rows, list):
        raise CorunError(f"calibration: missing 'checks' (expected the JSON of {BENCH})", exit_code=2)
    for r in rows:
        if not isinstance(r, dict) or "check" not in r or "verdict" not in r:
            raise CorunError(f"calibration: checks: {r!r} (expected rows with a check and a verdict)", exit_code=2)
    return rows


def checks(cal: dict) -> list[dict]:
    """The calibration's PASS / FAIL rows as section checks (pass or fail against the tolerance);
    the bench's info rows that follow a check (the model's own figure for it) go in its note."""
    out = []
    for r in _rows(cal):
        if r["verdict"] == "info":
            if out and r["check"].startswith(" "):
                extra = f"{r['check'].strip()}: {_with_unit(r['measured'], r.get('unit', ''))}"
                out[-1]["note"] = "; ".join(x for x in (out[-1]["note"], extra) if x)
            continue
        out.append(
            {
                "check": r["check"].strip(),
                "expected": _with_unit(r.get("expected"), r.get("unit", "")),
                "measured": _with_unit(r.get("measured"), r.get("unit", "")),
                "tolerance": str(r.get("tolerance") or ""),
                "passed": True if r["verdict"] == "PASS" else False if r["verdict"] == "FAIL" else None,
                "note": "",
            }
        )
        if _READERS.match(r["check"].strip()) and isinstance(r.get("expected"), (int, float)):
            out[-1]["note"] = "expected: the prototype's figure, shown beside ours; the tolerance decides"
    return out


def failures(cal: dict) -> list[str]:
    """Each failed check as one line: 'name: measured M (expected E, tolerance)'."""
    return [
        f"{c['check']}: measured {c['measured']}, expected {c['expected']} ({c['tolerance']})"
        for c in checks(cal)
        if c["passed"] is False
    ]


def failed_runs(cal: dict | None, metas: dict[str, dict]) -> dict[str, str]:
    """run_id -> why, for every run whose emulated disk has the preset of a calibration that failed
    a check. Runs on another device or preset, and every run when the calibration was skipped or
    passed, are not named."""
    if not isinstance(cal, dict) or cal.get("skipped") or not cal.get("checks"):
        return {}
    bad = failures(cal)
    if not bad:
        return {}
    preset = cal.get("preset") or (cal.get("device") or {}).get("preset")
    why = f"the emulated disk (preset {preset}) failed its calibration: " + "; ".join(bad[:2])
    if len(bad) > 2:
        why += f" and {len(bad) - 2} more"
    out = {}
    for rid, meta in metas.items():
        dev = meta.get("device_setup") or {}
        if dev.get("kind") == "rotating_disk" and dev.get("preset") == preset:
            out[str(rid)] = why
    return out


def read_calibration(path: str | Path) -> dict:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise CorunError(f"{path}: {exc} (expected a calibration JSON of {BENCH})", exit_code=2) from None


# ----------------------------------------------------------------------------- the figure


def _readers(cal: dict, rows: list[dict]) -> tuple[dict[int, float], dict[int, float]]:
    """(measured, prototype) aggregate MB/s per reader count: the measurements, and the prototype's
    figures the calibration's reader rows expect."""
    got = {}
    for n, v in (((cal.get("measured") or {}).get("readers")) or {}).items():
        if isinstance(v, dict) and isinstance(v.get("aggregate_mb_s"), (int, float)):
            got[int(n)] = float(v["aggregate_mb_s"])
    proto = {}
    for r in rows:
        m = _READERS.match(r["check"].strip())
        if m and r.get("unit") == "MB/s" and isinstance(r.get("expected"), (int, float)):
            proto[int(m.group(1))] = float(r["expected"])
    return got, proto


def plot(cal: dict, path: Path) -> None:
    rows = _rows(cal)
    params = ((cal.get("device") or {}).get("model") or {}).get("params") or {}
    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    got, proto = _readers(cal, rows)
    ns = sorted(got)
    if ns:
        a.plot(ns, [got[n] for n in ns], "o-", label="measured (ext4, buffered)")
        pn = sorted(proto)
        a.plot(pn, [proto[n] for n in pn], "s--", label="prototype")
        if "rate_outer_mb_s" in params:
            a.axhline(params["rate_outer_mb_s"], color="grey", lw=0.8, ls=":", label="preset outer-zone rate")
        a.set_xscale("log", base=2)
        a.set_xticks(ns, [str(n) for n in ns])
        a.legend(fontsize=8)
    else:
        no_data(a, "no readers measured")
    a.set_xlabel("concurrent sequential readers")
    a.set_ylabel("aggregate bandwidth (MB/s)")
    a.set_ylim(bottom=0)
    bars = [
        r
        for r in rows
        if r["verdict"] in ("PASS", "FAIL")
        and isinstance(r.get("measured"), (int, float))
        and isinstance(r.get("expected"), (int, float))
        and r["expected"]
    ]
    if bars:
        x = range(len(bars))
        b.bar(
            x,
            [r["measured"] / r["expected"] for r in bars],
            0.6,
            color=["tab:green" if r["verdict"] == "PASS" else "tab:red" for r in bars],
        )
        for i, r in enumerate(bars):
            m = _PLUS_MINUS.match(str(r.get("tolerance") or ""))
            if m:
                tol = float(m.group(1)) / 100
                b.plot([i - 0.35, i + 0.35], [1 - tol] * 2, color="grey", lw=0.8)
                b.plot([i - 0.35, i + 0.35], [1 + tol] * 2, color="grey", lw=0.8)
        b.axhline(1.0, color="black", lw=0.8)
        b.set_xticks(list(x), [r["check"].strip().replace(" (", "\n(") for r in bars], fontsize=7, rotation=20)
    else:
        no_data(b, "no check with a numeric expectation")
    b.set_ylabel("measured / expected (grey: tolerance)")
    fig.suptitle(f"emulated disk, preset {cal.get('preset')}: green passed, red failed")
    fig.tight_layout()
    save_png(fig, path)


# ----------------------------------------------------------------------------- the section


def _write(section: dict, out_dir: Path) -> dict:
    out_dir.mkdir(parents=True, exist_ok=True)
    validate(section, "section.schema.json", str(out_dir / "section.json"))
    write_atomic(out_dir / "section.json", dumps_json(section))
    return section


def skipped_section(cal: dict, out_dir: Path) -> dict:
    """The calibration could not run on this machine: the section says why and shows nothing else."""
    reason = str(cal["skipped"])
    section = {
        "experiment": "rotating_disk_device",
        "title": TITLE,
        "paper": PAPER,
        "summary": f"Not measured on this machine: {reason}. Runs on an emulated disk are not vouched for.",
        "figures": [],
        "checks": [],
        "tables": [],
        "missing": [{"metric": "the emulated disk's calibration", "reason": reason, "source": BENCH, "runs": 1}],
        "runs": [],
        "notes": [f"Sources: {SOURCE}."],
    }
    return _write(section, out_dir)


def analyse(cal: dict, out_dir: Path) -> dict:
    if isinstance(cal, dict) and cal.get("skipped"):
        return skipped_section(cal, out_dir)
    if not isinstance(cal, dict):
        raise CorunError(f"calibration: {type(cal).__name__} (expected the JSON object of {BENCH})", exit_code=2)
    rows = _rows(cal)
    found = checks(cal)
    bad = failures(cal)
    got, _ = _readers(cal, rows)
    out_dir.mkdir(parents=True, exist_ok=True)
    plot(cal, out_dir / "device.png")
    write_atomic(out_dir / "device.csv", table_to_csv(pd.DataFrame(rows)))
    load = (cal.get("loadavg_before") or [None])[0], (cal.get("loadavg_after") or [None])[0]
    passed = sum(c["passed"] is True for c in found)
    verdict = (
        f"{passed} of {len(found)} checks passed."
        if not bad
        else f"FAILED {len(bad)} of {len(found)} checks: {'; '.join(bad)}. Runs on an emulated disk of preset "
        f"{cal.get('preset')} are not vouched for: an experiment that reads this calibration marks them failed."
    )
    section = {
        "experiment": "rotating_disk_device",
        "title": TITLE,
        "paper": f"{PAPER}; preset {cal.get('preset')}",
        "summary": f"The emulated disk, preset {cal.get('preset')}: {verdict} Aggregate bandwidth of concurrent "
        "sequential readers: " + ", ".join(f"{n}: {fmt_num(got[n])} MB/s" for n in sorted(got)) + f". Load average "
        f"{fmt_num(load[0])} before, {fmt_num(load[1])} after.",
        "figures": [
            {
                "path": "device.png",
                "caption": "Left: aggregate bandwidth of N concurrent buffered sequential readers through ext4, "
                "with the prototype's figures. Right: each check's measured value over the value it expects "
                "(green passed, red failed; grey lines: a +- tolerance).",
            }
        ],
        "checks": found,
        "tables": [{"title": "calibration rows (the bench's own PASS, FAIL and info)", "csv": "device.csv"}],
        "missing": [],
        "runs": [],
        "notes": [
            f"Sources: {SOURCE}.",
            "fio's latency includes the host's path (loop worker, FUSE round trip, fio); on a busy machine it "
            "exceeds the model's own service time, given in the check's note.",
            "Checks are pass or fail against their tolerance, not paper verdicts; the section has no claims.",
        ],
    }
    return _write(section, out_dir)


@one_line_errors(prefix="analysis.rotating_disk")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.rotating_disk", description=__doc__.split("\n")[0])
    ap.add_argument("--calibration", required=True, type=Path, help=f"JSON of {BENCH}")
    ap.add_argument("--out-dir", required=True, type=Path)
    args = ap.parse_args(argv)
    analyse(read_calibration(args.calibration), args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

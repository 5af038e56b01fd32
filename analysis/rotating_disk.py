"""The report section "the device": the emulated rotating disk's calibration beside its preset.

Reads the JSON of bench/rotating_disk_calibration.py and writes, in --out-dir, a section.json
(analysis/schemas/section.schema.json), device.png (aggregate bandwidth of concurrent
sequential readers, and QD1/QD32 random and sequential figures against the preset) and
device.csv (every check with its tolerance and verdict).

    python -m analysis.rotating_disk --calibration results/bench/rotating_disk_calibration.json \
        --out-dir results/local/device
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import pandas as pd  # noqa: E402

from corun.errors import CorunError, one_line_errors  # noqa: E402

from .common import dumps_json, table_to_csv, validate, write_atomic  # noqa: E402

# The prototype's figures (issue 11: the same stack on this kind of VM, 2010-era host settings).
PROTOTYPE = {1: 108.0, 2: 50.0, 4: 50.0}
SOURCE = (
    "the preset's datasheet figures (docs/emulators/rotating_disk.md) and the prototype measured on this kind of VM"
)


def _verdict(v: str) -> str:
    return (
        "reproduced in direction"
        if v == "PASS"
        else ("differs (machine-specific)" if v == "FAIL" else "not measurable here")
    )


TITLE = "The device: the emulated rotating disk against its preset"
PAPER = "Ruemmler & Wilkes, An introduction to disk drive modeling, IEEE Computer 1994"


def skipped_section(cal: dict, out_dir: Path) -> dict:
    """The calibration could not run on this machine: the section says why and shows nothing else."""
    reason = str(cal["skipped"])
    section = {
        "experiment": "rotating_disk_device",
        "title": TITLE,
        "paper": PAPER,
        "summary": f"Not measured on this machine: {reason}.",
        "figures": [],
        "comparison": [],
        "tables": [],
        "missing": [
            {
                "metric": "the emulated disk's calibration",
                "reason": reason,
                "source": "bench/rotating_disk_calibration.py",
                "runs": 1,
            }
        ],
        "runs": [],
        "notes": [f"Sources: {SOURCE}."],
    }
    out_dir.mkdir(parents=True, exist_ok=True)
    validate(section, "section.schema.json", str(out_dir / "section.json"))
    write_atomic(out_dir / "section.json", dumps_json(section))
    return section


def analyse(cal: dict, out_dir: Path) -> dict:
    if isinstance(cal, dict) and cal.get("skipped"):
        return skipped_section(cal, out_dir)
    try:
        m, checks, dev = cal["measured"], cal["checks"], cal["device"]
        readers = {int(k): v["aggregate_mb_s"] for k, v in m["readers"].items()}
        params = dev["model"]["params"]
        derived = dev["model"]["derived"]
    except (KeyError, TypeError, ValueError) as exc:
        raise CorunError(
            f"calibration: missing {exc} (expected the JSON of bench/rotating_disk_calibration.py)", exit_code=2
        ) from None
    out_dir.mkdir(parents=True, exist_ok=True)

    fig, (a, b) = plt.subplots(1, 2, figsize=(10, 3.8))
    ns = sorted(readers)
    a.plot(ns, [readers[n] for n in ns], "o-", label="measured (ext4, buffered)")
    pn = [n for n in ns if n in PROTOTYPE]
    a.plot(pn, [PROTOTYPE[n] for n in pn], "s--", label="prototype")
    a.axhline(params["rate_outer_mb_s"], color="grey", lw=0.8, ls=":", label="preset outer-zone rate")
    a.set_xscale("log", base=2)
    a.set_xticks(ns, [str(n) for n in ns])
    a.set_xlabel("concurrent sequential readers")
    a.set_ylabel("aggregate bandwidth (MB/s)")
    a.set_ylim(bottom=0)
    a.legend(fontsize=8)
    expected_qd1 = params["seek_avg_ms"] + derived["avg_rotational_latency_ms"]
    labels = ["QD1 random\nlatency (ms)", "sequential\n(MB/s)", "QD32/QD1\nIOPS (x)"]
    preset = [expected_qd1, params["rate_outer_mb_s"], 2.0]
    got = [
        m["qd1_random_4k"]["mean_latency_ms"],
        m["sequential_read"]["mb_s"],
        m["qd32_random_4k"]["iops"] / m["qd1_random_4k"]["iops"],
    ]
    x = range(len(labels))
    b.bar([i - 0.2 for i in x], [g / p for g, p in zip(got, preset)], 0.4, label="measured / preset")
    b.axhline(1.0, color="grey", lw=0.8)
    b.axhspan(0.9, 1.1, color="grey", alpha=0.15, label="+-10 %")
    b.set_xticks(list(x), labels)
    b.set_ylabel("measured / preset (QD32: / 2x)")
    b.legend(fontsize=8)
    fig.suptitle(f"emulated disk, preset {dev.get('preset')}")
    fig.tight_layout()
    fig.savefig(out_dir / "device.png", dpi=110)
    plt.close(fig)

    table = pd.DataFrame(checks)
    write_atomic(out_dir / "device.csv", table_to_csv(table))
    comparison = [
        {
            "quantity": c["check"],
            "paper_value": c["expected"] if not isinstance(c["expected"], str) else c["expected"],
            "measured_value": c["measured"],
            "unit": c["unit"],
            "verdict": _verdict(c["verdict"]),
            "note": c["tolerance"],
        }
        for c in checks
    ]
    c = m.get("counters") or {}
    load = cal.get("loadavg_before", [None])[0], cal.get("loadavg_after", [None])[0]
    section = {
        "experiment": "rotating_disk_device",
        "title": TITLE,
        "paper": f"{PAPER}; preset {dev.get('preset')}",
        "summary": (
            "Aggregate bandwidth of concurrent sequential readers: "
            + ", ".join(f"{n}: {readers[n]:.0f} MB/s" for n in ns)
            + f". QD1 random 4 KiB: {m['qd1_random_4k']['mean_latency_ms']:.1f} ms against "
            f"{expected_qd1:.1f} ms (average seek + half a revolution). Completion lateness p99 "
            f"{c.get('lateness_p99_ms', float('nan')):.2f} ms; load average {load[0]} before, {load[1]} after."
        ),
        "figures": [
            {
                "path": "device.png",
                "caption": "Left: aggregate bandwidth of N concurrent buffered "
                "sequential readers through ext4, with the prototype's figures. Right: fio's QD1 random "
                "latency, sequential rate and QD32/QD1 ratio over the preset's values.",
            }
        ],
        "comparison": comparison,
        "tables": [{"title": "calibration checks", "csv": "device.csv"}],
        "missing": [],
        "runs": [],
        "notes": [
            f"Sources: {SOURCE}.",
            "fio's latency includes the host's path (loop worker, FUSE round trip, fio); on a busy "
            "machine it exceeds the model's own service time, shown in the table.",
        ],
    }
    validate(section, "section.schema.json", str(out_dir / "section.json"))
    write_atomic(out_dir / "section.json", dumps_json(section))
    return section


@one_line_errors(prefix="analysis.rotating_disk")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m analysis.rotating_disk", description=__doc__.split("\n")[0])
    ap.add_argument("--calibration", required=True, type=Path, help="JSON of bench/rotating_disk_calibration.py")
    ap.add_argument("--out-dir", required=True, type=Path)
    args = ap.parse_args(argv)
    try:
        cal = json.loads(args.calibration.read_text())
    except (OSError, ValueError) as exc:
        raise CorunError(f"{args.calibration}: {exc} (expected a calibration JSON)", exit_code=2) from None
    analyse(cal, args.out_dir)
    return 0


if __name__ == "__main__":
    sys.exit(main())

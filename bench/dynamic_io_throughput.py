#!/usr/bin/env python3
"""Throughput of a D-TYPE workload under the dynamic I/O-aware scheduler, relative to Linux.

Runs (or reuses) a dynamic_io campaign of one D-TYPE explicit-I/O workload of Table 3 (duplicated
x264, freqmine, PS or KM jobs; #1 by default) under two variants, on the local emulated shared
device (a read cap shared by the run's jobs) or, with --disk, on an emulated rotating disk built
for each run (docs/emulators/rotating_disk.md), with interleaved reps, through the workflow
(snakemake --profile workflows/profiles/local). Prints the ratio of the throughputs (eq. 3,
jobs / T_workload) variant / baseline with the 95% t-interval of the per-rep log ratios, reps
paired, as experiments.dynamic_io.metrics computes it (improvement.csv). Runs already measured in
the results folder are reused, so a second call only analyses. Prints figures; it is not a
pass/fail test.

  .venv/bin/python bench/dynamic_io_throughput.py [--workload w01] [--reps 5] [--throttle-mbps 8]
      [--disk sata_7200_2010] [--keep-io-running 1] [--set apps.km.threads=1 ...]
      [--io-bound-mbps 6] [--timeslice-s 0.5] [--scale 0.05] [--batch-scale 0.03125]
      [--variant dynamic_io] [--baseline linux] [--results results/bench-dynamic_io] [--dry-run]
"""

from __future__ import annotations

import argparse
import csv
import math
import os
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.errors import ConfigError  # noqa: E402
from experiments.config import validate_config  # noqa: E402

EXPLICIT_D_TYPE = ("w01", "w02", "w03", "w04", "w05", "w06")


class BenchArgumentError(Exception):
    """A bad option: one line, exit code 2."""


def parse(argv: list[str] | None) -> argparse.Namespace:
    ap = argparse.ArgumentParser(
        prog="bench/dynamic_io_throughput.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument(
        "--workload", default="w01", help="a D-TYPE explicit-I/O workload of Table 3, w01 to w06 (default w01)"
    )
    ap.add_argument("--reps", type=int, default=5, help="interleaved reps, >= 2 (default 5)")
    ap.add_argument(
        "--throttle-mbps",
        type=float,
        default=None,
        help="read cap shared by the run's jobs, MB/s, > 0; 0: none (default 8, none with --disk)",
    )
    ap.add_argument(
        "--disk",
        default=None,
        metavar="PRESET",
        help="read the inputs from an emulated rotating disk of this preset (sata_7200_2010, sas_15k_2010)",
    )
    ap.add_argument(
        "--io-bound-mbps",
        type=float,
        default=6.0,
        help="IO_BOUND_INTERVAL of the variant, MB/s, > 0 (default 6: 75%% of the cap)",
    )
    ap.add_argument(
        "--timeslice-s", type=float, default=0.5, help="TIMESLICE of the variant, 0.05 to 60 s (default 0.5)"
    )
    ap.add_argument("--scale", type=float, default=0.05, help="input size factor, 0 < f <= 1 (default 0.05)")
    ap.add_argument(
        "--batch-scale",
        type=float,
        default=0.03125,
        help="batch length factor, 0 < f <= 1 (default 1/32; at least one full load)",
    )
    ap.add_argument(
        "--keep-io-running",
        type=int,
        default=0,
        help="the variant's keep_io_running: never suspend below this many jobs doing I/O (default 0: the paper's)",
    )
    ap.add_argument(
        "--set",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="any other key of the dynamic_io section, dotted, with a YAML value "
        "(apps.km.threads=1, device.rotating_disk.queue_window=1); repeatable",
    )
    ap.add_argument("--variant", default="dynamic_io", help="variant under test (default dynamic_io)")
    ap.add_argument("--baseline", default="linux", help="baseline variant (default linux)")
    ap.add_argument(
        "--results",
        default="results/bench-dynamic_io",
        help="results folder, relative to the repository (default results/bench-dynamic_io)",
    )
    ap.add_argument("--dry-run", action="store_true", help="print the workflow command, run nothing")
    return ap.parse_args(argv)


def check(a: argparse.Namespace) -> None:
    def bad(opt: str, value: object, expected: str) -> None:
        raise BenchArgumentError(f"{opt}: {value!r} (expected {expected})")

    if a.workload not in EXPLICIT_D_TYPE:
        bad("--workload", a.workload, "a D-TYPE explicit-I/O workload: " + ", ".join(EXPLICIT_D_TYPE))
    if a.reps < 2:
        bad("--reps", a.reps, "an integer >= 2: the interval needs paired reps")
    if a.throttle_mbps is None:
        a.throttle_mbps = 0.0 if a.disk else 8.0
    if not (math.isfinite(a.throttle_mbps) and a.throttle_mbps >= 0):
        bad("--throttle-mbps", a.throttle_mbps, "a number >= 0 (0: no cap)")
    if not (math.isfinite(a.io_bound_mbps) and a.io_bound_mbps > 0):
        bad("--io-bound-mbps", a.io_bound_mbps, "a number > 0")
    if a.variant == a.baseline:
        bad("--variant", a.variant, f"a variant other than the baseline {a.baseline!r}")
    if Path(a.results).is_absolute() or ".." in Path(a.results).parts:
        bad("--results", a.results, "a folder relative to the repository, without '..'")


def bench_config(a: argparse.Namespace) -> dict:
    """The workflow configuration of the benchmark, validated (a bad value is a one-line error)."""
    section = {
        "workloads": [a.workload],
        "variants": [a.baseline, a.variant],
        "baseline": a.baseline,
        "paper_variant": a.variant,
        "reps": a.reps,
        "alone_reps": 1,
        "scale": a.scale,
        "batch_scale": a.batch_scale,
        "throttle": {"read_bps": int(a.throttle_mbps * 1e6)} if a.throttle_mbps else None,
        "io_bound_mbps": a.io_bound_mbps,
        "timeslice_s": a.timeslice_s,
        "timeslice_graph_s": a.timeslice_s,
        # merged over local.yaml: everything local.yaml sets for its disk campaign is set here
        "device": {"kind": "rotating_disk", "rotating_disk": {"preset": a.disk}} if a.disk else {"kind": "throttle"},
        "variant_params": {"dynamic_io": {"keep_io_running": 0}},  # unused unless it runs
        "overhead": {"workload": None, "timeslices_s": []},  # no overhead runs: the throughput only
        "apps": {"x264": {"frames": 128}, "km": {"threads": 8, "points": 2000000, "iterations": 2}},
    }
    if a.keep_io_running:
        section["variant_params"][a.variant] = {"keep_io_running": a.keep_io_running}
    for item in a.set:
        key, sep, text = item.partition("=")
        if not sep or not key:
            raise BenchArgumentError(f"--set: {item!r} (expected KEY=VALUE, such as apps.km.threads=1)")
        *parents, leaf = key.split(".")
        node = section
        for part in parents:
            node = node.setdefault(part, {})
            if not isinstance(node, dict):
                raise BenchArgumentError(f"--set: {item!r} (expected {part} to be a section)")
        node[leaf] = yaml.safe_load(text)
    cfg = {
        "results_dir": a.results,
        "data_dir": f"{a.results}/data",
        "experiments": ["dynamic_io"],
        "dynamic_io": section,
        "report": {"title": "dynamic_io throughput benchmark"},
    }
    try:
        validate_config(cfg, "bench options")
    except ConfigError as exc:
        raise BenchArgumentError(str(exc)) from None
    return cfg


def command(a: argparse.Namespace, config_file: Path) -> list[str]:
    smk = Path(sys.executable).parent / "snakemake"
    return [
        str(smk),
        "--profile",
        "workflows/profiles/local",
        "--configfile",
        str(config_file),
        "--",
        f"{a.results}/dynamic_io/analysis/section.json",
    ]


def read_ratio(a: argparse.Namespace) -> dict:
    path = ROOT / a.results / "dynamic_io" / "analysis" / "improvement.csv"
    with open(path, newline="") as fh:
        for row in csv.DictReader(fh):
            if (row["workload"], row["variant"], row["metric"]) == (a.workload, a.variant, "throughput_jobs_per_s"):
                return row
    raise BenchArgumentError(f"{path}: no throughput row for {a.workload} and {a.variant}")


def main(argv: list[str] | None = None) -> int:
    try:
        a = parse(argv)
        check(a)
        cfg = bench_config(a)
    except BenchArgumentError as exc:
        print(f"dynamic_io_throughput: {exc}", file=sys.stderr)
        return 2
    config_file = ROOT / a.results / "bench.yaml"
    cmd = command(a, config_file)
    if a.dry_run:
        print(yaml.safe_dump(cfg, sort_keys=False), end="")
        print(" ".join(cmd))
        return 0
    config_file.parent.mkdir(parents=True, exist_ok=True)
    config_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}")
    res = subprocess.run(cmd, cwd=ROOT, env=env)
    if res.returncode != 0:
        print(
            f"dynamic_io_throughput: the workflow failed (exit {res.returncode}); see {a.results}/dynamic_io/logs",
            file=sys.stderr,
        )
        return 1
    row = read_ratio(a)
    ratio, lo, hi = (float(row[k]) if row[k] else math.nan for k in ("ratio", "ratio_ci95_low", "ratio_ci95_high"))
    device = f"emulated disk {a.disk}" if a.disk else "the results folder's disk"
    cap = f"read cap {a.throttle_mbps:g} MB/s" if a.throttle_mbps else "no read cap"
    print(
        f"workload {a.workload} on {device}, {row['n_pairs']} paired reps, {cap}, "
        f"IO_BOUND {a.io_bound_mbps:g} MB/s, TIMESLICE {a.timeslice_s:g} s"
    )
    if a.keep_io_running or a.set:
        print("  " + ", ".join([f"keep_io_running {a.keep_io_running}", *a.set]))
    print(
        f"throughput {a.variant} / {a.baseline}: {ratio:.3f}  95% CI [{lo:.3f}, {hi:.3f}] (t-interval of the "
        "per-rep log ratios, paired by rep)"
    )
    print(
        f"  {a.baseline}: {float(row['baseline_mean']):.4g} jobs/s, {a.variant}: {float(row['variant_mean']):.4g} "
        "jobs/s (means over the paired reps)"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""The in-memory study of paper 004 (section 6, Figs. 13-14): Si-SAIs (a thread pair on one
CPU) against Si-Irqbalance (a process pair left to the Linux scheduler), kernels/sais_inmem.

For each number of applications (default 1 and 2; the paper sweeps to the core count) it runs
the two modes in an interleaved, seeded order, --reps times each, and prints MB/s per mode (mean
and 95% t-interval), the ratio thread / process of the harmonic means of MB/s with a 95%
bootstrap interval (reps unpaired),
CPU utilisation, the share of strips consumed on the CPU that read them, and the analytic
model's P and M (experiments/sais/model.py) from the one-application runs with eq. 9 for the
paper's 48 servers on this machine's cores. L2 misses come from the kernel, null with the
reason where the machine has no PMU. Writes every run and the summary as JSON. Prints figures;
it is not a pass/fail test.

  .venv/bin/python bench/sais_inmem.py [--apps 1,2] [--reps 5] [--duration-s 2] [--warmup-s 0.3]
      [--files 8] [--strip-size 64K] [--request-size 1M] [--dir /dev/shm] [--seed 1]
      [--out results/bench-sais_inmem/summary.json]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.stats import bootstrap_ratio, t_interval  # noqa: E402
from corun.util import atomic_write_json  # noqa: E402
from experiments.sais import model as sais_model  # noqa: E402

KERNEL = ROOT / "kernels" / "build" / "sais_inmem"
MODES = ("thread", "process")


class BenchArgumentError(Exception):
    """A bad option: one line, exit code 2."""


def parse(argv):
    ap = argparse.ArgumentParser(
        prog="bench/sais_inmem.py", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--apps", default="1,2", help="concurrent applications, comma-separated (default 1,2)")
    ap.add_argument("--reps", type=int, default=5, help="repetitions per mode and app count, >= 2 (default 5)")
    ap.add_argument("--duration-s", default="2", help="measured seconds per run (default 2)")
    ap.add_argument("--warmup-s", default="0.3", help="discarded seconds per run (default 0.3)")
    ap.add_argument("--files", default="8", help="files (servers) (default 8)")
    ap.add_argument("--strip-size", default="64K", help="strip size (default 64K)")
    ap.add_argument("--request-size", default="1M", help="request size (default 1M)")
    ap.add_argument("--dir", default="/dev/shm", help="tmpfs folder for the files (default /dev/shm)")
    ap.add_argument("--seed", type=int, default=1, help="seed of the run order (default 1)")
    ap.add_argument(
        "--out",
        default=str(ROOT / "results" / "bench-sais_inmem" / "summary.json"),
        help="JSON output (default results/bench-sais_inmem/summary.json)",
    )
    a = ap.parse_args(argv)
    try:
        a.apps = [int(x) for x in a.apps.split(",") if x.strip()]
    except ValueError:
        raise BenchArgumentError(
            f"corun: bench/sais_inmem.py: --apps: {a.apps!r} (expected integers >= 1, comma-separated)"
        ) from None
    if not a.apps or min(a.apps) < 1:
        raise BenchArgumentError(f"corun: bench/sais_inmem.py: --apps: {a.apps!r} (expected integers >= 1)")
    if a.reps < 2:
        raise BenchArgumentError(f"corun: bench/sais_inmem.py: --reps: {a.reps} (expected an integer >= 2)")
    return a


def run_once(a, mode: str, apps: int) -> dict:
    argv = [
        str(KERNEL),
        "--mode",
        mode,
        "--apps",
        str(apps),
        "--duration-s",
        a.duration_s,
        "--warmup-s",
        a.warmup_s,
        "--files",
        a.files,
        "--strip-size",
        a.strip_size,
        "--request-size",
        a.request_size,
        "--dir",
        a.dir,
    ]
    res = subprocess.run(argv, capture_output=True, text=True, timeout=600, check=False)
    if res.returncode == 2:
        raise BenchArgumentError(res.stderr.strip().splitlines()[-1])
    if res.returncode != 0:
        raise RuntimeError(f"sais_inmem exited {res.returncode}: {res.stderr.strip()}")
    return json.loads(res.stdout)


def mean(xs):
    return sum(xs) / len(xs) if xs else float("nan")


def main(argv=None) -> int:
    try:
        a = parse(argv)
    except BenchArgumentError as exc:
        print(exc, file=sys.stderr)
        return 2
    if not os.access(KERNEL, os.X_OK):
        subprocess.run(["make", "-s", "-C", str(ROOT / "kernels"), "build/sais_inmem"], check=True)
    order = [(n, m) for n in a.apps for m in MODES for _ in range(a.reps)]
    random.Random(a.seed).shuffle(order)
    runs: list[dict] = []
    try:
        for i, (n, m) in enumerate(order):
            r = run_once(a, m, n)
            runs.append(r)
            print(f"  run {i + 1}/{len(order)}: {m:7s} apps={n}  {r['bw_mb_s']:9.1f} MB/s", file=sys.stderr)
    except BenchArgumentError as exc:
        print(exc, file=sys.stderr)
        return 2
    summary = {
        "seed": a.seed,
        "reps": a.reps,
        "order": order,
        "rows": [],
        "model": None,
        "online_cpus": runs[0]["online_cpus"],
        "kernel_release": runs[0]["kernel_release"],
        "host": runs[0]["host"],
        "l2_misses_missing": runs[0]["l2_misses_missing"],
    }
    print(
        f"\nsais_inmem on {summary['host']} ({summary['online_cpus']} CPUs), {a.reps} reps, "
        f"strip {a.strip_size}, request {a.request_size}, {a.files} files\n"
    )
    print(
        f"{'apps':>4} {'Si-SAIs MB/s (95% CI)':>28} {'Si-Irqbalance MB/s (95% CI)':>30} "
        f"{'ratio (95% CI)':>24} {'util% T/P':>11} {'same-CPU T/P':>13}"
    )
    for n in a.apps:
        by = {m: [r for r in runs if r["mode"] == m and r["apps"] == n] for m in MODES}
        bw = {m: [r["bw_mb_s"] for r in by[m]] for m in MODES}
        ci = {m: t_interval(bw[m]) for m in MODES}
        ratio, lo, hi = bootstrap_ratio(bw["process"], bw["thread"], "harmonic", seed=a.seed)
        util = {m: mean([r["cpu_util_user_pct"] + r["cpu_util_sys_pct"] for r in by[m]]) for m in MODES}
        same = {m: mean([r["same_cpu_share"] for r in by[m]]) for m in MODES}
        row = {"apps": n, "ratio_thread_over_process": ratio, "ratio_ci95": [lo, hi]}
        for m in MODES:
            row[m] = {
                "bw_mb_s": bw[m],
                "bw_mb_s_mean": mean(bw[m]),
                "bw_mb_s_ci95": list(ci[m]),
                "cpu_util_pct_mean": util[m],
                "same_cpu_share_mean": same[m],
                "cache_misses": [r["cache_misses"] for r in by[m]],
            }
        summary["rows"].append(row)
        cell = {m: f"{mean(bw[m]):8.1f} ({ci[m][0]:7.1f}-{ci[m][1]:7.1f})" for m in MODES}
        print(
            f"{n:>4} {cell['thread']:>28} {cell['process']:>30} "
            f"{ratio:8.3f} ({lo:6.3f}-{hi:6.3f}) {util['thread']:5.1f}/{util['process']:<5.1f} "
            f"{same['thread']:6.2f}/{same['process']:<6.2f}"
        )
    for row in summary["rows"]:
        moved = 1 - row["process"]["same_cpu_share_mean"]
        if moved < 0.1:  # experiments/sais/claims.yaml: inmem_strips_cross_cores
            print(
                f"apps={row['apps']}: Si-Irqbalance consumed {100 * moved:.0f} % of its strips on another CPU than the "
                "one that read them: the scheduler kept the pair together, so its ratio shows little of the data "
                "movement between cores the paper's simulation reproduces"
            )
    if 1 in a.apps:
        one = {m: [r for r in runs if r["mode"] == m and r["apps"] == 1] for m in MODES}
        p_s, m_s = sais_model.p_m_from_inmem(
            {
                "strips": sum(r["strips"] for r in one["thread"]),
                "measured_s": sum(r["measured_s"] for r in one["thread"]),
            },
            {
                "strips": sum(r["strips"] for r in one["process"]),
                "measured_s": sum(r["measured_s"] for r in one["process"]),
            },
        )
        n_c = summary["online_cpus"]
        n_s = 48 if 48 % n_c == 0 else n_c * 24
        summary["model"] = sais_model.evaluate(p_s=p_s, m_s=m_s, n_s=n_s, n_c=n_c, n_r=1)
        print(
            f"\nmodel inputs from 1 application: P = {p_s * 1e6:.2f} us/strip, M = {m_s * 1e6:.2f} us/strip "
            f"(M/P = {m_s / p_s:.2f}); eq. 9 for N_S = {n_s}, N_C = {n_c}, one request: "
            f"T_balance - T_source_aware >= {summary['model']['eq9_difference_lower_s'] * 1e6:.1f} us"
        )
    print(f"L2 misses: {summary['l2_misses_missing'] or 'see cache_misses'}")
    out = Path(a.out)
    atomic_write_json(out, {"summary": summary, "runs": runs})
    print(f"wrote {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

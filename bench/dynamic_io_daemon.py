#!/usr/bin/env python3
"""What the dynamic I/O-aware scheduler daemon costs (schedulers/dynamic_io).

1. Decision time per quantum: the decision module alone (Procedure 4: sort per CMP, suspend
   or resume) on N jobs with random I/O rates, state carried from quantum to quantum
   (`corun-dynamic-io --bench-decide N`). Targets: <= 1 ms at 256 jobs, <= 20 ms at 10,000.
2. CPU use of the daemon at TIMESLICE = 1 s following N real jobs (default 256 processes, each
   in its own process group as the runner starts them): its user + system CPU time over the
   run divided by the wall time, in % of one core (target <= 0.5 % at 256 jobs). Also printed:
   the mean time per quantum to read every job's /proc/<pid>/io (the collector) and to decide.

Prints figures; it is not a pass/fail test.

  .venv/bin/python bench/dynamic_io_daemon.py [--jobs 256] [--duration-s 60] [--timeslice-s 1]
      [--decide-jobs 256,10000] [--rounds 2000] [--cmps 8]
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.run import schedulers  # noqa: E402
from corun.util import proc_starttime  # noqa: E402

DIO = ROOT / "schedulers" / "dynamic_io"
EXE = DIO / "build" / "corun-dynamic-io"


def decision_time(sizes: list[int], rounds: int, cmps: int) -> None:
    print("decision time per quantum (decision module alone):")
    for n in sizes:
        r = min(rounds, max(50, 2_000_000 // n))
        out = json.loads(
            subprocess.run(
                [str(EXE), "--bench-decide", str(n), "--rounds", str(r), "--cmps", str(cmps)],
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        print(
            f"  {n:6d} jobs, {cmps} CMPs, {r} quanta: mean {out['mean_us'] / 1000:.3f} ms, "
            f"p99 {out['p99_us'] / 1000:.3f} ms, max {out['max_us'] / 1000:.3f} ms"
        )


def cpu_use(n_jobs: int, duration_s: float, timeslice_s: float, cmps: int) -> None:
    with tempfile.TemporaryDirectory(prefix="corun-bench-dio-") as tmp:
        tmp = Path(tmp)
        jobs = [subprocess.Popen(["sleep", str(duration_s + 60)], start_new_session=True) for _ in range(n_jobs)]
        try:
            now = time.monotonic()
            with open(tmp / "events.jsonl", "w") as fh:
                for i, p in enumerate(jobs):
                    fh.write(
                        json.dumps(
                            {
                                "event": "start",
                                "job_id": f"j{i:05d}",
                                "pid": p.pid,
                                "starttime": proc_starttime(p.pid),
                                "cmp": i % cmps,
                                "cpus": [0],
                                "t_s": 0.0,
                                "mono_s": now,
                            }
                        )
                        + "\n"
                    )
            # the manifest's start command: its defaults, this quantum and a bound of 40 MB/s
            params = {"timeslice_s": timeslice_s, "io_bound_mbps": 40}
            argv = schedulers.command("dynamic_io", "start", params, job_events=tmp / "events.jsonl", state_dir=tmp)
            d = subprocess.Popen(argv)
            time.sleep(duration_s)
            d.send_signal(signal.SIGTERM)
            d.wait(timeout=30)
            s = json.loads((tmp / "summary.json").read_text())
        finally:
            for p in jobs:
                p.kill()
                p.wait()
    cpu = s["cpu_user_s"] + s["cpu_sys_s"]
    print(f"daemon CPU use, {n_jobs} jobs, TIMESLICE {timeslice_s} s, {s['wall_s']:.0f} s ({s['quanta']} quanta):")
    print(
        f"  {100 * cpu / s['wall_s']:.3f} % of one core ({cpu:.3f} s CPU); per quantum: collect "
        f"{s['collect_us']['mean'] / 1000:.3f} ms (max {s['collect_us']['max'] / 1000:.3f}), "
        f"decide {s['decide_us']['mean'] / 1000:.3f} ms"
    )


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--jobs", type=int, default=256, help="jobs followed for the CPU-use figure (default 256)")
    ap.add_argument("--duration-s", type=float, default=60, help="how long the daemon runs (default 60)")
    ap.add_argument("--timeslice-s", type=float, default=1.0, help="TIMESLICE (default 1)")
    ap.add_argument("--decide-jobs", default="256,10000", help="job counts for the decision time")
    ap.add_argument("--rounds", type=int, default=2000, help="quanta per decision-time figure (at most)")
    ap.add_argument("--cmps", type=int, default=8, help="CMPs the jobs spread over (default 8, the paper's)")
    a = ap.parse_args()
    for name, v, lo in (("--jobs", a.jobs, 1), ("--rounds", a.rounds, 1), ("--cmps", a.cmps, 1)):
        if v < lo:
            ap.error(f"{name}: {v} (expected an integer >= {lo})")
    if a.duration_s <= 0 or not 0.05 <= a.timeslice_s <= 60:
        ap.error(f"--duration-s {a.duration_s} / --timeslice-s {a.timeslice_s} (expected > 0 / 0.05 to 60)")
    try:
        sizes = [int(x) for x in a.decide_jobs.split(",") if x]
    except ValueError:
        ap.error(f"--decide-jobs: {a.decide_jobs!r} (expected integers separated by commas)")
    subprocess.run(["make", "-s", "-C", str(DIO), "all"], check=True)
    decision_time(sizes, a.rounds, a.cmps)
    cpu_use(a.jobs, a.duration_s, a.timeslice_s, a.cmps)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""What the placement daemon (schedulers/placement/pin.py) costs: its CPU time over wall time
while it keeps N sleeping jobs (each with a thread) pinned and samples their CPUs, for a few
intervals. Prints one line per setting; run on a quiet machine.

    .venv/bin/python bench/placement_daemon.py [--jobs 16] [--seconds 10]
"""

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.util import proc_starttime  # noqa: E402

JOB = (
    "import threading, time\nthreading.Thread(target=time.sleep, args=(3600,), daemon=True).start()\ntime.sleep(3600)\n"
)


def one(n_jobs: int, seconds: float, interval_s: float, sample_s: float) -> float:
    with tempfile.TemporaryDirectory() as tmp:
        events = Path(tmp) / "events.jsonl"
        events.touch()
        procs = [subprocess.Popen([sys.executable, "-c", JOB], start_new_session=True) for _ in range(n_jobs)]
        cpus = sorted(os.sched_getaffinity(0))
        with open(events, "a") as fh:
            for i, p in enumerate(procs):
                fh.write(
                    json.dumps(
                        {"event": "start", "job_id": f"{i:04d}-j{i}", "pid": p.pid, "starttime": proc_starttime(p.pid)}
                    )
                    + "\n"
                )
        tasks = ",".join(f"cpu:j{i}" for i in range(n_jobs))
        d = subprocess.Popen(
            [
                sys.executable,
                str(ROOT / "schedulers/placement/pin.py"),
                "--job-events",
                str(events),
                "--state-dir",
                f"{tmp}/state",
                "--cpus",
                f"{cpus[0]}-{cpus[-1]}",
                "--policy",
                "cfs",
                "--tasks",
                tasks,
                "--interval-s",
                str(interval_s),
                "--sample-interval-s",
                str(sample_s),
            ],
            env={**os.environ, "PYTHONPATH": str(ROOT)},
        )
        time.sleep(1.0)  # start-up (imports) left out below
        t0 = time.monotonic()
        with open(f"/proc/{d.pid}/stat") as fh:
            f0 = fh.read().rsplit(")", 1)[1].split()
        time.sleep(seconds)
        with open(f"/proc/{d.pid}/stat") as fh:
            f1 = fh.read().rsplit(")", 1)[1].split()
        wall = time.monotonic() - t0
        tick = os.sysconf("SC_CLK_TCK")
        cpu_s = (int(f1[11]) + int(f1[12]) - int(f0[11]) - int(f0[12])) / tick
        d.send_signal(signal.SIGTERM)
        d.wait()
        for p in procs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        return 100.0 * cpu_s / wall


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--jobs", type=int, default=16)
    ap.add_argument("--seconds", type=float, default=10.0)
    args = ap.parse_args()
    print(
        f"placement daemon, {args.jobs} jobs of 2 threads, {args.seconds:.0f} s each, load average "
        f"{os.getloadavg()[0]:.2f}"
    )
    for interval_s, sample_s in ((0.05, 0.5), (0.2, 1.0), (1.0, 1.0)):
        pct = one(args.jobs, args.seconds, interval_s, sample_s)
        print(f"interval_s {interval_s:<5} sample_interval_s {sample_s:<4} CPU {pct:5.2f} % of one core")
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""What the MPI coscheduling node daemon costs at MPL 5 (schedulers/mpi_cosched).

Five 2-rank jobs of the NPB stand-in (kernels/build/mpi_stencil: halo exchange every iteration,
an all-reduce every 5, an all-to-all every 10) run together on this node under the daemon of
each scheme for --duration-s; then the daemon is stopped (SIGTERM, its summary is written) and
the jobs are killed. Printed per scheme: the daemon's CPU time over wall time in % of one core
(user + system, from its summary), its ticks, the message arrivals it saw, boosts and wakeups
per second, the ticks it missed (it ran late: load, or RT throttling when boosted spinning ranks
use the real-time share), the ticks with two or more ranks with pending messages (conflicts), the
boost-conflict ratio (BCR: context switches of the ranks taken while two or more had pending
messages, over all their context switches) and the mean message delay (MD: wait start to
consumption, over completed requests). Needs root (SCHED_FIFO). Figures, not a test.

  .venv/bin/python bench/mpi_cosched_daemon.py [--schemes local,dcs,sb,cc_b] [--duration-s 5]
      [--jobs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.run import schedulers  # noqa: E402

MC = ROOT / "schedulers" / "mpi_cosched"
STENCIL = ROOT / "kernels" / "build" / "mpi_stencil"
SCHEMES = ["local", "batch", "dcs", "pb", "ib", "sb", "hybrid", "cc_s", "cc_b", "gang"]


def one(scheme: str, duration: float, njobs: int, tmp: Path) -> dict:
    state = tmp / scheme
    state.mkdir()
    shm = f"/corun-bench-{os.getpid()}-{scheme}"
    d = subprocess.Popen(
        schedulers.command(scheme, "start", {"shm": shm, "mpl": njobs}, state_dir=state),  # the manifest's options
        stderr=subprocess.PIPE,
        text=True,
    )
    jobs = []
    try:
        until = time.monotonic() + 10
        while not (state / "rank_env.json").exists():
            if d.poll() is not None or time.monotonic() > until:
                raise SystemExit(f"{scheme}: the daemon did not start: {d.stderr.read()}")
            time.sleep(0.02)
        env = json.loads((state / "rank_env.json").read_text())
        for j in range(njobs):
            cmd = ["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "tcp,self"]
            for k, v in {**env, "CORUN_COSCHED_JOB": f"job{j}"}.items():
                cmd += ["-x", f"{k}={v}"]
            cmd += [
                str(STENCIL),
                "--iters",
                "100000000",
                "--cells",
                "16384",
                "--sweeps",
                "2",
                "--allreduce-every",
                "5",
                "--alltoall-every",
                "10",
            ]
            jobs.append(
                subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
            )
        time.sleep(duration)
    finally:
        d.send_signal(signal.SIGTERM)
        d.wait(timeout=30)
        for p in jobs:
            os.killpg(p.pid, signal.SIGKILL)
            p.wait()
        Path("/dev/shm", shm[1:]).unlink(missing_ok=True)
    return json.loads((state / "summary.json").read_text())


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemes", default="local,dcs,sb,cc_b")
    ap.add_argument("--duration-s", type=float, default=5.0)
    ap.add_argument("--jobs", type=int, default=5)
    a = ap.parse_args()
    schemes = [s for s in a.schemes.split(",") if s]
    bad = [s for s in schemes if s not in SCHEMES]
    if bad or a.duration_s <= 0 or not 1 <= a.jobs <= 20:
        ap.error(f"--schemes: some of {', '.join(SCHEMES)}; --duration-s > 0; --jobs 1 to 20")
    if os.geteuid() != 0:
        print("skipped: the daemon needs root (SCHED_FIFO)")
        sys.exit(4)
    if shutil.which("mpirun") is None:
        print("skipped: mpirun not found (the openmpi role)")
        sys.exit(4)
    subprocess.run(["make", "-s", "-C", str(MC), "all"], check=True)
    subprocess.run(["make", "-s", "-C", str(ROOT / "kernels")], check=True)
    print(
        f"{a.jobs} jobs x 2 ranks of mpi_stencil for {a.duration_s:g} s per scheme, "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'scheme':8s} {'CPU %':>6s} {'ticks/s':>8s} {'late':>6s} {'arrivals/s':>10s} {'boosts/s':>9s} "
        f"{'wakeups/s':>9s} {'conflicts':>9s} {'BCR':>6s} {'MD us':>8s}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for s in schemes:
            r = one(s, a.duration_s, a.jobs, Path(tmp))
            w = r["wall_s"]
            msgs = sum(x["msgs"] for x in r["ranks"])
            md = (sum(x["md_mean_us"] * x["msgs"] for x in r["ranks"] if x["msgs"]) / msgs) if msgs else float("nan")
            bcr = r["bcr"] if r["bcr"] is not None else float("nan")
            print(
                f"{s:8s} {100 * r['cpu_share']:6.2f} {r['ticks'] / w:8.0f} {r['missed_ticks']:6d} "
                f"{r['arrivals'] / w:10.0f} "
                f"{r['boosts'] / w:9.0f} {r['wakeups'] / w:9.0f} {r['conflicts']:9d} {bcr:6.3f} {md:8.1f}"
            )


if __name__ == "__main__":
    main()

#!/usr/bin/env python3
"""What the PMPI interposition library of the MPI coscheduling variants costs per message.

A two-rank ping-pong (schedulers/mpi_cosched/build/cosched-pingpong, 8-byte messages, no work
between them) over Open MPI's TCP BTL (the transport the variants use), in these configurations:

  bare       no library: Open MPI's own MPI_Send/MPI_Recv
  spin       libcorun_cosched.so, waiting by spinning (LOCAL, DCS, PB, CC-S, gang)
  spinblock  spin 150 us, then block (SB), no daemon
  block      block at once (IB, HYBRID, CC-B) with no daemon: a blocked rank wakes only by its
             futex timeout (50 us doubling up to 1 ms), the cost of blocking without help
  ib         block, with the node daemon (scheme ib) waking the rank when data arrives on its
             sockets and boosting it (needs root)
  dcs        spin, with the node daemon (scheme dcs) boosting on arrival (needs root)

Reps are interleaved in a seeded random order. Printed per configuration: the median half round
trip of each rep (one-way latency; the median because a rank descheduled by other load makes a
few round trips very long), its mean over reps in us with the 95% t-interval, the ratio to bare
with a paired 95% bootstrap interval, the mean over reps of the 99th-percentile round trip, and
the CPU share of rank 1 (the waiting side). Figures, not a test.

  .venv/bin/python bench/mpi_interposition_overhead.py [--reps 5] [--iters 5000]
      [--configs bare,spin,spinblock,block,ib,dcs] [--seed 1]
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis.stats import bootstrap_ratio, t_interval  # noqa: E402
from corun.run import schedulers  # noqa: E402

MC = ROOT / "schedulers" / "mpi_cosched"
BUILD = MC / "build"
PINGPONG = BUILD / "cosched-pingpong"
LIB = BUILD / "libcorun_cosched.so"

LIB_PARAMS = ("spin_us", "block_min_us", "block_max_us", "coll")  # the library's variables a daemon writes

CONFIGS = {
    "bare": (None, {}),
    "spin": (None, {"CORUN_COSCHED_WAIT": "spin"}),
    "spinblock": (None, {"CORUN_COSCHED_WAIT": "spinblock"}),
    "block": (None, {"CORUN_COSCHED_WAIT": "block"}),
    "ib": ("ib", {}),
    "dcs": ("dcs", {}),
}


def one_rep(config: str, iters: int, tmp: Path, n: int) -> dict:
    scheme, env = CONFIGS[config]
    daemon = None
    shm = f"/corun-bench-{os.getpid()}-{n}"
    if config != "bare":  # without a daemon, the library's variables at the manifest's defaults
        defaults = schedulers.manifest("mpi_cosched")["params"]
        lib_env = {f"CORUN_COSCHED_{p.upper()}": str(defaults[p]["default"]) for p in LIB_PARAMS}
        env = {"LD_PRELOAD": str(LIB), "CORUN_COSCHED_SHM": shm, "CORUN_COSCHED_SEND_WAIT": "spin", **lib_env, **env}
    try:
        if scheme:
            state = tmp / f"state-{n}"
            state.mkdir()
            daemon = subprocess.Popen(
                schedulers.command(scheme, "start", {"shm": shm}, state_dir=state),  # the manifest's options
                stderr=subprocess.PIPE,
                text=True,
            )
            until = time.monotonic() + 10
            while not (state / "rank_env.json").exists():
                if daemon.poll() is not None or time.monotonic() > until:
                    raise SystemExit(f"{config}: the daemon did not start: {daemon.stderr.read()}")
                time.sleep(0.02)
            env = json.loads((state / "rank_env.json").read_text())
        cmd = ["mpirun", "-np", "2", "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "tcp,self"]
        for k, v in env.items():
            cmd += ["-x", f"{k}={v}"]
        cmd += [str(PINGPONG), "--iters", str(iters), "--warmup", "200"]
        res = subprocess.run(cmd, check=False, capture_output=True, text=True, timeout=600)
        if res.returncode != 0:
            raise SystemExit(f"{config}: ping-pong failed: {res.stderr.strip()[-500:]}")
        ranks = {d["rank"]: d for d in map(json.loads, (ln for ln in res.stdout.splitlines() if ln.startswith("{")))}
        return {
            "half_rtt_us": ranks[0]["half_rtt_median_us"],
            "half_rtt_mean_us": ranks[0]["half_rtt_us"],
            "rtt_p99_us": ranks[0]["rtt_p99_us"],
            "cpu_share_rank1": ranks[1]["cpu_share"],
        }
    finally:
        if daemon is not None:
            daemon.send_signal(signal.SIGTERM)
            daemon.wait(timeout=20)
        Path("/dev/shm", shm[1:]).unlink(missing_ok=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=5)
    ap.add_argument("--iters", type=int, default=5000)
    ap.add_argument("--configs", default="bare,spin,spinblock,block,ib,dcs")
    ap.add_argument("--seed", type=int, default=1)
    a = ap.parse_args()
    configs = [c for c in a.configs.split(",") if c]
    for c in configs:
        if c not in CONFIGS:
            ap.error(f"--configs: {c!r} (expected some of {', '.join(CONFIGS)})")
    if a.reps < 2 or a.iters < 1:
        ap.error("--reps: at least 2; --iters: at least 1")
    if shutil.which("mpirun") is None:
        print("skipped: mpirun not found (the openmpi role)")
        sys.exit(4)
    subprocess.run(["make", "-s", "-C", str(MC), "all"], check=True)
    if os.geteuid() != 0 and any(CONFIGS[c][0] for c in configs):
        print("note: ib and dcs need root (the daemon uses SCHED_FIFO); left out")
        configs = [c for c in configs if not CONFIGS[c][0]]
    order = [(rep, c) for rep in range(a.reps) for c in configs]
    rng = random.Random(a.seed)
    for rep in range(a.reps):  # shuffled within each round: a round is a block for pairing
        block = order[rep * len(configs) : (rep + 1) * len(configs)]
        rng.shuffle(block)
        order[rep * len(configs) : (rep + 1) * len(configs)] = block
    out: dict[str, list[dict]] = {c: [None] * a.reps for c in configs}
    with tempfile.TemporaryDirectory() as tmp:
        for n, (rep, c) in enumerate(order):
            out[c][rep] = one_rep(c, a.iters, Path(tmp), n)
            print(f"  rep {rep} {c:10s} {out[c][rep]['half_rtt_us']:9.1f} us", file=sys.stderr)
    print(
        f"ping-pong, 8 B, TCP BTL, {a.iters} round trips x {a.reps} reps (seed {a.seed}), "
        f"{os.cpu_count()} CPUs, load {os.getloadavg()[0]:.2f}"
    )
    print(
        f"{'config':10s} {'half RTT us':>12s} {'95% CI':>19s} {'x bare':>7s} {'95% CI':>15s} "
        f"{'p99 RTT us':>10s} {'rank-1 CPU':>10s}"
    )
    base = [r["half_rtt_us"] for r in out["bare"]] if "bare" in out else None
    for c in configs:
        v = [r["half_rtt_us"] for r in out[c]]
        lo, hi = t_interval(v)
        mean = sum(v) / len(v)
        cpu = sum(r["cpu_share_rank1"] for r in out[c]) / len(v)
        p99 = sum(r["rtt_p99_us"] for r in out[c]) / len(v)
        if base is not None:
            ratio, rlo, rhi = bootstrap_ratio(base, v, paired=True, seed=a.seed)
            rtxt = f"{ratio:7.2f} [{rlo:5.2f}, {rhi:5.2f}]"
        else:
            rtxt = f"{'-':>7s} {'':>15s}"
        print(f"{c:10s} {mean:12.1f} [{lo:7.1f}, {hi:7.1f}] {rtxt} {p99:10.0f} {cpu:10.2f}")


if __name__ == "__main__":
    main()

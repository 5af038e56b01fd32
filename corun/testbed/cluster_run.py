"""One run on a netns test cluster that exists only for that run.

    python -m corun.testbed.cluster_run --hosts N [--cpus-per-host K] --prefix P --subnet CIDR
                                        --state-dir DIR -- SPEC --out RUN_DIR

brings up N namespace hosts (scripts/netns-cluster up, each on CPUs of its own with
--cpus-per-host), runs `corun run SPEC --out RUN_DIR` against the inventory DIR/inventory.yml,
and removes the cluster afterwards, whatever happened to the run (its failure, SIGTERM or
SIGINT). A cluster left in DIR by a killed earlier attempt is removed first, and one left by
a SIGKILL of this command is removed by `corun recover` (corun.testbed.guard). The exit status is
the run's; 1 when the cluster could not be brought up or removed. The signal handler only
records the signal: the run, in the same process group, gets it too and tears itself down.
"""

from __future__ import annotations

import argparse
import signal
import subprocess
import sys
from pathlib import Path

from corun.testbed.guard import Guard
from corun.util import repo_root

SCRIPT = repo_root() / "scripts" / "netns-cluster"


def cluster(state_dir: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--state-dir", str(state_dir), *args],
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corun.testbed.cluster_run", description=__doc__.split("\n\n")[0])
    ap.add_argument("--hosts", type=int, required=True, help="namespace hosts (1 to 200)")
    ap.add_argument("--cpus-per-host", type=int, default=None, help="CPUs of each host's own cpuset")
    ap.add_argument("--prefix", required=True, help="name prefix of the namespaces")
    ap.add_argument("--subnet", required=True, help="IPv4 network of the cluster")
    ap.add_argument("--state-dir", required=True, type=Path, help="the cluster's state; inventory.yml inside")
    ap.add_argument("run", nargs=argparse.REMAINDER, help="-- SPEC --out RUN_DIR: the arguments of corun run")
    a = ap.parse_args(argv)
    run_args = a.run[1:] if a.run[:1] == ["--"] else a.run
    if not run_args:
        print("cluster_run: no run given (expected -- SPEC --out RUN_DIR)", file=sys.stderr)
        return 2
    state = a.state_dir.resolve()
    got: list[int] = []
    old = {s: signal.signal(s, lambda signum, frame: got.append(signum)) for s in (signal.SIGTERM, signal.SIGINT)}
    rc = 1
    guard = Guard("cluster", state)  # corun recover takes it down if this process is killed
    try:
        rc = _up_and_run(a, state, run_args, got)
    finally:
        down = cluster(state, "down")
        for s, h in old.items():
            signal.signal(s, h)
        if down.returncode != 0:
            print(f"cluster_run: netns-cluster down failed: {down.stderr.strip()}", file=sys.stderr)
            rc = rc or 1
        else:
            guard.close()
    return rc


def _up_and_run(a: argparse.Namespace, state: Path, run_args: list[str], got: list[int]) -> int:
    if (state / "state.json").exists():
        cluster(state, "down")  # left by a killed attempt
    up_args = [
        "up",
        str(a.hosts),
        "--prefix",
        a.prefix,
        "--subnet",
        a.subnet,
        "--inventory",
        str(state / "inventory.yml"),
    ]
    if a.cpus_per_host:
        up_args += ["--cpus-per-host", str(a.cpus_per_host)]
    up = cluster(state, *up_args)
    if up.returncode != 0:
        print(f"cluster_run: netns-cluster up failed: {up.stderr.strip()}", file=sys.stderr)
        return up.returncode if up.returncode in (2, 4) else 1
    print(up.stdout.strip(), file=sys.stderr)
    if got:
        return 130
    rc = subprocess.Popen([sys.executable, "-m", "corun", "run", *run_args]).wait()
    return 130 if got and rc == 0 else rc


if __name__ == "__main__":
    sys.exit(main())

"""What the benchmarks share: the repository's folders, running a command from the repository root,
stopping at a failed step with its last line, the netns cluster (scripts/netns-cluster) and a
parallel file system's config on it, and the figures file a benchmark writes.

A benchmark puts the repository root on sys.path and imports this as `bench._common`.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import yaml

from corun.testbed.cluster_run import cluster as netns_cluster  # scripts/netns-cluster, checked by the caller

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ROOT / "scripts" / "netns-cluster"
PFS_READ = ROOT / "kernels" / "build" / "pfs_read"
LINK_MBIT = 1000  # a link of the netns cluster as the pfs benchmarks shape it (tc TBF): 1 GbE


def run(argv: list[str], timeout: float | None = 600) -> subprocess.CompletedProcess:
    """ARGV run from the repository root, its output captured as text (TIMEOUT None: no limit)."""
    return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, cwd=ROOT)


def must(res: subprocess.CompletedProcess, prog: str, what: str) -> str:
    """RES's stdout; if it failed, exit with "PROG: WHAT failed: <its last line of stderr, else
    of stdout>"."""
    if res.returncode != 0:
        lines = (res.stderr.strip() or res.stdout.strip()).splitlines() or ["?"]
        sys.exit(f"{prog}: {what} failed: {lines[-1]}")
    return res.stdout


def finish_cluster(prog: str, state: Path, work: Path, keep: bool) -> None:
    """Take the netns cluster of STATE down (a failure is one line on stderr), then keep the run
    folders in WORK/runs (KEEP: say where) or remove WORK."""
    down = netns_cluster(state, "down")
    if down.returncode != 0:
        print(f"{prog}: netns-cluster down failed: {down.stderr.strip()}", file=sys.stderr)
    if keep:
        print(f"runs kept in {work / 'runs'}", file=sys.stderr)
    else:
        shutil.rmtree(work, ignore_errors=True)


@contextlib.contextmanager
def netns_up(
    prog: str, hosts: int, tmp_prefix: str, *, prefix: str, subnet: str, timeout: float = 600
) -> Iterator[tuple[Path, Path, Path]]:
    """A netns cluster of HOSTS hosts (PREFIX-n1 ...) on SUBNET, its state in a temporary folder
    WORK: yields (WORK, the state folder, the inventory); taken down and WORK removed at the end.
    TIMEOUT: seconds each netns-cluster command may take."""
    with tempfile.TemporaryDirectory(prefix=tmp_prefix) as tmp:
        work = Path(tmp)
        state, inventory = work / "netns", work / "inventory.yml"
        cluster = [sys.executable, str(CLUSTER), "--state-dir", str(state)]
        up = ["up", str(hosts), "--prefix", prefix, "--subnet", subnet, "--inventory", str(inventory)]
        must(run(cluster + up, timeout), prog, "netns-cluster up")
        try:
            yield work, state, inventory
        finally:
            run(cluster + ["down"], timeout)


def need_pfs_read(prog: str) -> None:
    """Exit with a one-line reason when kernels/build/pfs_read is not built."""
    if not PFS_READ.exists():
        sys.exit(f"{prog}: kernels/build/pfs_read is missing: make -C kernels (needs the glusterfs role)")


def pfs_read_options(ap: argparse.ArgumentParser, prog: str, reps: int, reps_help: str) -> None:
    """The options of a benchmark that reads one file through pfs_read on the netns cluster:
    client links, file size, repetitions, request size, reading processes, figures file."""
    ap.add_argument("--links", default="1,3", help="client link counts of 1 GbE each (default 1,3)")
    ap.add_argument("--mib", type=int, default=256, help="file size in MiB (default 256)")
    ap.add_argument("--reps", type=int, default=reps, help=f"{reps_help} (default {reps})")
    ap.add_argument("--transfer-size", default="1M", help="bytes per request (default 1M)")
    ap.add_argument("--tasks", type=int, default=1, help="reading processes (default 1)")
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / f"{prog}.json"))


def pfs_command(d: Path, inventory: Path, state: Path, **settings) -> list[str]:
    """The `python -m corun.testbed.pfs` command of a file system on the netns cluster of STATE
    (INVENTORY), its root and state in folder D, with SETTINGS (servers, link, ...); its config
    is written to D/pfs.yaml."""
    cfg = d / "pfs.yaml"
    config = {"inventory": str(inventory), "root": str(d / "root"), "netns_state": str(state)}
    config |= {"state_dir": str(d / "state"), **settings}
    cfg.write_text(yaml.safe_dump(config))
    return [sys.executable, "-m", "corun.testbed.pfs", "--config", str(cfg)]


def corun_run_command(work: Path, name: str, spec: dict) -> tuple[list[str], Path]:
    """The quiet `corun run` of SPEC, written to WORK/NAME.yaml, and its output folder
    WORK/runs/NAME."""
    path = work / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    out = work / "runs" / name
    return [sys.executable, "-m", "corun", "run", str(path), "--out", str(out), "--quiet"], out


def machine(t0: float, load_before: tuple) -> dict:
    """What a figures file records of the machine and the run that started at T0 (epoch s)."""
    return {
        "start_epoch_s": t0,
        "duration_s": time.time() - t0,
        "kernel_release": os.uname().release,
        "host": os.uname().nodename,
        "loadavg_before": load_before,
        "loadavg_after": os.getloadavg(),
        "nproc": os.cpu_count(),
    }


def write_figures(path: str | Path, figures: dict) -> Path:
    """FIGURES as indented JSON in PATH (its folder made); returns the path."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(figures, indent=2) + "\n")
    return path

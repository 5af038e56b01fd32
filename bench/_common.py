"""What the benchmarks share: the repository's folders, running a command from the repository root,
stopping at a failed step with its last line, the netns cluster (scripts/netns-cluster) and a
parallel file system's config on it, and the figures file a benchmark writes.

A benchmark puts the repository root on sys.path and imports this as `bench._common`.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import yaml

from corun.testbed.cluster_run import cluster as netns_cluster  # scripts/netns-cluster, checked by the caller

ROOT = Path(__file__).resolve().parent.parent
CLUSTER = ROOT / "scripts" / "netns-cluster"
PFS_READ = ROOT / "kernels" / "build" / "pfs_read"


def run(argv: list[str], timeout: float = 600) -> subprocess.CompletedProcess:
    """ARGV run from the repository root, its output captured as text."""
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

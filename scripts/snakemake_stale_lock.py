#!/usr/bin/env python3
"""Remove Snakemake's directory lock when no Snakemake process holds it.

    python scripts/snakemake_stale_lock.py [DIR]     # DIR: the workflow's directory (default .)

Snakemake locks its working directory in DIR/.snakemake/locks while it runs and removes the lock
when it exits. A Snakemake killed (SIGKILL, a crash, a power cut) leaves the lock behind and the
next `snakemake` stops with "Directory cannot be locked". The lock files name no process, so
this looks for one: a process whose program is `snakemake` (`snakemake`, `python .../snakemake`
or `python -m snakemake`) working in DIR (its current directory, or its --directory/-d). With
none, the lock is stale: the lock files are removed and one line says so. With one, nothing is
touched and one line names it. Without a lock it prints nothing.

Exit 0 in every case (the next Snakemake reports a lock it cannot take); 2 on a usage error.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path


def _cmdline(pid: str) -> list[str]:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace").split("\0")[:-1]
    except OSError:
        return []


def snakemake_dir(argv: list[str], cwd: Path) -> Path | None:
    """The directory a Snakemake command line works in, or None when it is not Snakemake."""
    if not argv:
        return None
    names = [os.path.basename(argv[0])]
    rest = argv[1:]
    if rest and names[0].startswith("python"):
        if rest[:2] == ["-m", "snakemake"]:
            names, rest = ["snakemake"], rest[2:]
        else:
            names, rest = [os.path.basename(rest[0])], rest[1:]
    if names[0] != "snakemake":
        return None
    for i, arg in enumerate(rest):
        if arg in ("--directory", "-d") and i + 1 < len(rest):
            return (cwd / rest[i + 1]).resolve()
        if arg.startswith("--directory="):
            return (cwd / arg.split("=", 1)[1]).resolve()
    return cwd


def holders(workdir: Path, proc: Path = Path("/proc")) -> list[int]:
    """Pids of the Snakemake processes working in WORKDIR (this process excepted)."""
    workdir = workdir.resolve()
    out = []
    for d in proc.glob("[0-9]*"):
        if int(d.name) == os.getpid():
            continue
        argv = _cmdline(d.name)
        if not argv:
            continue
        try:
            cwd = Path(os.readlink(d / "cwd"))
        except OSError:
            continue
        where = snakemake_dir(argv, cwd)
        if where is not None and where == workdir:
            out.append(int(d.name))
    return sorted(out)


def clear_stale(workdir: Path) -> str | None:
    """Remove WORKDIR's Snakemake lock if no Snakemake process holds it; the line to print."""
    locks = workdir / ".snakemake" / "locks"
    files = sorted(locks.glob("*.lock")) if locks.is_dir() else []
    if not files:
        return None
    pids = holders(workdir)
    if pids:
        return (
            f"snakemake lock {locks} kept: held by Snakemake process {', '.join(map(str, pids))}, "
            "still running in this directory"
        )
    for f in files:
        f.unlink(missing_ok=True)
    n = len(files)
    return f"removed a stale snakemake lock ({locks}, {n} file(s)): no Snakemake process runs in this directory"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) > 1 or (args and args[0].startswith("-")):
        print("usage: snakemake_stale_lock.py [DIR]", file=sys.stderr)
        return 2
    workdir = Path(args[0] if args else ".")
    if not workdir.is_dir():
        print(f"snakemake_stale_lock: {workdir}: not a directory (expected the workflow's directory)", file=sys.stderr)
        return 2
    line = clear_stale(workdir)
    if line:
        print(line)
    return 0


if __name__ == "__main__":
    sys.exit(main())

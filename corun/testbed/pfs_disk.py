"""A data server's brick on the emulated rotating disk (corun.machine.rotating_disk), run on the
server's host by corun.testbed.pfs (brick backend `rotating_disk`).

    python -m corun.testbed.pfs_disk up --work DIR --target BRICK < CONFIG.json
    python -m corun.testbed.pfs_disk stats --work DIR
    python -m corun.testbed.pfs_disk down --work DIR

`up` builds the stack of docs/emulators/rotating_disk.md (FUSE daemon, loop device with direct
I/O, ext4) with the brick folder as its mount, in the timed mode, and leaves it running; every
step goes to a journal in DIR (not corun's state folder: the disk outlives the command, and
`corun recover` must not end it). pfs's own journal holds `down`, which unwinds that journal
newest first (unmount, detach, end the daemon) and prints the daemon's last counters; it does
nothing when DIR holds no journal. `stats` asks the running daemon for its counters (SIGUSR1)
and prints them (JSON). CONFIG is device.rotating_disk's configuration (preset, size_bytes,
stroke, queue_window, model, host, rt_priority).
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import time
from pathlib import Path

from corun.emulators import ROTATING_DISK
from corun.errors import CorunError, one_line_errors
from corun.machine import rotating_disk as rd  # also registers the disk's undo handlers
from corun.machine.state import Journal, run_undo
from corun.util import atomic_write_text

RUN_ID = "brick"


def journal_file(work: Path) -> Path:
    return work / f"{RUN_ID}.journal.json"


def _state(work: Path) -> dict | None:
    try:
        return json.loads((work / "rotating_disk" / RUN_ID / "state.json").read_text())
    except (OSError, ValueError):
        return None


def up(work: Path, target: str, cfg: dict) -> dict:
    os.environ["CORUN_STATE_DIR"] = str(work)  # the disk's folder (fuse mount, state) goes there too
    rd.check_machine(ROTATING_DISK, "pfs", "brick.backend")
    resolved = rd.resolve(cfg, ROTATING_DISK, "pfs", "brick.rotating_disk")
    work.mkdir(parents=True, exist_ok=True)
    if journal_file(work).exists():
        raise CorunError(f"pfs_disk: {journal_file(work)} exists: a disk is up there; run down first")
    journal = Journal(RUN_ID, directory=work)
    disk = rd.RotatingDisk(resolved, journal, target, RUN_ID)
    try:
        disk.start(timed=True)
    except BaseException:
        errors = journal.unwind()
        if errors:
            print("pfs_disk: undoing a failed up: " + "; ".join(errors), file=sys.stderr)
        raise
    desc = disk.describe()
    atomic_write_text(work / "describe.json", json.dumps(desc, indent=1) + "\n")
    journal.release()  # the journal file stays: down unwinds it
    return desc


def _daemon_pid(work: Path) -> int | None:
    try:
        actions = json.loads(journal_file(work).read_text())["actions"]
    except (OSError, ValueError, KeyError):
        return None
    for a in actions:
        if a.get("kind") == "rotating_disk_daemon":
            return a.get("pid")
    return None


def stats(work: Path, timeout_s: float = 2.0) -> dict | None:
    """The daemon's counters, fresh if it is running (SIGUSR1 makes it write them)."""
    before = _state(work)
    pid = _daemon_pid(work)
    if pid is None:
        return before
    try:
        os.kill(pid, signal.SIGUSR1)
    except ProcessLookupError:
        return before
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        s = _state(work)
        if s and s.get("now_epoch_s") != (before or {}).get("now_epoch_s"):
            return s
        time.sleep(0.02)
    return _state(work)


def down(work: Path) -> tuple[dict | None, list[str]]:
    jf = journal_file(work)
    if not jf.exists():
        return _state(work), []
    actions = json.loads(jf.read_text()).get("actions", [])
    errors, left = [], []
    for a in reversed(actions):
        err = run_undo(a)
        if err:
            errors.append(err)
            left.insert(0, a)
    if left:
        atomic_write_text(jf, json.dumps({"run_id": RUN_ID, "actions": left}, indent=1))
    else:
        jf.unlink()
    return _state(work), errors


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("command", choices=["up", "stats", "down"])
    ap.add_argument("--work", required=True, type=Path, help="the disk's folder on this host")
    ap.add_argument("--target", help="the brick folder the disk's ext4 is mounted on (up)")
    a = ap.parse_args(argv)
    work = a.work.resolve()
    if a.command == "up":
        if not a.target:
            raise CorunError("pfs_disk: up: --target is required")
        desc = up(work, a.target, json.loads(sys.stdin.read() or "{}"))
        print(json.dumps({"loop_device": desc["loop_device"], "mount": desc["mount"]}))
        return 0
    if a.command == "stats":
        print(json.dumps(stats(work)))
        return 0
    state, errors = down(work)
    print(json.dumps(state))
    if errors:
        raise CorunError("pfs_disk: down left: " + "; ".join(errors))
    return 0


if __name__ == "__main__":
    sys.exit(main())

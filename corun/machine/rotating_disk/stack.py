"""The block stack on the daemon's image: the loop device (direct I/O), mkfs and the mounts, and
the undo handlers of their journal actions (also used by `corun recover` for a dead runner's
journal)."""

from __future__ import annotations

import subprocess
from pathlib import Path

from corun.errors import CorunError
from corun.machine.disk_mounts import _daemon_healthy, _fuse_conn, _loops_of, _umount, abort_fuse
from corun.machine.state import undo_handler

MKFS_ARGV = ["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard"]


@undo_handler("rotating_disk_mount")
def _undo_mount(action: dict) -> None:
    """Unmount the run's file system; abort the FUSE connection first if the daemon is gone
    or stopped, so the unmount's writes fail instead of waiting."""
    conn = action.get("fuse_conn") or _fuse_conn(action.get("fuse_dir", ""))
    if not _daemon_healthy(action.get("daemon_pid"), action.get("daemon_starttime")):
        abort_fuse(conn)
    _umount(action["target"], conn)


@undo_handler("rotating_disk_loop")
def _undo_loop(action: dict) -> None:
    """Detach the loop device(s) on the image (found by backing file, so a crash between
    losetup and the journal update is covered too)."""
    for loop in _loops_of(action["backing"]):
        subprocess.run(["losetup", "-d", loop], capture_output=True, timeout=30)


def check_direct_io(loop: str) -> None:
    name = Path(loop).name
    if Path(f"/sys/block/{name}/loop/dio").read_text().strip() != "1":
        raise CorunError(f"{loop}: direct I/O is off (losetup --direct-io=on was refused)")


def mount_action(what: str, target: str, fuse_dir: str, fuse_conn, daemon: dict) -> dict:
    """The journal action of a mount of the emulated disk's file system on TARGET."""
    return {
        "kind": "rotating_disk_mount",
        "what": what,
        "target": target,
        "fuse_dir": fuse_dir,
        "fuse_conn": fuse_conn,
        "daemon_pid": daemon["pid"],
        "daemon_starttime": daemon["starttime"],
    }

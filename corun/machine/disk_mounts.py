"""What the emulated disk and a run's device share with the system: commands with a one-line
error, the mount table, FUSE connections and their abort, lazy unmounts, a daemon's state by
pid and start time, loop devices of a backing file, and evicting files from the page cache."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

from corun.errors import CorunError
from corun.util import proc_ended, proc_state


def _run(argv: list[str], what: str, timeout: float = 120) -> str:
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise CorunError(f"{what}: {' '.join(argv)} did not finish in {timeout:.0f} s") from None
    if res.returncode != 0:
        raise CorunError(f"{what}: {' '.join(argv)} exited {res.returncode}: {res.stderr.strip()[-300:]}")
    return res.stdout


def _mounts() -> list[list[str]]:
    try:
        return [ln.split() for ln in Path("/proc/self/mountinfo").read_text().splitlines()]
    except OSError:
        return []


def _mount_entry(target: str) -> list[str] | None:
    for f in _mounts():
        if len(f) > 4 and f[4] == target:
            return f
    return None


def _fuse_conn(target: str) -> str | None:
    """The FUSE connection number of the mount at TARGET (its device's minor), from mountinfo
    (a stat() could hang on a dead mount)."""
    f = _mount_entry(target)
    if f is None:
        return None
    major, minor = f[2].split(":")
    return minor if major == "0" else None


def abort_fuse(conn: str | None) -> bool:
    """Abort a FUSE connection: every pending and future request fails at once."""
    if not conn:
        return False
    base = Path("/sys/fs/fuse/connections")
    if not (base / conn).exists() and not any(f[4] == str(base) for f in _mounts() if len(f) > 4):
        subprocess.run(["mount", "-t", "fusectl", "fusectl", str(base)], capture_output=True)
    try:
        (base / conn / "abort").write_text("1")
        return True
    except OSError:
        return False


def _umount(target: str, conn: str | None = None, grace_s: float = 15.0) -> None:
    """Unmount TARGET. Its final writes may wait on a daemon that hangs (stopped, stuck): an
    unmount in uninterruptible sleep cannot be killed, so it runs in the background and, if it
    is not done within GRACE_S, the FUSE connection CONN is aborted (the writes then fail and
    the unmount ends); a lazy unmount is the last resort."""
    if _mount_entry(target) is None:
        return
    proc = subprocess.Popen(["umount", target], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        proc.wait(timeout=grace_s)  # polls from 0.5 ms up: a quick unmount is not rounded up
    except subprocess.TimeoutExpired:
        pass
    if proc.poll() is None:
        abort_fuse(conn)
        try:
            proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            pass
    if _mount_entry(target) is not None:
        abort_fuse(conn)
        subprocess.run(["umount", "-l", target], capture_output=True, timeout=30)
    if _mount_entry(target) is not None:
        raise RuntimeError(f"{target} is still mounted")


def _daemon_healthy(pid: int | None, starttime: int | None) -> bool:
    return proc_state(pid, starttime) not in (None, "T", "t", "Z", "X")


def _wait_exit(pid: int, starttime: int | None, timeout_s: float) -> bool:
    """Wait until the process has exited (a zombie counts; our own child is reaped)."""
    end = time.monotonic() + timeout_s
    while True:
        try:
            os.waitpid(pid, os.WNOHANG)
        except ChildProcessError:
            pass
        if proc_ended(pid, starttime):
            return True
        if time.monotonic() > end:
            return False
        time.sleep(0.02)


def _loops_of(backing: str) -> list[str]:
    res = subprocess.run(["losetup", "-j", backing, "-O", "NAME", "-n"], capture_output=True, text=True)
    loops = [ln.strip() for ln in res.stdout.splitlines() if ln.strip()]
    if not loops:  # losetup -j stat()s the file: on a dead FUSE mount, match sysfs instead
        for b in Path("/sys/block").glob("loop*/loop/backing_file"):
            try:
                if b.read_text().strip() in (backing, backing + " (deleted)"):
                    loops.append(f"/dev/{b.parent.parent.name}")
            except OSError:
                pass
    return loops


def _evict(paths: list[str]) -> int:
    """Drop the files under PATHS (files or folders) from the page cache; how many there were."""
    n = 0
    for root in paths:
        r = Path(root)
        for f in [r] if r.is_file() else r.rglob("*"):
            if f.is_file():
                fd = os.open(f, os.O_RDONLY)
                try:
                    os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
                finally:
                    os.close(fd)
                n += 1
    return n

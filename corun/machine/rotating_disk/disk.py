"""The emulated rotating disk as a real block device for a run.

Set-up, every step journalled (corun.machine.state) before it is made:

1. the FUSE daemon (daemon.py) serves one image file, held in its memory, on a private mount
   point under the state folder;
2. `losetup --direct-io=on` attaches a loop device to that file (no page cache between the
   loop device and the model; stack.py);
3. host queue settings of the loop device (queue.py);
4. mkfs.ext4 (no lazy initialisation, so no background writes during the run), then a mount on
   the run's data folder; settings that mkfs or the mount reset (the read-ahead, here) are noted
   and set again, then all are read back and must match.

With overlay and image_cache (the default), the image that step 4 and the copy of the inputs
made is kept (image_cache.py); a later run with the same content starts the daemon from it and
only mounts: the same bytes, without the mkfs, the copy and the staging mount.

Teardown is the journal's unwind, newest first: unmount, detach, end the daemon. A hung or dead
daemon never blocks it: the FUSE connection is aborted (/sys/fs/fuse/connections/N/abort)
before unmounting, unmounts fall back to lazy ones, and a loop device still busy is detached
lazily (autoclear). After a SIGKILL of the runner, `corun recover` (or the next corun command)
unwinds the same journal.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from corun.errors import CorunError
from corun.machine.disk_mounts import _evict, _mount_entry, _run
from corun.machine.rotating_disk import image_cache, queue
from corun.machine.rotating_disk.daemon import Daemon
from corun.machine.rotating_disk.queue import HostSettings
from corun.machine.rotating_disk.stack import MKFS_ARGV, check_direct_io, mount_action
from corun.machine.state import Journal, state_dir
from corun.util import Laps


class RotatingDisk:
    """One emulated disk for one run: start() builds the stack, every step journalled. CFG is
    settings.resolve's result (it names the emulator's program)."""

    def __init__(self, cfg: dict, journal: Journal, target: str | Path, run_id: str):
        self.cfg = cfg
        self.journal = journal
        self.target = str(Path(target).absolute())
        self.work = state_dir() / "rotating_disk" / run_id
        self.daemon = Daemon(cfg, self.work, self.target)
        self.fuse_dir = self.daemon.fuse_dir
        self.state_file, self.log_file = self.daemon.state_file, self.daemon.log_file
        self.image = f"{self.fuse_dir}/disk.img"
        self.loop: str | None = None
        self.host = HostSettings(dict(cfg["host"]))
        self.populated: list[dict] = []
        self.final_state: dict | None = None
        self.end_state: dict | None = None  # at the jobs' end (record_end), before the teardown
        self.laps = Laps()  # set-up steps' wall time
        self.image_cache: dict = {"state": "off"}

    @property
    def proc(self):
        return self.daemon.proc

    def argv(self) -> list[str]:
        return self.daemon.argv()

    def _images(self) -> Path:
        return state_dir() / "rotating_disk" / "images"

    # ------------------------------------------------------------ set-up
    def start(self, fill=None, timed: bool = True, fill_key: str | None = None) -> None:
        """Build the stack. With overlay, FILL(folder) copies the inputs onto the new file
        system (mounted on a staging folder), which is then mounted over device.path. The
        daemon serves mkfs and the filling at memory speed; with TIMED (else call go_timed()
        once the disk is filled) every request from then on is timed by the model. FILL_KEY
        (what FILL copies, hashed) keys the image cache: a cached image replaces mkfs and
        FILL."""
        t = Path(self.target)
        overlay = self.cfg.get("overlay", False)
        if not overlay and t.exists() and (not t.is_dir() or any(t.iterdir())):
            raise CorunError(f"device.path: {self.target}: not an empty folder (the emulated disk is mounted there)")
        if overlay and not t.is_dir():
            raise CorunError(f"device.path: {self.target}: not a folder (overlay mounts the emulated disk over it)")
        if _mount_entry(self.target) is not None:
            raise CorunError(f"device.path: {self.target}: already a mount point")
        t.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        j = self.journal
        self.laps.restart()
        # 1. the daemon
        cached = None
        if overlay:
            self.image_cache, cached = image_cache.cached_image(
                self._images(), self.cfg["size_bytes"], fill_key, self.cfg.get("image_cache", True)
            )
        self.daemon.start(j, cached["file"] if cached else None)
        self.fuse_conn = self.daemon.fuse_conn
        self.laps.lap("daemon")
        # 2. the loop device, direct I/O on the served file
        j.push(
            {"kind": "rotating_disk_loop", "what": "loop device of the rotating_disk emulator", "backing": self.image}
        )
        self.loop = self._step(["losetup", "--direct-io=on", "-f", "--show", self.image], "losetup").strip()
        name = Path(self.loop).name
        check_direct_io(self.loop)
        self.laps.lap("loop")
        # 3. host queue settings
        queue.apply_host_settings(name, self.host.requested, self.loop)
        # 4. file system and mount
        if cached:
            self.populated = cached["populated"]
        else:
            self._step([*MKFS_ARGV, self.loop], "mkfs.ext4 on the emulated disk", timeout=600)
            self.laps.lap("mkfs")
        daemon = self.daemon.action
        j.push(
            mount_action(
                "file system on the rotating_disk emulator", self.target, self.fuse_dir, self.fuse_conn, daemon
            )
        )
        opts = ["-o", self.cfg["mount_options"]] if self.cfg["mount_options"] else []
        if overlay and not cached:  # fill it on a staging mount first; unmounting it empties the page cache
            stage = self.work / "stage"
            stage.mkdir(exist_ok=True)
            what = "staging mount of the rotating_disk emulator"
            st = j.push(mount_action(what, str(stage), self.fuse_dir, self.fuse_conn, daemon))
            self._step(["mount", "-t", "ext4", self.loop, str(stage)], "staging mount of the emulated disk")
            self.populated = fill(str(stage)) if fill else []
            self.laps.lap("fill")
            err = j.undo(st)
            if err:
                raise CorunError(f"staging mount of the emulated disk: {err}")
            if self.image_cache.get("keep"):
                image_cache.save_image(
                    self._images(), self.image_cache, self.image, self.cfg["size_bytes"], self.populated
                )
                self.laps.lap("save_image")
        self._step(["mount", "-t", "ext4", *opts, self.loop, self.target], "mount of the emulated disk")
        if overlay:
            # unmounting the staging mount empties the page cache only if that was the file
            # system's last mount; should anything still hold it (one run's jobs once read all
            # their inputs from the cache), the copies are dropped here all the same
            os.sync()
            _evict([p["dst"] for p in self.populated])
        # mkfs and the mount may reset some (the read-ahead, seen here): note which, set them
        # again, and read them all back.
        seen = queue.read_host_settings(name)
        self.host.reset_by_mount = {
            k: seen.get(k) for k, v in self.host.requested.items() if v is not None and seen.get(k) != v
        }
        queue.apply_host_settings(name, self.host.requested, self.loop)
        self.host.after_mount = queue.read_host_settings(name)
        queue.verify_host_settings(self.host, self.loop)
        self.laps.lap("mount")
        if timed:
            self.go_timed()

    def go_timed(self) -> None:
        """End the daemon's untimed start (SIGUSR2): from now on the model times every request."""
        self.laps.restart()
        self.daemon.go_timed()
        self.laps.lap("go_timed")

    def _step(self, argv: list[str], what: str, timeout: float = 120) -> str:
        """A set-up command; if it fails because the daemon died, say that."""
        try:
            return _run(argv, what, timeout)
        except CorunError:
            self.check()
            raise

    read_host_settings = staticmethod(queue.read_host_settings)

    # ------------------------------------------------------------ during the run
    def check(self) -> None:
        """Raise, naming the emulator, if the daemon died or lost its mount."""
        self.daemon.check()

    def snapshot(self, timeout_s: float = 2.0) -> dict | None:
        """Ask the daemon for its counters (SIGUSR1) and read them."""
        return self.daemon.snapshot(timeout_s)

    # ------------------------------------------------------------ teardown, record
    def record_end(self) -> None:
        """Before teardown: the settings at the end and the daemon's counters (the run's); then
        the daemon serves untimed (SIGRTMIN), so that the unmount's flush of what the jobs left
        dirty costs the teardown no modelled seeks (counted apart: counters_at_exit)."""
        if self.loop:
            self.host.at_end = queue.read_host_settings(Path(self.loop).name)
        self.final_state = self.end_state = self.snapshot()
        self.daemon.serve_untimed()

    def after_teardown(self) -> None:
        """After the journal was unwound: the daemon's last counters (written at exit)."""
        s = self.daemon.read_state()
        if s and s.get("status") in ("exited", "failed"):
            self.final_state = s

    def cleanup(self) -> None:
        """Remove the working folder (state, log, mount points) once nothing is mounted there."""
        if not any(_mount_entry(str(p)) for p in (Path(self.fuse_dir), self.work / "stage")):
            shutil.rmtree(self.work, ignore_errors=True)
            try:
                self.work.parent.rmdir()  # only when no other run's folder is there
            except OSError:
                pass

    def copy_files(self, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        for f in (self.state_file, self.log_file):
            if f.exists():
                shutil.copy2(f, dest / f.name)

    def describe(self) -> dict:
        s = self.final_state or {}
        run = self.end_state or s  # the counters at the jobs' end, without the teardown's
        return {
            "kind": "rotating_disk",
            "emulator": self.cfg["recorded_as"],
            "argv": [str(a) for a in self.argv()[1:]],
            "preset": Path(self.cfg["preset_file"]).stem,
            "size_bytes": self.cfg["size_bytes"],
            "stroke": self.cfg["stroke"],
            "loop_device": self.loop,
            "mount": self.target,
            "mount_options": self.cfg["mount_options"],
            "overlay": self.cfg.get("overlay", False),
            "model": {"params": s.get("params"), "derived": s.get("derived")},
            "host_settings": {
                "requested": self.host.requested,
                "after_mount": self.host.after_mount,
                "reset_by_mkfs_or_mount": self.host.reset_by_mount,
                "at_end": self.host.at_end,
            },
            "counters": run.get("counters"),
            "counters_at_exit": s.get("counters"),  # with the teardown's untimed unmount flush
            "daemon_status": s.get("status"),
            "untimed_fill": {
                "requests": (run.get("counters") or {}).get("untimed_requests"),
                "bytes": (run.get("counters") or {}).get("untimed_bytes"),
            },
            "daemon_rt_priority": s.get("rt_priority"),
            "daemon_rt_priority_error": s.get("rt_priority_error"),
            "setup_steps_s": self.laps.steps,
            "image_cache": self.image_cache,
        }


def stop(disk: RotatingDisk) -> list[str]:
    """Undo the disk's journal actions now (newest first); returns the errors met."""
    errs = []
    for a in reversed(list(disk.journal.actions)):
        if a["kind"].startswith("rotating_disk_"):
            err = disk.journal.undo(a)
            if err:
                errs.append(err)
    return errs

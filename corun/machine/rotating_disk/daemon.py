"""The FUSE daemon (corun-rotating-disk) that serves one image file, held in its memory, on a
private mount point: its command line, its start (untimed until go_timed), its counters
(SIGUSR1, read from its state file), and its end (the undo handler of its journal action)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path

from corun.errors import CorunError
from corun.machine.disk_mounts import _fuse_conn, _mount_entry, _wait_exit, abort_fuse
from corun.machine.rotating_disk.settings import EMULATOR
from corun.machine.state import Journal, undo_handler
from corun.util import cli_options, proc_starttime

STOP_GRACE_S = 10.0


@undo_handler("rotating_disk_daemon")
def _undo_daemon(action: dict) -> None:
    """End the daemon (SIGTERM: it unmounts and writes its counters), then make sure its FUSE
    mount is gone."""
    pid, st = action.get("pid"), action.get("starttime")
    fuse_dir = action["fuse_dir"]
    conn = action.get("fuse_conn") or _fuse_conn(fuse_dir)
    if pid and proc_starttime(pid) == st:
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if not _wait_exit(pid, st, STOP_GRACE_S):
            abort_fuse(conn)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _wait_exit(pid, st, 5)
    if _mount_entry(fuse_dir) is not None:
        abort_fuse(conn)
        subprocess.run(["umount", "-l", fuse_dir], capture_output=True, timeout=30)
    if _mount_entry(fuse_dir) is not None:
        raise RuntimeError(f"{fuse_dir} is still mounted")


class Daemon:
    """One daemon in the working folder WORK (fuse/ its mount point, state.json, daemon.log)."""

    def __init__(self, cfg: dict, work: Path, target: str):
        self.cfg, self.target = cfg, target
        self.fuse_dir = str(work / "fuse")
        self.state_file = work / "state.json"
        self.log_file = work / "daemon.log"
        self.proc: subprocess.Popen | None = None
        self.action: dict | None = None
        self.fuse_conn = None

    def argv(self) -> list[str]:
        c = self.cfg
        options = {
            "--preset": c["preset_file"],
            "--size": c["size_bytes"],
            "--stroke": c["stroke"],
            "--seed": c["seed"],
            "--rt-priority": c["rt_priority"],
        }
        argv = [c["binary"], *cli_options(options)]
        if c["queue_window"] is not None:
            argv += ["--queue-window", str(c["queue_window"])]
        for k, v in c["model"].items():
            argv += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
        return argv + ["--untimed-start", "--mount", self.fuse_dir, "--state", str(self.state_file)]

    def start(self, journal: Journal, load: Path | None = None) -> None:
        """Journal the daemon, start it (from the image LOAD if given), wait for its mount."""
        Path(self.fuse_dir).mkdir(exist_ok=True)
        self.state_file.unlink(missing_ok=True)
        self.action = journal.push(
            {
                "kind": "rotating_disk_daemon",
                "what": EMULATOR,
                "fuse_dir": self.fuse_dir,
                "pid": None,
                "starttime": None,
            }
        )
        log = open(self.log_file, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv() + (["--load", str(load)] if load else []),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        finally:
            log.close()
        self.action.update(pid=self.proc.pid, starttime=proc_starttime(self.proc.pid))
        journal.update(self.action)
        end = time.monotonic() + 10
        while not self.state_file.exists():
            if self.proc.poll() is not None:
                raise CorunError(f"{EMULATOR} exited {self.proc.returncode} at start: {self.log_tail()}")
            if time.monotonic() > end:
                raise CorunError(f"{EMULATOR} did not mount {self.fuse_dir} within 10 s: {self.log_tail()}")
            time.sleep(0.02)
        self.fuse_conn = _fuse_conn(self.fuse_dir)
        self.action["fuse_conn"] = self.fuse_conn
        journal.update(self.action)

    def go_timed(self) -> None:
        """End the untimed start (SIGUSR2): from now on the model times every request."""
        os.sync()
        self.proc.send_signal(signal.SIGUSR2)
        end = time.monotonic() + 10
        while True:
            s = self.read_state()
            if s and s.get("timed"):
                return
            self.check()
            if time.monotonic() > end:
                raise CorunError(f"{EMULATOR} did not confirm timed mode within 10 s")
            time.sleep(0.02)

    def check(self) -> None:
        """Raise, naming the emulator, if the daemon died or lost its mount."""
        if self.proc is None:
            return
        rc = self.proc.poll()
        if rc is not None:
            how = f"was killed by signal {-rc}" if rc < 0 else f"exited {rc}"
            raise CorunError(
                f"{EMULATOR} (pid {self.proc.pid}) {how}; its disk at {self.target} is gone: {self.log_tail()}"
            )

    def snapshot(self, timeout_s: float = 2.0) -> dict | None:
        """Ask the daemon for its counters (SIGUSR1) and read them."""
        if self.proc is None or self.proc.poll() is not None:
            return self.read_state()
        before = self.read_state()
        t_before = (before or {}).get("now_epoch_s")
        self.proc.send_signal(signal.SIGUSR1)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            s = self.read_state()
            if s and s.get("now_epoch_s") != t_before:
                return s
            time.sleep(0.02)
        return self.read_state()

    def serve_untimed(self) -> None:
        """Serve untimed from now on (SIGRTMIN): the teardown's flush costs no modelled seeks."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGRTMIN)

    def read_state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def log_tail(self) -> str:
        try:
            txt = self.log_file.read_text(errors="replace").strip().splitlines()
            return txt[-1] if txt else "no message"
        except OSError:
            return "no message"

"""An undo journal for every change a run makes to the machine.

Each change (elevator switched, cgroup with an I/O cap, scheduler started, job
process group) is written to a journal file *before* it is made, and undone in
reverse order at the end of the run, on Ctrl-C, or on an exception. If the runner
itself is killed, the next corun command finds the journal of a dead runner and
undoes it (`recover_stale`), so no cap, elevator or stopped job outlives a run.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from pathlib import Path
from typing import Callable

from .util import atomic_write_text, proc_starttime

DEFAULT_STATE_DIR = Path(os.environ.get("CORUN_STATE_DIR", "/run/corun"))

UNDO: dict[str, Callable[[dict], None]] = {}


def undo_handler(kind: str):
    def deco(fn):
        UNDO[kind] = fn
        return fn
    return deco


def state_dir() -> Path:
    d = Path(os.environ.get("CORUN_STATE_DIR", str(DEFAULT_STATE_DIR)))
    try:
        d.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        d = Path(f"/tmp/corun-state-{os.getuid()}")
        d.mkdir(parents=True, exist_ok=True)
    return d


class Journal:
    def __init__(self, run_id: str, directory: Path | None = None):
        self.dir = directory or state_dir()
        self.path = self.dir / f"{run_id}.journal.json"
        self.run_id = run_id
        self.actions: list[dict] = []
        self.pid = os.getpid()
        self.starttime = proc_starttime(self.pid)
        self._save()

    def _save(self) -> None:
        atomic_write_text(self.path, json.dumps({
            "run_id": self.run_id, "pid": self.pid, "starttime": self.starttime,
            "actions": self.actions,
        }, indent=1))

    def push(self, action: dict) -> dict:
        """Record an undo action before making the change it undoes."""
        if action["kind"] not in UNDO:
            raise ValueError(f"no undo handler for {action['kind']}")
        self.actions.append(action)
        self._save()
        return action

    def update(self, action: dict) -> None:
        self._save()

    def forget(self, action: dict | None) -> None:
        """The change is gone by itself (a job that exited): nothing to undo."""
        if action is not None and action in self.actions:
            self.actions.remove(action)
            self._save()

    def undo(self, action: dict) -> str | None:
        """Undo one action now (and forget it). Returns an error text or None."""
        err = _run_undo(action)
        if action in self.actions:
            self.actions.remove(action)
            self._save()
        return err

    def unwind(self) -> list[str]:
        """Undo everything, newest first; never raises. Returns the errors met."""
        errors = []
        while self.actions:
            action = self.actions[-1]
            err = _run_undo(action)
            if err:
                errors.append(err)
            self.actions.pop()
            self._save()
        try:
            self.path.unlink()
        except FileNotFoundError:
            pass
        return errors


def _run_undo(action: dict) -> str | None:
    try:
        UNDO[action["kind"]](action)
        return None
    except Exception as exc:  # noqa: BLE001 - teardown must go on whatever fails
        return f"undo {action.get('kind')}: {exc}"


def recover_stale(directory: Path | None = None) -> list[str]:
    """Undo the journals of runners that are gone. Returns one line per journal undone."""
    from . import cgroup  # noqa: F401 - registers its undo handler
    from .machine import rotating_disk  # noqa: F401 - registers the emulated disk's handlers
    d = directory or state_dir()
    done = []
    for path in sorted(d.glob("*.journal.json")):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        pid, st = data.get("pid"), data.get("starttime")
        if pid and proc_starttime(pid) == st and st is not None:
            continue  # its runner is alive
        errs = []
        for action in reversed(data.get("actions", [])):
            err = _run_undo(action)
            if err:
                errs.append(err)
        path.unlink(missing_ok=True)
        msg = f"recovered run {data.get('run_id')}: undid {len(data.get('actions', []))} change(s)"
        if errs:
            msg += " with errors: " + "; ".join(errs)
        done.append(msg)
    return done


# ---- generic undo handlers; modules register their own too --------------------------

@undo_handler("processes")
def _undo_processes(action: dict) -> None:
    """Resume, then end, every listed process that is still the same process."""
    live = [(p, s) for p, s in action.get("pids", {}).items() if proc_starttime(int(p)) == s]
    for p, _ in live:
        try:
            os.kill(int(p), signal.SIGCONT)
        except ProcessLookupError:
            pass
    for p, _ in live:
        try:
            os.kill(int(p), signal.SIGKILL)
        except ProcessLookupError:
            pass


@undo_handler("command")
def _undo_command(action: dict) -> None:
    """Run a restore command (argv list) with an optional cwd and env."""
    env = dict(os.environ)
    env.update(action.get("env", {}))
    res = subprocess.run(action["argv"], cwd=action.get("cwd"), env=env, capture_output=True,
                         text=True, timeout=action.get("timeout_s", 60))
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(action['argv'])} exited {res.returncode}: {res.stderr.strip()[-300:]}")


def wait_gone(pids: list[int], timeout_s: float) -> bool:
    end = time.monotonic() + timeout_s
    while time.monotonic() < end:
        if not any(Path(f"/proc/{p}").exists() for p in pids):
            return True
        time.sleep(0.02)
    return False

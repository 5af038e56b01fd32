"""An undo journal for every change a run makes to the machine.

Each change (elevator switched, cgroup with an I/O cap, scheduler started, job
process group) is written to a journal file *before* it is made, and undone in
reverse order at the end of the run, on Ctrl-C, or on an exception. If the runner
itself is killed, the next corun command finds the journal of a dead runner and
undoes it (`corun.machine.recovery.recover_stale`), so no cap, elevator or stopped job outlives a run.
"""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from corun.util import atomic_write_text, proc_starttime, state_dir

UNDO: dict[str, Callable[[dict], None]] = {}


def undo_handler(kind: str):
    def deco(fn):
        UNDO[kind] = fn
        return fn

    return deco


_UNDO_S_LOCK = threading.Lock()


class Journal:
    """RESUME: the actions of a journal already at the path are kept, for a command that undoes
    what an earlier one left (the parallel file system's `down` after its `up`, corun.testbed.pfs);
    else it starts empty."""

    def __init__(self, run_id: str, directory: Path | None = None, resume: bool = False):
        self.dir = directory or state_dir()
        self.path = self.dir / f"{run_id}.journal.json"
        self.run_id = run_id
        self.actions: list[dict] = []
        self.undo_s: dict[str, float] = {}  # seconds spent undoing, per kind of action
        self.pid = os.getpid()
        self.starttime = proc_starttime(self.pid)
        # held for the journal's life: a runner that is alive in another pid namespace sharing
        # this directory (a container, the CI) has a pid that means nothing here, but its lock holds
        self.lock_path = lock_file(self.path)
        self._lock_fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        fcntl.flock(self._lock_fd, fcntl.LOCK_EX)
        if resume and self.path.exists():
            self.actions = json.loads(self.path.read_text()).get("actions", [])
        self._save()

    def _save(self) -> None:
        atomic_write_text(
            self.path,
            json.dumps(
                {
                    "run_id": self.run_id,
                    "pid": self.pid,
                    "starttime": self.starttime,
                    "actions": self.actions,
                },
                indent=1,
            ),
        )

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
        err = self._timed_undo(action)
        if action in self.actions:
            self.actions.remove(action)
            self._save()
        return err

    def undo_together(self, actions: list[dict | None]) -> list[str]:
        """Undo independent actions at once, one thread each (the restore of every node of a
        cluster, each an ssh round trip), then forget them; the errors met, in the given order."""
        return [e for e in self.undo_each([a for a in actions if a is not None]) if e]

    def undo_each(self, actions: list[dict]) -> list[str | None]:
        """undo_together's work: each action's error (or None), in the given order."""
        if len(actions) < 2:
            return [self.undo(a) for a in actions]
        with ThreadPoolExecutor(max_workers=min(32, len(actions))) as pool:
            errors = list(pool.map(self._timed_undo, actions))
        self.actions = [a for a in self.actions if not any(a is b for b in actions)]
        self._save()
        return errors

    def unwind(self, keep_failed: bool = False) -> list[str]:
        """Undo everything, newest first; never raises. The actions of one `together` kind (a
        file system's data servers' stops) are undone at once, with undo_together, when the
        newest of them comes. KEEP_FAILED: an undo that fails stays in the journal's file, in
        order, for a later unwind (a resumed journal's); else it is forgotten. Returns the
        errors met."""
        errors: list[str] = []
        failed: list[dict] = []
        order = list(self.actions)
        while self.actions:
            action, tag = self.actions[-1], self.actions[-1].get("together")
            if tag:
                batch = [a for a in reversed(self.actions) if a.get("together") == tag]
                undone = list(zip(batch, self.undo_each(batch)))
            else:
                undone = [(action, self._timed_undo(action))]
                self.actions.pop()
                self._save()
            for a, err in undone:
                if err:
                    errors.append(err)
                    failed.append(a)
        if keep_failed and failed:
            self.actions = [a for a in order if any(a is f for f in failed)]
            self._save()
        else:
            self.path.unlink(missing_ok=True)
        self.release()
        return errors

    def _timed_undo(self, action: dict) -> str | None:
        t0 = time.monotonic()
        try:
            return run_undo(action)
        finally:
            k = action.get("kind", "?")
            with _UNDO_S_LOCK:  # undo_together's threads add theirs
                self.undo_s[k] = round(self.undo_s.get(k, 0.0) + time.monotonic() - t0, 4)

    def release(self) -> None:
        """Drop the liveness lock (after the journal is gone)."""
        if self._lock_fd is not None:
            self.lock_path.unlink(missing_ok=True)
            os.close(self._lock_fd)
            self._lock_fd = None


def lock_file(journal: Path) -> Path:
    """The liveness lock beside a journal: <run>.lock for <run>.journal.json."""
    return journal.with_name(journal.name.removesuffix(".journal.json") + ".lock")


def journal_alive(path: Path, data: dict) -> bool:
    """Whether the runner of the journal at PATH (content DATA) is alive: its lock is held, or
    (a journal without a lock file) its pid is the same process."""
    lock = lock_file(path)
    try:
        fd = os.open(lock, os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        fd = None
    if fd is not None:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            return True
        finally:
            os.close(fd)
    pid, st = data.get("pid"), data.get("starttime")
    return bool(pid) and st is not None and proc_starttime(pid) == st


def run_undo(action: dict) -> str | None:
    try:
        UNDO[action["kind"]](action)
        return None
    except Exception as exc:  # noqa: BLE001 - teardown must go on whatever fails
        return f"undo {action.get('kind')}: {exc}"


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
    res = subprocess.run(
        action["argv"],
        cwd=action.get("cwd"),
        env=env,
        capture_output=True,
        text=True,
        timeout=action.get("timeout_s", 60),
    )
    if res.returncode != 0:
        raise RuntimeError(f"{' '.join(action['argv'])} exited {res.returncode}: {res.stderr.strip()[-300:]}")

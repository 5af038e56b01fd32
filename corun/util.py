"""Small helpers shared by the instrument."""

from __future__ import annotations

import contextlib
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import types
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import IO

DEFAULT_STATE_DIR = Path(os.environ.get("CORUN_STATE_DIR", "/run/corun"))


def state_dir() -> Path:
    """The machine's corun state folder: run journals, the machine lock, caches."""
    d = Path(os.environ.get("CORUN_STATE_DIR", str(DEFAULT_STATE_DIR)))
    try:
        d.mkdir(parents=True, exist_ok=True)
    except PermissionError:
        d = Path(f"/tmp/corun-state-{os.getuid()}")
        d.mkdir(parents=True, exist_ok=True)
    return d


class Laps:
    """The wall time of consecutive steps (a run's set-up or teardown, step by step): lap(step)
    adds the time since the last lap, or since restart(), to that step's seconds."""

    def __init__(self) -> None:
        self.steps: dict[str, float] = {}
        self._t = time.monotonic()

    def restart(self) -> None:
        self._t = time.monotonic()

    def lap(self, step: str) -> None:
        now = time.monotonic()
        self.steps[step] = round(self.steps.get(step, 0.0) + now - self._t, 4)
        self._t = now


def lazy_module(name: str) -> types.ModuleType:
    """The module `name`, executed at the first access to one of its attributes, not here.

    A library that only some commands need (pandas for DataFrames, requests for publishing) is
    loaded by those, not by every command that imports the module. A module already imported
    is returned as it is.
    """
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.find_spec(name)
    if spec is None or spec.loader is None:
        raise ModuleNotFoundError(f"No module named {name!r}", name=name)
    loader = importlib.util.LazyLoader(spec.loader)
    spec.loader = loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    loader.exec_module(module)
    parent, _, child = name.rpartition(".")
    if parent:  # as the import system does: a submodule is an attribute of its package
        setattr(sys.modules[parent], child, module)
    return module


@contextlib.contextmanager
def atomic_path(path: str | Path, fsync: bool = True) -> Iterator[Path]:
    """A temporary path beside `path` to write; renamed to `path` when the block ends without an
    error (removed otherwise), so readers see the old file or the new one, never half of one.
    The one way corun and analysis write a file atomically (see atomic_file, atomic_write_text)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent)
    os.close(fd)
    tmp = Path(name)
    try:
        yield tmp
        if fsync:
            with open(tmp, "rb+") as fh:
                os.fsync(fh.fileno())
        os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


@contextlib.contextmanager
def atomic_file(path: str | Path, mode: str = "wb", fsync: bool = True) -> Iterator[IO]:
    """An open file whose content replaces `path` atomically when the block ends (atomic_path)."""
    with atomic_path(path, fsync) as tmp:
        with open(tmp, mode, **({} if "b" in mode else {"encoding": "utf-8"})) as fh:
            yield fh


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write a file so that readers see the old content or the new, never half."""
    with atomic_file(path, "w") as fh:
        fh.write(text)


def atomic_write_bytes(path: str | Path, data: bytes) -> None:
    with atomic_file(path, "wb") as fh:
        fh.write(data)


def atomic_write_json(path: str | Path, data) -> None:
    atomic_write_text(path, json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")


def proc_starttime(pid: int) -> int | None:
    """Start time of a process in clock ticks since boot (field 22 of /proc/pid/stat), or None.

    (pid, starttime) names a process uniquely: a reused pid has another start time.
    """
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    rest = text[text.rfind(")") + 2 :].split()
    return int(rest[19])


def proc_state(pid: int | None, starttime: int | None) -> str | None:
    """The state letter of that very process (R, S, D, T, Z ...), or None if it is gone."""
    if not pid or proc_starttime(pid) != starttime:
        return None
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return None


def proc_ended(pid: int | None, starttime: int | None) -> bool:
    """Whether that process has exited: gone, or a zombie its parent has not reaped yet (an
    orphan waits for init, which on some machines reaps only every second or so)."""
    return proc_state(pid, starttime) in (None, "Z", "X")


def read_proc_io(pid: int) -> dict[str, int] | None:
    """/proc/<pid>/io as a dict (rchar, wchar, syscr, syscw, read_bytes, write_bytes, cancelled_write_bytes)."""
    try:
        text = Path(f"/proc/{pid}/io").read_text()
    except OSError:
        return None
    out = {}
    for line in text.splitlines():
        k, _, v = line.partition(":")
        if v.strip():
            out[k.strip()] = int(v)
    return out


def tool_version(argv: list[str], pattern_line: int = 0) -> str | None:
    """First line of a tool's version output, or None if it is not installed."""
    if shutil.which(argv[0]) is None:
        return None
    try:
        res = subprocess.run(argv, capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (res.stdout or res.stderr).strip().splitlines()
    return text[pattern_line].strip() if len(text) > pattern_line else None


def cli_options(options: dict[str, object]) -> list[str]:
    """A command line's `--name value` pairs, in the mapping's order: {"--size": 4096} gives
    ["--size", "4096"]."""
    return [arg for name, value in options.items() for arg in (name, str(value))]


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent


def repo_path(path: str | Path) -> Path:
    """PATH as given when absolute, else taken from the repository (how configs name folders)."""
    path = Path(path)
    return path if path.is_absolute() else repo_root() / path


def on_each(items: list, fn, workers: int = 16) -> list:
    """fn(item) for every item at once (each an ssh round trip, say), at most WORKERS together:
    the results in ITEMS' order; the first item's exception in that order is raised once every
    call has ended."""
    if len(items) <= 1:
        return [fn(x) for x in items]
    with ThreadPoolExecutor(max_workers=min(workers, len(items))) as pool:
        return list(pool.map(fn, items))

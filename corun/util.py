"""Small helpers shared by the instrument."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path


def atomic_write_text(path: str | Path, text: str) -> None:
    """Write a file so that readers see the old content or the new, never half."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise


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
    rest = text[text.rfind(")") + 2:].split()
    return int(rest[19])


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


def repo_root() -> Path:
    return Path(__file__).resolve().parent.parent

"""The device under test: which block device holds a path, and its I/O elevator."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from corun.errors import ConfigError, CorunError

SYS_BLOCK = Path("/sys/block")
SYS_DEV_BLOCK = Path("/sys/dev/block")


@dataclass
class Device:
    name: str  # whole disk, e.g. "vda", "nvme0n1"
    major: int
    minor: int
    partition: str | None  # e.g. "vda1" when the path is on a partition

    @property
    def majmin(self) -> str:
        return f"{self.major}:{self.minor}"

    @property
    def queue(self) -> Path:
        return SYS_BLOCK / self.name / "queue"

    def attr(self, rel: str, default: str = "") -> str:
        try:
            return (SYS_BLOCK / self.name / rel).read_text().strip()
        except OSError:
            return default

    def describe(self) -> dict:
        return {
            "name": self.name,
            "partition": self.partition,
            "major_minor": self.majmin,
            "model": self.attr("device/model") or None,
            "rotational": self.attr("queue/rotational") == "1",
            "size_bytes": int(self.attr("size", "0") or 0) * 512,
            "elevator": current_elevator(self),
            "elevators_available": available_elevators(self),
            "read_ahead_kb": int(self.attr("queue/read_ahead_kb", "0") or 0),
            "nr_requests": int(self.attr("queue/nr_requests", "0") or 0),
        }


def device_of(path: str | Path, source: str = "spec", key: str = "device.path") -> Device:
    """The whole-disk block device holding `path` (which must exist)."""
    p = Path(path)
    try:
        st = os.stat(p)
    except FileNotFoundError:
        raise ConfigError(source, key, str(path), "an existing directory on the device under test") from None
    major, minor = os.major(st.st_dev), os.minor(st.st_dev)
    node = SYS_DEV_BLOCK / f"{major}:{minor}"
    if not node.exists():
        raise ConfigError(
            source,
            key,
            str(path),
            f"a path on a block device (its file system {major}:{minor} has none: tmpfs, overlay or network?)",
        )
    real = node.resolve()
    part = None
    if (real / "partition").exists():
        part = real.name
        real = real.parent
    dev_txt = (real / "dev").read_text().strip()
    dmaj, dmin = (int(x) for x in dev_txt.split(":"))
    return Device(real.name, dmaj, dmin, part)


def device_by_name(name: str) -> Device:
    node = SYS_BLOCK / name
    if not node.exists():
        raise CorunError(f"block device {name} not found under {SYS_BLOCK}")
    maj, mnr = (int(x) for x in (node / "dev").read_text().split(":"))
    return Device(name, maj, mnr, None)


def _sched_line(dev: Device) -> str:
    try:
        return (dev.queue / "scheduler").read_text().strip()
    except OSError:
        return ""


def available_elevators(dev: Device) -> list[str]:
    return [w.strip("[]") for w in _sched_line(dev).split()]


def current_elevator(dev: Device) -> str | None:
    for w in _sched_line(dev).split():
        if w.startswith("["):
            return w.strip("[]")
    line = _sched_line(dev)
    return line if line and " " not in line else None


def set_elevator(dev: Device, name: str) -> None:
    avail = available_elevators(dev)
    if name not in avail:
        raise CorunError(f"elevator {name} is not available for {dev.name} (available: {', '.join(avail) or 'none'})")
    try:
        (dev.queue / "scheduler").write_text(name)
    except OSError as exc:
        raise CorunError(f"cannot set elevator {name} on {dev.name}: {exc.strerror} (needs root)") from None

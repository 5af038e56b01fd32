"""The loop device's host queue settings (/sys/block/NAME/queue): set in HOST_ORDER (an elevator
change resets nr_requests, a max_sectors_kb change may reset the read-ahead), read back, and
compared with what was asked."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corun.errors import CorunError
from corun.machine.rotating_disk.settings import HOST_ORDER


@dataclass
class HostSettings:
    requested: dict
    after_mount: dict | None = None
    at_end: dict | None = None
    reset_by_mount: dict | None = None


def _file(name: str, key: str) -> Path:
    return Path(f"/sys/block/{name}/queue") / ("scheduler" if key == "elevator" else key)


def apply_host_settings(name: str, requested: dict, device: str) -> None:
    """Write the settings REQUESTED (null: the kernel's) to the queue of block device NAME."""
    for k in HOST_ORDER:
        v = requested.get(k)
        if v is None:
            continue
        f = _file(name, k)
        try:
            f.write_text(str(v))
        except OSError as exc:
            raise CorunError(f"{device}: cannot set {f.name} to {v}: {exc.strerror}") from None


def read_host_settings(name: str) -> dict:
    out = {}
    for k in HOST_ORDER:
        try:
            txt = _file(name, k).read_text().strip()
        except OSError:
            out[k] = None
            continue
        if k == "elevator":
            sel = [w.strip("[]") for w in txt.split() if w.startswith("[")]
            out[k] = sel[0] if sel else txt
        else:
            out[k] = int(txt)
    return out


def verify_host_settings(host: HostSettings, device: str) -> None:
    got = host.after_mount or {}
    bad = [f"{k} is {got.get(k)}, set {v}" for k, v in host.requested.items() if v is not None and got.get(k) != v]
    if bad:
        raise CorunError(f"{device}: host queue settings differ after mount: {'; '.join(bad)}")

"""The emulated disk's settings: the defaults, the presets and one check of a spec's
`device.rotating_disk` (a problem is one ConfigError line), and what the machine needs for it.

Where the emulator's program and presets are is the caller's to say (corun.emulators.Emulator):
this layer names no path of the project."""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from corun.emulators import Emulator
from corun.errors import ConfigError

EMULATOR = "the rotating_disk emulator"


# Host queue settings of the 2010-era testbed the prototype measured (docs/emulators/rotating_disk.md).
HOST_DEFAULTS = {
    "rotational": 1,
    "elevator": "mq-deadline",
    "nr_requests": None,
    "max_sectors_kb": 128,
    "read_ahead_kb": 128,
}
HOST_ORDER = ["rotational", "elevator", "nr_requests", "max_sectors_kb", "read_ahead_kb"]
DEFAULTS = {
    "preset": "sata_7200_2010",
    "size_bytes": 2 << 30,
    "stroke": 1.0,
    "queue_window": None,
    "model": {},
    "host": HOST_DEFAULTS,
    "mount_options": "noatime",
    "seed": 1,
    "rt_priority": 10,
    "overlay": False,
    "image_cache": True,
}


def preset_path(preset: str, presets: Path) -> Path:
    p = Path(preset)
    if "/" in preset or preset.endswith(".conf"):
        return p
    return presets / f"{preset}.conf"


def read_preset(path: Path) -> dict:
    """A preset file: `option = value` lines with # comments."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            out[k] = v
    return out


def resolve(cfg: dict | None, emulator: Emulator, source: str = "spec", key: str = "device.rotating_disk") -> dict:
    """Defaults filled in and every value checked against EMULATOR's presets; a problem is one
    ConfigError line. The result names the program to start (`binary`, `recorded_as`)."""
    cfg = dict(cfg or {})
    out = {**DEFAULTS, **cfg}
    out["host"] = {**HOST_DEFAULTS, **(cfg.get("host") or {})}
    out["model"] = dict(cfg.get("model") or {})
    pp = preset_path(str(out["preset"]), emulator.presets)
    if not pp.is_file():
        names = sorted(x.stem for x in emulator.presets.glob("*.conf"))
        raise ConfigError(
            source, f"{key}.preset", out["preset"], f"a preset name ({', '.join(names)}) or a preset file"
        )
    out["preset_file"] = str(pp)
    out["binary"], out["recorded_as"] = str(emulator.binary), emulator.recorded_as
    if not isinstance(out["size_bytes"], int) or out["size_bytes"] < 64 << 20 or out["size_bytes"] % 4096:
        raise ConfigError(
            source, f"{key}.size_bytes", out["size_bytes"], "an integer >= 67108864 (64 MiB), a multiple of 4096"
        )
    if not isinstance(out["stroke"], (int, float)) or not 0 < out["stroke"] <= 1:
        raise ConfigError(source, f"{key}.stroke", out["stroke"], "a number in (0, 1]")
    qw = out["queue_window"]
    if qw is not None and (not isinstance(qw, int) or not 1 <= qw <= 32):
        raise ConfigError(source, f"{key}.queue_window", qw, "an integer from 1 (FIFO) to 32, or null (the preset's)")
    for k, v in out["model"].items():
        if not isinstance(k, str) or not k.replace("-", "").isalnum() or isinstance(v, (dict, list)):
            raise ConfigError(source, f"{key}.model.{k}", v, "an option of corun-rotating-disk and a scalar value")
    for k in ("overlay", "image_cache"):
        if not isinstance(out[k], bool):
            raise ConfigError(source, f"{key}.{k}", out[k], "true or false")
    rt = out["rt_priority"]
    if not isinstance(rt, int) or isinstance(rt, bool) or not 0 <= rt <= 99:
        raise ConfigError(source, f"{key}.rt_priority", rt, "an integer from 0 (normal scheduling) to 99")
    h = out["host"]
    for k in h:
        if k not in HOST_DEFAULTS:
            raise ConfigError(source, f"{key}.host.{k}", h[k], f"one of {', '.join(HOST_ORDER)}")
    if h["rotational"] not in (0, 1):
        raise ConfigError(source, f"{key}.host.rotational", h["rotational"], "0 or 1")
    for k in ("nr_requests", "max_sectors_kb", "read_ahead_kb"):
        v = h[k]
        if v is not None and (not isinstance(v, int) or isinstance(v, bool) or v < (0 if k == "read_ahead_kb" else 1)):
            raise ConfigError(source, f"{key}.host.{k}", v, "a positive integer, or null (the kernel's)")
    if h["elevator"] not in (None, "none", "mq-deadline", "bfq", "kyber"):
        raise ConfigError(source, f"{key}.host.elevator", h["elevator"], "none, mq-deadline, bfq, kyber or null")
    return out


def check_machine(emulator: Emulator, source: str = "spec", key: str = "device.kind") -> None:
    """What a rotating_disk run needs from this machine, checked before anything starts."""
    if os.geteuid() != 0:
        raise ConfigError(source, key, "rotating_disk", "a run as root (FUSE mount, loop device, mkfs, mount)")
    if not emulator.binary.is_file():
        raise ConfigError(
            source, key, "rotating_disk", "the emulator built (ansible-playbook site.yml --tags rotating_disk)"
        )
    if not Path("/dev/fuse").exists():
        raise ConfigError(source, key, "rotating_disk", "a kernel with FUSE (/dev/fuse is missing)")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            raise ConfigError(source, key, "rotating_disk", f"{tool} on PATH")

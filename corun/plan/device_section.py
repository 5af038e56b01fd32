"""The device an experiment's runs read their inputs from (`<experiment>.device` in the workflow
config): the disk holding the data folder, with the experiment's optional cap (`throttle`), or an
emulated rotating disk built for each run and mounted over the data folder with the inputs
copied onto it (`rotating_disk`, docs/emulators/rotating_disk.md). One function checks the
section, one (`spec_device`) writes a run spec's `device`; every experiment that reads inputs
uses both."""

from __future__ import annotations

from pathlib import Path

from corun.emulators import ROTATING_DISK
from corun.errors import ConfigError
from corun.machine import rotating_disk as rd

# the keys of a run spec's device.rotating_disk a config may set (overlay is the experiment's)
SETTABLE = tuple(k for k in rd.DEFAULTS if k != "overlay")


def check(cfg: dict, source: str = "config") -> None:
    """Every experiment section's device, checked; a problem is one ConfigError line."""
    for name, sec in cfg.items():
        dev = sec.get("device") if isinstance(sec, dict) else None
        if not isinstance(dev, dict) or dev.get("kind") != "rotating_disk":
            continue
        key = f"{name}.device.rotating_disk"
        for k, v in (dev.get("rotating_disk") or {}).items():
            if k not in SETTABLE:
                expected = (
                    "left out: the experiment mounts the disk over its data folder"
                    if k == "overlay"
                    else "one of " + ", ".join(SETTABLE)
                )
                raise ConfigError(source, f"{key}.{k}", v, expected)
        rd.resolve(dev.get("rotating_disk"), ROTATING_DISK, source, key)


def spec_device(sec: dict, data_dir: Path, inputs: list[Path], evict: bool, outputs: list[Path] = ()) -> dict:
    """A run spec's device section for an experiment section SEC whose jobs read INPUTS and write
    into the folders OUTPUTS (all under DATA_DIR): with kind throttle, the inputs' cached pages are
    dropped before the jobs when EVICT; with kind rotating_disk the inputs and the output folders
    are copied onto the run's emulated disk, which is mounted over DATA_DIR, so the jobs' paths
    stay as written and every read is the disk's (what they write is gone after the run)."""
    dev = sec.get("device") or {}
    present = [p for p in inputs if p.exists()]
    out = {"path": str(data_dir.resolve()), "throttle": sec.get("throttle")}
    if dev.get("kind", "throttle") == "throttle":
        out["evict"] = [str(p.resolve()) for p in present] if evict else []
        return out
    out["kind"] = "rotating_disk"
    out["rotating_disk"] = {**(dev.get("rotating_disk") or {}), "overlay": True}
    out["populate"] = [{"src": str(p.resolve())} for p in [*present, *(o for o in outputs if o.exists())]]
    return out

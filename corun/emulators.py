"""Where the project's emulators are once built (emulators/<name>/): what the layers above the
machine pass down to it, which itself names no path of the project."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from corun.util import repo_root


@dataclass(frozen=True)
class Emulator:
    """A built emulator: its program, its folder of presets, and how a run's record names the
    program (its path in the project)."""

    binary: Path
    presets: Path
    recorded_as: str


def _emulator(name: str, program: str) -> Emulator:
    home = repo_root() / "emulators" / name
    return Emulator(home / "build" / program, home / "presets", f"emulators/{name}/build/{program}")


ROTATING_DISK = _emulator("rotating_disk", "corun-rotating-disk")

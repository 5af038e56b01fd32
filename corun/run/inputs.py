"""Input files for workloads, generated deterministically (no download needed).

y4m video for x264: PARSEC's simlarge/native inputs are 640x360 and 1920x1080 clips.
When they are not provisioned, we generate clips of the same frame size: a moving
gradient, moving blocks and seeded noise, so the encoder does real motion search
and entropy coding, not a trivial flat image. Each frame is 1.5 bytes per pixel (4:2:0).
"""

from __future__ import annotations

import os
import tarfile
from pathlib import Path

import numpy as np

from corun.errors import CorunError
from corun.util import atomic_file

PRESETS = {  # PARSEC input names -> frame size; frame counts are configuration
    "simlarge": (640, 360),
    "native": (1920, 1080),
}


def y4m_bytes(width: int, height: int, frames: int) -> int:
    header = len(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n")
    return header + frames * (len(b"FRAME\n") + width * height * 3 // 2)


def make_y4m(path: str | Path, width: int, height: int, frames: int, seed: int = 1) -> Path:
    """Write a deterministic synthetic clip; atomic (tmp + rename)."""
    if width % 2 or height % 2 or width < 16 or height < 16:
        raise ValueError(f"y4m frame {width}x{height}: width and height must be even and >= 16")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width]
    base = ((xx * 255) // max(1, width - 1)).astype(np.int16)
    with atomic_file(path, "wb") as fh:
        fh.write(f"YUV4MPEG2 W{width} H{height} F25:1 Ip A1:1 C420jpeg\n".encode())
        for f in range(frames):
            y = (base + 3 * f + ((yy + 2 * f) // 8 % 2) * 24).astype(np.int16)
            bs = max(8, min(width, height) // 6)
            for b in range(4):
                x0 = (f * (3 + b) + b * width // 4) % (width - bs)
                y0 = (f * (2 + b) + b * height // 5) % (height - bs)
                y[y0 : y0 + bs, x0 : x0 + bs] = 40 + 50 * b
            y = y + rng.integers(-6, 7, size=y.shape, dtype=np.int16)
            u = np.full((height // 2, width // 2), 128 + (f % 32), dtype=np.int16)
            v = (128 + ((xx[::2, ::2] + f) % 64) - 32).astype(np.int16)
            fh.write(b"FRAME\n")
            fh.write(np.clip(y, 0, 255).astype(np.uint8).tobytes())
            fh.write(np.clip(u, 0, 255).astype(np.uint8).tobytes())
            fh.write(np.clip(v, 0, 255).astype(np.uint8).tobytes())
    return path


RANDOM_CHUNK = 4 << 20


def fits(path: Path, size: int) -> bool:
    """True when `path` exists with `size` bytes (an input written before is kept)."""
    return path.exists() and path.stat().st_size == size


def write_random(path: Path, size: int) -> None:
    """`size` bytes of incompressible data, fsynced; atomic (tmp + rename)."""
    with atomic_file(path, "wb") as fh:
        left = size
        while left:
            n = min(RANDOM_CHUNK, left)
            fh.write(os.urandom(n))
            left -= n


def unpack_tar(tar: Path, dest: Path) -> None:
    """Unpack an input tarball: regular files and folders only, all inside `dest`."""
    dest.mkdir(parents=True, exist_ok=True)
    root = dest.resolve()
    with tarfile.open(tar) as tf:
        members = tf.getmembers()
        for m in members:
            target = (root / m.name).resolve()
            if not (m.isfile() or m.isdir()) or not target.is_relative_to(root):
                raise CorunError(f"{tar}: {m.name}: not a plain file inside the input set (refused)")
        tf.extractall(root, members=members)  # noqa: S202 - every member checked above

"""The emulated disk's image cache (`rotating_disk/images/KEY.img` in the state folder, sparse):
KEY hashes the size, mkfs and the inputs' paths, sizes, modes and times. An image is kept once a
second run builds the same KEY (keeping it costs a read of what mkfs and the fill wrote: the
daemon answers SEEK_DATA and SEEK_HOLE from its map of the chunks holding data); a later run with
that KEY starts the daemon from it (`--load`) and only mounts."""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import time
from pathlib import Path

from corun.machine.rotating_disk.stack import MKFS_ARGV
from corun.util import atomic_write_json

# images of the cache kept, the least recently used going first beyond any of: this many, this
# many bytes stored, a quarter of the free space of the state folder's file system
IMAGES_KEPT = 64
IMAGES_BYTES = 16 << 30
SEEN_KEPT = 1024  # marks of contents built once (KEY.seen, empty files)


def cached_image(images: Path, size_bytes: int, fill_key: str | None, enabled: bool) -> tuple[dict, dict | None]:
    """The cache's record for this size, mkfs and fill (state off, built or loaded, key, file),
    and the cached image ({file, populated}) or None: build it, and keep it when the record
    says keep."""
    if not (enabled and fill_key is not None):
        return {"state": "off"}, None
    mkfs = shutil.which("mkfs.ext4") or "mkfs.ext4"
    try:
        st = os.stat(mkfs)
        mkfs_id = [mkfs, st.st_size, st.st_mtime_ns]
    except OSError:
        mkfs_id = [mkfs]
    material = json.dumps([1, size_bytes, MKFS_ARGV, mkfs_id, fill_key], sort_keys=True)
    key = hashlib.sha256(material.encode()).hexdigest()[:24]
    img, meta = images / f"{key}.img", images / f"{key}.json"
    record = {"state": "built", "key": key, "file": str(img)}
    try:
        doc = json.loads(meta.read_text())
        if img.stat().st_size != size_bytes or not isinstance(doc.get("populated"), list):
            raise ValueError("not an image of this size")
    except (OSError, ValueError):
        record["keep"] = _seen_before(images, key)
        if not record["keep"]:
            record["why_not_kept"] = "its first use: kept when another run builds it"
        return record, None
    now = time.time()
    os.utime(img, (now, now))
    record["state"] = "loaded"
    record["stored_bytes"] = doc.get("stored_bytes")
    return record, {"file": img, "populated": doc["populated"]}


def save_image(images: Path, record: dict, image: str, size: int, populated: list[dict]) -> None:
    """Keep the filled IMAGE (read through the daemon, untimed): its non-zero 1 MiB blocks in a
    sparse file, then the image's description; the least recently used beyond the cache's
    bounds go (evict_images). Only the chunks the daemon says may hold data are read (SEEK_DATA
    and SEEK_HOLE: what mkfs and the fill wrote), not the whole image. RECORD is updated."""
    key = record["key"]
    images.mkdir(parents=True, exist_ok=True)
    tmp = images / f".{key}.{os.getpid()}.tmp"
    block, stored = 1 << 20, 0
    zero = bytes(block)
    try:
        with open(image, "rb", buffering=0) as src, open(tmp, "wb") as dst:
            for start, end in data_extents(src.fileno(), size):
                off = start
                while off < end:
                    chunk = os.pread(src.fileno(), min(block, end - off), off)
                    if not chunk:
                        raise OSError(f"read {off} bytes of {size}")
                    if chunk != zero[: len(chunk)]:
                        os.pwrite(dst.fileno(), chunk, off)
                        stored += len(chunk)
                    off += len(chunk)
            os.ftruncate(dst.fileno(), size)
        os.replace(tmp, images / f"{key}.img")
        atomic_write_json(images / f"{key}.json", {"populated": populated, "stored_bytes": stored})
    except OSError as exc:  # the run goes on without a cached image
        tmp.unlink(missing_ok=True)
        record.update(state="built", error=f"not kept: {exc}")
        return
    record["stored_bytes"] = stored
    (images / f"{key}.seen").unlink(missing_ok=True)
    evict_images(images, keep=f"{key}.img")


def _seen_before(d: Path, key: str) -> bool:
    """Whether a run built the content KEY before (then keep it now); marks it seen otherwise.
    The marks beyond SEEN_KEPT, least recent first, go."""
    # a save cut short (the runner killed) left its partial file; runs hold the machine lock,
    # so any such file is that leftover
    for stale in d.glob(".*.tmp"):
        stale.unlink(missing_ok=True)
    mark = d / f"{key}.seen"
    if mark.exists():
        return True
    try:
        d.mkdir(parents=True, exist_ok=True)
        mark.touch()
        marks = sorted(d.glob("*.seen"), key=lambda f: f.stat().st_mtime, reverse=True)
        for old in marks[SEEN_KEPT:]:
            old.unlink(missing_ok=True)
    except OSError:
        pass
    return False


def data_extents(fd: int, size: int) -> list[tuple[int, int]]:
    """The [start, end) ranges of the first SIZE bytes of FD that may hold data (SEEK_DATA and
    SEEK_HOLE; a file system without them answers that all of it is data)."""
    out, pos = [], 0
    while pos < size:
        try:
            start = os.lseek(fd, pos, os.SEEK_DATA)
        except OSError as exc:
            if exc.errno == errno.ENXIO:  # no data after pos
                break
            raise
        if start >= size:
            break
        end = min(size, os.lseek(fd, start, os.SEEK_HOLE))
        out.append((start, end))
        pos = end
    return out


def evict_images(d: Path, keep: str | None = None, most: int | None = None, budget: int | None = None) -> list[str]:
    """Remove the least recently used images of the cache folder D beyond MOST images
    (IMAGES_KEPT), BUDGET bytes stored (IMAGES_BYTES) or a quarter of the free space of D's file
    system (which the images already stored count towards); KEEP (a file name) stays. The names
    removed."""
    most = IMAGES_KEPT if most is None else most
    budget = IMAGES_BYTES if budget is None else budget
    imgs = []
    for f in d.glob("*.img"):
        try:
            st = f.stat()
        except OSError:
            continue
        imgs.append((st.st_mtime, f.name == keep, st.st_blocks * 512, f))
    imgs.sort(key=lambda t: (t[1], t[0]), reverse=True)  # KEEP first, then the newest
    stored = sum(t[2] for t in imgs)
    try:
        vfs = os.statvfs(d)
        budget = min(budget, (vfs.f_bavail * vfs.f_frsize + stored) // 4)
    except OSError:
        pass
    removed, total, count = [], 0, 0
    for _, kept, size, f in imgs:
        if not kept and (count >= most or total + size > budget):
            f.unlink(missing_ok=True)
            f.with_suffix(".json").unlink(missing_ok=True)
            removed.append(f.name)
        else:
            total, count = total + size, count + 1
    return removed

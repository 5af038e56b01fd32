"""The device under test of one run when it is built or formatted for the run: the emulated
rotating disk (corun.machine.rotating_disk) or a real block device by path, populated with the
jobs' inputs and evicted from the page cache (corun.run.checked_spec holds one per run)."""

from __future__ import annotations

import hashlib
import os
import subprocess
from pathlib import Path

from corun.emulators import Emulator
from corun.errors import ConfigError
from corun.machine.block_device import device_of
from corun.machine.disk_mounts import (
    _evict,
    _mount_entry,
    _run,
    _umount,
)
from corun.machine.rotating_disk import RotatingDisk, check_machine, resolve
from corun.machine.state import Journal, undo_handler

# ---- real block devices by path -------------------------------------------------------------


def check_block_device(path: str, fmt: bool, source: str = "spec", key: str = "device.block") -> str:
    """A real disk for a run: it must be a block device; with format, it must hold nothing."""
    p = Path(path)
    if not p.is_block_device():
        raise ConfigError(source, f"{key}.path", path, "a block device such as /dev/sdb")
    if not fmt:
        return "use"
    blkid = subprocess.run(["blkid", "-p", "-o", "export", path], capture_output=True, text=True)
    if blkid.returncode == 0 and blkid.stdout.strip():
        found = dict(ln.split("=", 1) for ln in blkid.stdout.split() if "=" in ln)
        what = found.get("TYPE") or found.get("PTTYPE") or "a signature"
        raise ConfigError(
            source, f"{key}.path", path, f"an empty device to format (it holds {what}; wipe it yourself if it is spare)"
        )
    wipe = subprocess.run(["wipefs", "-n", path], capture_output=True, text=True)
    if wipe.returncode != 0 or wipe.stdout.strip():
        raise ConfigError(
            source, f"{key}.path", path, "an empty device to format (wipefs -n found signatures or could not read it)"
        )
    return "format"


@undo_handler("block_mount")
def _undo_block_mount(action: dict) -> None:
    _umount(action["target"])


def _check_mount_target(path: str, source: str) -> None:
    t = Path(path)
    if t.exists() and (not t.is_dir() or any(t.iterdir())):
        raise ConfigError(
            source, "device.path", path, "an empty or new folder (the run's file system is mounted there)"
        )
    if _mount_entry(str(t.absolute())) is not None:
        raise ConfigError(source, "device.path", path, "a folder that is not a mount point")


def _populate(items: list[dict], target: str) -> list[dict]:
    """Copy the jobs' inputs onto the run's file system, then drop them from the page cache."""
    done = []
    for it in items:
        dst = Path(target) / it.get("dst", "")
        dst.mkdir(parents=True, exist_ok=True)
        _run(["cp", "-a", it["src"], str(dst)], "populating the run's file system", timeout=3600)
        done.append({"src": it["src"], "dst": str(dst)})
    os.sync()
    _evict([target])
    return done


class RunDevice:
    """The device under test of one run when it is built or formatted for the run
    (device.kind rotating_disk, or block with format). The runner calls prepare() among its
    checks, start() first in its machine set-up, check() while jobs run, record_end() before
    its journal is unwound, after_teardown() after."""

    def __init__(self, kind: str, dspec: dict, source: str):
        self.kind, self.dspec, self.source = kind, dspec, source
        self.disk: RotatingDisk | None = None
        self.block_name: str | None = None
        self.populated: list[dict] = []
        self.cfg = None

    @classmethod
    def prepare(cls, dspec: dict, source: str, emulator: Emulator) -> RunDevice | None:
        """The device of a run spec's DSPEC checked (EMULATOR: where the emulated disk's program
        and presets are), or None for a throttled disk."""
        kind = dspec.get("kind", "throttle")
        if kind == "throttle":
            if dspec.get("populate"):
                raise ConfigError(
                    source,
                    "device.populate",
                    dspec["populate"],
                    "[] with kind throttle (populate fills a file system built for the run)",
                )
            return None
        rd = cls(kind, dspec, source)
        if kind == "rotating_disk":
            rd.cfg = resolve(dspec.get("rotating_disk"), emulator, source)
            check_machine(emulator, source)
            if rd.cfg["overlay"]:
                root = Path(dspec["path"]).absolute()
                if not root.is_dir() or _mount_entry(str(root)) is not None:
                    raise ConfigError(
                        source,
                        "device.path",
                        dspec["path"],
                        "an existing folder that is not a mount point (overlay mounts the emulated disk over it)",
                    )
                for i, it in enumerate(dspec.get("populate") or []):
                    src = Path(it["src"]).absolute()
                    if root not in src.parents:
                        raise ConfigError(
                            source,
                            f"device.populate[{i}].src",
                            it["src"],
                            f"a path under device.path {dspec['path']} (with overlay, inputs keep their paths)",
                        )
            else:
                _check_mount_target(dspec["path"], source)
        else:
            blk = dspec.get("block")
            if not blk:
                raise ConfigError(source, "device.block", None, "an object with path (kind block)")
            mode = check_block_device(blk["path"], blk.get("format", False), source)
            if mode == "format":
                _check_mount_target(dspec["path"], source)
            else:
                on = device_of(dspec["path"], source, "device.path")
                want = Path(os.path.realpath(blk["path"])).name
                if want not in (on.name, on.partition):
                    raise ConfigError(
                        source,
                        "device.path",
                        dspec["path"],
                        f"a path on {blk['path']} (it is on {on.partition or on.name}); "
                        "or block.format: true for an empty device",
                    )
                if dspec.get("populate"):
                    raise ConfigError(source, "device.populate", dspec["populate"], "[] unless block.format is true")
                return None
        for i, it in enumerate(dspec.get("populate") or []):
            if not Path(it["src"]).exists():
                raise ConfigError(source, f"device.populate[{i}].src", it["src"], "an existing file or folder")
        return rd

    def start(self, journal: Journal, run_id: str) -> str:
        """Build the device; returns its block device name (loopN, sdb ...)."""
        target = self.dspec["path"]
        if self.kind == "rotating_disk":
            self.disk = RotatingDisk(self.cfg, journal, target, run_id)
            if self.cfg["overlay"]:
                # the inputs are walked for the cache's key only when there is a cache
                key = self._fill_key() if self.cfg["image_cache"] else None
                self.disk.start(fill=self._fill_overlay, fill_key=key)  # timed once filled
                self.block_name = Path(self.disk.loop).name
                self.populated = self.disk.populated
                return self.block_name
            self.disk.start(timed=False)
            name = Path(self.disk.loop).name
        else:
            blk = self.dspec["block"]
            check_block_device(blk["path"], True, self.source)  # again, just before formatting
            Path(target).mkdir(parents=True, exist_ok=True)
            _run(
                ["mkfs.ext4", "-q", "-E", "lazy_itable_init=0,lazy_journal_init=0", blk["path"]],
                f"mkfs.ext4 on {blk['path']}",
                timeout=3600,
            )
            journal.push(
                {"kind": "block_mount", "what": f"file system on {blk['path']}", "target": str(Path(target).absolute())}
            )
            opts = ["-o", blk["mount_options"]] if blk.get("mount_options") else []
            _run(["mount", "-t", "ext4", *opts, blk["path"], target], f"mount of {blk['path']}")
            name = Path(os.path.realpath(blk["path"])).name
            if Path(f"/sys/class/block/{name}/partition").exists():
                name = Path(os.path.realpath(f"/sys/class/block/{name}")).parent.name
        self.block_name = name
        self.populated = _populate(self.dspec.get("populate") or [], target)
        if self.disk:
            self.disk.laps.lap("fill")
            self.disk.go_timed()
        return name

    def _fill_key(self) -> str:
        """What _fill_overlay copies, as a hash: every path it copies (relative to device.path)
        with its type, mode, owner, size and modification time (cp -a keeps them); a change to
        any input gives another key, hence a new mkfs and copy."""
        root = Path(self.dspec["path"]).absolute()
        srcs = [Path(it["src"]).absolute() for it in self.dspec.get("populate") or []] or [root]
        h = hashlib.sha256()
        for src in srcs:
            h.update(f"item {src.relative_to(root) if src != root else '.'}\n".encode())
            walk = [src] + sorted(src.rglob("*")) if src.is_dir() and not src.is_symlink() else [src]
            for f in walk:
                st = f.lstat()
                link = os.readlink(f) if f.is_symlink() else ""
                h.update(
                    f"{f.relative_to(root)}\0{st.st_mode}\0{st.st_uid}\0{st.st_gid}\0{st.st_size}"
                    f"\0{st.st_mtime_ns}\0{link}\n".encode()
                )
        return h.hexdigest()

    def _fill_overlay(self, stage: str) -> list[dict]:
        """Copy device.path's inputs (the populate items, all under it, or the whole folder) to
        the same places on the staging mount."""
        root = Path(self.dspec["path"]).absolute()
        items = self.dspec.get("populate") or []
        if not items:
            _run(["cp", "-a", f"{root}/.", stage], "filling the emulated disk", timeout=3600)
            return [{"src": str(root), "dst": str(root)}]
        done = []
        for it in items:
            src = Path(it["src"]).absolute()
            rel = src.relative_to(root)
            dst = Path(stage) / rel.parent
            dst.mkdir(parents=True, exist_ok=True)
            _run(["cp", "-a", str(src), str(dst)], "filling the emulated disk", timeout=3600)
            done.append({"src": str(src), "dst": str(root / rel)})
        return done

    def check(self) -> None:
        if self.disk:
            self.disk.check()

    def record_end(self) -> None:
        if self.disk:
            self.disk.record_end()

    def after_teardown(self, run_dir: Path) -> None:
        if self.disk:
            self.disk.after_teardown()
            self.disk.copy_files(run_dir / "device")
            self.disk.cleanup()

    def describe(self) -> dict:
        out = (
            self.disk.describe()
            if self.disk
            else {"kind": "block", "path": self.dspec["block"]["path"], "formatted": True}
        )
        out["populated"] = self.populated
        return out

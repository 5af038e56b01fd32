"""One cgroup per run holding every job process.

It contains the jobs (teardown kills everything in it, even processes that left
their process group) and carries the emulated shared device: an I/O cap on the
device under test shared by all jobs of the run (cgroup v1 blkio throttle or
cgroup v2 io.max), so the HDD-era contention of the papers shows on a fast disk.
It can also cap the memory of all jobs together (v1 memory.limit_in_bytes, v2
memory.max), so implicit I/O (paging of file-backed mappings) appears at small
sizes. On cgroup v1 the run has one group per controller (blkio, memory); on v2
one group with both controllers enabled.
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

from corun.errors import CorunError
from corun.machine.state import undo_handler

CGROUP_ROOT = Path(os.environ.get("CORUN_CGROUP_ROOT", "/sys/fs/cgroup"))

V1_FILES = {
    "read_bps": "blkio.throttle.read_bps_device",
    "write_bps": "blkio.throttle.write_bps_device",
    "read_iops": "blkio.throttle.read_iops_device",
    "write_iops": "blkio.throttle.write_iops_device",
}
V2_KEYS = {"read_bps": "rbps", "write_bps": "wbps", "read_iops": "riops", "write_iops": "wiops"}


def detect(root: Path = CGROUP_ROOT) -> tuple[str | None, Path | None]:
    """('v1', blkio mount) or ('v2', unified mount with the io controller), or (None, None)."""
    blkio = root / "blkio"
    if (blkio / "blkio.throttle.read_bps_device").exists():
        return "v1", blkio
    for cand in (root, root / "unified"):
        ctl = cand / "cgroup.controllers"
        if ctl.exists() and "io" in ctl.read_text().split():
            return "v2", cand
    return None, None


class RunCgroup:
    def __init__(self, run_id: str, root: Path = CGROUP_ROOT):
        self.root = root
        self.version, self.mount = detect(root)
        self.run_id = run_id
        self.path: Path | None = None  # the io group (blkio on v1)
        self.memory_path: Path | None = None  # the memory group (same as path on v2)
        self.limits: dict[str, int] = {}
        self.memory_limit: int | None = None
        self.device_majmin: str | None = None

    @property
    def available(self) -> bool:
        return self.version is not None and os.access(self.mount, os.W_OK)

    def memory_available(self) -> bool:
        if self.version == "v1":
            return (
                os.access(self.root / "memory", os.W_OK) and (self.root / "memory" / "memory.limit_in_bytes").exists()
            )
        if self.version == "v2":
            return "memory" in (self.mount / "cgroup.controllers").read_text().split()
        return False

    def create(self, memory: bool = False) -> Path:
        if not self.available:
            raise CorunError(
                "no writable blkio (cgroup v1) or io (cgroup v2) controller: "
                "run as root on a kernel with cgroups, or drop device.throttle"
            )
        parent = self.mount / "corun"
        parent.mkdir(exist_ok=True)
        if self.version == "v2":
            _enable(self.mount, parent, ["io"] + (["memory"] if memory else []))
        self.path = parent / self.run_id
        self.path.mkdir(exist_ok=True)
        if memory:
            if self.version == "v1":
                mparent = self.root / "memory" / "corun"
                mparent.mkdir(exist_ok=True)
                self.memory_path = mparent / self.run_id
                self.memory_path.mkdir(exist_ok=True)
            else:
                self.memory_path = self.path
        return self.path

    @property
    def procs_file(self) -> Path:
        assert self.path is not None
        return self.path / "cgroup.procs"

    @property
    def procs_files(self) -> list[Path]:
        """Every cgroup.procs a job must join (one per v1 hierarchy)."""
        out = [self.procs_file]
        if self.memory_path is not None and self.memory_path != self.path:
            out.append(self.memory_path / "cgroup.procs")
        return out

    def throttle(self, majmin: str, limits: dict[str, int]) -> None:
        """Cap the device for the whole cgroup; read back and verify."""
        assert self.path is not None
        self.device_majmin = majmin
        for key, value in limits.items():
            if value is None:
                continue
            if self.version == "v1":
                f = self.path / V1_FILES[key]
                f.write_text(f"{majmin} {int(value)}")
            else:
                (self.path / "io.max").write_text(f"{majmin} {V2_KEYS[key]}={int(value)}")
            self.limits[key] = int(value)
        got = self.read_limits()
        if got != self.limits:
            raise CorunError(f"I/O cap not in effect on {majmin}: wrote {self.limits}, read back {got}")

    def limit_memory(self, limit_bytes: int) -> None:
        """Cap the memory of all jobs together; read back and verify (the kernel rounds to pages)."""
        assert self.memory_path is not None
        f = self.memory_path / ("memory.limit_in_bytes" if self.version == "v1" else "memory.max")
        f.write_text(str(int(limit_bytes)))
        got = int(f.read_text().strip()) if f.read_text().strip() != "max" else None
        page = os.sysconf("SC_PAGE_SIZE")
        if got is None or abs(got - limit_bytes) >= page:
            raise CorunError(f"memory cap not in effect: wrote {limit_bytes}, read back {got}")
        self.memory_limit = got

    def read_limits(self) -> dict[str, int]:
        assert self.path is not None and self.device_majmin is not None
        out: dict[str, int] = {}
        if self.version == "v1":
            for key, fname in V1_FILES.items():
                f = self.path / fname
                for line in f.read_text().splitlines() if f.exists() else []:
                    dev, _, val = line.partition(" ")
                    if dev == self.device_majmin:
                        out[key] = int(val)
        else:
            for line in (self.path / "io.max").read_text().splitlines():
                parts = line.split()
                if parts and parts[0] == self.device_majmin:
                    for kv in parts[1:]:
                        k, _, v = kv.partition("=")
                        for key, v2 in V2_KEYS.items():
                            if v2 == k and v != "max":
                                out[key] = int(v)
        return out

    def pids(self) -> list[int]:
        out: set[int] = set()
        for p in (self.path, self.memory_path):
            if p is not None:
                out.update(pids_in(p))
        return sorted(out)

    def describe(self) -> dict:
        return {
            "version": self.version,
            "path": str(self.path) if self.path else None,
            "memory_path": str(self.memory_path) if self.memory_path else None,
            "device": self.device_majmin,
            "limits": dict(self.limits),
            "memory_limit_bytes": self.memory_limit,
        }

    def undo_actions(self) -> list[dict]:
        """Undo records, memory group first (it is removed after the io group's processes die)."""
        out = []
        if self.memory_path is not None and self.memory_path != self.path:
            out.append({"kind": "cgroup", "path": str(self.memory_path), "version": self.version, "device": None})
        out.append({"kind": "cgroup", "path": str(self.path), "version": self.version, "device": self.device_majmin})
        return out


def _enable(mount: Path, parent: Path, controllers: list[str]) -> None:
    for d in (mount, parent):
        ctl = d / "cgroup.subtree_control"
        for c in controllers:
            if ctl.exists() and c not in ctl.read_text().split():
                try:
                    ctl.write_text(f"+{c}")
                except OSError as exc:
                    raise CorunError(f"cannot enable the {c} controller in {d}: {exc.strerror}") from None


def pids_in(path: Path) -> list[int]:
    out: set[int] = set()
    for f in [path / "cgroup.procs", *path.glob("*/cgroup.procs")]:
        try:
            out.update(int(x) for x in f.read_text().split())
        except OSError:
            pass
    return sorted(out)


def kill_all(path: Path, timeout_s: float = 5.0) -> None:
    """Resume and kill every process in the cgroup until it is empty."""
    end = time.monotonic() + timeout_s
    while True:
        pids = pids_in(path)
        if not pids:
            return
        for p in pids:
            for sig in (signal.SIGCONT, signal.SIGKILL):
                try:
                    os.kill(p, sig)
                except ProcessLookupError:
                    pass
        if time.monotonic() > end:
            raise CorunError(f"processes {pids} survive in {path}")
        time.sleep(0.02)


@undo_handler("cgroup")
def _undo_cgroup(action: dict) -> None:
    path = Path(action["path"])
    if not path.exists():
        return
    kill_all(path)
    dev = action.get("device")
    if dev:  # lift the cap explicitly, then remove the group
        if action.get("version") == "v1":
            for fname in V1_FILES.values():
                try:
                    (path / fname).write_text(f"{dev} 0")
                except OSError:
                    pass
        else:
            try:
                (path / "io.max").write_text(f"{dev} rbps=max wbps=max riops=max wiops=max")
            except OSError:
                pass
    for child in sorted((d for d in path.iterdir() if d.is_dir()), reverse=True):
        _rmdir_retry(child)  # groups a variant made for single jobs (cgroup_io_throttle)
    _rmdir_retry(path)


def _rmdir_retry(path: Path) -> None:
    for _ in range(50):
        try:
            path.rmdir()
            return
        except FileNotFoundError:
            return
        except OSError:
            time.sleep(0.02)
    path.rmdir()

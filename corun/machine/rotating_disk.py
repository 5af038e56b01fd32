"""The emulated rotating disk as a real block device for a run, and real disks by path.

Set-up, every step journalled (corun/state.py) before it is made:

1. the FUSE daemon (emulators/rotating_disk) serves one image file, held in its memory, on a
   private mount point under the state folder;
2. `losetup --direct-io=on` attaches a loop device to that file (no page cache between the
   loop device and the model);
3. host queue settings of the loop device: rotational, elevator, nr_requests, max_sectors_kb,
   read_ahead_kb (in that order: an elevator change resets nr_requests, a max_sectors_kb
   change may reset the read-ahead);
4. mkfs.ext4 (no lazy initialisation, so no background writes during the run), then a mount on
   the run's data folder; settings that mkfs or the mount reset (the read-ahead, here) are noted
   and set again, then all are read back and must match.

With overlay and image_cache (the default), the image that step 4 and the copy of the inputs
made is kept in the state folder (`rotating_disk/images/KEY.img`, sparse), KEY the hash of the
size, mkfs and the inputs' paths, sizes, modes and times, once a second run builds the same KEY
(keeping it costs a read of what mkfs and the fill wrote: the daemon answers SEEK_DATA and
SEEK_HOLE from its map of the chunks holding data, which a content used once would never repay); a
later run with that KEY starts the daemon from it (`--load`) and only mounts: the same bytes,
without the mkfs, the copy and the staging mount.

Teardown is the journal's unwind, newest first: unmount, detach, end the daemon. A hung or dead
daemon never blocks it: the FUSE connection is aborted (/sys/fs/fuse/connections/N/abort)
before unmounting, unmounts fall back to lazy ones, and a loop device still busy is detached
lazily (autoclear). After a SIGKILL of the runner, `corun recover` (or the next corun command)
unwinds the same journal.

A real block device (`device.kind: block`) is formatted only when the spec says `format: true`
and it holds no file system or partition table (blkid and wipefs -n); otherwise one line and
nothing is touched.
"""

from __future__ import annotations

import errno
import hashlib
import json
import os
import shutil
import signal
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from corun.errors import ConfigError, CorunError
from corun.machine.disk_mounts import (
    _daemon_healthy,
    _evict,
    _fuse_conn,
    _loops_of,
    _mount_entry,
    _run,
    _umount,
    _wait_exit,
    abort_fuse,
)
from corun.machine.state import Journal, state_dir, undo_handler
from corun.util import Laps, atomic_write_json, cli_options, proc_starttime

REPO = Path(__file__).resolve().parents[2]
EMULATOR_DIR = REPO / "emulators" / "rotating_disk"
BINARY = EMULATOR_DIR / "build" / "corun-rotating-disk"
PRESETS = EMULATOR_DIR / "presets"
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
STOP_GRACE_S = 10.0
# images of the cache kept, the least recently used going first beyond any of: this many, this
# many bytes stored, a quarter of the free space of the state folder's file system
IMAGES_KEPT = 64
IMAGES_BYTES = 16 << 30
SEEN_KEPT = 1024  # marks of contents built once (KEY.seen, empty files)
MKFS_ARGV = ["mkfs.ext4", "-q", "-F", "-m", "0", "-E", "lazy_itable_init=0,lazy_journal_init=0,nodiscard"]


def preset_path(preset: str) -> Path:
    p = Path(preset)
    if "/" in preset or preset.endswith(".conf"):
        return p
    return PRESETS / f"{preset}.conf"


def read_preset(path: Path) -> dict:
    """A preset file: `option = value` lines with # comments."""
    out = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line and "=" in line:
            k, v = (x.strip() for x in line.split("=", 1))
            out[k] = v
    return out


def resolve(cfg: dict | None, source: str = "spec", key: str = "device.rotating_disk") -> dict:
    """Defaults filled in and every value checked; a problem is one ConfigError line."""
    cfg = dict(cfg or {})
    out = {**DEFAULTS, **cfg}
    out["host"] = {**HOST_DEFAULTS, **(cfg.get("host") or {})}
    out["model"] = dict(cfg.get("model") or {})
    pp = preset_path(str(out["preset"]))
    if not pp.is_file():
        names = sorted(x.stem for x in PRESETS.glob("*.conf"))
        raise ConfigError(
            source, f"{key}.preset", out["preset"], f"a preset name ({', '.join(names)}) or a preset file"
        )
    out["preset_file"] = str(pp)
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


def check_machine(source: str = "spec", key: str = "device.kind") -> None:
    """What a rotating_disk run needs from this machine, checked before anything starts."""
    if os.geteuid() != 0:
        raise ConfigError(source, key, "rotating_disk", "a run as root (FUSE mount, loop device, mkfs, mount)")
    if not BINARY.is_file():
        raise ConfigError(
            source, key, "rotating_disk", "the emulator built (ansible-playbook site.yml --tags rotating_disk)"
        )
    if not Path("/dev/fuse").exists():
        raise ConfigError(source, key, "rotating_disk", "a kernel with FUSE (/dev/fuse is missing)")
    for tool in ("losetup", "mkfs.ext4", "mount", "umount"):
        if shutil.which(tool) is None:
            raise ConfigError(source, key, "rotating_disk", f"{tool} on PATH")


# ---- undo handlers (also used by `corun recover` for a dead runner's journal) -------------


@undo_handler("rotating_disk_mount")
def _undo_mount(action: dict) -> None:
    """Unmount the run's file system; abort the FUSE connection first if the daemon is gone
    or stopped, so the unmount's writes fail instead of waiting."""
    conn = action.get("fuse_conn") or _fuse_conn(action.get("fuse_dir", ""))
    if not _daemon_healthy(action.get("daemon_pid"), action.get("daemon_starttime")):
        abort_fuse(conn)
    _umount(action["target"], conn)


@undo_handler("rotating_disk_loop")
def _undo_loop(action: dict) -> None:
    """Detach the loop device(s) on the image (found by backing file, so a crash between
    losetup and the journal update is covered too)."""
    for loop in _loops_of(action["backing"]):
        subprocess.run(["losetup", "-d", loop], capture_output=True, timeout=30)


@undo_handler("rotating_disk_daemon")
def _undo_daemon(action: dict) -> None:
    """End the daemon (SIGTERM: it unmounts and writes its counters), then make sure its FUSE
    mount is gone."""
    pid, st = action.get("pid"), action.get("starttime")
    fuse_dir = action["fuse_dir"]
    conn = action.get("fuse_conn") or _fuse_conn(fuse_dir)
    if pid and proc_starttime(pid) == st:
        try:
            os.kill(pid, signal.SIGCONT)
            os.kill(pid, signal.SIGTERM)
        except ProcessLookupError:
            pass
        if not _wait_exit(pid, st, STOP_GRACE_S):
            abort_fuse(conn)
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            _wait_exit(pid, st, 5)
    if _mount_entry(fuse_dir) is not None:
        abort_fuse(conn)
        subprocess.run(["umount", "-l", fuse_dir], capture_output=True, timeout=30)
    if _mount_entry(fuse_dir) is not None:
        raise RuntimeError(f"{fuse_dir} is still mounted")


@dataclass
class HostSettings:
    requested: dict
    after_mount: dict | None = None
    at_end: dict | None = None
    reset_by_mount: dict | None = None


class RotatingDisk:
    """One emulated disk for one run: start() builds the stack, every step journalled."""

    def __init__(self, cfg: dict, journal: Journal, target: str | Path, run_id: str):
        self.cfg = cfg
        self.journal = journal
        self.target = str(Path(target).absolute())
        self.work = state_dir() / "rotating_disk" / run_id
        self.fuse_dir = str(self.work / "fuse")
        self.state_file = self.work / "state.json"
        self.log_file = self.work / "daemon.log"
        self.image = f"{self.fuse_dir}/disk.img"
        self.proc: subprocess.Popen | None = None
        self.loop: str | None = None
        self.host = HostSettings(dict(cfg["host"]))
        self.daemon_action: dict | None = None
        self.populated: list[dict] = []
        self.final_state: dict | None = None
        self.end_state: dict | None = None  # at the jobs' end (record_end), before the teardown
        self.laps = Laps()  # set-up steps' wall time
        self.image_cache: dict = {"state": "off"}

    # ------------------------------------------------------------ set-up
    def argv(self) -> list[str]:
        c = self.cfg
        options = {
            "--preset": c["preset_file"],
            "--size": c["size_bytes"],
            "--stroke": c["stroke"],
            "--seed": c["seed"],
            "--rt-priority": c["rt_priority"],
        }
        argv = [str(BINARY), *cli_options(options)]
        if c["queue_window"] is not None:
            argv += ["--queue-window", str(c["queue_window"])]
        for k, v in c["model"].items():
            argv += [f"--{k}", str(v).lower() if isinstance(v, bool) else str(v)]
        return argv + ["--untimed-start", "--mount", self.fuse_dir, "--state", str(self.state_file)]

    def start(self, fill=None, timed: bool = True, fill_key: str | None = None) -> None:
        """Build the stack. With overlay, FILL(folder) copies the inputs onto the new file
        system (mounted on a staging folder), which is then mounted over device.path. The
        daemon serves mkfs and the filling at memory speed; with TIMED (else call go_timed()
        once the disk is filled) every request from then on is timed by the model. FILL_KEY
        (what FILL copies, hashed) keys the image cache: a cached image replaces mkfs and
        FILL."""
        t = Path(self.target)
        overlay = self.cfg.get("overlay", False)
        if not overlay and t.exists() and (not t.is_dir() or any(t.iterdir())):
            raise CorunError(f"device.path: {self.target}: not an empty folder (the emulated disk is mounted there)")
        if overlay and not t.is_dir():
            raise CorunError(f"device.path: {self.target}: not a folder (overlay mounts the emulated disk over it)")
        if _mount_entry(self.target) is not None:
            raise CorunError(f"device.path: {self.target}: already a mount point")
        t.mkdir(parents=True, exist_ok=True)
        self.work.mkdir(parents=True, exist_ok=True)
        Path(self.fuse_dir).mkdir(exist_ok=True)
        self.state_file.unlink(missing_ok=True)
        j = self.journal
        self.laps.restart()
        # 1. the daemon
        self.daemon_action = j.push(
            {
                "kind": "rotating_disk_daemon",
                "what": EMULATOR,
                "fuse_dir": self.fuse_dir,
                "pid": None,
                "starttime": None,
            }
        )
        cached = self._cached_image(fill_key) if overlay else None
        log = open(self.log_file, "ab")
        try:
            self.proc = subprocess.Popen(
                self.argv() + (["--load", str(cached["file"])] if cached else []),
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
            )
        finally:
            log.close()
        self.daemon_action.update(pid=self.proc.pid, starttime=proc_starttime(self.proc.pid))
        j.update(self.daemon_action)
        end = time.monotonic() + 10
        while not self.state_file.exists():
            if self.proc.poll() is not None:
                raise CorunError(f"{EMULATOR} exited {self.proc.returncode} at start: {self._log_tail()}")
            if time.monotonic() > end:
                raise CorunError(f"{EMULATOR} did not mount {self.fuse_dir} within 10 s: {self._log_tail()}")
            time.sleep(0.02)
        self.fuse_conn = _fuse_conn(self.fuse_dir)
        self.daemon_action["fuse_conn"] = self.fuse_conn
        j.update(self.daemon_action)
        self.laps.lap("daemon")
        # 2. the loop device, direct I/O on the served file
        j.push(
            {"kind": "rotating_disk_loop", "what": "loop device of the rotating_disk emulator", "backing": self.image}
        )
        self.loop = self._step(["losetup", "--direct-io=on", "-f", "--show", self.image], "losetup").strip()
        name = Path(self.loop).name
        if Path(f"/sys/block/{name}/loop/dio").read_text().strip() != "1":
            raise CorunError(f"{self.loop}: direct I/O is off (losetup --direct-io=on was refused)")
        self.laps.lap("loop")
        # 3. host queue settings
        self.apply_host_settings(name)
        # 4. file system and mount
        if cached:
            self.populated = cached["populated"]
        else:
            self._step([*MKFS_ARGV, self.loop], "mkfs.ext4 on the emulated disk", timeout=600)
            self.laps.lap("mkfs")
        j.push(
            {
                "kind": "rotating_disk_mount",
                "what": "file system on the rotating_disk emulator",
                "target": self.target,
                "fuse_dir": self.fuse_dir,
                "fuse_conn": self.fuse_conn,
                "daemon_pid": self.proc.pid,
                "daemon_starttime": self.daemon_action["starttime"],
            }
        )
        opts = ["-o", self.cfg["mount_options"]] if self.cfg["mount_options"] else []
        if overlay and not cached:  # fill it on a staging mount first; unmounting it empties the page cache
            stage = self.work / "stage"
            stage.mkdir(exist_ok=True)
            st = j.push(
                {
                    "kind": "rotating_disk_mount",
                    "what": "staging mount of the rotating_disk emulator",
                    "target": str(stage),
                    "fuse_dir": self.fuse_dir,
                    "fuse_conn": self.fuse_conn,
                    "daemon_pid": self.proc.pid,
                    "daemon_starttime": self.daemon_action["starttime"],
                }
            )
            self._step(["mount", "-t", "ext4", self.loop, str(stage)], "staging mount of the emulated disk")
            self.populated = fill(str(stage)) if fill else []
            self.laps.lap("fill")
            err = j.undo(st)
            if err:
                raise CorunError(f"staging mount of the emulated disk: {err}")
            if self.image_cache.get("keep"):
                self._save_image()
                self.laps.lap("save_image")
        self._step(["mount", "-t", "ext4", *opts, self.loop, self.target], "mount of the emulated disk")
        if overlay:
            # unmounting the staging mount empties the page cache only if that was the file
            # system's last mount; should anything still hold it (one run's jobs once read all
            # their inputs from the cache), the copies are dropped here all the same
            os.sync()
            _evict([p["dst"] for p in self.populated])
        # mkfs and the mount may reset some (the read-ahead, seen here): note which, set them
        # again, and read them all back.
        seen = self.read_host_settings(name)
        self.host.reset_by_mount = {
            k: seen.get(k) for k, v in self.host.requested.items() if v is not None and seen.get(k) != v
        }
        self.apply_host_settings(name)
        self.host.after_mount = self.read_host_settings(name)
        self.verify_host_settings()
        self.laps.lap("mount")
        if timed:
            self.go_timed()

    # ------------------------------------------------------------ image cache
    def _images(self) -> Path:
        return state_dir() / "rotating_disk" / "images"

    def _cached_image(self, fill_key: str | None) -> dict | None:
        """The cached image of this size, mkfs and fill (None: build it, and keep it when the
        cache is on). Sets image_cache: state off, built or loaded, key, file."""
        if not (self.cfg.get("image_cache", True) and fill_key is not None):
            self.image_cache = {"state": "off"}
            return None
        mkfs = shutil.which("mkfs.ext4") or "mkfs.ext4"
        try:
            st = os.stat(mkfs)
            mkfs_id = [mkfs, st.st_size, st.st_mtime_ns]
        except OSError:
            mkfs_id = [mkfs]
        material = json.dumps([1, self.cfg["size_bytes"], MKFS_ARGV, mkfs_id, fill_key], sort_keys=True)
        key = hashlib.sha256(material.encode()).hexdigest()[:24]
        img, meta = self._images() / f"{key}.img", self._images() / f"{key}.json"
        self.image_cache = {"state": "built", "key": key, "file": str(img)}
        try:
            doc = json.loads(meta.read_text())
            if img.stat().st_size != self.cfg["size_bytes"] or not isinstance(doc.get("populated"), list):
                raise ValueError("not an image of this size")
        except (OSError, ValueError):
            self.image_cache["keep"] = _seen_before(self._images(), key)
            if not self.image_cache["keep"]:
                self.image_cache["why_not_kept"] = "its first use: kept when another run builds it"
            return None
        now = time.time()
        os.utime(img, (now, now))
        self.image_cache["state"] = "loaded"
        self.image_cache["stored_bytes"] = doc.get("stored_bytes")
        return {"file": img, "populated": doc["populated"]}

    def _save_image(self) -> None:
        """Keep the filled image (read through the daemon, untimed): its non-zero 1 MiB blocks
        in a sparse file, then the image's description; the least recently used beyond the
        cache's bounds go (evict_images). Only the chunks the daemon says may hold data are read
        (SEEK_DATA and SEEK_HOLE: what mkfs and the fill wrote), not the whole image."""
        key = self.image_cache["key"]
        d = self._images()
        d.mkdir(parents=True, exist_ok=True)
        tmp = d / f".{key}.{os.getpid()}.tmp"
        block, stored = 1 << 20, 0
        zero = bytes(block)
        try:
            size = self.cfg["size_bytes"]
            with open(self.image, "rb", buffering=0) as src, open(tmp, "wb") as dst:
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
            os.replace(tmp, d / f"{key}.img")
            atomic_write_json(d / f"{key}.json", {"populated": self.populated, "stored_bytes": stored})
        except OSError as exc:  # the run goes on without a cached image
            tmp.unlink(missing_ok=True)
            self.image_cache.update(state="built", error=f"not kept: {exc}")
            return
        self.image_cache["stored_bytes"] = stored
        (d / f"{key}.seen").unlink(missing_ok=True)
        evict_images(d, keep=f"{key}.img")

    def go_timed(self) -> None:
        """End the daemon's untimed start (SIGUSR2): from now on the model times every request."""
        self.laps.restart()
        os.sync()
        self.proc.send_signal(signal.SIGUSR2)
        end = time.monotonic() + 10
        while True:
            s = self._read_state()
            if s and s.get("timed"):
                self.laps.lap("go_timed")
                return
            self.check()
            if time.monotonic() > end:
                raise CorunError(f"{EMULATOR} did not confirm timed mode within 10 s")
            time.sleep(0.02)

    def _step(self, argv: list[str], what: str, timeout: float = 120) -> str:
        """A set-up command; if it fails because the daemon died, say that."""
        try:
            return _run(argv, what, timeout)
        except CorunError:
            self.check()
            raise

    def apply_host_settings(self, name: str) -> None:
        q = Path(f"/sys/block/{name}/queue")
        for k in HOST_ORDER:
            v = self.host.requested.get(k)
            if v is None:
                continue
            f = q / ("scheduler" if k == "elevator" else k)
            try:
                f.write_text(str(v))
            except OSError as exc:
                raise CorunError(f"{self.loop}: cannot set {f.name} to {v}: {exc.strerror}") from None

    @staticmethod
    def read_host_settings(name: str) -> dict:
        q = Path(f"/sys/block/{name}/queue")
        out = {}
        for k in HOST_ORDER:
            try:
                txt = (q / ("scheduler" if k == "elevator" else k)).read_text().strip()
            except OSError:
                out[k] = None
                continue
            if k == "elevator":
                sel = [w.strip("[]") for w in txt.split() if w.startswith("[")]
                out[k] = sel[0] if sel else txt
            else:
                out[k] = int(txt)
        return out

    def verify_host_settings(self) -> None:
        got = self.host.after_mount or {}
        bad = [
            f"{k} is {got.get(k)}, set {v}" for k, v in self.host.requested.items() if v is not None and got.get(k) != v
        ]
        if bad:
            raise CorunError(f"{self.loop}: host queue settings differ after mount: {'; '.join(bad)}")

    # ------------------------------------------------------------ during the run
    def check(self) -> None:
        """Raise, naming the emulator, if the daemon died or lost its mount."""
        if self.proc is None:
            return
        rc = self.proc.poll()
        if rc is not None:
            how = f"was killed by signal {-rc}" if rc < 0 else f"exited {rc}"
            raise CorunError(
                f"{EMULATOR} (pid {self.proc.pid}) {how}; its disk at {self.target} is gone: {self._log_tail()}"
            )

    def snapshot(self, timeout_s: float = 2.0) -> dict | None:
        """Ask the daemon for its counters (SIGUSR1) and read them."""
        if self.proc is None or self.proc.poll() is not None:
            return self._read_state()
        before = self._read_state()
        t_before = (before or {}).get("now_epoch_s")
        self.proc.send_signal(signal.SIGUSR1)
        end = time.monotonic() + timeout_s
        while time.monotonic() < end:
            s = self._read_state()
            if s and s.get("now_epoch_s") != t_before:
                return s
            time.sleep(0.02)
        return self._read_state()

    def _read_state(self) -> dict | None:
        try:
            return json.loads(self.state_file.read_text())
        except (OSError, ValueError):
            return None

    def _log_tail(self) -> str:
        try:
            txt = self.log_file.read_text(errors="replace").strip().splitlines()
            return txt[-1] if txt else "no message"
        except OSError:
            return "no message"

    # ------------------------------------------------------------ teardown, record
    def record_end(self) -> None:
        """Before teardown: the settings at the end and the daemon's counters (the run's); then
        the daemon serves untimed (SIGRTMIN), so that the unmount's flush of what the jobs left
        dirty costs the teardown no modelled seeks (counted apart: counters_at_exit)."""
        if self.loop:
            self.host.at_end = self.read_host_settings(Path(self.loop).name)
        self.final_state = self.end_state = self.snapshot()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGRTMIN)

    def after_teardown(self) -> None:
        """After the journal was unwound: the daemon's last counters (written at exit)."""
        s = self._read_state()
        if s and s.get("status") in ("exited", "failed"):
            self.final_state = s

    def cleanup(self) -> None:
        """Remove the working folder (state, log, mount points) once nothing is mounted there."""
        if not any(_mount_entry(str(p)) for p in (Path(self.fuse_dir), self.work / "stage")):
            shutil.rmtree(self.work, ignore_errors=True)
            try:
                self.work.parent.rmdir()  # only when no other run's folder is there
            except OSError:
                pass

    def copy_files(self, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        for f in (self.state_file, self.log_file):
            if f.exists():
                shutil.copy2(f, dest / f.name)

    def describe(self) -> dict:
        s = self.final_state or {}
        run = self.end_state or s  # the counters at the jobs' end, without the teardown's
        return {
            "kind": "rotating_disk",
            "emulator": str(BINARY.relative_to(REPO)),
            "argv": [str(a) for a in self.argv()[1:]],
            "preset": Path(self.cfg["preset_file"]).stem,
            "size_bytes": self.cfg["size_bytes"],
            "stroke": self.cfg["stroke"],
            "loop_device": self.loop,
            "mount": self.target,
            "mount_options": self.cfg["mount_options"],
            "overlay": self.cfg.get("overlay", False),
            "model": {"params": s.get("params"), "derived": s.get("derived")},
            "host_settings": {
                "requested": self.host.requested,
                "after_mount": self.host.after_mount,
                "reset_by_mkfs_or_mount": self.host.reset_by_mount,
                "at_end": self.host.at_end,
            },
            "counters": run.get("counters"),
            "counters_at_exit": s.get("counters"),  # with the teardown's untimed unmount flush
            "daemon_status": s.get("status"),
            "untimed_fill": {
                "requests": (run.get("counters") or {}).get("untimed_requests"),
                "bytes": (run.get("counters") or {}).get("untimed_bytes"),
            },
            "daemon_rt_priority": s.get("rt_priority"),
            "daemon_rt_priority_error": s.get("rt_priority_error"),
            "setup_steps_s": self.laps.steps,
            "image_cache": self.image_cache,
        }


def stop(disk: RotatingDisk) -> list[str]:
    """Undo the disk's journal actions now (newest first); returns the errors met."""
    errs = []
    for a in reversed(list(disk.journal.actions)):
        if a["kind"].startswith("rotating_disk_"):
            err = disk.journal.undo(a)
            if err:
                errs.append(err)
    return errs


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

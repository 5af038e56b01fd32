"""Common ground of all monitors: context, base classes, metadata and the shared time base.

A monitor writes raw files into the run's raw directory while jobs run, and parses them into a
tidy table afterwards. Every tidy table has

- ``time_epoch_s``: epoch seconds at the end of the sampling interval the row describes,
- ``t_s``: ``time_epoch_s - t0_epoch``, with ``t0_epoch`` chosen by the caller (the run start),

so tables from different monitors can be joined on one time base. Measurements the machine
could not make are returned as `corun.errors.missing` records, never as zeros.

Each monitor records ``<name>.meta.json`` next to its raw file: the epoch read just before the
tool was launched (``start_epoch_s``), the command, the interval actually used and, after
``stop()``, the stop time and exit status. Parsers read the raw files and this metadata only, so
a run folder can be re-analysed without a live monitor.
"""

from __future__ import annotations

import csv
import json
import math
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar

from corun.util import atomic_write_json, lazy_module

np = lazy_module("numpy")
pd = lazy_module("pandas")

DEFAULT_PERF_EVENTS = ["LLC-load-misses", "LLC-store-misses", "cycles", "instructions"]

TIME_COLUMNS = ["time_epoch_s", "t_s"]


@dataclass
class MonitorContext:
    """What every monitor needs to know about the run."""

    raw_dir: Path
    interval_s: float = 1.0
    devices: list[str] = field(default_factory=list)
    perf_events: list[str] = field(default_factory=lambda: list(DEFAULT_PERF_EVENTS))
    cgroup: str | None = None  # perf: count only this cgroup (not implemented: system-wide)
    memory_cgroup: str | None = None  # memory: the run's memory cgroup folder to sample

    def __post_init__(self) -> None:
        self.raw_dir = Path(self.raw_dir)


class Monitor:
    """One source of measurements: start() in the background, stop(), parse() the raw files."""

    name: ClassVar[str] = ""
    raw_files: ClassVar[list[str]] = []
    tool: ClassVar[str | None] = None  # program that must be on PATH
    role: ClassVar[str | None] = None  # Ansible role that installs it
    purpose: ClassVar[str] = ""

    def __init__(self, ctx: MonitorContext):
        self.ctx = ctx
        self.start_epoch_s: float | None = None

    @property
    def meta_path(self) -> Path:
        return self.ctx.raw_dir / f"{self.name}.meta.json"

    def start(self) -> None:
        raise NotImplementedError

    def stop(self) -> None:
        raise NotImplementedError

    def started(self) -> bool:
        """True once the monitor's own start-up is over (it is waiting for its next sample), so
        that a job started now does not share the machine with it."""
        return True

    def parse(self, t0_epoch: float) -> tuple[pd.DataFrame, list[dict]]:
        return self.parse_raw(self.ctx.raw_dir, t0_epoch)

    @classmethod
    def parse_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[pd.DataFrame, list[dict]]:
        """Parse the raw files in `raw_dir` (no live monitor needed)."""
        raise NotImplementedError


class ProcessMonitor(Monitor):
    """A monitor backed by an external program, stopped with `stop_signal`.

    The program runs in its own process group, so a Ctrl-C aimed at the runner does not cut its
    output short: the runner must call stop() (in a ``finally``), which signals, waits and
    escalates to SIGTERM and SIGKILL only if the program does not exit. A runner killed with
    SIGKILL leaves the programs running.
    """

    stop_signal: ClassVar[int] = signal.SIGINT
    stop_timeout_s: ClassVar[float] = 5.0
    stdout_file: ClassVar[str | None] = None  # raw file that receives the program's stdout

    def __init__(self, ctx: MonitorContext):
        super().__init__(ctx)
        self._proc: subprocess.Popen | None = None
        self._files: list = []
        self._meta: dict = {}
        self._stopped = False

    @property
    def stderr_file(self) -> str:
        return f"{self.name}.stderr"

    def command(self) -> list[str]:
        raise NotImplementedError

    def started(self) -> bool:
        """The program has ended, or is asleep (state S) on two reads in a row: it has read its
        options and first figures and waits for its next interval."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return True
        asleep = process_state(proc.pid) == "S"
        was_asleep, self._asleep = getattr(self, "_asleep", False), asleep
        return asleep and was_asleep

    def meta_extra(self) -> dict:
        """Monitor-specific metadata (interval actually used, devices, events ...)."""
        return {}

    def env(self) -> dict[str, str]:
        env = dict(os.environ)
        env.update(LC_ALL="C", LANG="C")
        return env

    def start(self) -> None:
        if self._proc is not None or self._meta:
            return
        raw = self.ctx.raw_dir
        cmd = self.command()
        raw.mkdir(parents=True, exist_ok=True)
        self._meta = {"monitor": self.name, "cmd": cmd, **self.meta_extra()}
        try:
            stdout = open(raw / self.stdout_file, "wb") if self.stdout_file else subprocess.DEVNULL
            if self.stdout_file:
                self._files.append(stdout)
            stderr = open(raw / self.stderr_file, "wb")
            self._files.append(stderr)
            self.start_epoch_s = time.time()
            self._proc = subprocess.Popen(
                cmd,
                stdin=subprocess.DEVNULL,
                stdout=stdout,
                stderr=stderr,
                env=self.env(),
                cwd=raw,
                start_new_session=True,
            )
        except OSError as exc:
            self._meta["launch_error"] = f"{type(exc).__name__}: {exc}"
            self._close_files()
        if self.start_epoch_s is None:
            self.start_epoch_s = time.time()
        self._meta["start_epoch_s"] = self.start_epoch_s
        write_meta(raw, self.name, self._meta)

    def stop(self) -> None:
        if self._stopped or not self._meta:
            return  # already stopped, or never started
        self._stopped = True
        try:
            proc = self._proc
            if proc is not None:
                if proc.poll() is None:
                    _signal_and_wait(proc, self.stop_signal, self.stop_timeout_s)
                self._meta["stop_epoch_s"] = time.time()
                self._meta["returncode"] = proc.returncode
            self._close_files()
            if self._meta:
                write_meta(self.ctx.raw_dir, self.name, self._meta)
        except Exception as exc:  # stop() is called from teardown paths: never raise
            record_stop_error(self.ctx.raw_dir, self.name, self._meta, exc)

    def _close_files(self) -> None:
        for f in self._files:
            try:
                f.close()
            except OSError:
                pass
        self._files = []


class SampledMonitor(Monitor):
    """A monitor without an external program: a thread appends one sample to a raw CSV file
    every interval.

    Sampling is paced on time.monotonic(): tick k is due at start + k x interval, so there is
    no drift, and ticks missed while the machine stalled are skipped, not bunched. stop() takes
    one last sample, so the table covers the run up to the stop. A sample that raises ends the
    sampling (the meta records ``sampling_error``) and keeps what was written.

    Subclasses set `raw_csv`, and implement `begin()` and `sample()`.
    """

    raw_csv: ClassVar[str] = ""

    def __init__(self, ctx: MonitorContext):
        super().__init__(ctx)
        self.interval_s = max(0.01, float(ctx.interval_s))
        self._thread: threading.Thread | None = None
        self._stop_event = threading.Event()
        self._first_sample = threading.Event()
        self._file = None
        self._writer: csv.DictWriter | None = None
        self._meta: dict = {}
        self._stopped = False

    def begin(self) -> list[str] | None:
        """Monitor-specific start: add to ``self._meta`` and return the raw CSV's field names,
        or return None after setting ``self._meta["unavailable"]`` (then nothing is sampled)."""
        raise NotImplementedError

    def sample(self) -> None:
        """Append one sample (one or more rows) to ``self._writer`` and flush ``self._file``."""
        raise NotImplementedError

    def start(self) -> None:
        if self._meta:
            return
        self.ctx.raw_dir.mkdir(parents=True, exist_ok=True)
        self.start_epoch_s = time.time()
        self._meta = {
            "monitor": self.name,
            "start_epoch_s": self.start_epoch_s,
            "interval_s": self.interval_s,
        }
        fields = self.begin()
        if fields is not None:
            self._file = open(self.ctx.raw_dir / self.raw_csv, "w", newline="")
            self._writer = csv.DictWriter(self._file, fieldnames=fields)
            self._writer.writeheader()
            self._file.flush()
            self._thread = threading.Thread(target=self._run, name=f"corun-{self.name}", daemon=True)
            self._thread.start()
        write_meta(self.ctx.raw_dir, self.name, self._meta)

    def started(self) -> bool:
        """The first sample is taken (or sampling never started or ended)."""
        return self._thread is None or self._first_sample.is_set() or not self._thread.is_alive()

    def _run(self) -> None:
        t_start = time.monotonic()
        k = 0
        while True:
            try:
                self.sample()
            except Exception as exc:  # e.g. the raw file system is full: keep what was written
                self._meta["sampling_error"] = f"{type(exc).__name__}: {exc}"
                return
            finally:
                self._first_sample.set()
            elapsed = time.monotonic() - t_start
            k = max(k + 1, math.floor(elapsed / self.interval_s) + 1)
            delay = t_start + k * self.interval_s - time.monotonic()
            if self._stop_event.wait(max(0.0, delay)):
                return

    def stop(self) -> None:
        if self._stopped or not self._meta:
            return
        self._stopped = True
        try:
            self._stop_event.set()
            if self._thread is not None:
                self._thread.join(timeout=10.0)
                if not self._thread.is_alive() and "sampling_error" not in self._meta:
                    self.sample()  # close the last interval at the stop time
            if self._file is not None:
                self._file.close()
            self._meta["stop_epoch_s"] = time.time()
            write_meta(self.ctx.raw_dir, self.name, self._meta)
        except Exception as exc:  # stop() is called from teardown paths: never raise
            record_stop_error(self.ctx.raw_dir, self.name, self._meta, exc)


def process_state(pid: int) -> str:
    """The state letter of /proc/PID/stat (R, S, D, Z ...), or "" if the process is gone."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return ""
    return stat[stat.rindex(")") + 2 : stat.rindex(")") + 3]


def wait_started(monitors: list, timeout_s: float, poll_s: float = 0.005) -> float:
    """Wait until every monitor's start-up is over, at most `timeout_s`; the seconds waited."""
    t0 = time.monotonic()
    while time.monotonic() - t0 < timeout_s:
        if all(m.started() for m in monitors):
            break
        time.sleep(poll_s)
    return time.monotonic() - t0


def _signal_and_wait(proc: subprocess.Popen, sig: int, timeout_s: float) -> None:
    for s, wait_s in ((sig, timeout_s), (signal.SIGTERM, 2.0), (signal.SIGKILL, None)):
        try:
            proc.send_signal(s)
        except ProcessLookupError:
            pass
        try:
            proc.wait(timeout=wait_s)
            return
        except subprocess.TimeoutExpired:
            continue


def write_meta(raw_dir: Path, name: str, meta: dict) -> None:
    """Write `<name>.meta.json` atomically (a reader never sees half a file)."""
    atomic_write_json(Path(raw_dir) / f"{name}.meta.json", meta)


def record_stop_error(raw_dir: Path, name: str, meta: dict, exc: Exception) -> None:
    """Note why stop() failed in the metadata, if even that can be written; never raises."""
    try:
        meta["stop_error"] = f"{type(exc).__name__}: {exc}"
        write_meta(raw_dir, name, meta)
    except Exception:
        pass


def read_meta(raw_dir: Path, name: str) -> dict:
    """The monitor's metadata, or {} if it is absent or unreadable."""
    try:
        meta = json.loads((Path(raw_dir) / f"{name}.meta.json").read_text())
    except (OSError, ValueError):
        return {}
    return meta if isinstance(meta, dict) else {}


def read_text(path: Path) -> str | None:
    try:
        return Path(path).read_text(errors="replace")
    except OSError:
        return None


def whole_seconds_interval(interval_s: float) -> int:
    """sysstat tools take whole seconds >= 1: round up."""
    return max(1, math.ceil(interval_s - 1e-9))


def refine_whole_seconds(
    printed_s: np.ndarray, k: np.ndarray, start_epoch_s: float | None, interval_s: float
) -> np.ndarray:
    """End-of-interval epochs for tools that print whole seconds (iostat, pidstat).

    Both tools sample once at launch and then every `interval_s` on an alarm, so report k
    (1-based) ends at about ``start_epoch_s + k * interval_s``, slightly later by the launch
    latency. The printed second is the floor of the true time, so the prediction is clipped to
    ``[printed, printed + 1)``: the result is never off by more than the printed resolution, and
    usually by a few milliseconds. Without a start epoch the printed second is returned.
    """
    printed = np.asarray(printed_s, dtype=float)
    if start_epoch_s is None:
        return printed
    predicted = float(start_epoch_s) + np.asarray(k, dtype=float) * float(interval_s)
    return np.clip(predicted, printed, printed + 0.999)


def finish_table(df: pd.DataFrame, columns: list[str], t0_epoch: float) -> pd.DataFrame:
    """Add `t_s`, order the columns (time first) and sort by time."""
    if df.empty:
        df = pd.DataFrame({c: pd.Series(dtype=float) for c in columns})
    df = df.copy()
    df["time_epoch_s"] = df["time_epoch_s"].astype(float)
    df["t_s"] = df["time_epoch_s"] - float(t0_epoch)
    for c in columns:
        if c not in df.columns:
            df[c] = np.nan
    df = df[columns]
    return df.sort_values("time_epoch_s", kind="stable").reset_index(drop=True)


def first_line(text: str | None) -> str:
    """The first non-empty line of a program's stderr, for a missing() reason."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""


def load_parsers() -> None:
    """Load numpy and pandas, which the parsers use (lazy_module defers them until now)."""
    np.nan  # noqa: B018 - the attribute access executes the module
    pd.DataFrame  # noqa: B018

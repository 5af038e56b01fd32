"""Common ground of all monitors: context, base classes, metadata and the shared time base.

A monitor writes raw files into the run's raw directory while jobs run, and parses them into a
tidy table afterwards. Every tidy table has

- ``time_epoch_s``: epoch seconds at the end of the sampling interval the row describes,
- ``t_s``: ``time_epoch_s - t0_epoch``, with ``t0_epoch`` chosen by the caller (the run start),

so tables from different monitors can be joined on one time base. Measurements the machine
could not make are returned as `corun.errors.missing` records, never as zeros.

Parsing runs after every run, so it is plain Python: a parser builds a `Table` (columns and
rows) that the runner writes as CSV; `Table.to_frame()` gives the pandas DataFrame the parsers'
`parse_*` functions return for analysis and tests. Numbers follow pandas' rules where the two
could differ: a value that is not a number is NaN (`to_float`), and NaN propagates through
differences and ratios (`diff`, `div`), never becoming zero.

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

from corun.errors import missing
from corun.util import atomic_write_json, lazy_module

pd = lazy_module("pandas")  # only Table.to_frame() needs it: the run path writes CSV without it

NAN = math.nan

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

    def tidy(self, t0_epoch: float) -> tuple[Table, list[dict]]:
        """The tidy table of this run's raw files and the missing-metric records."""
        return self.tidy_raw(self.ctx.raw_dir, t0_epoch)

    @classmethod
    def tidy_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[Table, list[dict]]:
        """Parse the raw files in `raw_dir` (no live monitor needed)."""
        raise NotImplementedError

    def parse(self, t0_epoch: float) -> tuple[pd.DataFrame, list[dict]]:
        return self.parse_raw(self.ctx.raw_dir, t0_epoch)

    @classmethod
    def parse_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[pd.DataFrame, list[dict]]:
        """tidy_raw as a pandas DataFrame."""
        return as_frame(*cls.tidy_raw(raw_dir, t0_epoch))


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


class SysstatMonitor(ProcessMonitor):
    """A sysstat program (iostat, pidstat), named as the monitor: its stdout is the raw file
    (`stdout_file`, which with its stderr and meta files makes `raw_files`), its interval whole
    seconds >= 1 (rounded up; the meta file records both the requested and the used value)."""

    role = "sysstat"

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.tool = cls.name
        cls.raw_files = [cls.stdout_file, f"{cls.name}.stderr", f"{cls.name}.meta.json"]

    def __init__(self, ctx: MonitorContext):
        super().__init__(ctx)
        self.interval_s = whole_seconds_interval(ctx.interval_s)

    def meta_extra(self) -> dict:
        return {"interval_s": self.interval_s, "interval_s_requested": self.ctx.interval_s}


class SampledMonitor(Monitor):
    """A monitor without an external program: a thread appends one sample to a raw CSV file
    every interval.

    Sampling is paced on time.monotonic(): tick k is due at start + k x interval, so there is
    no drift, and ticks missed while the machine stalled are skipped, not bunched. stop() takes
    one last sample, so the table covers the run up to the stop. A sample that raises ends the
    sampling (the meta records ``sampling_error``) and keeps what was written.

    Subclasses set `raw_csv` (which with the meta file makes `raw_files`) and `default_root`
    (the folder of kernel files it reads, `root`: another one in tests), and implement `begin()`
    and `sample()`.
    """

    raw_csv: ClassVar[str] = ""
    default_root: ClassVar[Path] = Path("/proc")

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)
        cls.raw_files = [cls.raw_csv, f"{cls.name}.meta.json"]

    def __init__(self, ctx: MonitorContext, root: Path | None = None):
        super().__init__(ctx)
        self.root = Path(root) if root is not None else self.default_root
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

    def sample(self) -> list[dict]:
        """One sample: its rows (one or more) for the raw CSV."""
        raise NotImplementedError

    def _take_sample(self) -> None:
        self._writer.writerows(self.sample())
        self._file.flush()

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
                self._take_sample()
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
                    self._take_sample()  # close the last interval at the stop time
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


def refine_whole_seconds(printed_s, k, start_epoch_s: float | None, interval_s: float) -> list[float]:
    """End-of-interval epochs for tools that print whole seconds (iostat, pidstat).

    Both tools sample once at launch and then every `interval_s` on an alarm, so report k
    (1-based) ends at about ``start_epoch_s + k * interval_s``, slightly later by the launch
    latency. The printed second is the floor of the true time, so the prediction is clipped to
    ``[printed, printed + 1)``: the result is never off by more than the printed resolution, and
    usually by a few milliseconds. Without a start epoch the printed second is returned.
    """
    printed = [float(p) for p in printed_s]
    if start_epoch_s is None:
        return printed
    out = []
    for p, kk in zip(printed, k):
        predicted = float(start_epoch_s) + float(kk) * float(interval_s)
        out.append(min(max(predicted, p), p + 0.999))
    return out


# ---- plain-Python columns: pandas' NaN rules without pandas ---------------------------------


def isnan(x) -> bool:
    return x is None or (isinstance(x, float) and x != x)


def to_float(value) -> float:
    """A number, or NaN for anything else (pandas.to_numeric(..., errors="coerce"))."""
    if value is None or isinstance(value, bool):
        return NAN
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(value) if "_" not in value else NAN
    except (TypeError, ValueError):
        return NAN


def to_number(value):
    """Like to_float, but an integer stays an int (pandas keeps such a column int64)."""
    if isinstance(value, str):
        text = value.strip()
        if text.lstrip("+-").isdigit():
            return int(text)
    return to_float(value)


def nan_last(x) -> tuple:
    """Sort key for numbers, NaN after every number (pandas' sort_values)."""
    return (1, 0.0) if isnan(x) else (0, x)


def diff(xs: list) -> list[float]:
    """x[i] - x[i-1], NaN for the first (pandas Series.diff)."""
    return [NAN] + [b - a for a, b in zip(xs, xs[1:])] if xs else []


def div(a: float, b: float) -> float:
    """a / b with numpy's rules: x / 0 is +-inf, 0 / 0 and NaN / anything NaN."""
    if b == 0 and not isnan(a):
        return NAN if a == 0 else math.copysign(math.inf, a) * math.copysign(1.0, b)
    return a / b


class Table:
    """A tidy table: column names and one dict per row (a column absent from a row is NaN)."""

    def __init__(self, columns: list[str], rows: list[dict] | None = None):
        self.columns = list(columns)
        self.rows = rows if rows is not None else []

    def __len__(self) -> int:
        return len(self.rows)

    def column(self, name: str) -> list:
        return [r.get(name, NAN) for r in self.rows]

    def write_csv(self, path: Path) -> None:
        """The table as CSV: NaN and None as empty cells, floats at full precision."""
        with open(path, "w", newline="") as fh:
            w = csv.writer(fh, lineterminator="\n")
            w.writerow(self.columns)
            for r in self.rows:
                w.writerow([_cell(r.get(c)) for c in self.columns])

    def to_frame(self) -> pd.DataFrame:
        if not self.rows:
            return pd.DataFrame({c: pd.Series(dtype=float) for c in self.columns})
        return pd.DataFrame({c: self.column(c) for c in self.columns})


def as_frame(table: Table, records: list[dict]) -> tuple[pd.DataFrame, list[dict]]:
    """A parser's (Table, records) with the table as a pandas DataFrame."""
    return table.to_frame(), records


def _cell(v) -> str:
    if v is None or (isinstance(v, float) and v != v):
        return ""
    return repr(v) if isinstance(v, float) else str(v)


def finish_table(rows: list[dict], columns: list[str], t0_epoch: float) -> Table:
    """Add `t_s` to each row, sort by time (stable, NaN last) and keep `columns` in that order."""
    for r in rows:
        r["time_epoch_s"] = t = to_float(r.get("time_epoch_s"))
        r["t_s"] = t - float(t0_epoch)
    rows.sort(key=lambda r: nan_last(r["time_epoch_s"]))
    return Table(columns, rows)


def read_csv_rows(path: Path) -> tuple[list[str], list[dict]]:
    """A sampled monitor's raw CSV: its header and one dict of strings per complete row.

    OSError if it cannot be read, ValueError if it has no header (as pandas.read_csv)."""
    with open(path, newline="", errors="replace") as fh:
        reader = csv.reader(fh)
        header = next(reader, None)
        if not header:
            raise ValueError(f"{path}: no columns")
        rows = []
        for rec in reader:
            if not rec:
                continue
            if len(rec) > len(header):
                raise ValueError(f"{path}: a row with {len(rec)} fields under {len(header)} columns")
            rows.append(dict(zip(header, rec + [""] * (len(header) - len(rec)))))
    return header, rows


def read_sampled(raw_dir: Path, name: str, raw_file: str) -> tuple[dict, list[str], list[dict], str]:
    """A sampled monitor's meta, its raw CSV's header and rows, and why there is no table:
    the monitor was unavailable, or the CSV is unreadable ("" when the rows are there)."""
    meta = read_meta(raw_dir, name)
    if meta.get("unavailable"):
        return meta, [], [], meta["unavailable"]
    try:
        header, rows = read_csv_rows(Path(raw_dir) / raw_file)
    except (OSError, ValueError) as exc:
        return meta, [], [], f"{name}: no readable {raw_file} ({type(exc).__name__})"
    return meta, header, rows, ""


def sampling_stopped(meta: dict, name: str) -> list[dict]:
    """The missing record of a sampling thread that ended early, or none."""
    if not meta.get("sampling_error"):
        return []
    return [missing(name, f"{name}: sampling stopped early ({meta['sampling_error']})", name)]


def os_error_text(exc: Exception) -> str:
    """``<type>: <strerror>`` of a failed read, for the raw file's error column or the meta."""
    return f"{type(exc).__name__}: {getattr(exc, 'strerror', None) or exc}"


def no_report_reason(raw_dir: Path, name: str, meta: dict) -> str:
    """Why a program monitor wrote no report: its launch error or the first line it printed on
    stderr, if any."""
    why = meta.get("launch_error") or first_line(read_text(Path(raw_dir) / f"{name}.stderr"))
    return f"{name} wrote no report" + (f": {why}" if why else " (run shorter than one interval?)")


def first_line(text: str | None) -> str:
    """The first non-empty line of a program's stderr, for a missing() reason."""
    for line in (text or "").splitlines():
        if line.strip():
            return line.strip()
    return ""

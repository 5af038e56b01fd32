"""corun's Snakemake logger plugin: a campaign's progress per experiment, Snakemake's log in its file.

Selected by the profiles (`logger: corun`); Snakemake finds it by its module name
(snakemake_logger_plugin_<name>, snakemake-interface-logger-plugins). It takes the place of
Snakemake's own terminal output: Snakemake still writes its complete log to
.snakemake/log/<date>.snakemake.log, and this handler shows, per experiment, the runs measured
of those planned, the time so far and the estimate left, and which run is measuring now
(progress.Progress). On a terminal the display is redrawn in place once a second; elsewhere (a
file, CI) it prints one line as each run starts and the table at the end. Warnings, errors and
Snakemake's messages outside jobs ("Nothing to be done", where the complete log is) pass through
as Snakemake prints them. A dry run is printed exactly as Snakemake prints it.
"""

from __future__ import annotations

import logging
import sys
import threading
import time

from snakemake_interface_logger_plugins.base import LogHandlerBase
from snakemake_interface_logger_plugins.common import LogEvent

from snakemake_logger_plugin_corun.progress import Progress

# Snakemake's messages of no event repeated for every job: the display says it better
_CHATTY = (
    "Select jobs to execute",
    "Execute ",
    "Building DAG",
    "Using shell",
    "Provided cores",
    "Rules claiming more threads",
    "Assuming unrestricted",
    "Provided resources",
    "host:",
    "Job stats",
    "Finished jobid",
    "Waiting for more resources",
    "Singularity containers",
)
_FED = {
    LogEvent.JOB_INFO,
    LogEvent.JOB_STARTED,
    LogEvent.JOB_FINISHED,
    LogEvent.PROGRESS,
    LogEvent.RUN_INFO,
    LogEvent.SHELLCMD,
    LogEvent.WORKFLOW_STARTED,
    LogEvent.RESOURCES_INFO,
    LogEvent.RULEGRAPH,
    LogEvent.GROUP_INFO,
    LogEvent.DEBUG_DAG,
}


class LogHandler(LogHandlerBase):
    def __post_init__(self) -> None:
        self.stream = sys.stdout if getattr(self.common_settings, "stdout", False) else sys.stderr
        self.progress = Progress()
        self.live = bool(getattr(self.stream, "isatty", lambda: False)()) and not self.common_settings.dryrun
        self.drawn = 0  # lines of the display on the terminal now
        self.mutex = threading.Lock()
        self.stop = threading.Event()
        self.ticker = None
        if self.live:
            self.ticker = threading.Thread(target=self._tick, daemon=True)
            self.ticker.start()

    @property
    def writes_to_stream(self) -> bool:
        return True

    @property
    def writes_to_file(self) -> bool:
        return False

    @property
    def has_filter(self) -> bool:
        return False  # Snakemake's own filter (quiet, printshellcmds, ...)

    @property
    def has_formatter(self) -> bool:
        return False  # Snakemake's own formatter, for what passes through

    @property
    def needs_rulegraph(self) -> bool:
        return False

    def emit(self, record: logging.LogRecord) -> None:
        with self.mutex:
            try:
                self._emit(record)
            except Exception:
                self.handleError(record)

    def _emit(self, record: logging.LogRecord) -> None:
        if self.common_settings.dryrun:
            self._print(record)
            return
        p = self.progress
        event = getattr(record, "event", None)
        t = record.created
        plan = getattr(record, "corun_plan", None)
        if plan is not None:
            p.plan(plan)
            p.tick(t)
            return
        if event == LogEvent.RUN_INFO:
            p.run_info(getattr(record, "stats", {}) or {})
        elif event == LogEvent.JOB_INFO:
            p.job_info(record.jobid, record.rule_name, dict(record.wildcards or {}), list(record.output or []), t)
            job = p.jobs[record.jobid]
            if not self.live and job.experiment is not None:
                self._write([p.line(job)])
        elif event == LogEvent.JOB_FINISHED:
            p.job_finished(record.job_id, t)
        elif event == LogEvent.PROGRESS:
            p.progress(record.done, record.total, t)
        elif event == LogEvent.JOB_ERROR:
            p.job_error(record.jobid, record.rule_name, t)
            self._print(record)
        elif event in _FED:
            p.tick(t)
        else:
            msg = record.getMessage() if record.msg is not None else ""
            if record.levelno >= logging.WARNING or (msg and not msg.lstrip().startswith(_CHATTY)):
                self._print(record)
        self._redraw()

    def _print(self, record: logging.LogRecord) -> None:
        text = self.format(record)
        if text and text != "None":
            self._write(text.splitlines())

    def _write(self, lines: list[str]) -> None:
        self._clear()
        self.stream.write("".join(f"{ln}\n" for ln in lines))
        self.stream.flush()

    def _clear(self) -> None:
        if self.drawn:
            self.stream.write(f"\x1b[{self.drawn}F\x1b[J")
            self.drawn = 0

    def _redraw(self) -> None:
        if not self.live or not self.progress.active:
            return
        lines = self.progress.lines()
        self._clear()
        self.stream.write("".join(f"{ln}\x1b[K\n" for ln in lines))
        self.stream.flush()
        self.drawn = len(lines)

    def _tick(self) -> None:
        while not self.stop.wait(1.0):
            with self.mutex:
                self.progress.tick(time.time())
                self._redraw()

    def close(self) -> None:
        self.stop.set()
        with self.mutex:
            p = self.progress
            if p.active and not self.common_settings.dryrun and not p.finished:
                p.finished = True
                p.tick(time.time())
                if self.live:
                    self._redraw()
                    self.drawn = 0
                else:
                    self._write(p.lines())
        super().close()

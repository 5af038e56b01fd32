"""The orchestrator stays quiet while runs measure: Snakemake's scheduler, patched by the workflow
(workflows/rules/scheduler.smk, corun/snakemake_scheduler.py), starts no chain of rate-limit
timers, so its threads stay bounded as jobs finish instead of growing with every one."""

import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

import pytest

from bench.orchestrator_cpu import write_toy
from corun import snakemake_scheduler as ss

ROOT = Path(__file__).resolve().parents[2]
SMK = str(Path(sys.executable).parent / "snakemake")
JOBS = 20  # of the toy workflow of bench/orchestrator_cpu.py, each 50 ms long


def _most_threads(tmp: Path, include: bool, args=("--cores", "1", "--resources", "testbed=1")) -> tuple[int, int]:
    """Run the toy workflow (by default one job at a time, as the measuring profiles do) and
    return the most threads its Snakemake process had, and its exit code (-9: stalled, killed
    after 90 s)."""
    write_toy(tmp, JOBS, patched=include, sleep='"0.05"')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [SMK, *args, "-q"],
        cwd=tmp,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    most, end = 0, time.monotonic() + 90
    while p.poll() is None:
        if time.monotonic() > end:
            p.kill()
        try:
            most = max(most, len(os.listdir(f"/proc/{p.pid}/task")))
        except OSError:
            break
        time.sleep(0.05)
    return most, p.wait(timeout=120)


def test_the_workflow_applies_the_patch_first():
    text = (ROOT / "Snakefile").read_text()
    includes = [ln.split('"')[1] for ln in text.splitlines() if ln.startswith("include:")]
    assert includes[0] == "workflows/rules/scheduler.smk", includes


def test_the_schedulers_threads_stay_bounded_as_jobs_finish(tmp_path):
    plain, patched = tmp_path / "plain", tmp_path / "patched"
    plain.mkdir()
    patched.mkdir()
    most, rc = _most_threads(patched, include=True)
    assert rc == 0 and len(list((patched / "out").iterdir())) == JOBS
    assert most <= 6, f"{most} threads with the patch after {JOBS} jobs"
    # the same workflow unpatched: a chain of timers per finished job (the test sees the growth)
    most_plain, rc = _most_threads(plain, include=False)
    assert rc == 0
    assert most_plain >= most + JOBS // 3, (most_plain, most)


def test_a_limit_that_holds_jobs_back_still_releases_them(tmp_path):
    """2 jobs a second on 4 cores: the limit binds, and its timer starts the jobs held back."""
    most, rc = _most_threads(
        tmp_path, True, ("--cores", "4", "--resources", "testbed=4", "--max-jobs-per-timespan", "2/1s")
    )
    assert rc == 0 and len(list((tmp_path / "out").iterdir())) == JOBS


class _Limiter:
    """Snakemake's JobRateLimiter as the scheduler's pass leaves it: `_jobs` holds the recent
    submissions, `max_jobs` of them fill the limit."""

    timespan = 1
    max_jobs = 5

    def __init__(self, free):
        self._jobs = [0.0] * (self.max_jobs - free)


def _scheduler(free, queue=False):
    s = SimpleNamespace(
        job_rate_limiter=_Limiter(free),
        workflow=SimpleNamespace(dag=SimpleNamespace(has_unfinished_queue_input_jobs=lambda: queue)),
        _open_jobs=threading.Semaphore(0),
    )
    return s


def test_a_timer_only_when_the_limit_holds_jobs_back_and_one_at_most():
    s = _scheduler(free=5)
    ss._quiet_reevaluation(s, 1)
    assert getattr(s, "_corun_pending_timer", None) is None  # room for more jobs: no timer
    s.job_rate_limiter._jobs = [0.0] * 5
    ss._quiet_reevaluation(s, 0.05)  # the limit is full ...
    ss._quiet_reevaluation(s, 1)
    timer = s._corun_pending_timer
    assert timer.daemon and timer.interval == 0.05  # ... one timer, the second request joins it
    assert s._open_jobs.acquire(timeout=5)  # it releases the loop
    timer.join(timeout=5)
    # waits for queue input keep their timer, whatever the limit
    q = _scheduler(free=5, queue=True)
    ss._quiet_reevaluation(q, 10)
    assert q._corun_pending_timer.is_alive()
    q._corun_pending_timer.cancel()


def test_the_patch_is_applied_once_and_a_changed_snakemake_runs_unpatched(monkeypatch, capsys):
    from snakemake.scheduling import job_scheduler

    monkeypatch.setattr(job_scheduler.JobScheduler, "_schedule_reevalutation", lambda self, delay: None)
    assert ss.quiet_reevaluation() == "patched"
    assert ss.quiet_reevaluation() == "patched already"
    monkeypatch.setattr(job_scheduler.JobScheduler, "_schedule_reevalutation", lambda self, delay, more: None)
    assert ss.quiet_reevaluation().startswith("not patched")
    assert "run unchanged" in capsys.readouterr().err


@pytest.fixture(autouse=True)
def _no_patch_left(monkeypatch):
    """The unit tests' patching of Snakemake's class stays in them (monkeypatch undoes it)."""
    from snakemake.scheduling import job_scheduler

    monkeypatch.setattr(
        job_scheduler.JobScheduler, "_schedule_reevalutation", job_scheduler.JobScheduler._schedule_reevalutation
    )


def test_sigint_to_snakemake_alone_stops_the_patched_workflow(tmp_path):
    """Ctrl-C's signal sent to the Snakemake process alone (not its process group, as a
    terminal sends it): the job that runs finishes, no other starts, and Snakemake exits. SIGINT
    is set back to its default for the child, as a terminal has it: a non-interactive shell's
    background job (`make run &`) ignores SIGINT, and Python then never sees it."""
    import signal

    write_toy(tmp_path, 5, patched=True, sleep='"4"')
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    p = subprocess.Popen(
        [SMK, "--cores", "1", "--resources", "testbed=1", "-q"],
        cwd=tmp_path,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    end = time.monotonic() + 60
    while not list(tmp_path.glob(".snakemake/log/*.log")) and time.monotonic() < end:
        time.sleep(0.1)
    time.sleep(2)  # the first job is running
    p.send_signal(signal.SIGINT)
    try:
        rc = p.wait(timeout=20)
    except subprocess.TimeoutExpired:
        p.kill()
        pytest.fail("Snakemake went on after SIGINT")
    assert rc != 0
    out = tmp_path / "out"
    assert not out.exists() or len(list(out.iterdir())) <= 1  # at most the job that was running

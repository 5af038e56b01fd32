"""What a dying MPI coscheduling daemon leaves: SIGTERM and kill -9 while ranks are boosted
(SCHED_FIFO) or stopped (gang), with `--restore`; PID reuse never touched; the death of the
process that started it; a lost lifeline (the runner silent on stdin, or stdin closed); --check
when the ranks wait otherwise than the scheme says."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from corun.util import proc_starttime
from tests.schedulers.cosched_helpers import (
    daemon_argv,
    fifo_ranks,
    freeze_while_boosted,
    gang_jobs,
    kill_all,
    mpirun_cmd,
    needs_mpi,
    pingpong,
    rank_pids,
    run,
    signal_ranks,
    start_daemon,
    stop_daemon,
    stopped_ranks,
    wait_for,
    write_slot,
)


@needs_mpi
@pytest.mark.root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL], ids=["SIGTERM", "SIGKILL"])
def test_daemon_death_leaves_no_rank_boosted(daemon, stencil, tmp_path, shm, sig):
    """HYBRID boosts a rank while it is inside a collective: rank 1 waits in MPI_Allreduce for
    rank 0, which computes 100 times as long (about a second; a rank ends its boost itself when
    its collective completes). SIGTERM: the daemon restores it itself. kill -9:
    the rank stays SCHED_FIFO until `--restore STATE` (the variant's stop command, journalled
    by the runner before start) puts it back."""
    state = tmp_path / "state"
    state.mkdir()
    p, env = start_daemon(daemon, state, shm, "hybrid", "--boost-max-us", 1000000)
    job = subprocess.Popen(
        mpirun_cmd(
            2,
            env,
            [
                stencil,
                "--iters",
                100000,
                "--cells",
                200000,
                "--sweeps",
                20,
                "--halo-bytes",
                0,
                "--allreduce-every",
                1,
                "--imbalance",
                100,
            ],
        ),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        pids = rank_pids(daemon, shm, 2)
        assert wait_for(lambda: fifo_ranks(pids), 20), "no rank was ever boosted"
        if sig == signal.SIGTERM:
            summary = stop_daemon(p, state)
            assert summary["boosts"] > 0
        else:
            # freeze the ranks while one is boosted, so that its collective cannot complete (and
            # end the boost itself) between the check and the kill
            assert wait_for(lambda: freeze_while_boosted(pids), 20), "no boost to freeze"
            try:
                os.kill(p.pid, signal.SIGKILL)
                p.wait()
                assert fifo_ranks(pids), "a killed daemon left nothing to restore"
                res = run(daemon, "--restore", state)
                assert res.returncode == 0, res.stderr
                assert json.loads(res.stdout)["restored"] >= 1
            finally:
                signal_ranks(pids, signal.SIGCONT)
        assert fifo_ranks(pids) == []
        for pid in pids:
            assert os.getpriority(os.PRIO_PROCESS, pid) == 0
        # a second restore changes nothing and fails nothing
        res = run(daemon, "--restore", state)
        assert res.returncode == 0 and json.loads(res.stdout)["failed"] == 0
    finally:
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        if p.poll() is None:
            p.kill()
            p.wait()


@needs_mpi
@pytest.mark.root
def test_kill_9_of_the_gang_daemon_leaves_no_rank_stopped(daemon, tmp_path, shm):
    state = tmp_path / "state"
    state.mkdir()
    p, env = start_daemon(daemon, state, shm, "gang", "--gang-slice-ms", 50)
    jobs = []
    try:
        jobs = gang_jobs(env)
        pids = rank_pids(daemon, shm, 4)
        assert wait_for(lambda: len(stopped_ranks(pids)) == 2, 20), "gang never stopped a job"
        os.kill(p.pid, signal.SIGKILL)
        p.wait()
        assert stopped_ranks(pids), "the killed daemon left no job stopped"
        res = run(daemon, "--restore", state)
        assert res.returncode == 0, res.stderr
        assert wait_for(lambda: not stopped_ranks(pids), 2)
        assert fifo_ranks(pids) == []
    finally:
        kill_all(jobs, p)


@pytest.mark.root
def test_pid_reuse_is_never_touched(daemon, tmp_path, shm):
    """Three processes claim slots: X and Y with their true start times (two jobs, so gang
    stops one of them at a time), Z with another start time (its pid was reused): Z is never
    stopped nor journalled."""
    state = tmp_path / "state"
    state.mkdir()
    p, _ = start_daemon(daemon, state, shm, "gang", "--gang-slice-ms", 20)
    procs = {n: subprocess.Popen(["sleep", "30"]) for n in "XYZ"}
    try:
        for i, (n, q) in enumerate(procs.items()):
            st = proc_starttime(q.pid)
            write_slot(shm, i, q.pid, st if n != "Z" else st + 1, n)
        seen = set()
        until = time.monotonic() + 3
        while time.monotonic() < until and seen != {"X", "Y"}:
            for n, q in procs.items():
                if stopped_ranks([q.pid]):
                    seen.add(n)
            time.sleep(0.005)
        assert seen == {"X", "Y"}, seen
    finally:
        stop_daemon(p, state)
        journal = (state / "touched.tsv").read_text()
        for q in procs.values():
            q.kill()
            q.wait()
    assert str(procs["Z"].pid) not in journal.split()
    assert {str(procs["X"].pid), str(procs["Y"].pid)} <= set(journal.split())


@pytest.mark.root
def test_death_of_the_starter_stops_the_daemon(daemon, tmp_path, shm):
    state = tmp_path / "state"
    state.mkdir()
    argv = daemon_argv(daemon, "dcs", state, shm)
    code = f"import subprocess, time; p = subprocess.Popen({argv!r}); print(p.pid, flush=True); time.sleep(0.5)"
    parent = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    pid = int(parent.stdout.readline())
    parent.wait()
    assert wait_for(
        lambda: not Path(f"/proc/{pid}").exists() or Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] == "Z", 10
    )
    summary = json.loads((state / "summary.json").read_text())
    assert summary["exit_reason"] == "Terminated"


@needs_mpi
@pytest.mark.root
@pytest.mark.parametrize("cut", ["silent", "closed"])
def test_a_lost_lifeline_ends_the_gang_daemon_and_no_rank_stays_stopped(daemon, tmp_path, shm, cut):
    """--lifeline-s 1: while the runner writes to the daemon's stdin, the daemon goes on past
    the second; once it falls silent (a node cut off from the runner, whose ssh session never
    ends on the node) or closes stdin, the daemon ends as on SIGTERM and resumes every rank it
    had stopped."""
    state = tmp_path / "state"
    state.mkdir()
    argv = [*daemon_argv(daemon, "gang", state, shm), "--gang-slice-ms", "50", "--lifeline-s", "1"]
    p = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    jobs = []
    try:
        assert wait_for(lambda: (state / "rank_env.json").exists() or p.poll() is not None, 10)
        jobs = gang_jobs(json.loads((state / "rank_env.json").read_text()))
        pids = rank_pids(daemon, shm, 4)
        end = time.monotonic() + 2.5
        while time.monotonic() < end:  # words: alive well past its second
            p.stdin.write(b"\n")
            p.stdin.flush()
            assert p.poll() is None
            time.sleep(0.2)
        assert wait_for(lambda: len(stopped_ranks(pids)) == 2, 20), "gang never stopped a job"
        t0 = time.monotonic()
        if cut == "closed":
            p.stdin.close()
        p.wait(timeout=10)
        waited = time.monotonic() - t0
        assert waited < (1 if cut == "closed" else 2.5), waited
        assert p.returncode == (1 if cut == "silent" else 0)
        assert wait_for(lambda: not stopped_ranks(pids), 2)
        assert fifo_ranks(pids) == []
        reason = json.loads((state / "summary.json").read_text())["exit_reason"]
        assert (
            reason
            == {
                "silent": "no word from the runner within --lifeline-s (its connection is lost)",
                "closed": "the runner's lifeline closed (stdin)",
            }[cut]
        )
    finally:
        kill_all(jobs, p)


@needs_mpi
@pytest.mark.root
def test_check_fails_when_ranks_wait_otherwise(daemon, tmp_path, shm):
    state = tmp_path / "state"
    state.mkdir()
    p, env = start_daemon(daemon, state, shm, "ib")
    try:
        pingpong(dict(env, CORUN_COSCHED_WAIT="spin"), iters=20, work_us=100)
        time.sleep(0.25)  # the next heartbeat
        res = run(daemon, "--check", state)
        assert res.returncode == 1 and "2 ranks wait otherwise than the scheme says" in res.stderr
    finally:
        stop_daemon(p, state)


def test_restore_without_journal_and_check_without_daemon(daemon, tmp_path):
    res = run(daemon, "--restore", tmp_path)
    assert res.returncode == 0 and json.loads(res.stdout) == {"restored": 0, "gone": 0}
    (tmp_path / "touched.tsv").write_text("999999999 1 0 0 0\n")  # a process that is gone
    res = run(daemon, "--restore", tmp_path)
    assert res.returncode == 0 and json.loads(res.stdout)["gone"] == 1
    res = run(daemon, "--check", tmp_path, "--max-age-s", 1)
    assert res.returncode == 1 and "not running" in res.stderr

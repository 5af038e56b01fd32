"""What the tests of the MPI coscheduling variants share: running the daemon as its manifest
starts it, MPI jobs under the preloaded library, and reading the ranks' state."""

import json
import mmap
import os
import shutil
import signal
import socket
import struct
import subprocess
from pathlib import Path

import pytest

from corun.run import schedulers
from tests.schedulers.manifest_argv import command
from tests.schedulers.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]
MC = ROOT / "schedulers" / "mpi_cosched"
BUILD = MC / "build"
LIB = BUILD / "libcorun_cosched.so"
PINGPONG = BUILD / "cosched-pingpong"
SCHEMES = ["batch", "local", "dcs", "pb", "ib", "sb", "hybrid", "cc_s", "cc_b", "gang"]

needs_mpi = pytest.mark.skipif(
    shutil.which("mpicc") is None or shutil.which("mpirun") is None, reason="needs Open MPI (the openmpi role)"
)


def default(param):
    """A parameter's default: the manifest's, the one place of it."""
    return schedulers.manifest("mpi_cosched")["params"][param]["default"]


def rank_env(wait, send="spin", **over):
    """The environment of a rank without a daemon (which writes it in rank_env.json): the
    library, the waiting modes and the manifest's defaults of the other variables."""
    env = {
        "LD_PRELOAD": LIB,
        "CORUN_COSCHED_WAIT": wait,
        "CORUN_COSCHED_SEND_WAIT": send,
        "CORUN_COSCHED_SPIN_US": default("spin_us"),
        "CORUN_COSCHED_BLOCK_MIN_US": default("block_min_us"),
        "CORUN_COSCHED_BLOCK_MAX_US": default("block_max_us"),
        "CORUN_COSCHED_COLL": default("coll"),
    }
    env.update({f"CORUN_COSCHED_{k}": v for k, v in over.items()})
    return env


def daemon_argv(daemon, scheme, state, shm, **params):
    """The scheme's start command as the manifest makes it, with the ASan build."""
    return command(scheme, {"shm": shm, **params}, exe=daemon, state_dir=state)


def run(exe, *args, **kw):
    return subprocess.run([str(exe), *map(str, args)], check=False, capture_output=True, text=True, timeout=60, **kw)


def mpirun_cmd(nranks, env, argv):
    cmd = ["mpirun", "-np", str(nranks), "--oversubscribe", "--allow-run-as-root", "--mca", "btl", "tcp,self"]
    for k, v in env.items():
        cmd += ["-x", f"{k}={v}"]
    return cmd + [str(a) for a in argv]


def pingpong(env, iters=60, work_us=3000, timeout=90):
    res = subprocess.run(
        mpirun_cmd(2, env, [PINGPONG, "--iters", iters, "--warmup", 5, "--work-us", work_us]),
        check=False,
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert res.returncode == 0, res.stderr
    out = {}
    for line in res.stdout.splitlines():
        if line.startswith("{"):
            d = json.loads(line)
            out[d["rank"]] = d
    assert set(out) == {0, 1}, res.stdout
    return out


def dump(daemon, name):
    res = run(daemon, "--dump-shm", name)
    assert res.returncode == 0, res.stderr
    return {s["rank"]: s for s in json.loads(res.stdout)["slots"]}


def start_daemon(daemon, state, shm, scheme, *extra):
    p = subprocess.Popen(
        [*daemon_argv(daemon, scheme, state, shm), *map(str, extra)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_for(lambda: (state / "rank_env.json").exists() or p.poll() is not None, 10)
    assert p.poll() is None, p.communicate()
    return p, json.loads((state / "rank_env.json").read_text())


def gang_jobs(env, names=("A", "B")):
    """One endless 2-rank ping-pong per name, each its own job (CORUN_COSCHED_JOB) in a session
    of its own: what gang slices between."""
    return [
        subprocess.Popen(
            mpirun_cmd(2, dict(env, CORUN_COSCHED_JOB=name), [PINGPONG, "--iters", 10000000, "--work-us", 100]),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        for name in names
    ]


def kill_all(jobs, daemon_process):
    """The end of a test: its jobs' sessions and the daemon, whatever state they are in."""
    for j in jobs:
        os.killpg(j.pid, signal.SIGKILL)
        j.wait()
    if daemon_process.poll() is None:
        daemon_process.kill()
        daemon_process.wait()


def stop_daemon(p, state):
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    return json.loads((state / "summary.json").read_text())


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def fifo_ranks(pids):
    out = []
    for pid in pids:
        try:
            if os.sched_getscheduler(pid) != os.SCHED_OTHER:
                out.append(pid)
        except ProcessLookupError:
            pass
    return out


def stopped_ranks(pids):
    out = []
    for pid in pids:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except FileNotFoundError:
            continue
        if stat[stat.rindex(")") + 2] == "T":
            out.append(pid)
    return out


def signal_ranks(pids, sig):
    for pid in pids:
        try:
            os.kill(pid, sig)
        except ProcessLookupError:
            pass


def freeze_while_boosted(pids):
    """SIGSTOP the ranks; keep them stopped only if one of them is boosted at that moment."""
    signal_ranks(pids, signal.SIGSTOP)
    wait_for(lambda: len(stopped_ranks(pids)) == len(pids), 2, 0.001)
    if fifo_ranks(pids):
        return True
    signal_ranks(pids, signal.SIGCONT)
    return False


def rank_pids(daemon, shm, n):
    def pids():
        res = run(daemon, "--dump-shm", shm)
        slots = json.loads(res.stdout)["slots"] if res.returncode == 0 else []
        return [s["pid"] for s in slots] if len(slots) >= n else None

    p = wait_for(pids, 20)
    assert p, "the ranks never registered"
    return p


def write_slot(shm, i, pid, starttime, job):
    """A slot as a rank fills it (cosched_shm.h): everything first, the pid last."""
    with open(f"/dev/shm/{shm[1:]}", "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        _magic, _version, _nslots, slot_size = struct.unpack_from("<IIII", m, 0)
        off = 24 + i * slot_size
        struct.pack_into("<Q48sII", m, off + 8, starttime, job.encode(), 0, 0)  # spin / spin
        struct.pack_into("<i", m, off, pid)

"""MPI jobs across a 2-host netns cluster (each host on a CPU of its own): a short MPL-sweep run
through corun.testbed.cluster_run, a node daemon killed mid-run, a host cut off mid-run, and the
runner itself killed mid-run. Root; skipped, saying why,
without namespaces, sshd or Open MPI. The cluster is always removed."""

import csv
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import pytest
import yaml

from corun.util import repo_root
from tests.schedulers.polling import wait_for

ROOT = repo_root()
STENCIL = ROOT / "kernels" / "build" / "mpi_stencil"
PREFIX, SUBNET = "cormplt", "10.77.9.0/24"
SHM = f"/corun-cosched-t{os.getpid()}"

pytestmark = [
    pytest.mark.root,
    pytest.mark.skipif(shutil.which("mpirun") is None, reason="needs Open MPI (the openmpi role)"),
]


def job(name, ranks, submit, iters=150):
    return {
        "name": name,
        "kind": "mpi",
        "ranks": ranks,
        "submit_s": submit,
        "result": "json",
        "timeout_s": 120,
        "cmd": [str(STENCIL), "--iters", str(iters), "--cells", "4096", "--sweeps", "4", "--halo-bytes", "4096"],
    }


def write_spec(tmp_path, scheme, mpl, jobs):
    spec = {
        "name": f"t-{scheme}",
        "labels": {"experiment": "mpl_sweep", "scheme": scheme},
        "cluster": {"inventory": str(tmp_path / "netns" / "inventory.yml"), "mpl": mpl, "daemon_port": 47390},
        "scheduler": {"name": scheme, "params": {"mpl": mpl, "shm": SHM}},
        "monitors": {"enabled": []},
        "device": {"path": str(tmp_path)},
        "jobs": jobs,
    }
    f = tmp_path / f"{scheme}.yaml"
    f.write_text(yaml.safe_dump(spec))
    return f


def cluster_run(tmp_path, spec, out, **kw):
    return subprocess.Popen(
        [sys.executable, "-m", "corun.testbed.cluster_run", "--hosts", "2", "--cpus-per-host", "1",
         "--prefix", PREFIX, "--subnet", SUBNET, "--state-dir", str(tmp_path / "netns"), "--",
         str(spec), "--out", str(out)],
        cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, **kw,
    )  # fmt: skip


def ompi_folders() -> set[Path]:
    return set(Path(tempfile.gettempdir()).glob("corun-ompi-*"))


def assert_nothing_left(ompi_before: set[Path] | None = None):
    """No namespace, cpuset, rank or daemon of ours (they carry our segment's name) is left, nor
    the run's Open MPI session folders."""
    if ompi_before is not None:
        assert ompi_folders() <= ompi_before
    assert PREFIX not in subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout
    assert not list(Path("/sys/fs/cgroup/cpuset").glob(f"{PREFIX}-n*"))
    mark = SHM.encode()
    for d in Path("/proc").glob("[0-9]*"):
        try:
            seen = mark in (d / "cmdline").read_bytes() or mark in (d / "environ").read_bytes()
        except OSError:
            continue
        assert not seen, (d / "cmdline").read_bytes()


@pytest.fixture
def prerequisites(kernels_built):
    if not STENCIL.exists():
        pytest.skip("mpi_stencil not built (no mpicc)")
    if shutil.which("sshd") is None and not Path("/usr/sbin/sshd").exists():
        pytest.skip("needs sshd (the common role)")
    subprocess.run(["make", "-s", "-C", str(ROOT / "schedulers" / "mpi_cosched"), "all"], check=True)
    yield
    for node in (0, 1):  # the hosts' shared-memory segments
        Path("/dev/shm", f"{SHM[1:]}-{node}").unlink(missing_ok=True)


def two_gang_jobs(tmp_path):
    """gang at MPL 2 over two long 2-rank jobs: one of them is always out of its slice."""
    return write_spec(tmp_path, "gang", 2, [job("a", 2, 0.0, iters=100000), job("b", 2, 0.0, iters=100000)])


def gang_status_once_stopped(process, state: Path, netns: str | None = None, timeout_s: float = 120) -> dict | None:
    """The daemon's status (STATE/status.json) once gang holds a job stopped there (and, with
    NETNS, its ranks are seen stopped in that namespace), while PROCESS runs; None if never."""
    until = time.monotonic() + timeout_s
    while time.monotonic() < until and process.poll() is None:
        try:
            st = json.loads((state / "status.json").read_text())
        except (OSError, ValueError):
            st = {}
        if st.get("ranks", 0) >= 2 and st.get("stopped", 0) >= 1 and (netns is None or ranks_stopped_in(netns)):
            return st
        time.sleep(0.1)
    return None


def communicate_beside(process, action) -> str:
    """PROCESS's stderr once it ends, ACTION running in a thread beside it; skips the test
    where no netns cluster can be made."""
    t = threading.Thread(target=action)
    t.start()
    _, err = process.communicate(timeout=300)
    t.join()
    if process.returncode == 4:
        pytest.skip(f"no netns cluster here: {err.strip()}")
    return err


def test_a_short_sweep_run_on_two_hosts(prerequisites, tmp_path):
    """cc_b at MPL 1: FIFO into the slots, wait and response per job, one daemon per host."""
    spec = write_spec(tmp_path, "cc_b", 1, [job("a", 2, 0.0), job("b", 1, 0.1), job("c", 1, 0.2)])
    out = tmp_path / "run"
    ompi_before = ompi_folders()
    p = cluster_run(tmp_path, spec, out)
    _, err = p.communicate(timeout=300)
    if p.returncode == 4:
        pytest.skip(f"no netns cluster here: {err.strip()}")
    assert p.returncode == 0, err[-2000:]
    meta = json.loads((out / "metadata.json").read_text())
    hosts = meta["cluster"]["hosts"]
    assert [h["name"] for h in hosts] == [f"{PREFIX}-n1", f"{PREFIX}-n2"]
    assert {h["cpus"] for h in hosts} == {"0", "1"}  # a CPU of its own each
    daemons = meta["cluster"]["daemons"]
    steps = meta["cluster"]["daemon_steps_s"]  # where the daemons' start and stop went
    assert set(steps) == {"start", "state_dirs", "rank_env", "verify", "stop", "summaries", "restore"}
    assert all(v >= 0 for v in steps.values())
    assert [d["host"] for d in daemons] == [f"{PREFIX}-n1", f"{PREFIX}-n2"]
    for d in daemons:
        assert d["scheme"] == "cc_b" and d["wait_mode_mismatches"] == 0 and d["erl_received"] > 0, d
    rows = {r["name"]: r for r in _csv(out / "jobs.csv")}
    assert all(r["exit_code"] == "0" and r["result_verified"] == "True" for r in rows.values())
    # MPL 1: b and c (one rank each) wait for a (both hosts), then run side by side
    assert float(rows["b"]["start_s"]) >= float(rows["a"]["end_s"]) - 0.01
    assert float(rows["c"]["start_s"]) >= float(rows["a"]["end_s"]) - 0.01
    for r in rows.values():
        assert float(r["response_s"]) == pytest.approx(float(r["wait_s"]) + float(r["runtime_s"]), abs=1e-3)
    assert rows["b"]["hosts"] != rows["c"]["hosts"]
    assert_nothing_left(ompi_before)


def test_a_node_daemon_killed_mid_run_fails_the_run_and_restores_every_host(prerequisites, tmp_path):
    """gang stops the ranks of the job out of its slice; kill -9 of one host's daemon fails the
    run at once, naming the host, and no rank is left stopped or real-time."""
    out = tmp_path / "run"
    p = cluster_run(tmp_path, two_gang_jobs(tmp_path), out)
    state = Path(str(out) + ".incomplete") / "sched" / "state" / f"{PREFIX}-n2"
    killed = threading.Event()

    def kill_when_running():
        st = gang_status_once_stopped(p, state)  # a job out of its slice
        if st:
            os.kill(int(st["pid"]), signal.SIGKILL)
            killed.set()

    err = communicate_beside(p, kill_when_running)
    assert killed.is_set(), err[-2000:]
    assert p.returncode != 0 and f"the daemon on {PREFIX}-n2 died" in err, err[-2000:]
    assert_nothing_left()


def ranks_stopped_in(netns: str) -> list[int]:
    """The processes of NETNS that carry our segment's name and are stopped (state T)."""
    pids = subprocess.run(["ip", "netns", "pids", netns], capture_output=True, text=True).stdout.split()
    out = []
    for pid in pids:
        try:
            if SHM.encode() in Path(f"/proc/{pid}/environ").read_bytes():
                if Path(f"/proc/{pid}/stat").read_text().rsplit(") ", 1)[1][0] == "T":
                    out.append(int(pid))
        except (OSError, IndexError):
            pass
    return out


def test_a_node_cut_off_fails_the_run_naming_it_and_its_daemon_resumes_its_ranks(prerequisites, tmp_path):
    """Host 2's link down for 30 s while gang holds a job stopped there: its ssh sessions never
    end on the host, so its daemon ends by its lifeline (cluster.lifeline_s, 10 s without a word
    from the runner) and resumes the ranks it stopped while still cut off; the runner fails the
    run naming the host; nothing is left."""
    out = tmp_path / "run"
    p = cluster_run(tmp_path, two_gang_jobs(tmp_path), out)
    host2, veth2 = f"{PREFIX}-n2", f"{PREFIX}-v2"
    state = Path(str(out) + ".incomplete") / "sched" / "state" / host2
    seen = {}

    def cut_when_stopped():
        if gang_status_once_stopped(p, state, host2) is None:
            return
        subprocess.run(["ip", "link", "set", veth2, "down"], check=True)
        t0 = time.monotonic()
        try:
            while time.monotonic() < t0 + 30 and not (state / "summary.json").exists():
                time.sleep(0.1)
            if (state / "summary.json").exists():  # written by the daemon on host 2 at its end
                seen["after_s"] = time.monotonic() - t0
                seen["reason"] = json.loads((state / "summary.json").read_text())["exit_reason"]
                time.sleep(0.5)
                seen["stopped"] = ranks_stopped_in(host2)
            while time.monotonic() < t0 + 30 and p.poll() is None:
                time.sleep(0.2)
        finally:
            subprocess.run(["ip", "link", "set", veth2, "up"], capture_output=True)  # gone with the cluster

    err = communicate_beside(p, cut_when_stopped)
    assert seen.get("reason") == "no word from the runner within --lifeline-s (its connection is lost)", (
        seen,
        err[-2000:],
    )
    assert 9 <= seen["after_s"] <= 15 and seen["stopped"] == [], seen
    assert p.returncode != 0 and host2 in err, err[-2000:]
    assert_nothing_left()


def test_the_runner_killed_mid_run_ends_every_hosts_daemon_at_once(prerequisites, tmp_path):
    """kill -9 of `corun run` while gang holds a job stopped: no teardown runs, but each host's
    daemon sees its stdin end (the runner held the lifeline's write end) and resumes its ranks
    at once (within 5 s, the lifeline's 10 s not waited for), before `corun recover`; then
    recover and down leave nothing."""
    netns = tmp_path / "netns"
    cluster = [sys.executable, str(ROOT / "scripts" / "netns-cluster"), "--state-dir", str(netns)]
    up = subprocess.run(
        [*cluster, "up", "2", "--prefix", PREFIX, "--subnet", SUBNET, "--cpus-per-host", "1",
         "--inventory", str(netns / "inventory.yml")],
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    if up.returncode == 4:
        pytest.skip(f"no netns cluster here: {up.stderr.strip()}")
    assert up.returncode == 0, up.stderr
    try:
        out = tmp_path / "run"
        runner = subprocess.Popen(
            [sys.executable, "-m", "corun", "run", str(two_gang_jobs(tmp_path)), "--out", str(out)],
            cwd=ROOT, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
        )  # fmt: skip
        states = [Path(str(out) + ".incomplete") / "sched" / "state" / f"{PREFIX}-n{i}" for i in (1, 2)]
        gang_status_once_stopped(runner, states[1], f"{PREFIX}-n2")
        assert runner.poll() is None, runner.stderr.read()[-2000:]
        runner.kill()
        runner.wait()
        t0 = time.monotonic()
        assert wait_for(lambda: all((s / "summary.json").exists() for s in states), 5), "a daemon outlived the runner"
        ended_s = time.monotonic() - t0
        for s in states:
            assert json.loads((s / "summary.json").read_text())["exit_reason"] == "the runner's lifeline closed (stdin)"
        time.sleep(0.3)
        assert ranks_stopped_in(f"{PREFIX}-n1") == [] and ranks_stopped_in(f"{PREFIX}-n2") == [], ended_s
        rec = subprocess.run([sys.executable, "-m", "corun", "recover"], cwd=ROOT, capture_output=True, text=True)
        assert rec.returncode == 0, rec.stderr
    finally:
        down = subprocess.run([*cluster, "down"], capture_output=True, text=True, timeout=300)
        assert down.returncode == 0, down.stderr
    assert_nothing_left()


def _csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))

"""The MPI coscheduling variants of paper 001 (schedulers/mpi_cosched and the variants extending it).

The CC decision (eqs. 1-4) on hand-made ERL tables; bad parameters of the daemon and of the
library; each waiting mode on a two-rank ping-pong (CPU time of the waiting rank, counters in
shared memory); each scheme end to end; the ERL exchange between two daemons; SIGTERM and kill -9
of the daemon while ranks are boosted (SCHED_FIFO) or stopped (gang), with `--restore`.
"""

import json
import mmap
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

from corun.run import schedulers
from corun.util import proc_starttime

ROOT = Path(__file__).resolve().parents[2]
MC = ROOT / "schedulers" / "mpi_cosched"
BUILD = MC / "build"
LIB = BUILD / "libcorun_cosched.so"
PINGPONG = BUILD / "cosched-pingpong"
STENCIL = ROOT / "kernels" / "build" / "mpi_stencil"
SCHEMES = ["batch", "local", "dcs", "pb", "ib", "sb", "hybrid", "cc_s", "cc_b", "gang"]

needs_mpi = pytest.mark.skipif(
    shutil.which("mpicc") is None or shutil.which("mpirun") is None, reason="needs Open MPI (the openmpi role)"
)


@pytest.fixture(scope="session")
def daemon():
    """The ASan/UBSan build of the daemon (any memory error fails the test); the library and
    the ping-pong need mpicc."""
    targets = ["asan"] + (["all"] if shutil.which("mpicc") else [])
    subprocess.run(["make", "-s", "-C", str(MC), *targets], check=True)
    return BUILD / "asan" / "corun-cosched"


@pytest.fixture(scope="session")
def stencil(kernels_built):
    if not STENCIL.exists():
        pytest.skip("mpi_stencil not built (no mpicc)")
    return STENCIL


_n = [0]


@pytest.fixture
def shm():
    """A fresh shared-memory name, removed afterwards."""
    _n[0] += 1
    name = f"/corun-test-{os.getpid()}-{_n[0]}"
    yield name
    Path("/dev/shm", name[1:]).unlink(missing_ok=True)


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


def wait_for(cond, timeout=20.0, step=0.02):
    until = time.monotonic() + timeout
    while time.monotonic() < until:
        v = cond()
        if v:
            return v
        time.sleep(step)
    return None


# ---------------------------------------------------------------- the CC decision, eqs. 1-4


def decide(exe, tmp_path, text):
    f = tmp_path / "table.txt"
    f.write_text(text)
    res = run(exe, "--decide-table", f)
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


# mpl 5: ERL_max = 5 x 41 ms = 205,000 us, NF = 2,050 us.
TABLES = [
    (
        "Fig. 2: the rank whose correspondent is on the idle node goes first, though its message arrived later",
        (
            "mpl 5\ncost_switch_us 6\nnode j ed_us 20000 enp 4\nnode m ed_us 20000 enp 0\n"
            "proc P1k msg j 100\nproc P3k msg m 50\n"
        ),
        ["P3k", "P1k"],
    ),
    (
        "eq. 3: of two messages from one node, the older has the smaller aged ERL",
        "node n erl_us 50000\nproc A msg n 0\nproc B msg n 30000\n",
        ["B", "A"],
    ),
    (
        "eq. 2: a rank without pending messages is no candidate, one candidate is no conflict",
        "node n erl_us 1000\nproc idle\nproc busy msg n 10\n",
        ["busy"],
    ),
    (
        "eq. 4 as written: the minimum over a rank's messages, so its slowest correspondent counts",
        (
            "node fast erl_us 0\nnode slow erl_us 200000\nnode mid erl_us 100000\n"
            "proc X msg fast 0 msg slow 0\nproc Y msg mid 0\n"
        ),
        ["Y", "X"],
    ),
    (
        "wr_reduce max: the soonest correspondent counts",
        (
            "wr_reduce max\nnode fast erl_us 0\nnode slow erl_us 200000\nnode mid erl_us 100000\n"
            "proc X msg fast 0 msg slow 0\nproc Y msg mid 0\n"
        ),
        ["X", "Y"],
    ),
    (
        "equal weights (both clamped to 100): the oldest message first",
        "node n erl_us 0\nproc A msg n 10\nproc B msg n 20\n",
        ["B", "A"],
    ),
    (
        "a larger MPL raises ERL_max and NF; the order stays by ERL",
        "mpl 3\nnode a erl_us 60000\nnode b erl_us 30000\nproc A msg a 0\nproc B msg b 0\nproc C\n",
        ["B", "A"],
    ),
]


@pytest.mark.parametrize("why,table,expected", TABLES, ids=[t[0][:40] for t in TABLES])
def test_cc_decision_on_erl_tables(daemon, tmp_path, why, table, expected):
    out = decide(daemon, tmp_path, table)
    assert out["order"] == expected, why
    assert out["conflict"] == (len(expected) >= 2)
    assert out["choice"] == expected[0]


def test_cc_weights_follow_eqs_1_to_4(daemon, tmp_path):
    out = decide(
        daemon,
        tmp_path,
        "mpl 5\ncost_switch_us 6\nnode j ed_us 20000 enp 4\nnode m ed_us 20000 enp 0\n"
        "node h ed_us 1000 enp 2.5\nproc P1k msg j 100\nproc P3k msg m 50\nproc Q\n",
    )
    assert out["erl_max_us"] == pytest.approx(205000)
    # eq. 1: ED * ENP + (ceil(ENP) + 1) * Cost_switch
    assert out["erl_us"] == pytest.approx({"j": 80030, "m": 6, "h": 2524})
    w = {p["name"]: p for p in out["procs"]}
    # eqs. 3 and 4: (ERL_max - (ERL - age)) / NF, clamped to [0, 100]; eq. 2: +20 if pending
    assert w["P1k"]["wr"] == pytest.approx((205000 - (80030 - 100)) / 2050)
    assert w["P1k"]["w"] == pytest.approx(20 + (205000 - 79930) / 2050)
    assert w["P3k"]["wr"] == pytest.approx(100)
    assert w["Q"] == {"name": "Q", "pending": False, "wc": 0, "wr": 0, "w": 0}


@pytest.mark.parametrize(
    "table,msg",
    [
        ("node x erl_us abc\n", "table.txt:1: expected 'node NAME erl_us X'"),
        ("node a erl_us 1\nproc p msg nowhere 5\n", "table.txt:2: expected 'msg NODE AGE_US'"),
        ("mpl 0\n", "table.txt:1: mpl: expected an integer from 1 to 64"),
        ("node a erl_us 1\nmpl 3\n", "table.txt:2: mpl:"),
        ("frobnicate 3\n", "table.txt:1: expected mpl, cost_switch_us"),
    ],
)
def test_bad_table_names_the_line(daemon, tmp_path, table, msg):
    f = tmp_path / "table.txt"
    f.write_text(table)
    res = run(daemon, "--decide-table", f)
    assert res.returncode == 2
    assert msg in res.stderr and res.stderr.count("\n") == 1, res.stderr


# ---------------------------------------------------------------- bad parameters start nothing

BAD = [
    (["--scheme", "fast"], "--scheme: 'fast' (expected local, batch"),
    (["--spin-us", "-5"], "--spin-us: '-5' (expected an integer from 0 to 1000000)"),
    (["--tick-us", "10"], "--tick-us: '10' (expected an integer from 100 to 100000)"),
    (["--peer", "1=localhost:99"], "--peer: '1=localhost:99' (expected NODE=IPv4:PORT"),
    (["--mpl", "0"], "--mpl: '0'"),
    (["--wr-reduce", "avg"], "--wr-reduce: 'avg' (expected min or max)"),
    (["--enp-alpha", "0"], "--enp-alpha: '0' (expected a number > 0"),
    (["--boost-prio", "50"], "--boost-prio: '50' (expected an integer from 1 to 20)"),
    (["--listen", "nowhere"], "--listen: 'nowhere' (expected IPv4:PORT)"),
    (["--bogus"], "invalid option '--bogus'"),
]


@pytest.mark.parametrize("args,msg", BAD, ids=[b[0][0] for b in BAD])
def test_bad_parameters_start_nothing(daemon, tmp_path, shm, args, msg):
    state = tmp_path / "state"
    state.mkdir()
    base = {"--scheme": "dcs", "--state-dir": str(state), "--shm": shm}
    base.update({args[0]: args[1]} if len(args) == 2 else {})
    argv = [a for kv in base.items() for a in kv] + (args if len(args) == 1 else [])
    res = run(daemon, *argv)
    assert res.returncode == 2, res.stderr
    assert msg in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not Path("/dev/shm", shm[1:]).exists()
    assert list(state.iterdir()) == []


def test_missing_or_bad_state_dir_is_a_usage_error(daemon, tmp_path, shm):
    res = run(daemon, "--scheme", "dcs", "--shm", shm)
    assert res.returncode == 2 and "--state-dir: missing" in res.stderr
    res = run(daemon, "--scheme", "dcs", "--shm", shm, "--state-dir", tmp_path / "absent")
    assert res.returncode == 2 and "--state-dir:" in res.stderr
    res = run(daemon, "--state-dir", tmp_path)
    assert res.returncode == 2 and "--scheme: missing" in res.stderr
    assert not Path("/dev/shm", shm[1:]).exists()


@needs_mpi
@pytest.mark.parametrize(
    "var,value,msg",
    [
        ("CORUN_COSCHED_WAIT", "sleep", "CORUN_COSCHED_WAIT: 'sleep' (expected spin, block or spinblock)"),
        ("CORUN_COSCHED_SPIN_US", "-1", "CORUN_COSCHED_SPIN_US: '-1' (expected an integer from 0 to 1000000"),
        ("CORUN_COSCHED_SHM", "noslash", "CORUN_COSCHED_SHM: 'noslash' (expected a shared-memory name"),
    ],
)
def test_library_refuses_bad_environment(daemon, var, value, msg):
    res = subprocess.run(
        mpirun_cmd(2, {"LD_PRELOAD": LIB, var: value}, [PINGPONG, "--iters", 5]),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0
    assert msg in res.stderr, res.stderr
    assert '"kernel"' not in res.stdout


# ---------------------------------------------------------------- the waiting action


@needs_mpi
def test_each_waiting_mode_on_a_ping_pong(daemon, shm):
    """Rank 0 works 3 ms before each send, so rank 1 waits about 3 ms per message: spinning
    it burns that time on the CPU, blocking it sleeps on the futex; the counters in the
    segment say which. No daemon: a blocked rank wakes by its backoff timeout."""
    share, slots = {}, {}
    for i, (mode, spin_us) in enumerate([("spin", 150), ("block", 150), ("spinblock", 150), ("spinblock", 1000000)]):
        name = f"{shm}-{i}"
        try:
            env = {
                "LD_PRELOAD": LIB,
                "CORUN_COSCHED_WAIT": mode,
                "CORUN_COSCHED_SPIN_US": spin_us,
                "CORUN_COSCHED_SHM": name,
                "CORUN_COSCHED_JOB": f"pp-{i}",
            }
            out = pingpong(env)
            share[(mode, spin_us)] = out[1]["cpu_share"]
            slots[(mode, spin_us)] = dump(daemon, name)
        finally:
            Path("/dev/shm", name[1:]).unlink(missing_ok=True)
    for key, s in slots.items():
        r1 = s[1]
        assert r1["job"].startswith("pp-") and r1["wait_mode"] == key[0]
        assert r1["waits"] >= 65 and r1["msgs"] >= 65  # 60 + 5 warm-up receives, and more
        assert r1["md_mean_us"] > 1000, key  # waited for rank 0's 3 ms of work
    assert slots[("spin", 150)][1]["blocks"] == 0
    assert slots[("spinblock", 1000000)][1]["blocks"] == 0  # the spin phase covers every wait
    assert slots[("block", 150)][1]["blocks"] >= 65
    assert slots[("block", 150)][1]["block_s"] > 0.5 * slots[("block", 150)][1]["wait_s"]
    assert slots[("spinblock", 150)][1]["blocks"] >= 65
    # the CPU time of the waiting rank: spinning costs it, blocking does not (a margin of 2:
    # on a loaded machine a spinning rank gets less than a CPU)
    assert share[("block", 150)] < 0.25, share
    assert share[("spin", 150)] > 2 * share[("block", 150)], share
    assert share[("spinblock", 1000000)] > 2 * share[("block", 150)], share


FORTRAN_PINGPONG = """program pp
  use mpi
  implicit none
  integer :: ierr, rank, i, buf, st(MPI_STATUS_SIZE), req
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  buf = 0
  do i = 1, 50
    if (rank == 0) then
      call MPI_Send(buf, 1, MPI_INTEGER, 1, 1, MPI_COMM_WORLD, ierr)
      call MPI_Recv(buf, 1, MPI_INTEGER, 1, 2, MPI_COMM_WORLD, st, ierr)
    else
      call MPI_Irecv(buf, 1, MPI_INTEGER, 0, 1, MPI_COMM_WORLD, req, ierr)
      call MPI_Wait(req, st, ierr)
      buf = buf + 1
      call MPI_Send(buf, 1, MPI_INTEGER, 0, 2, MPI_COMM_WORLD, ierr)
    end if
  end do
  call MPI_Allreduce(MPI_IN_PLACE, buf, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print *, 'sum', buf
  call MPI_Finalize(ierr)
end program
"""


@needs_mpi
@pytest.mark.skipif(shutil.which("mpif90") is None, reason="needs mpif90 (gfortran)")
def test_fortran_calls_are_waited_on_too(daemon, tmp_path, shm):
    """Open MPI's Fortran bindings (NPB's BT, SP, FT, CG) call PMPI_X: the library defines those."""
    src = tmp_path / "pp.f90"
    src.write_text(FORTRAN_PINGPONG)
    subprocess.run(["mpif90", "-o", str(tmp_path / "pp"), str(src)], check=True, cwd=tmp_path)
    env = {"LD_PRELOAD": LIB, "CORUN_COSCHED_WAIT": "block", "CORUN_COSCHED_SHM": shm}
    res = subprocess.run(mpirun_cmd(2, env, [tmp_path / "pp"]), check=False, capture_output=True, text=True, timeout=60)
    assert res.returncode == 0 and "sum" in res.stdout and "100" in res.stdout, res.stderr
    s = dump(daemon, shm)
    assert s[0]["waits"] >= 51 and s[1]["waits"] >= 51  # MPI_Recv / MPI_Wait and the all-reduce
    assert s[0]["coll_calls"] == 1 and s[1]["blocks"] > 0


# ---------------------------------------------------------------- the daemon with ranks


def start_daemon(daemon, state, shm, scheme, *extra):
    p = subprocess.Popen(
        [str(daemon), "--scheme", scheme, "--state-dir", str(state), "--shm", shm, *map(str, extra)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert wait_for(lambda: (state / "rank_env.json").exists() or p.poll() is not None, 10)
    assert p.poll() is None, p.communicate()
    return p, json.loads((state / "rank_env.json").read_text())


def stop_daemon(p, state):
    p.send_signal(signal.SIGTERM)
    _, err = p.communicate(timeout=20)
    assert p.returncode == 0, err
    return json.loads((state / "summary.json").read_text())


@needs_mpi
@pytest.mark.root
@pytest.mark.parametrize("scheme", SCHEMES)
def test_each_scheme_end_to_end(daemon, tmp_path, shm, scheme):
    state = tmp_path / "state"
    state.mkdir()
    p, env = start_daemon(daemon, state, shm, scheme, "--pb-period-us", 2000, "--gang-slice-ms", 20)
    try:
        assert env["CORUN_COSCHED_SHM"] == shm and env["OMPI_MCA_btl"] == "tcp,self"
        assert Path(env["LD_PRELOAD"]) == LIB
        want = {"ib": "block", "hybrid": "block", "cc_b": "block", "sb": "spinblock"}.get(scheme, "spin")
        assert env["CORUN_COSCHED_WAIT"] == want
        assert env["CORUN_COSCHED_SEND_WAIT"] == ("block" if scheme in ("hybrid", "cc_b") else "spin")
        pingpong(env, iters=100, work_us=1000)
        assert run(daemon, "--check", state).returncode == 0
    finally:
        summary = stop_daemon(p, state)
    assert summary["scheme"] == scheme and summary["exit_reason"] == "Terminated"
    assert summary["wait_mode_mismatches"] == 0
    # arrivals: from the first socket scan on (20 ms), coalesced when a rank is slow to read
    # (on a loaded 2-core machine 18 of the 210 messages were seen apart); the daemon must see some
    assert len(summary["ranks"]) == 2 and summary["arrivals"] >= 10
    assert summary["context_switches"] > 0 and summary["bcr"] is not None
    if scheme in ("dcs", "ib", "sb", "cc_b", "pb", "cc_s"):
        assert summary["boosts"] > 0
    if scheme in ("ib", "sb", "hybrid", "cc_b"):
        assert summary["wakeups"] > 0
        # the arrival-based MD needs the daemon to see a message before its rank consumes it: a
        # blocked rank always waits for that; under sb a rank still spinning (150 us) may take
        # every message first on a loaded machine, so there only ranks the daemon saw count
        measured = [r for r in summary["ranks"] if scheme != "sb" or r["arrivals"] > 0]
        assert measured and all(r["arrival_md_mean_us"] is not None for r in measured), summary["ranks"]
    if scheme in ("local", "batch", "gang"):
        assert summary["boosts"] == 0
    # nothing left boosted: the segment's slots were released
    assert dump(daemon, shm) == {}


def free_udp_port():
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.mark.root
def test_daemons_exchange_erl(daemon, tmp_path, shm):
    a, b = free_udp_port(), free_udp_port()
    procs = []
    for node, me, other in ((0, a, b), (1, b, a)):
        state = tmp_path / f"n{node}"
        state.mkdir()
        p, _ = start_daemon(
            daemon,
            state,
            f"{shm}-{node}",
            "cc_b",
            "--node-id",
            node,
            "--listen",
            f"127.0.0.1:{me}",
            "--peer",
            f"{1 - node}=127.0.0.1:{other}",
            "--erl-period-us",
            2000,
        )
        procs.append((p, state))
    time.sleep(0.4)
    try:
        sums = [stop_daemon(p, state) for p, state in procs]
    finally:
        for node in (0, 1):
            Path("/dev/shm", f"{shm[1:]}-{node}").unlink(missing_ok=True)
    for s in sums:
        assert s["erl_sent"] > 10 and s["erl_received"] > 10, s


@pytest.fixture
def netns():
    """A network namespace of our own with two veth pairs, v1 (10.9.0.1) and v2 (10.9.1.1): the
    two 'nodes' whose correspondents the CC order weighs (Open MPI takes one address per
    interface, so two addresses on the loopback would not do)."""
    if shutil.which("ip") is None:
        pytest.skip("needs iproute2")
    name = f"corun-cc-{os.getpid()}"
    subprocess.run(["ip", "netns", "add", name], check=True)
    try:
        for cmd in (
            ["ip", "link", "set", "lo", "up"],
            ["ip", "link", "add", "v1", "type", "veth", "peer", "name", "v1p"],
            ["ip", "link", "add", "v2", "type", "veth", "peer", "name", "v2p"],
            ["ip", "addr", "add", "10.9.0.1/24", "dev", "v1"],
            ["ip", "addr", "add", "10.9.1.1/24", "dev", "v2"],
            *(["ip", "link", "set", i, "up"] for i in ("v1", "v1p", "v2", "v2p")),
        ):
            subprocess.run(["ip", "netns", "exec", name, *cmd], check=True)
        yield name
    finally:
        subprocess.run(["ip", "netns", "del", name], check=False)


ERL_SENDER = """
import socket, struct, sys, time
erl = {1: float(sys.argv[2]), 2: float(sys.argv[3])}
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
end = time.monotonic() + float(sys.argv[4])
while time.monotonic() < end:
    for node, v in erl.items():
        s.sendto(struct.pack("<Iid", 0x45524c31, node, v), ("127.0.0.1", int(sys.argv[1])))
    time.sleep(0.002)
"""


def cc_b_live(daemon, stencil, tmp_path, shm, ns, erl1, erl2, reduce="min"):
    """Node 0's daemon (cc_b) with two jobs whose ranks talk over 10.9.0.1 ('node 1') and
    10.9.1.1 ('node 2'); the other nodes' daemons are played by a sender of their ERL."""
    state = tmp_path / f"state-{erl1:g}-{erl2:g}-{reduce}"
    state.mkdir()
    port = 47000 + os.getpid() % 1000
    exe = ["ip", "netns", "exec", ns]
    d = subprocess.Popen(
        exe
        + [
            str(daemon),
            "--scheme",
            "cc_b",
            "--state-dir",
            str(state),
            "--shm",
            shm,
            "--listen",
            f"127.0.0.1:{port}",
            "--peer",
            f"1=10.9.0.1:{port + 1}",
            "--peer",
            f"2=10.9.1.1:{port + 2}",
            "--wr-reduce",
            reduce,
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    sender = subprocess.Popen(exe + [sys.executable, "-c", ERL_SENDER, str(port), str(erl1), str(erl2), "30"])
    jobs = []
    sessions = []
    try:
        assert wait_for(lambda: (state / "rank_env.json").exists() or d.poll() is not None, 10)
        env = json.loads((state / "rank_env.json").read_text())
        for job, dev in (("A", "v1"), ("B", "v2")):
            cmd = mpirun_cmd(
                2,
                dict(env, CORUN_COSCHED_JOB=job),
                [stencil, "--iters", 1500, "--cells", 4096, "--sweeps", 2, "--halo-bytes", 64],
            )
            # two mpiruns at once: a session folder each (short: Open MPI puts Unix sockets in it)
            session = tempfile.mkdtemp(prefix="ompi-")
            sessions.append(session)
            cmd[1:1] = ["--mca", "btl_tcp_if_include", dev, "--mca", "oob_tcp_if_include", "lo"]
            cmd[1:1] = ["--mca", "orte_tmpdir_base", session]
            jobs.append(subprocess.Popen(exe + cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True))
        for j in jobs:
            out, err = j.communicate(timeout=120)
            assert j.returncode == 0 and '"verified":true' in out, err
    finally:
        for j in jobs:
            if j.poll() is None:
                j.kill()
        sender.kill()
        sender.wait()
        d.send_signal(signal.SIGTERM)
        d.communicate(timeout=20)
        for session in sessions:
            shutil.rmtree(session, ignore_errors=True)
    return json.loads((state / "summary.json").read_text())


@needs_mpi
@pytest.mark.root
def test_cc_b_orders_by_the_correspondents_erl(daemon, stencil, tmp_path, shm, netns):
    """With node 1 contended (ERL 150 ms) and node 2 idle (ERL 0), CC-B puts ranks whose
    messages came from node 2 before older arrivals from node 1. The control: with equal ERLs
    its order is nearly the arrival order (eq. 3 ages the older message further; the few
    exceptions are messages that arrived before the first ERL of their node, or on the
    launcher's loopback channel, weighed with this node's own ERL). Both with W_r over a
    rank's oldest message (wr_reduce max): with eq. 4's min, a rank's youngest message sets
    its weight, so ranks holding several messages are reordered even with equal ERLs."""
    skew = cc_b_live(daemon, stencil, tmp_path, shm, netns, 150000, 0, "max")
    equal = cc_b_live(daemon, stencil, tmp_path, shm, netns, 50000, 50000, "max")
    for s in (skew, equal):
        assert s["erl_received"] > 100 and s["conflicts"] > 0, s
    assert skew["reordered"] > 10 * max(equal["reordered"], 1), (skew["reordered"], equal["reordered"])
    print(f"reordered: skewed ERL {skew['reordered']}, equal ERL {equal['reordered']}")


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
        for name in ("A", "B"):
            e = dict(env, CORUN_COSCHED_JOB=name)
            jobs.append(
                subprocess.Popen(
                    mpirun_cmd(2, e, [PINGPONG, "--iters", 10000000, "--work-us", 100]),
                    stdout=subprocess.DEVNULL,
                    stderr=subprocess.DEVNULL,
                    start_new_session=True,
                )
            )
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
        for j in jobs:
            os.killpg(j.pid, signal.SIGKILL)
            j.wait()
        if p.poll() is None:
            p.kill()
            p.wait()


def write_slot(shm, i, pid, starttime, job):
    """A slot as a rank fills it (cosched_shm.h): everything first, the pid last."""
    with open(f"/dev/shm/{shm[1:]}", "r+b") as f, mmap.mmap(f.fileno(), 0) as m:
        _magic, _version, _nslots, slot_size = struct.unpack_from("<IIII", m, 0)
        off = 24 + i * slot_size
        struct.pack_into("<Q48sII", m, off + 8, starttime, job.encode(), 0, 0)  # spin / spin
        struct.pack_into("<i", m, off, pid)


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
    argv = [str(daemon), "--scheme", "dcs", "--state-dir", str(state), "--shm", shm]
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


# ---------------------------------------------------------------- the manifests


@needs_mpi  # the variants require mpirun
def test_variants_share_mpi_cosched():
    for name in SCHEMES:
        v = schedulers.Variant.load(name, need_built=False)
        assert v.manifest["extends"] == "mpi_cosched"
        assert v.params["scheme"] == name and v.params["spin_us"] == 150
        v.ctx = {"state_dir": "/s"}
        start = v.expand(v.manifest["start"])
        assert start[0].endswith("mpi_cosched/build/corun-cosched")
        assert start[start.index("--scheme") + 1] == name
        assert v.expand(v.manifest["stop"])[1:] == ["--restore", "/s"]
    assert schedulers.Variant.load("batch", need_built=False).params["mpl"] == 1
    with pytest.raises(Exception, match="scheme"):
        schedulers.Variant.load("sb", {"scheme": "dcs"}, need_built=False)
    with pytest.raises(Exception, match="spin_us"):
        schedulers.Variant.load("sb", {"spin_us": -1}, need_built=False)

"""The MPI coscheduling variants of paper 001 (schedulers/mpi_cosched, one manifest for the
schemes batch, local, dcs, pb, ib, sb, hybrid, cc_s, cc_b and gang): the CC decision (eqs. 1-4)
on hand-made ERL tables, and bad or missing parameters of the daemon and of the library, which
start nothing. The schemes at work: test_mpi_cosched_schemes.py; what a dying daemon leaves:
test_mpi_cosched_safety.py."""

import json
import subprocess
from pathlib import Path

import pytest

from corun.run import schedulers
from tests.schedulers.cosched_helpers import (
    PINGPONG,
    SCHEMES,
    daemon_argv,
    mpirun_cmd,
    needs_mpi,
    rank_env,
    run,
)

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
            "mpl 5\nwr_reduce min\ncost_switch_us 6\nnode j ed_us 20000 enp 4\nnode m ed_us 20000 enp 0\n"
            "proc P1k msg j 100\nproc P3k msg m 50\n"
        ),
        ["P3k", "P1k"],
    ),
    (
        "eq. 3: of two messages from one node, the older has the smaller aged ERL",
        "mpl 5\nwr_reduce min\nnode n erl_us 50000\nproc A msg n 0\nproc B msg n 30000\n",
        ["B", "A"],
    ),
    (
        "eq. 2: a rank without pending messages is no candidate, one candidate is no conflict",
        "mpl 5\nwr_reduce min\nnode n erl_us 1000\nproc idle\nproc busy msg n 10\n",
        ["busy"],
    ),
    (
        "eq. 4 as written: the minimum over a rank's messages, so its slowest correspondent counts",
        (
            "mpl 5\nwr_reduce min\nnode fast erl_us 0\nnode slow erl_us 200000\nnode mid erl_us 100000\n"
            "proc X msg fast 0 msg slow 0\nproc Y msg mid 0\n"
        ),
        ["Y", "X"],
    ),
    (
        "wr_reduce max: the soonest correspondent counts",
        (
            "mpl 5\nwr_reduce max\nnode fast erl_us 0\nnode slow erl_us 200000\nnode mid erl_us 100000\n"
            "proc X msg fast 0 msg slow 0\nproc Y msg mid 0\n"
        ),
        ["X", "Y"],
    ),
    (
        "equal weights (both clamped to 100): the oldest message first",
        "mpl 5\nwr_reduce min\nnode n erl_us 0\nproc A msg n 10\nproc B msg n 20\n",
        ["B", "A"],
    ),
    (
        "a larger MPL raises ERL_max and NF; the order stays by ERL",
        "mpl 3\nwr_reduce min\nnode a erl_us 60000\nnode b erl_us 30000\nproc A msg a 0\nproc B msg b 0\nproc C\n",
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
        "mpl 5\nwr_reduce min\ncost_switch_us 6\nnode j ed_us 20000 enp 4\nnode m ed_us 20000 enp 0\n"
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
        ("wr_reduce min\nnode a erl_us 1\nproc p msg a 5\n", "table.txt: mpl missing (expected the lines mpl N"),
        ("mpl 5\nnode a erl_us 1\n", "table.txt: wr_reduce missing"),
        ("mpl 5\nwr_reduce min\nnode a ed_us 1 enp 1\n", "table.txt:3: a node by ed_us: expected cost_switch_us"),
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
    (["--coll", "eager"], "--coll: 'eager' (expected nonblocking or native)"),
    (["--block-min-us", "2000"], "--block-max-us: '1000' (expected >= --block-min-us 2000)"),
    (["--shm", "noslash"], "--shm: 'noslash' (expected a name such as /corun-cosched-0)"),
    (["--bogus"], "invalid option '--bogus'"),
]


@pytest.mark.parametrize("args,msg", BAD, ids=[b[0][0] for b in BAD])
def test_bad_parameters_start_nothing(daemon, tmp_path, shm, args, msg):
    """The manifest's start command with one bad option after it (the last given counts)."""
    state = tmp_path / "state"
    state.mkdir()
    res = run(*daemon_argv(daemon, "dcs", state, shm), *args)
    assert res.returncode == 2, res.stderr
    assert msg in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not Path("/dev/shm", shm[1:]).exists()
    assert list(state.iterdir()) == []


def options_of(argv):
    """The options a start command passes: every --name followed by a value."""
    return [a for a, b in zip(argv, argv[1:]) if a.startswith("--") and not b.startswith("--")]


OPTIONS = options_of(daemon_argv(Path("corun-cosched"), "dcs", Path("state"), "/shm"))


@pytest.mark.parametrize("option", OPTIONS)
def test_every_option_of_the_manifest_is_required(daemon, tmp_path, shm, option):
    """The daemon has no default of its own for what the manifest sets: without one of the
    options its start command passes, it refuses, naming it, and creates nothing."""
    argv = daemon_argv(daemon, "dcs", tmp_path, shm)
    i = argv.index(option)
    res = run(*argv[:i], *argv[i + 2 :])
    assert res.returncode == 2 and f"{option}: missing (expected a value: the manifest's)" in res.stderr, res.stderr
    assert not Path("/dev/shm", shm[1:]).exists() and list(tmp_path.iterdir()) == []


def test_every_param_reaches_the_daemon():
    """Each param of the family is passed to the daemon: a default nothing uses would be a
    second, silent one."""
    argv = " ".join(schedulers.manifest("mpi_cosched")["start"])
    assert all(f"{{param.{p}}}" in argv for p in schedulers.manifest("mpi_cosched")["params"])
    assert len(OPTIONS) == len(schedulers.manifest("mpi_cosched")["params"]) + 1  # and --state-dir


def test_bad_state_dir_is_a_usage_error(daemon, tmp_path, shm):
    res = run(*daemon_argv(daemon, "dcs", tmp_path / "absent", shm))
    assert res.returncode == 2 and "--state-dir: '" in res.stderr and "expected an existing directory" in res.stderr
    assert not Path("/dev/shm", shm[1:]).exists()


@needs_mpi
@pytest.mark.parametrize(
    "var,value,msg",
    [
        ("CORUN_COSCHED_WAIT", "sleep", "CORUN_COSCHED_WAIT: 'sleep' (expected spin, block or spinblock)"),
        ("CORUN_COSCHED_SPIN_US", "-1", "CORUN_COSCHED_SPIN_US: '-1' (expected an integer from 0 to 1000000"),
        ("CORUN_COSCHED_BLOCK_MAX_US", "10", "CORUN_COSCHED_BLOCK_MAX_US: '10' (expected an integer from 50"),
        ("CORUN_COSCHED_COLL", "eager", "CORUN_COSCHED_COLL: 'eager' (expected nonblocking or native)"),
        ("CORUN_COSCHED_SHM", "noslash", "CORUN_COSCHED_SHM: 'noslash' (expected a shared-memory name"),
        ("CORUN_COSCHED_SPIN_US", None, "CORUN_COSCHED_SPIN_US: missing (expected an integer"),
        ("CORUN_COSCHED_COLL", None, "CORUN_COSCHED_COLL: missing (expected nonblocking or native)"),
    ],
)
def test_library_refuses_bad_environment(daemon, var, value, msg):
    """A bad value, or none where the daemon's rank_env.json gives one: the rank stops at
    MPI_Init with one line (the library has no default of its own)."""
    env = rank_env("spin")
    if value is None:
        env.pop(var)
    else:
        env[var] = value
    res = subprocess.run(
        mpirun_cmd(2, env, [PINGPONG, "--iters", 5]),
        check=False,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert res.returncode != 0
    assert msg in res.stderr, res.stderr
    assert '"kernel"' not in res.stdout


# ---------------------------------------------------------------- the manifests


@needs_mpi  # the variants require mpirun
def test_variants_share_mpi_cosched():
    for name in SCHEMES:
        v = schedulers.Variant.load(name, need_built=False)
        assert v.manifest["family"] == "mpi_cosched" and v.directory.name == "mpi_cosched"
        assert v.params["scheme"] == name
        assert v.params["spin_us"] == schedulers.manifest("mpi_cosched")["params"]["spin_us"]["default"]
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


def test_one_manifest_holds_the_family():
    """Every scheme is a name of mpi_cosched's manifest, with its own description and paper."""
    for name in SCHEMES:
        assert schedulers.manifest_files(name) == [schedulers.find("mpi_cosched")]
        m = schedulers.manifest(name)
        assert m["kind"] == "daemon" and m["params"]["scheme"]["enum"] == [name]
        assert m["description"] != schedulers.manifest("mpi_cosched")["description"]

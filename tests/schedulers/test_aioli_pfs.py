"""The corun/aioli translator loaded in glusterfsd on a 2-host netns cluster (both hosts data
servers, the client colocated on the first): reads and writes through kernels/pfs_read checked
word by word under every policy, aggregation counters under aioli with concurrent contiguous
readers, apply/verify/restore of every pfs_sched variant, and restore after SIGKILL of the
applying runner through the journal and `corun recover`."""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.schedulers.variant_process import start_variant
from tests.testbed.test_pfs import leftovers, netns_cluster, pfs, run, write_config

REPO = Path(__file__).resolve().parent.parent.parent
PREFIX = "cx"
SUBNET = "10.83.0.0/24"
SCHED = [sys.executable, "-m", "corun.testbed.pfs_sched"]
VARIANTS = ["pfs_fifo", "aioli", "aioli_no_wait", "aioli_no_agg", "time_order_agg", "app_aware"]
POLICY_OF = {"pfs_fifo": "fifo"}

pytestmark = pytest.mark.root


@pytest.fixture(scope="module")
def netns(tmp_path_factory):
    yield from netns_cluster(tmp_path_factory, PREFIX, SUBNET)


@pytest.fixture(scope="module")
def fs(netns, tmp_path_factory):
    base = tmp_path_factory.mktemp("aioli-pfs")
    root = base / "root"
    xlator = {"name": "corun-aioli", "type": "corun/aioli", "options": {"trace-record": "{dir}/arrivals.trace"}}
    path = write_config(
        base / "pfs.yaml",
        netns,
        root,
        brick={"backend": "dir"},
        link={"shape": False},
        fuse={"mount": False},
        port=24019,
        server_xlators=[xlator],
    )
    up = pfs(path, "up")
    if up.returncode == 3 and "not installed" in up.stderr:
        pytest.skip(up.stderr.strip())
    try:
        assert up.returncode == 0, up.stderr
        yield path, root, base / "pfs-state", json.loads((base / "pfs-state" / "layout.json").read_text())
    finally:
        down = pfs(path, "down")
        assert down.returncode == 0, down.stderr
        assert leftovers(netns, root, PREFIX, qdiscs=False) == []


def ssh(netns, host, command):
    state, _ = netns
    return run(["ssh", "-F", str(state / "ssh_config"), host, command], timeout=300)


def pfs_read(netns, kernels_built, layout, *args):
    vol = " ".join(f"--volfile {v}" for v in layout["volfiles"])
    res = ssh(netns, f"{PREFIX}-n1", " ".join([str(kernels_built / "pfs_read"), vol, *args]))
    assert res.returncode == 0, res.stderr
    return json.loads(res.stdout)


def sched(*args):
    return run([*SCHED, *args], timeout=120)


def statuses(layout, after=None):
    """Every server's status document; with `after`, written after that time (it is rewritten
    every second)."""
    deadline = time.monotonic() + 10
    while True:
        out = []
        for s in layout["servers"]:
            (x,) = [x for x in s["xlators"] if x["type"] == "corun/aioli"]
            out.append(json.loads(Path(x["options"]["status-file"]).read_text()))
        if after is None or all(d["updated_unix"] > after for d in out) or time.monotonic() > deadline:
            return out
        time.sleep(0.1)


def test_volfile_options_and_status(fs):
    cfg, root, _, layout = fs
    s0 = layout["servers"][0]
    (x,) = s0["xlators"]
    assert x["options"]["control-file"] == f"{s0['dir']}/corun-aioli.control"
    assert x["options"]["trace-record"] == f"{s0['dir']}/arrivals.trace"
    vol = Path(s0["dir"], "server.vol").read_text()
    assert "type corun/aioli" in vol and f"option status-file {s0['dir']}/corun-aioli.status" in vol
    st = pfs(cfg, "status")
    assert st.returncode == 0, st.stdout + st.stderr
    assert st.stdout.count("scheduler corun-aioli: policy fifo") == 2, st.stdout
    for doc in statuses(layout):
        assert doc["policy"] == "fifo" and time.time() - doc["updated_unix"] < 3


@pytest.mark.parametrize("policy", ["fifo", "aioli", "aioli_no_agg", "time_order_agg"])
def test_reads_and_writes_checked_under_each_policy(fs, netns, kernels_built, tmp_path, policy):
    _, _, pfs_state, layout = fs
    res = sched("apply", "--policy", policy, "--pfs-state", str(pfs_state), "--state", str(tmp_path / "s.json"))
    assert res.returncode == 0, res.stderr
    out = pfs_read(
        netns,
        kernels_built,
        layout,
        f"--file /check-{policy}.dat --write --read --check --tasks 4 --segments 8",
        "--block-size 128K --transfer-size 64K",
    )
    assert out["checked"] and out["mismatched_words"] == 0
    t_end = time.time()
    docs = statuses(layout, after=t_end)
    c = [d["counters"] for d in docs]
    assert all(d["updated_unix"] > t_end for d in docs), docs
    assert sum(x["requests"]["read"] for x in c) > 0 and sum(x["requests"]["write"] for x in c) > 0, c
    if policy == "fifo":
        assert all(x["dispatches"] == 0 and x["passed_through"] > 0 for x in c), c
    else:
        assert all(x["passed_through"] == 0 for x in c), c
        assert sum(x["dispatches"] for x in c) > 0, c
    res = sched("restore", "--state", str(tmp_path / "s.json"))
    assert res.returncode == 0, res.stderr


def test_aioli_aggregates_concurrent_contiguous_readers(fs, netns, kernels_built, tmp_path):
    _, _, pfs_state, layout = fs
    pfs_read(netns, kernels_built, layout, "--file /agg.dat --write --tasks 1 --block-size 8M --transfer-size 1M")
    res = sched(
        "apply", "--policy", "aioli", "--pfs-state", str(pfs_state), "--state", str(tmp_path / "s.json"),
        "--set", "wait_us=2000",
    )  # fmt: skip
    assert res.returncode == 0, res.stderr
    # 8 tasks, each reading one 64 KiB strip per segment: neighbours are contiguous on a server.
    out = pfs_read(
        netns,
        kernels_built,
        layout,
        "--file /agg.dat --read --check --tasks 8 --segments 16 --block-size 64K --transfer-size 64K",
    )
    assert out["mismatched_words"] == 0
    c = [d["counters"] for d in statuses(layout, after=time.time())]
    assert sum(x["aggregations"] for x in c) > 0, c
    assert sum(sum(x["agg_performed"][1:]) for x in c) > 0
    assert sum(x["requests"]["read"] for x in c) == 8 * 16
    assert all(x["queue"]["max"] >= 1 for x in c)
    assert sched("restore", "--state", str(tmp_path / "s.json")).returncode == 0


def test_variants_apply_verify_restore(fs, tmp_path):
    sys.path.insert(0, str(REPO))
    from corun.machine.state import Journal
    from corun.run import schedulers

    _, _, pfs_state, layout = fs
    for name in VARIANTS:
        params = {"pfs_state_dir": str(pfs_state)}
        if name == "app_aware":
            trace = tmp_path / "empty.trace"
            trace.write_text("# no arrivals\n")
            params["trace"] = str(trace)
        v = schedulers.Variant.load(name, params, need_built=False)
        (tmp_path / "run").mkdir(exist_ok=True)
        j = Journal(f"aioli-variant-{name}", tmp_path / "run")
        state_dir = tmp_path / name
        state_dir.mkdir()
        v.start(j, {"state_dir": str(state_dir)})
        assert v.verify(), name
        docs = statuses(layout)
        assert {d["policy"] for d in docs} == {POLICY_OF.get(name, name)}
        assert all(d["params"]["wait_us"] == 500 and d["params"]["max_outstanding"] == 1 for d in docs)
        assert v.stop(j) == []
        assert {d["policy"] for d in statuses(layout)} == {"fifo"}
        assert not (state_dir / "pfs_sched.json").exists()


def test_unknown_param_is_one_line_and_changes_nothing(fs, tmp_path):
    _, _, pfs_state, layout = fs
    before = [d["control_generation"] for d in statuses(layout)]
    res = sched(
        "apply", "--policy", "aioli", "--pfs-state", str(pfs_state), "--state", str(tmp_path / "s.json"),
        "--set", "quantum=3",
    )  # fmt: skip
    assert res.returncode == 2 and len(res.stderr.strip().splitlines()) == 1
    assert "'quantum'" in res.stderr and not (tmp_path / "s.json").exists()
    res = sched("apply", "--policy", "cfq", "--pfs-state", str(pfs_state), "--state", str(tmp_path / "s.json"))
    assert res.returncode == 2 and "expected one of fifo" in res.stderr
    time.sleep(0.3)
    assert [d["control_generation"] for d in statuses(layout)] == before


def test_restore_after_sigkill_via_recover(fs, tmp_path):
    _, _, pfs_state, layout = fs
    env = dict(os.environ, CORUN_STATE_DIR=str(tmp_path / "run"), PYTHONPATH=str(REPO))
    (tmp_path / "sched").mkdir()
    params = {"pfs_state_dir": str(pfs_state)}
    proc, err = start_variant("aioli_no_wait", params, tmp_path / "sched", "aioli-kill-test", env, REPO)
    if err is not None:
        pytest.fail(err)
    assert {d["policy"] for d in statuses(layout)} == {"aioli_no_wait"}
    proc.send_signal(signal.SIGKILL)
    proc.wait()
    res = subprocess.run(
        [sys.executable, "-m", "corun", "recover"], capture_output=True, text=True, env=env, cwd=REPO, timeout=120
    )
    assert res.returncode == 0, res.stderr
    assert "recovered run aioli-kill-test" in res.stdout and "error" not in res.stdout, res.stdout
    assert {d["policy"] for d in statuses(layout)} == {"fifo"}
    assert not (tmp_path / "sched" / "pfs_sched.json").exists()


def test_app_aware_reads_a_recorded_trace(fs, netns, kernels_built, tmp_path):
    _, _, pfs_state, layout = fs
    # Every server records its arrivals since up (the volfile's trace-record {dir}/arrivals.trace):
    # an earlier run of the same reads under fifo; the recording is flushed every second.
    pattern = "--tasks 4 --segments 8 --block-size 64K --transfer-size 64K"
    pfs_read(netns, kernels_built, layout, f"--file /trace.dat --write --read {pattern}")
    time.sleep(1.5)
    res = sched("apply", "--policy", "app_aware", "--pfs-state", str(pfs_state), "--state", str(tmp_path / "s.json"),
                "--set", "trace={dir}/arrivals.trace", "--set", "app_req_cost_us=100000",
                "--set", "app_wait_max_us=5000")  # fmt: skip
    assert res.returncode == 0, res.stderr
    docs = statuses(layout)
    assert [d["trace"] for d in docs] == [f"{s['dir']}/arrivals.trace" for s in layout["servers"]]
    assert all(d["trace_entries"] >= 32 and d["trace_error"] is None for d in docs)
    out = pfs_read(
        netns,
        kernels_built,
        layout,
        f"--file /trace.dat --read --check {pattern}",
    )
    assert out["mismatched_words"] == 0
    c = [d["counters"] for d in statuses(layout, after=time.time())]
    assert sum(x["waits"]["taken"] for x in c) > 0, c
    assert sched("restore", "--state", str(tmp_path / "s.json")).returncode == 0


def test_bad_control_file_applies_nothing_and_shows_the_error(fs, tmp_path):
    _, _, pfs_state, layout = fs
    res = sched("apply", "--policy", "aioli_no_agg", "--pfs-state", str(pfs_state), "--state", str(tmp_path / "s.json"))
    assert res.returncode == 0, res.stderr
    (x,) = layout["servers"][0]["xlators"]
    control = Path(x["options"]["control-file"])
    control.write_text("policy=time_order_agg\nwait_us=7\nbogus=1\n")
    t = time.time()
    doc = statuses(layout, after=t + 0.2)[0]
    assert "bogus" in doc["control_error"] and "unknown key" in doc["control_error"]
    assert doc["policy"] == "aioli_no_agg" and doc["params"]["wait_us"] == 500
    res = sched("verify", "--state", str(tmp_path / "s.json"))
    assert res.returncode == 1 and "control error" in res.stderr
    res = sched("restore", "--state", str(tmp_path / "s.json"))
    assert res.returncode == 0, res.stderr
    doc = statuses(layout)[0]
    assert doc["policy"] == "fifo" and doc["control_error"] is None


def test_writers_creating_one_file_at_once_all_open_it(fs, netns, kernels_built, tmp_path):
    """pfs_read's tasks (and several pfs_read at once) create their shared file together: a
    create that loses the race to another's is an open of the file it made, never EEXIST. The
    window between GlusterFS's lookup and its create is widened by busy CPUs (without the retry,
    2 of 360 writers failed here)."""
    _, _, pfs_state, layout = fs
    res = sched("apply", "--policy", "fifo", "--pfs-state", str(pfs_state), "--state", str(tmp_path / "s.json"))
    assert res.returncode == 0, res.stderr
    vol = " ".join(f"--volfile {v}" for v in layout["volfiles"])
    one = (
        f"{kernels_built / 'pfs_read'} {vol} --file /race-$r.dat --write --tasks 4 --block-size 64K --transfer-size 64K"
    )
    each = f"for i in $(seq 6); do ({one} >/dev/null) & done; for j in $(jobs -p); do wait $j || fail=1; done"
    rounds = f"for r in $(seq 60); do {each}; done"
    hogs = [subprocess.Popen(["sh", "-c", "while :; do :; done"]) for _ in range(4)]
    try:
        res = ssh(netns, f"{PREFIX}-n1", f"fail=0; {rounds}; exit $fail")
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        restored = sched("restore", "--state", str(tmp_path / "s.json"))
    assert res.returncode == 0, res.stderr
    assert restored.returncode == 0, restored.stderr

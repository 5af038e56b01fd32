"""The placement variants (schedulers/placement/pin.py): apply, verify and restore on real child
processes of this machine, with the domains read from a synthetic sysfs tree over CPUs 0-1."""

import csv
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "tests" / "instrument"))
from synthetic_sysfs import make_sysfs  # noqa: E402

from corun.util import proc_starttime  # noqa: E402
from tests.schedulers.manifest_argv import command  # noqa: E402
from tests.schedulers.polling import wait_for  # noqa: E402

PIN = ROOT / "schedulers" / "placement" / "pin.py"
PY = sys.executable
ENV = {**os.environ, "PYTHONPATH": str(ROOT)}
ALL = {0, 1}

# A job that starts a thread and a child process after a moment: both must be pinned too.
JOB = (
    "import os, threading, time\n"
    "time.sleep(0.3)\n"
    "threading.Thread(target=time.sleep, args=(30,), daemon=True).start()\n"
    "if os.fork() == 0:\n"
    "    time.sleep(30)\n"
    "    os._exit(0)\n"
    "time.sleep(30)\n"
)

pytestmark = pytest.mark.skipif(not ALL <= os.sched_getaffinity(0), reason="needs CPUs 0 and 1")


def pin(*args, timeout=30):
    return subprocess.run([PY, str(PIN), *map(str, args)], capture_output=True, text=True, timeout=timeout, env=ENV)


class Jobs:
    """Child processes started as the runner starts jobs (confined to CPU 0), with events."""

    def __init__(self, tmp_path):
        self.events = tmp_path / "job_events.jsonl"
        self.events.touch()
        self.procs = {}

    def start(self, job_id):
        p = subprocess.Popen([PY, "-c", JOB], preexec_fn=lambda: os.sched_setaffinity(0, {0}), start_new_session=True)
        self.procs[job_id] = p
        with open(self.events, "a") as fh:
            fh.write(
                json.dumps(
                    {
                        "event": "start",
                        "job_id": job_id,
                        "pid": p.pid,
                        "starttime": proc_starttime(p.pid),
                        "cmp": 0,
                        "cpus": [0],
                    }
                )
                + "\n"
            )
        return p

    def end(self, job_id):
        p = self.procs.pop(job_id)
        os.killpg(p.pid, signal.SIGKILL)
        p.wait()
        with open(self.events, "a") as fh:
            fh.write(json.dumps({"event": "end", "job_id": job_id, "pid": p.pid}) + "\n")

    def close(self):
        for job_id in list(self.procs):
            self.end(job_id)


@pytest.fixture
def jobs(tmp_path):
    j = Jobs(tmp_path)
    yield j
    j.close()


def affinity_of_tree(pid):
    from corun.machine.task_cpu import tree_affinity

    return tree_affinity(pid)


def manifest_options(**ctx):
    """pin.py's options as the placement manifest passes them (its defaults), after the program."""
    return command("placement", **ctx)[2:]


def daemon(tmp_path, jobs, policy, tasks, root):
    state = tmp_path / "state"
    params = {"policy": policy, "tasks": tasks, "sample_interval_s": 0.1}
    p = subprocess.Popen(
        [
            *command("placement", params, job_events=jobs.events, state_dir=state, cpus="0-1"),
            "--sysfs-root",
            str(root),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=ENV,
    )
    return p, state


def stop(p):
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=20)
    return p.returncode, err


def state_jobs(state):
    try:
        return json.loads((state / "state.json").read_text())["jobs"]
    except (OSError, ValueError):
        return {}


def tree_complete(pid):
    """The job's thread and its child process have appeared."""
    return len(affinity_of_tree(pid)) >= 3


SMT_CORE = dict(sockets=1, cores=1, threads=2)  # CPUs 0 and 1 are siblings of one core
TWO_NODES = dict(sockets=2, cores=1, threads=1)  # CPU 0 on node 0, CPU 1 on node 1


@pytest.mark.parametrize(
    "variant, machine, want",
    [
        ("mixed", SMT_CORE, {"a": {0}, "b": {1}}),
        ("same_type", SMT_CORE, {"a": {0}, "b": {1}}),
        ("concentrate", TWO_NODES, {"a": {0}, "b": {1}}),
        ("llc_same_type", TWO_NODES, {"a": {0}, "b": {1}}),
        ("spread", TWO_NODES, {"a": {0}, "b": {1}}),
        ("llc_mixed", TWO_NODES, {"a": {0}, "b": {1}}),
    ],
)
def test_apply_verify_restore(tmp_path, jobs, variant, machine, want):
    root = make_sysfs(tmp_path / "sys", **machine)
    tasks = "cpu:a,io:b" if variant != "same_type" else "cpu:a,cpu:b"
    p, state = daemon(tmp_path, jobs, variant, tasks, root)
    try:
        assert pin("--check", state).returncode == 0  # no job yet: nothing to check
        pa, pb = jobs.start("0000-a"), jobs.start("0001-b")
        # every thread of each tree, including the thread and child started later
        for name, proc in (("a", pa), ("b", pb)):
            pid, cpus = proc.pid, {frozenset(want[name])}
            assert wait_for(lambda pid=pid: tree_complete(pid)), affinity_of_tree(pid)
            assert wait_for(lambda pid=pid, cpus=cpus: set(map(frozenset, affinity_of_tree(pid).values())) == cpus), (
                name,
                affinity_of_tree(pid),
            )
        res = pin("--check", state)
        assert res.returncode == 0, res.stderr
        st = json.loads((state / "state.json").read_text())
        assert st["assignment"] == {k: min(v) for k, v in want.items()}
        assert set(st["jobs"]) == {"0000-a", "0001-b"}
    finally:
        code, err = stop(p)
    assert code == 0, err
    # restore: nothing pinned is left
    for proc in (pa, pb):
        assert all(a == ALL for a in affinity_of_tree(proc.pid).values())
    assert pin("--restore", state).returncode == 0
    assert json.loads((state / "state.json").read_text())["status"] == "stopped"


def test_check_reads_the_affinity_back(tmp_path, jobs):
    root = make_sysfs(tmp_path / "sys", **SMT_CORE)
    p, state = daemon(tmp_path, jobs, "mixed", "cpu:a,io:b", root)
    pa = jobs.start("0000-a")
    try:
        assert wait_for(lambda: "0000-a" in state_jobs(state))
        assert wait_for(lambda: affinity_of_tree(pa.pid)[pa.pid] == {0})
        os.kill(p.pid, signal.SIGSTOP)  # the daemon cannot re-pin while stopped
        os.sched_setaffinity(pa.pid, {1})
        res = pin("--check", state)
        assert res.returncode == 1
        assert f"job 0000-a thread {pa.pid} on 1 (expected 0)" in res.stderr
        os.kill(p.pid, signal.SIGCONT)
        assert wait_for(lambda: pin("--check", state).returncode == 0)
    finally:
        os.kill(p.pid, signal.SIGCONT)
        stop(p)


def test_restore_after_the_daemon_was_killed(tmp_path, jobs):
    root = make_sysfs(tmp_path / "sys", **TWO_NODES)
    p, state = daemon(tmp_path, jobs, "spread", "cpu:a,io:b", root)
    pa = jobs.start("a")
    assert wait_for(lambda: "a" in state_jobs(state))
    assert wait_for(lambda: affinity_of_tree(pa.pid)[pa.pid] == {0})
    p.kill()
    p.wait()
    assert affinity_of_tree(pa.pid)[pa.pid] == {0}  # still pinned: the daemon had no chance
    res = pin("--restore", state)
    assert res.returncode == 0, res.stderr
    assert all(a == ALL for a in affinity_of_tree(pa.pid).values())


def test_cfs_unpins_and_records_where_tasks_ran(tmp_path, jobs):
    root = make_sysfs(tmp_path / "sys", sockets=1, cores=2, threads=1)
    p, state = daemon(tmp_path, jobs, "cfs", "", root)
    try:
        pa = jobs.start("0000-a")  # confined to CPU 0 as the runner confines a job to its slot
        assert wait_for(lambda: tree_complete(pa.pid))
        assert wait_for(lambda: all(a == ALL for a in affinity_of_tree(pa.pid).values()))
        assert pin("--check", state).returncode == 0
        time.sleep(0.5)
        jobs.end("0000-a")
        time.sleep(0.3)
    finally:
        code, err = stop(p)
    assert code == 0, err
    rows = list(csv.DictReader(open(state / "cpu_samples.csv")))
    assert rows and {r["job"] for r in rows} == {"0000-a"}
    assert {int(r["cpu"]) for r in rows} <= ALL
    assert {r["assigned_cpu"] for r in rows} == {""}
    assert len({r["tid"] for r in rows}) >= 3  # main thread, its thread, its child
    assert json.loads((state / "state.json").read_text())["jobs"] == {}  # the end event


def test_job_not_in_the_task_list_is_left_alone(tmp_path, jobs):
    root = make_sysfs(tmp_path / "sys", **SMT_CORE)
    p, state = daemon(tmp_path, jobs, "mixed", "cpu:a,io:b", root)
    try:
        pc = jobs.start("0002-c")
        time.sleep(0.5)
        assert affinity_of_tree(pc.pid)[pc.pid] == {0}
    finally:
        code, err = stop(p)
    assert "job 0002-c: not in --tasks" in err


@pytest.mark.parametrize(
    "args, code, msg",
    [
        (["--policy", "spread", "--tasks", "cpu:a,io:b"], 4, "spread: not measurable here: one NUMA node"),
        (["--policy", "mixed", "--tasks", "cpu:a,io:b"], 4, "mixed: not measurable here: no SMT"),
        (["--policy", "mixed", "--tasks", ""], 2, "--tasks: '' (expected TYPE:NAME"),
        (["--policy", "mixed", "--tasks", "cpu:a,cpu:b"], 2, "2 cpu and 0 io tasks"),
    ],
)
def test_errors_before_anything_is_pinned(tmp_path, args, code, msg):
    root = make_sysfs(tmp_path / "sys", sockets=1, cores=2, threads=1)
    ev = tmp_path / "ev.jsonl"
    ev.touch()
    opts = manifest_options(job_events=ev, state_dir=tmp_path / "state", cpus="0-1")
    res = pin(*opts, "--sysfs-root", root, *args)
    assert res.returncode == code, res.stderr
    assert msg in res.stderr and res.stderr.count("\n") == 1
    # nothing pinned; the reason recorded for --check, which repeats it with the exit code
    st = json.loads((tmp_path / "state" / "state.json").read_text())
    assert st["status"] == ("not_measurable" if code == 4 else "error") and "jobs" not in st
    chk = pin("--check", tmp_path / "state")
    assert chk.returncode == (4 if code == 4 else 1) and msg in chk.stderr
    assert pin("--restore", tmp_path / "state").returncode == 0


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--interval-s", "0"], "--interval-s: '0' (expected seconds from 0.001 to 60)"),
        (["--sample-interval-s", "61"], "--sample-interval-s: '61' (expected seconds from 0.001 to 60)"),
        (["--policy", "cozy"], "--policy: invalid choice: 'cozy'"),
    ],
)
def test_bad_option_values_are_refused_before_anything(tmp_path, args, msg):
    ev = tmp_path / "ev.jsonl"
    ev.touch()
    res = pin(*manifest_options(job_events=ev, state_dir=tmp_path / "state", cpus="0-1"), *args)
    assert res.returncode == 2 and msg in res.stderr and res.stderr.count("\n") == 1, res.stderr
    assert not (tmp_path / "state").exists()


@pytest.mark.parametrize("option", ["--tasks", "--interval-s", "--sample-interval-s"])
def test_every_option_of_the_manifest_is_required(tmp_path, option):
    """pin.py has no default of its own for what the manifest sets: without one, it refuses."""
    argv = manifest_options(job_events=tmp_path / "ev", state_dir=tmp_path / "state", cpus="0-1")
    i = argv.index(option)
    res = pin(*argv[:i], *argv[i + 2 :])
    assert res.returncode == 2 and f"{option}: missing (expected a value: the manifest's)" in res.stderr, res.stderr
    assert not (tmp_path / "state").exists()


def test_this_machine_cannot_measure_numa(tmp_path):
    ev = tmp_path / "ev.jsonl"
    ev.touch()
    res = pin(
        *manifest_options(job_events=ev, state_dir=tmp_path / "s", cpus="0-1"),
        "--policy",
        "concentrate",
        "--tasks",
        "cpu:a,io:b",
    )
    if len(list(Path("/sys/devices/system/node").glob("node[0-9]*"))) > 1:
        pytest.skip("this machine has several NUMA nodes")
    assert res.returncode == 4 and "not measurable here: one NUMA node" in res.stderr


def corun_run(tmp_path, spec, out):
    """`corun run` of SPEC (written to TMP_PATH/spec.yaml) into OUT."""
    path = tmp_path / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    argv = [PY, "-m", "corun", "run", str(path), "--out", str(out)]
    return subprocess.run(argv, capture_output=True, text=True, timeout=120, cwd=ROOT, env=ENV)


@pytest.mark.root
def test_not_measurable_variant_in_a_run_says_why(tmp_path):
    """On a machine without SMT, a run with smt_mixed stops at start with the reason; the later
    workflow records such a point as a missing row."""
    if any(len(g) > 1 for g in __import__("corun.machine.placement_domains", fromlist=["x"]).read_domains("/").cores):
        pytest.skip("this machine has SMT")
    out = ROOT / "results" / "test-scratch" / f"placement-smt-{os.getpid()}"
    spec = {
        "name": "t-smt",
        "jobs": [{"name": "a", "cmd": ["sleep", "5"]}, {"name": "b", "cmd": ["sleep", "5"]}],
        "scheduler": {"name": "smt_mixed", "params": {"tasks": "cpu:a,io:b"}},
        "monitors": {"enabled": []},
    }
    try:
        res = corun_run(tmp_path, spec, out)
        assert res.returncode != 0
        assert "mixed: not measurable here: no SMT" in res.stderr, res.stderr
        assert not out.exists()
    finally:
        subprocess.run(["rm", "-rf", str(out), str(out) + ".incomplete"])


@pytest.mark.root
def test_cfs_variant_in_a_run(tmp_path):
    """corun run with the cfs variant: the daemon starts, verifies, records, stops."""
    out = ROOT / "results" / "test-scratch" / f"placement-{os.getpid()}"
    spec = {
        "name": "t-cfs",
        "jobs": [{"name": "spin", "cmd": [PY, "-c", "import time\nt=time.time()\nwhile time.time()-t<1: pass"]}],
        "scheduler": {"name": "cfs", "params": {"sample_interval_s": 0.1}},
        "monitors": {"enabled": []},
    }
    try:
        res = corun_run(tmp_path, spec, out)
        assert res.returncode == 0, res.stderr
        meta = json.loads((out / "metadata.json").read_text())
        assert meta["scheduler"]["name"] == "cfs" and meta["scheduler"]["verified_at_end"] is True
        rows = list(csv.DictReader(open(out / "sched" / "state" / "cpu_samples.csv")))
        assert rows and rows[0]["job"].endswith("-spin")
    finally:
        subprocess.run(["rm", "-rf", str(out)])

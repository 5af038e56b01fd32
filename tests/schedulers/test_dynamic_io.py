"""The dynamic I/O-aware scheduler daemon (schedulers/dynamic_io) and its variants.

Decision module against Procedure 4 on hand-made tables; parameter checks before anything is
touched; signals, PID reuse and the runner's death; kill -9 of the daemon in a run; each
variant end to end under `corun run`.
"""

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
import yaml

from corun.util import proc_starttime
from tests.run_process import start_run
from tests.schedulers.manifest_argv import command
from tests.schedulers.polling import wait_for

ROOT = Path(__file__).resolve().parents[2]
DIO = ROOT / "schedulers" / "dynamic_io"
PY = sys.executable


@pytest.fixture(scope="session")
def daemon():
    """The ASan/UBSan build (any memory error fails the test), and the normal build the
    manifests start."""
    subprocess.run(["make", "-s", "-C", str(DIO), "all", "asan"], check=True)
    return DIO / "build" / "asan" / "corun-dynamic-io"


def run_daemon(exe, *args, **kw):
    return subprocess.run([str(exe), *map(str, args)], capture_output=True, text=True, timeout=60, **kw)


# ---------------------------------------------------------------- Procedure 4 on tables


def decide(exe, tmp_path, text):
    f = tmp_path / "table.txt"
    f.write_text(text)
    res = run_daemon(exe, "--decide-table", f)
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    return [(a["job"], a["action"]) for a in out["actions"]], out


HEADER = "# name cmp state cur_mbps key_mbps held_s protect\n"

TABLES = [
    (
        "round robin over CMPs, highest first, stops at the bound",
        "bound 40\ncmp_share 0\nkeep_io_running 0\n"
        + HEADER
        + "a0 0 run 30 30 0 0\nb0 0 run 20 20 0 0\nc1 1 run 25 25 0 0\nd1 1 run 5 5 0 0\n",
        [("a0", "hold"), ("c1", "hold")],
    ),
    (
        "within a CMP the highest I/O goes first, whatever the submit order",
        "bound 10\ncmp_share 0\nkeep_io_running 0\n" + HEADER + "low 0 run 4 4 0 0\nhigh 0 run 9 9 0 0\n",
        [("high", "hold")],
    ),
    (
        "second round: the CMPs' next jobs",
        "bound 10\ncmp_share 0\nkeep_io_running 0\n"
        + HEADER
        + "a 0 run 20 20 0 0\nb 0 run 8 8 0 0\nc 1 run 15 15 0 0\nd 1 run 6 6 0 0\n",
        [("a", "hold"), ("c", "hold"), ("b", "hold")],
    ),
    (
        "cmp_share: only CMPs above bound/CMPs are candidates",
        "bound 30\ncmp_share 1\nkeep_io_running 0\n"
        + HEADER
        + "a 0 run 25 25 0 0\nb 0 run 20 20 0 0\nc 1 run 14 14 0 0\n",
        [("a", "hold"), ("b", "hold")],
    ),
    (
        "without cmp_share every CMP takes its turn",
        "bound 30\ncmp_share 0\nkeep_io_running 0\n"
        + HEADER
        + "a 0 run 25 25 0 0\nb 0 run 20 20 0 0\nc 1 run 14 14 0 0\n",
        [("a", "hold"), ("c", "hold")],
    ),
    (
        "jobs without I/O are never candidates",
        "bound 10\ncmp_share 0\nkeep_io_running 0\n" + HEADER + "idle 0 run 0 0 0 0\nio 0 run 50 50 0 0\n",
        [("io", "hold")],
    ),
    (
        "a protected job is not held",
        "bound 10\ncmp_share 0\nkeep_io_running 0\n" + HEADER + "p 0 run 50 50 0 1\nq 0 run 20 20 0 0\n",
        [("q", "hold")],
    ),
    (
        "at or below the bound: one held job per CMP resumes, highest rate first",
        "bound 40\ncmp_share 1\nkeep_io_running 0\n"
        + HEADER
        + "r 0 run 10 10 0 0\nh5 0 held 0 5 3 0\nh9 0 held 0 9 1 0\nk 1 held 0 2 1 0\nz 2 run 30 30 0 0\n",
        [("h9", "release"), ("k", "release")],
    ),
    (
        "exactly at the bound is not above it",
        "bound 40\ncmp_share 1\nkeep_io_running 0\n" + HEADER + "a 0 run 40 40 0 0\nh 0 held 0 3 1 0\n",
        [("h", "release")],
    ),
    (
        "fair: held too long is released first and others are held in its place",
        "bound 40\ncmp_share 0\nmax_held_s 5\nkeep_io_running 0\n"
        + HEADER
        + "old 0 held 0 30 6 0\nnew 0 held 0 30 1 0\na 0 run 25 25 0 0\nb 1 run 20 20 0 0\n",
        [("old", "force_release"), ("a", "hold"), ("b", "hold")],
    ),
    (
        "nothing to do: no I/O, nothing held",
        "bound 5\ncmp_share 1\nkeep_io_running 0\n" + HEADER + "a 0 run 0 0 0 0\n",
        [],
    ),
    (
        "the paper's loop holds every job when each is above the bound alone",
        "bound 8\ncmp_share 0\nkeep_io_running 0\n" + HEADER + "a 0 run 10 10 0 0\nb 1 run 9 9 0 0\n",
        [("a", "hold"), ("b", "hold")],
    ),
    (
        "keep_io_running 1: the last job doing I/O keeps running",
        "bound 8\ncmp_share 0\nkeep_io_running 1\n" + HEADER + "a 0 run 10 10 0 0\nb 1 run 9 9 0 0\n",
        [("a", "hold")],
    ),
    (
        "keep_io_running counts only jobs doing I/O, and those released by force",
        "bound 8\ncmp_share 0\nmax_held_s 5\nkeep_io_running 2\n"
        + HEADER
        + "idle 0 run 0 0 0 0\nold 1 held 0 6 6 0\na 0 run 10 10 0 0\nb 1 run 9 9 0 0\n",
        [("old", "force_release"), ("a", "hold")],
    ),
    (
        "keep_io_running: below the bound nothing changes",
        "bound 40\nkeep_io_running 1\ncmp_share 1\n" + HEADER + "a 0 run 10 10 0 0\nh 0 held 0 3 1 0\n",
        [("h", "release")],
    ),
]


@pytest.mark.parametrize("why,table,expected", TABLES, ids=[t[0] for t in TABLES])
def test_decision_module_follows_procedure_4(daemon, tmp_path, why, table, expected):
    actions, _ = decide(daemon, tmp_path, table)
    assert actions == expected, why


def test_overall_io_is_tracked(daemon, tmp_path):
    _, out = decide(daemon, tmp_path, TABLES[0][1])
    assert out["overall_before_mbps"] == 80 and out["overall_after_mbps"] == 25


def test_bad_table_names_the_line(daemon, tmp_path):
    f = tmp_path / "t.txt"
    f.write_text("bound 4\ncmp_share 1\nkeep_io_running 0\na 0 sleeping 1 1 0 0\n")
    res = run_daemon(daemon, "--decide-table", f)
    assert res.returncode == 2 and "t.txt:4:" in res.stderr


def test_a_table_states_every_parameter_of_the_manifest(daemon, tmp_path):
    """bound, cmp_share and keep_io_running have no default in the daemon: a table without one
    is refused, naming it."""
    f = tmp_path / "t.txt"
    f.write_text("bound 4\ncmp_share 1\na 0 run 1 1 0 0\n")
    res = run_daemon(daemon, "--decide-table", f)
    assert res.returncode == 2 and "t.txt: keep_io_running missing" in res.stderr, res.stderr


# ---------------------------------------------------------------- parameters first

# (variant whose start command the bad options are appended to, options, exit code, message)
BAD = [
    ("dynamic_io", ["--timeslice-s", "0.01"], 2, "--timeslice-s: '0.01' (expected a number >= 0.05"),
    ("dynamic_io", ["--timeslice-s", "61"], 2, "--timeslice-s: '61'"),
    ("dynamic_io", ["--io-bound-mbps", "0"], 2, "--io-bound-mbps: '0' (expected a number > 0"),
    ("dynamic_io", ["--io-bound-mbps", "fast"], 2, "--io-bound-mbps: 'fast'"),
    ("dynamic_io", ["--counter", "syscr"], 2, "--counter: 'syscr' (expected storage, read_bytes"),
    ("dynamic_io", ["--policy", "kill"], 2, "--policy: 'kill' (expected suspend or throttle)"),
    ("dynamic_io", ["--descendants", "maybe"], 2, "--descendants: 'maybe'"),
    ("dynamic_io", ["--max-suspend-s", "-1"], 2, "--max-suspend-s: '-1'"),
    ("dynamic_io", ["--psi-target", "1.5"], 2, "--psi-target: '1.5'"),
    ("dynamic_io_psi", ["--bound-min-mbps", "50", "--bound-max-mbps", "10"], 2, "--bound-min-mbps: '50' (expected <="),
    ("dynamic_io", ["--psi-file", "/proc/pressure/io"], 2, "--psi-target: missing (expected a value with --psi-file)"),
    ("dynamic_io", ["--policy", "throttle"], 2, "--cgroup: missing (expected a value with --policy throttle)"),
    ("dynamic_io", ["--device", "sda"], 2, "--device: 'sda' (expected MAJOR:MINOR"),
    ("dynamic_io_psi", ["--psi-file", "/nonexistent/pressure/io"], 4, "--psi-file: '/nonexistent/pressure/io'"),
    ("dynamic_io", ["--bogus"], 2, "bogus"),
]


@pytest.mark.parametrize("variant,args,code,msg", BAD, ids=[f"{b[0]} {' '.join(b[1])}" for b in BAD])
def test_bad_parameters_stop_it_before_anything(daemon, tmp_path, variant, args, code, msg):
    events = tmp_path / "events.jsonl"
    events.write_text("")
    state = tmp_path / "state"
    state.mkdir()
    argv = command(variant, exe=daemon, job_events=events, state_dir=state, cgroup="/none", device_majmin="8:0")
    res = run_daemon(*argv, *args)
    assert res.returncode == code, res.stderr
    assert msg in res.stderr and len(res.stderr.strip().splitlines()) == 1, res.stderr
    assert list(state.iterdir()) == []  # no log, no heartbeat: it never started


OPTIONS = ["--policy", "--timeslice-s", "--io-bound-mbps", "--counter", "--descendants", "--cmp-share"]


@pytest.mark.parametrize("option", [*OPTIONS, "--keep-io-running"])
def test_every_option_of_the_manifest_is_required(daemon, tmp_path, option):
    """The daemon has no default of its own for what the manifest sets: a start command
    without one of those options is refused, naming it."""
    (tmp_path / "ev").write_text("")
    argv = command("dynamic_io", exe=daemon, job_events=tmp_path / "ev", state_dir=tmp_path)
    i = argv.index(option)
    res = run_daemon(*argv[:i], *argv[i + 2 :])
    assert res.returncode == 2 and f"{option}: missing (expected a value: the manifest's)" in res.stderr, res.stderr
    assert list(tmp_path.iterdir()) == [tmp_path / "ev"]


def test_missing_inputs_are_usage_errors(daemon, tmp_path):
    res = run_daemon(daemon, "--state-dir", tmp_path)
    assert res.returncode == 2 and "--job-events: missing" in res.stderr
    argv = command("dynamic_io", exe=daemon, job_events=tmp_path / "nope", state_dir=tmp_path)
    res = run_daemon(*argv)
    assert res.returncode == 2 and "--job-events:" in res.stderr
    (tmp_path / "ev").write_text("")
    argv = command("dynamic_io", exe=daemon, job_events=tmp_path / "ev", state_dir=tmp_path / "nodir")
    res = run_daemon(*argv)
    assert res.returncode == 2 and "--state-dir:" in res.stderr


# ---------------------------------------------------------------- live: signals, PID reuse


def proc_state(pid):
    try:
        text = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return text[text.rfind(")") + 2]


@pytest.fixture
def io_job(disk_tmp):
    """A job doing storage reads for ever: a shell looping dd with O_DIRECT (a two-process
    job in its own process group, as the runner starts jobs)."""
    f = disk_tmp / "in.bin"
    f.write_bytes(os.urandom(4 << 20))
    procs = []

    def start():
        p = subprocess.Popen(
            ["sh", "-c", f"while :; do dd if={f} of=/dev/null bs=64k iflag=direct status=none; done"],
            start_new_session=True,
        )
        procs.append(p)
        return p

    yield start
    for p in procs:
        try:
            os.killpg(p.pid, signal.SIGCONT)
            os.killpg(p.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        p.wait()


def event(kind, job_id, pid, st, cmp=0):
    return (
        json.dumps(
            {
                "event": kind,
                "job_id": job_id,
                "pid": pid,
                "starttime": st,
                "cmp": cmp,
                "cpus": [0],
                "t_s": 0.0,
                "mono_s": time.monotonic(),
            }
        )
        + "\n"
    )


def group_stopped(pgid):
    pids = [int(p) for p in os.listdir("/proc") if p.isdigit()]
    states = []
    for p in pids:
        try:
            text = Path(f"/proc/{p}/stat").read_text()
        except OSError:
            continue
        fields = text[text.rfind(")") + 2 :].split()
        if int(fields[2]) == pgid:
            states.append(fields[0])
    return bool(states) and all(s == "T" for s in states), states


def quick_argv(exe, events, state):
    """dynamic_io's start command with a short quantum and a bound any reading job is over."""
    return command(
        "dynamic_io", {"timeslice_s": 0.1, "io_bound_mbps": 0.001}, exe=exe, job_events=events, state_dir=state
    )


def start_daemon(exe, events, state, *extra):
    return subprocess.Popen(
        [*quick_argv(exe, events, state), *map(str, extra)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


@pytest.mark.root
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT, signal.SIGHUP])
def test_signal_resumes_every_suspended_job(daemon, tmp_path, io_job, sig):
    job = io_job()
    events = tmp_path / "ev.jsonl"
    events.write_text(event("start", "j1", job.pid, proc_starttime(job.pid)))
    d = start_daemon(daemon, events, tmp_path)
    try:
        assert wait_for(lambda: group_stopped(job.pid)[0]), "the job was never suspended"
        d.send_signal(sig)
        assert d.wait(timeout=10) == 0, d.stderr.read()
        assert not group_stopped(job.pid)[0]
        assert all(s != "T" for s in group_stopped(job.pid)[1])
    finally:
        if d.poll() is None:
            d.kill()
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert summary["suspends"] >= 1 and summary["exit_reason"]
    notes = [json.loads(x) for x in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    assert any(a["action"] == "suspend" and a["job_id"] == "j1" for n in notes for a in n.get("actions", []))


@pytest.mark.root
def test_pid_reuse_is_never_signalled(daemon, tmp_path, io_job):
    """A job event whose start time is not the process's own names another process: refused,
    and that process is never stopped, though it does I/O above the bound."""
    job = io_job()
    events = tmp_path / "ev.jsonl"
    events.write_text(
        event("start", "reused", job.pid, proc_starttime(job.pid) + 1) + event("start", "gone", 4194303, 1)
    )
    d = start_daemon(daemon, events, tmp_path)
    try:
        time.sleep(1.0)  # ten quanta
        assert all(s != "T" for s in group_stopped(job.pid)[1])
    finally:
        d.terminate()
        d.wait(timeout=10)
    notes = [json.loads(x) for x in (tmp_path / "decisions.jsonl").read_text().splitlines()]
    refused = {n["job_id"]: n["reason"] for n in notes if n.get("note") == "refused"}
    assert "pid reused" in refused["reused"] and "gone" in refused["gone"]
    assert not any(n.get("actions") for n in notes)
    assert json.loads((tmp_path / "summary.json").read_text())["refused_jobs"] == 2


@pytest.mark.root
def test_job_end_event_and_exited_job_are_dropped(daemon, tmp_path, io_job):
    job = io_job()
    events = tmp_path / "ev.jsonl"
    events.write_text(event("start", "j1", job.pid, proc_starttime(job.pid)))
    d = start_daemon(daemon, events, tmp_path)
    try:
        assert wait_for(lambda: group_stopped(job.pid)[0])
        os.killpg(job.pid, signal.SIGKILL)
        job.wait()
        with open(events, "a") as fh:
            fh.write(event("end", "j1", job.pid, 0))
        time.sleep(0.5)
        assert d.poll() is None  # a vanished job is not an error
    finally:
        d.terminate()
        assert d.wait(timeout=10) == 0
    summary = json.loads((tmp_path / "summary.json").read_text())
    assert "j1" in summary["jobs"] and summary["jobs"]["j1"]["suspended_s"] > 0


@pytest.mark.root
def test_runner_death_resumes_jobs(daemon, tmp_path, io_job):
    """The daemon's parent (the runner) dies: PR_SET_PDEATHSIG ends the daemon, which resumes
    every job first."""
    job = io_job()
    events = tmp_path / "ev.jsonl"
    events.write_text(event("start", "j1", job.pid, proc_starttime(job.pid)))
    parent = subprocess.Popen(
        [
            PY,
            "-c",
            "import subprocess,sys,time; subprocess.Popen(sys.argv[1:]); time.sleep(60)",
            *quick_argv(daemon, events, tmp_path),
        ]
    )
    try:
        assert wait_for(lambda: group_stopped(job.pid)[0])
        parent.kill()
        parent.wait()
        assert wait_for(lambda: (tmp_path / "summary.json").exists(), timeout=5)
        assert all(s != "T" for s in group_stopped(job.pid)[1])
    finally:
        if parent.poll() is None:
            parent.kill()


def test_check_mode(daemon, tmp_path):
    res = run_daemon(daemon, "--check", tmp_path, "--max-age-s", "0.1")
    assert res.returncode == 1 and "no heartbeat" in res.stderr
    (tmp_path / "status.json").write_text(json.dumps({"pid": os.getpid(), "mono_s": time.monotonic() - 60}))
    res = run_daemon(daemon, "--check", tmp_path, "--timeslice-s", "1")
    assert res.returncode == 1 and "not in effect" in res.stderr
    (tmp_path / "status.json").write_text(json.dumps({"pid": os.getpid(), "mono_s": time.monotonic()}))
    assert run_daemon(daemon, "--check", tmp_path, "--timeslice-s", "1").returncode == 0
    res = run_daemon(daemon, "--check", tmp_path)  # the quantum is the manifest's: given, never assumed
    assert res.returncode == 2 and "--timeslice-s: missing" in res.stderr


def test_bench_mode_prints_figures(daemon):
    res = run_daemon(daemon, "--bench-decide", "256", "--rounds", "50")
    assert res.returncode == 0, res.stderr
    out = json.loads(res.stdout)
    assert out["jobs"] == 256 and out["max_us"] >= out["p50_us"] > 0


# ---------------------------------------------------------------- under corun run


def corun_spec(disk_tmp, variant, params, n_jobs=2, throttle=8_000_000, placement=None):
    files = []
    for i in range(n_jobs):
        f = disk_tmp / f"in{i}.bin"
        f.write_bytes(os.urandom(12 << 20))
        files.append(f)
    os.sync()
    spec = {
        "name": f"t-{variant}",
        "jobs": [
            {"name": f"r{i}", "cmd": ["dd", f"if={f}", "of=/dev/null", "bs=64k", "iflag=direct"]}
            for i, f in enumerate(files)
        ],
        "device": {"path": str(disk_tmp), "throttle": {"read_bps": throttle}},
        "scheduler": {"name": variant, "params": params},
        "monitors": {"enabled": []},
    }
    if placement:
        spec["placement"] = placement
    path = disk_tmp / "spec.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def corun_run(spec, out, **kw):
    """--out relative to the working folder, as a user types it (the daemon runs elsewhere)."""
    return subprocess.run(
        [PY, "-m", "corun", "run", str(spec), "--out", os.path.relpath(out, ROOT)],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=ROOT,
        **kw,
    )


def decisions(run):
    return [json.loads(x) for x in (run / "sched" / "state" / "decisions.jsonl").read_text().splitlines()]


def actions(run):
    return [a["action"] for n in decisions(run) for a in n.get("actions", [])]


@pytest.mark.root
def test_dynamic_io_run_end_to_end(daemon, disk_tmp):
    spec = corun_spec(disk_tmp, "dynamic_io", {"timeslice_s": 0.2, "io_bound_mbps": 5})
    res = corun_run(spec, disk_tmp / "run")
    assert res.returncode == 0, res.stderr
    run = disk_tmp / "run"
    meta = json.loads((run / "metadata.json").read_text())
    assert meta["scheduler"]["name"] == "dynamic_io" and meta["scheduler"]["params"]["io_bound_mbps"] == 5
    assert meta["scheduler"]["verified_at_end"] is True
    acts = actions(run)
    assert "suspend" in acts and "resume" in acts
    summary = json.loads((run / "sched" / "state" / "summary.json").read_text())
    assert summary["suspends"] == acts.count("suspend") and len(summary["jobs"]) == 2
    qs = [n for n in decisions(run) if "q" in n]
    assert all(n["t_s"] is None or n["t_s"] >= 0 for n in qs)


@pytest.mark.root
def test_fair_variant_bounds_suspension(daemon, disk_tmp):
    """Three jobs on one CMP: Procedure 4 resumes the held job with the highest rate, which is
    the one just suspended alone at the full cap, so the other two starve; the fair variant
    resumes them after max_suspend_s."""
    one_cmp = {"cmp": {"grouping": "cores", "cores_per_cmp": os.cpu_count()}, "slots_per_core": 3}
    spec = corun_spec(
        disk_tmp,
        "dynamic_io_fair",
        {"timeslice_s": 0.1, "io_bound_mbps": 3, "max_suspend_s": 0.5},
        n_jobs=3,
        placement=one_cmp,
    )
    res = corun_run(spec, disk_tmp / "run")
    assert res.returncode == 0, res.stderr
    summary = json.loads((disk_tmp / "run" / "sched" / "state" / "summary.json").read_text())
    assert summary["forced_resumes"] >= 1
    assert "force_resume" in actions(disk_tmp / "run")
    # never held much beyond the bound (a quantum of slack)
    assert max(j["max_suspended_s"] for j in summary["jobs"].values()) <= 0.5 + 0.15


@pytest.mark.root
def test_psi_variant_adapts_the_bound(daemon, disk_tmp):
    if not Path("/proc/pressure/io").exists():
        pytest.skip("no PSI on this kernel")
    spec = corun_spec(disk_tmp, "dynamic_io_psi", {"timeslice_s": 0.2, "io_bound_mbps": 100, "psi_target": 0.05})
    res = corun_run(spec, disk_tmp / "run")
    assert res.returncode == 0, res.stderr
    qs = [n for n in decisions(disk_tmp / "run") if "q" in n]
    bounds = [n["bound_mbps"] for n in qs]
    assert min(bounds) < 100  # throttled reads stall: the bound came down from the initial 100
    assert any(n["psi_some"] is not None for n in qs)


@pytest.mark.root
def test_throttle_variant_keeps_the_shared_cap(daemon, disk_tmp):
    cap = 8_000_000
    spec = corun_spec(
        disk_tmp, "cgroup_io_throttle", {"timeslice_s": 0.2, "io_bound_mbps": 3, "cmp_share": False}, throttle=cap
    )
    res = corun_run(spec, disk_tmp / "run")
    assert res.returncode == 0, res.stderr
    run = disk_tmp / "run"
    acts = actions(run)
    assert "throttle" in acts and "suspend" not in acts
    limits = [a["limit_mbps"] for n in decisions(run) for a in n.get("actions", []) if a["action"] == "throttle"]
    assert all(1.0 <= x <= cap / 1e6 for x in limits)
    meta = json.loads((run / "metadata.json").read_text())
    assert not Path(meta["throttle"]["path"]).exists()  # the run's group and its job groups are gone
    total_s = max(float(r.split(",")[10]) for r in (run / "jobs.csv").read_text().splitlines()[1:])
    # 24 MiB through an 8 MB/s cap takes >= 3.1 s whatever the split
    assert total_s >= 2 * 12 * (1 << 20) / cap * 0.95


@pytest.mark.root
def test_kill_9_of_the_daemon_leaves_no_job_stopped(daemon, disk_tmp):
    timeslice = 1.0
    spec = corun_spec(
        disk_tmp, "dynamic_io", {"timeslice_s": timeslice, "io_bound_mbps": 0.5, "cmp_share": False}, throttle=2_000_000
    )
    out = disk_tmp / "run"
    runner = start_run(spec, out)
    inc = disk_tmp / "run.incomplete"
    try:

        def stopped_jobs():
            ev = inc / "sched" / "job_events.jsonl"
            if not ev.exists():
                return []
            pids = [json.loads(x)["pid"] for x in ev.read_text().splitlines() if '"start"' in x]
            return [p for p in pids if proc_state(p) == "T"]

        assert wait_for(stopped_jobs, timeout=30), "no job was suspended"
        status = json.loads((inc / "sched" / "state" / "status.json").read_text())
        t_kill = time.monotonic()
        os.kill(status["pid"], signal.SIGKILL)
        assert wait_for(lambda: not stopped_jobs(), timeout=5, step=0.01)
        assert time.monotonic() - t_kill <= timeslice
        rc = runner.wait(timeout=60)
        err = runner.stderr.read()
    finally:
        if runner.poll() is None:
            runner.kill()
    assert rc != 0 and "daemon exited" in err
    assert not out.exists()  # not a finished run; the partial data stays in run.incomplete
    ev = (inc / "sched" / "job_events.jsonl").read_text().splitlines()
    assert all(proc_state(json.loads(x)["pid"]) is None for x in ev)  # no job left behind

"""corun.machine.foreign_cpu and the runner: the CPU time of processes that are not a run's own,
recorded per run (metadata.json machine_cpu) and acted on like steal (remeasure.max_foreign_pct).

The real runs share this machine with whatever else runs on it, so they check what a known load
adds (a busy loop outside the run at a set duty cycle) with tolerances, never an exact total."""

import json
import os
import subprocess
import sys
import time

import pytest
import yaml

from corun.config import validate
from corun.errors import ConfigError
from corun.machine import foreign_cpu as fc
from corun.run import runner

NCPU = os.cpu_count() or 1
HZ = os.sysconf("SC_CLK_TCK")

# a loop busy for DUTY of every 50 ms of its own CPU time, asleep for the rest (argv: duty)
BUSY = """
import sys, time
duty = float(sys.argv[1])
while True:
    t = time.process_time()
    while time.process_time() - t < 0.05 * duty:
        pass
    time.sleep(0.05 * (1 - duty))
"""


def _proc(ppid, ticks, start=1, comm="x", kthread=False):
    return fc.Proc(ppid=ppid, comm=comm, starttime=start, cpu_ticks=ticks, kthread=kthread)


def _machine(user, system, idle):
    return {"user": user, "nice": 0, "system": system, "idle": idle, "iowait": 0, "irq": 0, "softirq": 0, "steal": 0}


def test_each_process_is_the_runs_own_corun_the_orchestrator_kernel_or_other():
    """Runner 10 (its parent 9, a shell of Snakemake 8), its monitor 11, the variant's daemon 12;
    a kernel thread 3; another user's process 20; jobs reaped by the runner: 300 ticks."""
    before = fc.Snapshot(
        machine=_machine(0, 0, 0),
        procs={
            8: _proc(1, 0, comm="snakemake"),
            9: _proc(8, 0, comm="sh"),
            10: _proc(9, 0, comm="python"),
            11: _proc(10, 0, comm="iostat"),
            12: _proc(10, 0, comm="daemon"),
            3: _proc(2, 0, comm="kworker", kthread=True),
            20: _proc(1, 100, comm="pytest"),
        },
        children_ticks=50,
    )
    after = fc.Snapshot(
        machine=_machine(560, 100, 340),  # 1000 ticks: 660 of process time
        procs={
            8: _proc(1, 20, comm="snakemake"),
            9: _proc(8, 0, comm="sh"),
            10: _proc(9, 30, comm="python"),
            11: _proc(10, 10, comm="iostat"),
            12: _proc(10, 40, comm="daemon"),
            3: _proc(2, 60, comm="kworker", kthread=True),
            20: _proc(1, 250, comm="pytest"),
            21: _proc(1, 5, start=99, comm="new"),  # started in between: all its time counts
        },
        children_ticks=350,
    )
    s = fc.shares(before, after, runner=10, monitors=[11])
    assert s["own_pct"] == 34.0  # jobs 300 + daemon 40
    assert s["kernel_pct"] == 6.0
    assert s["corun_pct"] == 4.0  # runner 30 + monitor 10
    assert s["orchestrator_pct"] == 2.0  # snakemake 20, its shell 0
    # 660 - 340 - 60 = 260: corun 40, orchestrator 20, other 200 (150 + 5 seen, 45 short-lived)
    assert s["foreign_pct"] == 26.0 and s["other_pct"] == 20.0
    assert [(t["pid"], t["kind"]) for t in s["foreign_top"]] == [
        (20, "other"),
        (10, "corun"),
        (8, "orchestrator"),
        (11, "corun"),
        (21, "other"),
    ]


def test_no_stat_line_says_why():
    s = fc.shares(fc.Snapshot(machine=None), fc.Snapshot(machine=None))
    assert s["foreign_pct"] is None and "no cpu line" in s["foreign_reason"]


def test_the_limit_is_the_specs_section_and_the_command_line_wins():
    base = {"name": "s", "jobs": [{"name": "j", "cmd": ["/bin/true"]}]}
    assert runner.foreign_limit(validate(base, "run_spec", "s")) is None
    spec = validate({**base, "remeasure": {"max_foreign_pct": 2}}, "run_spec", "s")
    assert runner.foreign_limit(spec) == 2 and runner.foreign_limit(spec, 7.5) == 7.5
    with pytest.raises(ConfigError) as err:
        runner.foreign_limit(spec, 120)
    assert str(err.value).startswith("command line: --max-foreign-pct: 120 (expected a number from 0 to 100")


def _spec(tmp, name, job_cmd, remeasure=None):
    spec = {
        "name": name,
        **({"remeasure": remeasure} if remeasure else {}),
        "jobs": [{"name": "j", "cmd": job_cmd}],
        "device": {"path": str(tmp)},
        "monitors": {"enabled": []},
    }
    path = tmp / f"{name}.yaml"
    path.write_text(yaml.safe_dump(spec))
    return path


def _ticks(pid):
    f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    return int(f[11]) + int(f[12])


@pytest.fixture
def busy():
    """Start a busy loop that is no descendant of this process (the runner, in these tests):
    its shell exits at once, so the loop's parent is init."""
    pids = []

    def start(duty):
        res = subprocess.run(
            ["sh", "-c", f'"{sys.executable}" -c "$0" {duty} >/dev/null 2>&1 & echo $!', BUSY],
            capture_output=True,
            text=True,
            check=True,
        )
        pid = int(res.stdout.split()[0])
        pids.append(pid)
        time.sleep(0.3)  # past the interpreter's start
        return pid

    yield start
    for pid in pids:
        try:
            os.kill(pid, 9)
        except ProcessLookupError:
            pass


@pytest.mark.root
def test_a_busy_loop_outside_the_run_is_recorded_and_the_jobs_are_not(disk_tmp, busy):
    """A loop at 20 % of one CPU outside the run: the run records it among the foreign processes
    at what it really used (read from its /proc/<pid>/stat around the run), within the foreign
    share; the job's own 1 s of CPU is the run's own, not foreign."""
    loop = busy(0.2)
    job = [sys.executable, "-c", "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass"]
    t0, mono0 = _ticks(loop), time.monotonic()
    out = runner.run_spec_file(_spec(disk_tmp, "known", job), disk_tmp / "run", progress=False)
    used = (_ticks(loop) - t0) / HZ / (time.monotonic() - mono0)  # share of one CPU, around the run
    cpu = json.loads((out / "metadata.json").read_text())["machine_cpu"]
    window = cpu["interval_s"]
    if used < 0.03:
        pytest.skip(f"the loop got {used:.2f} of a CPU: the machine is too loaded to see it")
    expect = 100 * used / NCPU  # % of the machine
    assert cpu["foreign_pct"] >= 0.6 * expect and cpu["other_pct"] >= 0.6 * expect, (cpu, expect)
    # named among the largest foreign processes unless others outgrew it (a loaded machine)
    mine = [t for t in cpu["foreign_top"] if t["pid"] == loop]
    if mine or min(t["pct"] for t in cpu["foreign_top"]) < 0.6 * expect:
        assert mine and mine[0]["kind"] == "other", cpu["foreign_top"]
        assert 0.6 * expect <= mine[0]["pct"] <= 1.6 * expect + 1, (mine, expect)
    # the job's 1 s of CPU over the window, in % of the machine
    assert cpu["own_pct"] >= 0.7 * 100 * 1.0 / (window * NCPU), cpu
    assert cpu["corun_pct"] is not None and cpu["orchestrator_pct"] is not None


@pytest.mark.root
def test_a_run_above_the_foreign_limit_is_measured_again_and_its_attempts_kept(disk_tmp, busy):
    busy(0.5)  # half a CPU: far above a 1 % limit on any machine
    job = [sys.executable, "-c", "import time; time.sleep(1.0)"]
    spec = _spec(disk_tmp, "foreign", job, remeasure={"max_foreign_pct": 1, "attempts": 2})
    out = runner.run_spec_file(spec, disk_tmp / "run", progress=False)
    meta = json.loads((out / "metadata.json").read_text())
    rm = meta["remeasured"]
    assert rm["max_foreign_pct"] == 1 and rm["max_steal_pct"] is None and rm["attempt"] == 2
    (e,) = rm["earlier"]
    assert e["foreign_pct"] > 1
    kept = json.loads((out / e["folder"] / "metadata.json").read_text())
    assert kept["run_id"] == e["run_id"] and kept["machine_cpu"]["foreign_pct"] == e["foreign_pct"]
    assert meta["machine_cpu"]["foreign_pct"] > 1  # the last attempt is kept whatever its share
    assert not list(disk_tmp.glob("run.*"))


def test_the_limit_acts_on_what_is_foreign_to_corun_not_on_its_runner_and_monitors():
    cpu = {"steal_pct": 0.5, "foreign_pct": 3.0, "corun_pct": 1.5}
    assert runner._disturbed(cpu, 5, 2) == []  # 3.0 - 1.5 = 1.5 % beyond corun's own
    (why,) = runner._disturbed({**cpu, "foreign_pct": 4.0}, 5, 2)
    assert why.startswith("2.5 % of the machine's CPU time went to processes not of the run nor corun (limit 2 %)")
    assert len(runner._disturbed({**cpu, "steal_pct": 9.0, "foreign_pct": 9.0}, 5, 2)) == 2
    assert runner._disturbed({"steal_pct": None, "foreign_pct": None}, 5, 2) == []


def test_the_report_shows_foreign_cpu_beside_steal(tmp_path):
    from analysis import report, runmeta

    path = tmp_path / "metadata.json"
    cpu = {"steal_pct": 1.0, "foreign_pct": 3.25, "corun_pct": 0.5, "orchestrator_pct": 0.1}
    path.write_text(json.dumps({"run_id": "r1", "machine_cpu": cpu}))
    row = runmeta.summarize_metadata(path)
    assert row["foreign_pct"] == 3.25 and row["corun_pct"] == 0.5
    runs = [row, {**row, "run_id": "r2", "foreign_pct": 1.25, "corun_pct": 0.25}]
    (g,) = report._grouped_runs(runs)
    assert sorted(g["foreigns"]) == [1.25, 3.25]
    note = report.foreign_note(runs)
    assert "median 2.2 %, at most 3.2 %, over 2 runs" in note and "corun's runner and monitors: median 0.4 %" in note
    assert report.foreign_note([{"foreign_pct": None}]) is None


def test_the_runs_hosts_on_this_machine_are_its_own():
    """A netns host (namespace 777): its sshd 30 runs throughout; session 31 was there at the
    first snapshot and ended (sshd waited for it); a rank started and ended in between, reaped
    by the session. None is below the runner (10) nor in its cgroup: without the host's
    namespace all of it is foreign, with it all of it is the run's own (hosts)."""

    def p(ppid, ticks, child=0, start=1, comm="x", netns=777):
        return fc.Proc(
            ppid=ppid, comm=comm, starttime=start, cpu_ticks=ticks, kthread=False, child_ticks=child, netns=netns
        )

    before = fc.Snapshot(
        machine=_machine(0, 0, 0),
        procs={10: p(1, 0, netns=1), 30: p(1, 5, comm="sshd"), 31: p(30, 10, comm="sshd")},
    )
    after = fc.Snapshot(
        machine=_machine(300, 0, 700),  # 1000 ticks: 300 of process time
        # session 31 ended with 40 of its own and a rank's 250: sshd's cutime holds 290
        procs={10: p(1, 0, netns=1), 30: p(1, 5, child=290, comm="sshd")},
    )
    alone = fc.shares(before, after, runner=10)
    assert alone["foreign_pct"] == 30.0 and alone["hosts_pct"] is None
    hosts = fc.shares(before, after, runner=10, host_netns={777})
    # 290 of the session and rank, less the session's 10 before the window: 280 of the host's
    assert hosts["hosts_pct"] == 28.0 and hosts["own_pct"] == 28.0
    assert hosts["foreign_pct"] == 2.0 and [t["pid"] for t in hosts["foreign_top"]] == []


@pytest.mark.root
def test_a_busy_process_in_a_hosts_namespace_is_the_runs_own(tmp_path):
    """A real network namespace (as scripts/netns-cluster makes a host): a shell in it runs a
    1 s busy loop that starts after the first snapshot and ends before the second (as a rank
    does); its CPU is foreign unless the namespace is the run's host's."""
    name = f"corunfc{os.getpid()}"
    if subprocess.run(["ip", "netns", "add", name], capture_output=True).returncode != 0:
        pytest.skip("no network namespaces here")
    shell = None
    try:
        (ns,) = fc.host_namespaces([name, "no-such-host"])
        loop = "import time\nt = time.process_time()\nwhile time.process_time() - t < 1.0: pass"
        shell = subprocess.Popen(
            ["ip", "netns", "exec", name, "sh", "-c", f'sleep 0.5; "{sys.executable}" -c "$0"; sleep 60', loop],
            start_new_session=True,
        )
        before = fc.snapshot()
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:  # the loop has ended once the shell's cutime holds it
            time.sleep(0.2)
            sh = fc.processes().get(shell.pid)
            if sh is not None and sh.child_ticks >= 0.9 * HZ:
                break
        after = fc.snapshot(end=True)
        assert after.procs[shell.pid].netns == ns
        runner = 999999  # a runner none of these descends from, as the hosts' processes are not
        other = fc.shares(before, after, runner=runner)
        mine = fc.shares(before, after, runner=runner, host_netns={ns})
        total = sum(after.machine[k] - before.machine[k] for k in after.machine if k in before.machine)
        loop_pct = 100 * 0.9 * HZ / total
        assert mine["hosts_pct"] >= loop_pct, (mine, loop_pct)
        assert other["foreign_pct"] - mine["foreign_pct"] >= loop_pct, (other, mine)
    finally:
        if shell is not None:
            os.killpg(shell.pid, 9)
            shell.wait()
        subprocess.run(["ip", "netns", "del", name], capture_output=True)

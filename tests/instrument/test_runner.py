"""The runner end to end on this machine: records, caps, variants, and clean teardown."""

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

from corun.machine import block_device as devmod
from corun.machine.cgroup import CGROUP_ROOT
from tests.run_process import start_run

pytestmark = pytest.mark.root

PY = sys.executable


def corun(*args, check=False, **kw):
    return subprocess.run([PY, "-m", "corun", *args], capture_output=True, text=True, check=check, **kw)


def write_spec(path: Path, spec: dict) -> Path:
    path.write_text(yaml.safe_dump(spec))
    return path


def rows(run: Path):
    return list(csv.DictReader(open(run / "jobs.csv")))


def make_file(path: Path, mib: float) -> Path:
    with open(path, "wb") as fh:
        fh.write(os.urandom(int(mib * (1 << 20))))
        os.fsync(fh.fileno())
    return path


def kernel_cmd(kernels, f, nops=0):
    return [str(kernels / "sensitivity_ranking"), "--file", str(f), "--block-size", "65536", "--nops", str(nops)]


def test_run_records_every_job(disk_tmp, kernels_built):
    f = make_file(disk_tmp / "d.bin", 2)
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "rec",
            "labels": {"experiment": "t", "k": 2},
            "jobs": [
                {
                    "name": "k",
                    "cmd": kernel_cmd(kernels_built, f),
                    "repeat": 3,
                    "result": "json",
                    "labels": {"kind": "reader"},
                }
            ],
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": ["psi"]},
        },
    )
    out = disk_tmp / "run"
    res = corun("run", str(spec), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert "3/3 jobs done" in res.stderr  # progress for a person watching
    assert not (disk_tmp / "run.incomplete").exists()
    r = rows(out)
    assert [x["job_id"] for x in r] == ["0000-k-0", "0001-k-1", "0002-k-2"]
    for x in r:
        assert x["exit_code"] == "0" and float(x["runtime_s"]) > 0
        assert x["result_check"] == "ok" and int(x["result_bytes_read"]) == 2 << 20
        assert int(x["io_rchar"]) >= 2 << 20  # /proc/<pid>/io read before reaping
        assert float(x["cpu_s"]) >= 0 and x["cmp"] != "" and x["cpus"] != ""
        assert x["label_experiment"] == "t" and x["label_kind"] == "reader"
    meta = json.loads((out / "metadata.json").read_text())
    for key in (
        "git_describe",
        "host",
        "topology",
        "device",
        "scheduler",
        "tools",
        "advice",
        "start_epoch_s",
        "end_epoch_s",
        "missing",
        "spec",
    ):
        assert key in meta, key
    assert meta["host"]["kernel_release"] == os.uname().release
    assert meta["scheduler"]["name"] == "linux" and meta["scheduler"]["verified"]
    assert meta["device"]["name"] == devmod.device_of(disk_tmp).name
    assert (out / "tidy" / "psi.csv").exists()


def test_fcfs_at_most_one_job_per_core(disk_tmp):
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "fcfs",
            "jobs": [{"name": "s", "cmd": ["sleep", "0.3"], "repeat": 5}],
            "placement": {"cmp": {"grouping": "cores", "cores_per_cmp": 1}},
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    assert corun("run", str(spec), "--out", str(out)).returncode == 0
    r = rows(out)
    starts = [float(x["start_s"]) for x in r]
    assert starts == sorted(starts)  # submit order
    ncpu = len(os.sched_getaffinity(0))
    for x in r:  # never more jobs running than cores
        t = float(x["start_s"]) + 0.01
        running = [y for y in r if float(y["start_s"]) <= t < float(y["end_s"])]
        assert len(running) <= ncpu
        assert len(x["cpus"].split(",")) == 1


def test_single_cmp_run_uses_only_that_cmp(disk_tmp):
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "one",
            "jobs": [{"name": "s", "cmd": ["true"], "repeat": 3}],
            "placement": {"use_cmps": [0]},
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    assert corun("run", str(spec), "--out", str(out)).returncode == 0
    assert {x["cmp"] for x in rows(out)} == {"0"}


def test_throttle_is_shared_in_effect_and_removed(disk_tmp, kernels_built):
    f1, f2 = make_file(disk_tmp / "a.bin", 4), make_file(disk_tmp / "b.bin", 4)
    cap = 4_000_000
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "cap",
            "jobs": [
                {"name": "a", "cmd": kernel_cmd(kernels_built, f1), "result": "json"},
                {"name": "b", "cmd": kernel_cmd(kernels_built, f2), "result": "json"},
            ],
            "device": {"path": str(disk_tmp), "throttle": {"read_bps": cap}},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    res = corun("run", str(spec), "--out", str(out))
    assert res.returncode == 0, res.stderr
    r = rows(out)
    total = sum(int(x["result_bytes_read"]) for x in r)
    span = max(float(x["end_s"]) for x in r) - min(float(x["start_s"]) for x in r)
    # 8 MiB through a shared 4 MB/s cap: about 2 s (the throttle allows a small burst)
    assert total / span < cap * 1.35, (total, span)
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["throttle"]["read_bps"] == cap and meta["throttle"]["limits"]["read_bps"] == cap
    leftover = list((CGROUP_ROOT / "blkio" / "corun").glob("cap-*"))
    assert leftover == []


def elevators():
    import tempfile

    dev = devmod.device_of(Path(tempfile.gettempdir()))
    return dev, devmod.available_elevators(dev)


def test_elevator_variant_in_effect_during_run_and_restored(disk_tmp):
    dev = devmod.device_of(disk_tmp)
    avail = devmod.available_elevators(dev)
    before = devmod.current_elevator(dev)
    target = next((e for e in ("bfq", "kyber", "none", "mq-deadline") if e in avail and e != before), None)
    if target is None:
        pytest.skip("only one elevator available on this device")
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "elev",
            "jobs": [{"name": "c", "cmd": ["cat", f"/sys/block/{dev.name}/queue/scheduler"]}],
            "scheduler": {"name": "elevator_" + target.replace("-", "_")},
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    res = corun("run", str(spec), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert f"[{target}]" in (out / "jobs" / "0000-c.out").read_text()
    assert devmod.current_elevator(dev) == before
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["device"]["elevator"] == target and meta["device_after"]["elevator"] == before


def test_a_variant_applied_by_the_controller_is_recorded_not_applied(disk_tmp):
    """scheduler.applied_by controller: the testbed's controller applies the variant on other
    hosts around the run (corun.testbed.server_parts); the run leaves the machine as it is and
    records the variant, unverified until the controller says so."""
    dev = devmod.device_of(disk_tmp)
    before = devmod.current_elevator(dev)
    target = next((e for e in devmod.available_elevators(dev) if e != before), None)
    if target is None:
        pytest.skip("only one elevator available on this device")
    name = "elevator_" + target.replace("-", "_")
    spec = {
        "name": "elev",
        "jobs": [{"name": "c", "cmd": ["cat", f"/sys/block/{dev.name}/queue/scheduler"]}],
        "scheduler": {"name": name, "applied_by": "controller"},
        "device": {"path": str(disk_tmp)},
        "monitors": {"enabled": []},
    }
    out = disk_tmp / "run"
    res = corun("run", str(write_spec(disk_tmp / "s.yaml", spec)), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert f"[{before}]" in (out / "jobs" / "0000-c.out").read_text()  # not applied here
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["scheduler"]["name"] == name and meta["scheduler"]["applied_by"] == "controller"
    assert meta["scheduler"]["verified"] is False and meta["scheduler"]["verified_at_end"] is None
    assert "variant_verified_at_start" not in meta and "variant_verified_at_end" not in meta
    # a variant whose daemon runs beside the jobs can only be started by the run
    spec["scheduler"] = {"name": "dynamic_io", "applied_by": "controller"}
    res = corun("run", str(write_spec(disk_tmp / "d.yaml", spec)), "--out", str(disk_tmp / "run2"))
    assert res.returncode == 2 and res.stderr.count("\n") == 1, res.stderr
    assert "scheduler.applied_by: 'controller' (expected run: dynamic_io runs a daemon beside the jobs" in res.stderr
    assert not (disk_tmp / "run2").exists()


def wait_for(pred, timeout=10.0):
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        v = pred()
        if v:
            return v
        time.sleep(0.05)
    raise AssertionError("timed out")


def started_jobs(tmp_run: Path, n: int):
    ev = tmp_run / "sched" / "job_events.jsonl"

    def ready():
        if not ev.exists():
            return None
        lines = [json.loads(x) for x in ev.read_text().splitlines() if x.strip()]
        starts = [x for x in lines if x["event"] == "start"]
        return starts if len(starts) >= n else None

    return wait_for(ready)


def alive(pid, starttime):
    from corun.util import proc_starttime

    return proc_starttime(pid) == starttime


def processes_in(folder: Path) -> list[int]:
    """Processes whose working directory is inside `folder` (monitors run in the run folder)."""
    out = []
    for d in Path("/proc").iterdir():
        if d.name.isdigit():
            try:
                if str(Path(os.readlink(d / "cwd"))).startswith(str(folder)):
                    out.append(int(d.name))
            except OSError:
                pass
    return out


def interrupted_run(disk_tmp, scheduler):
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "intr",
            "jobs": [{"name": "s", "cmd": ["sh", "-c", "sleep 60 & sleep 60"], "repeat": 2}],
            "scheduler": {"name": scheduler},
            "device": {"path": str(disk_tmp), "throttle": {"read_bps": 1_000_000}},
        },
    )
    out = disk_tmp / "run"
    proc = start_run(spec, out)
    starts = started_jobs(disk_tmp / "run.incomplete", 2)
    return proc, out, starts


def other_elevator(dev):
    before = devmod.current_elevator(dev)
    avail = devmod.available_elevators(dev)
    target = next((e for e in ("bfq", "kyber", "none", "mq-deadline") if e in avail and e != before), before)
    return before, "elevator_" + target.replace("-", "_"), target


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_leaves_no_job_cap_or_elevator(disk_tmp, sig):
    dev = devmod.device_of(disk_tmp)
    before, variant, target = other_elevator(dev)
    proc, out, starts = interrupted_run(disk_tmp, variant)
    assert devmod.current_elevator(dev) == target
    os.kill(starts[0]["pid"], signal.SIGSTOP)  # a stopped job must not survive either
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=30)
    assert proc.returncode == 130, err
    assert "partial data" in err.strip().splitlines()[-1]
    for s in starts:
        assert not alive(s["pid"], s["starttime"])
    assert devmod.current_elevator(dev) == before
    assert not out.exists()  # never looks finished
    status = json.loads((disk_tmp / "run.incomplete" / "status.json").read_text())
    assert status["state"] == "interrupted"
    assert not (disk_tmp / "run.incomplete" / "metadata.json").exists()
    assert not list((CGROUP_ROOT / "blkio" / "corun").glob("intr-*"))


def test_killed_runner_is_recovered_by_next_command(disk_tmp):
    dev = devmod.device_of(disk_tmp)
    before, variant, target = other_elevator(dev)
    proc, out, starts = interrupted_run(disk_tmp, variant)
    proc.kill()
    proc.wait()
    assert any(alive(s["pid"], s["starttime"]) for s in starts)  # orphans until recovery
    res = corun("recover")
    assert res.returncode == 0 and "recovered run intr-" in res.stdout, res.stdout + res.stderr
    wait_for(lambda: not any(alive(s["pid"], s["starttime"]) for s in starts))
    wait_for(lambda: not processes_in(disk_tmp))  # the monitors (iostat, pidstat, perf) too
    assert devmod.current_elevator(dev) == before
    assert not list((CGROUP_ROOT / "blkio" / "corun").glob("intr-*"))
    assert not out.exists()


def test_failed_job_fails_the_run_but_keeps_its_record(disk_tmp):
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "fail",
            "jobs": [{"name": "f", "cmd": ["sh", "-c", "echo boom >&2; exit 3"]}],
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    res = corun("run", str(spec), "--out", str(out))
    assert res.returncode == 1 and "1 job(s) failed" in res.stderr
    assert rows(out)[0]["exit_code"] == "3"
    assert json.loads((out / "metadata.json").read_text())["status"] == "jobs_failed"
    res = corun("run", str(spec), "--out", str(disk_tmp / "run2"), "--allow-job-failures")
    assert res.returncode == 0


def test_already_measured_is_never_overwritten(disk_tmp):
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "twice",
            "jobs": [{"name": "t", "cmd": ["true"]}],
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    assert corun("run", str(spec), "--out", str(out)).returncode == 0
    before = (out / "metadata.json").read_bytes()
    res = corun("run", str(spec), "--out", str(out))
    assert res.returncode == 1 and "already measured" in res.stderr
    assert (out / "metadata.json").read_bytes() == before


def test_job_timeout(disk_tmp):
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "to",
            "jobs": [{"name": "t", "cmd": ["sleep", "30"], "timeout_s": 0.5}],
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    t = time.monotonic()
    res = corun("run", str(spec), "--out", str(out), "--allow-job-failures")
    assert res.returncode == 0 and time.monotonic() - t < 10
    r = rows(out)[0]
    assert r["timed_out"] == "True" and r["signal"] == "9"


def test_memory_cap_shared_by_the_jobs_and_removed(disk_tmp):
    limit = 64 << 20
    show = "cat /sys/fs/cgroup/memory$(grep ':memory:' /proc/self/cgroup | cut -d: -f3)/memory.limit_in_bytes"
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "memcap",
            "jobs": [{"name": "m", "cmd": ["sh", "-c", show]}],
            "memory": {"limit_bytes": limit},
            "device": {"path": str(disk_tmp), "drop_caches": True},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    res = corun("run", str(spec), "--out", str(out))
    assert res.returncode == 0, res.stderr
    assert int((out / "jobs" / "0000-m.out").read_text()) == limit
    meta = json.loads((out / "metadata.json").read_text())
    assert meta["memory_cap"]["limit_bytes"] == limit and meta["caches_dropped"] is True
    assert not list((CGROUP_ROOT / "memory" / "corun").glob("memcap-*"))


def test_run_records_what_the_machines_cpus_did_while_the_jobs_ran(disk_tmp):
    # one job keeps one CPU busy for about a second: the run's share of busy time shows it
    spin = "import time\nt = time.monotonic()\nwhile time.monotonic() - t < 1.0: pass"
    spec = write_spec(
        disk_tmp / "s.yaml",
        {
            "name": "cpu",
            "jobs": [{"name": "spin", "cmd": [PY, "-c", spin]}],
            "device": {"path": str(disk_tmp)},
            "monitors": {"enabled": []},
        },
    )
    out = disk_tmp / "run"
    res = corun("run", str(spec), "--out", str(out))
    assert res.returncode == 0, res.stderr
    cpu = json.loads((out / "metadata.json").read_text())["machine_cpu"]
    assert cpu["interval_s"] >= 1.0
    shares = [cpu[k] for k in ("busy_pct", "iowait_pct", "idle_pct", "steal_pct")]
    assert all(v is not None and 0 <= v <= 100 for v in shares), cpu
    assert cpu["busy_pct"] >= 50 / os.cpu_count()
    assert sum(shares) <= 100.5  # irq, softirq and nice are in busy; guest time is in user
    # where the run's wall time went: the jobs' phase holds the spinning second
    phases = json.loads((out / "metadata.json").read_text())["phases_s"]
    assert set(phases) == {"process_start_s", "prepare_s", "setup_s", "jobs_s", "teardown_s", "tables_s"}
    assert 1.0 <= phases["jobs_s"] < 10, phases
    assert all(v is not None and 0 <= v < phases["jobs_s"] for k, v in phases.items() if k != "jobs_s"), phases
    # and where its teardown went, step by step, within the teardown's phase
    steps = json.loads((out / "metadata.json").read_text())["teardown_steps_s"]
    assert set(steps) == {"monitors", "scheduler", "device_record", "unwind", "device_after", "undo"}, steps
    assert sum(v for k, v in steps.items() if k != "undo") <= phases["teardown_s"] + 0.01, (steps, phases)
    assert all(isinstance(v, float) and v >= 0 for v in steps["undo"].values()), steps


def test_one_run_at_a_time_on_a_machine(disk_tmp):
    specs = []
    for name, secs in (("first", "4"), ("second", "0.1")):
        specs.append(
            write_spec(
                disk_tmp / f"{name}.yaml",
                {
                    "name": name,
                    "jobs": [{"name": "s", "cmd": ["sleep", secs]}],
                    "device": {"path": str(disk_tmp)},
                    "monitors": {"enabled": []},
                },
            )
        )
    a = subprocess.Popen(
        [PY, "-m", "corun", "run", str(specs[0]), "--out", str(disk_tmp / "a")], stderr=subprocess.PIPE, text=True
    )
    started_jobs(disk_tmp / "a.incomplete", 1)
    b = corun("run", str(specs[1]), "--out", str(disk_tmp / "b"))
    a.communicate(timeout=30)
    assert a.returncode == 0 and b.returncode == 0, b.stderr
    assert "corun: waiting for run first" in b.stderr
    ma = json.loads((disk_tmp / "a" / "metadata.json").read_text())
    mb = json.loads((disk_tmp / "b" / "metadata.json").read_text())
    assert mb["start_epoch_s"] >= ma["end_epoch_s"]
    # the wait is recorded: it lengthens a campaign's wall time, not the run
    assert ma["machine_lock"] == {"waited_s": 0.0, "waited_for": None}
    assert mb["machine_lock"]["waited_for"].startswith("run first") and 0 < mb["machine_lock"]["waited_s"] < 30

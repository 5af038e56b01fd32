"""The premise measurement of paper 003 (corun/monitors/pelt.py): parsers on fixed text, and short live
runs on this machine."""

import csv
import json
import shutil
import subprocess
import sys

import pytest

from corun.monitors.pelt import COLUMNS, dax_mounts, not_on_pmem_reason, parse_sched, parse_schedstat, summarize

SCHED = """fio (4242, #threads: 2)
-------------------------------------------------------------------
se.exec_start                                :        701632.639989
se.sum_exec_runtime                          :          1234.500000
se.nr_migrations                             :                    3
nr_switches                                  :                   10
nr_voluntary_switches                        :                    7
nr_involuntary_switches                      :                    3
se.avg.load_avg                              :                 1023
se.avg.runnable_avg                          :                  900
se.avg.util_avg                              :                  871
stats.wait_sum                               :            12.250000
current_node=0, numa_group_id=0
numa_faults node=0 task_private=0 task_shared=0 group_private=0 group_shared=0
"""


def test_parse_sched():
    d = parse_sched(SCHED)
    assert d["se.avg.util_avg"] == 871 and d["se.avg.load_avg"] == 1023
    assert d["se.sum_exec_runtime"] == 1234.5 and d["stats.wait_sum"] == 12.25
    assert d["nr_voluntary_switches"] == 7
    assert not any(k.startswith(("fio", "-", "current_node", "numa_faults")) for k in d)


def test_parse_schedstat():
    assert parse_schedstat("316403 54222 1\n") == {"run_ns": 316403, "runq_wait_ns": 54222, "timeslices": 1}


def test_dax_mounts():
    text = (
        "/dev/pmem0 /mnt/pmem0 ext4 rw,relatime,dax=always 0 0\n"
        "/dev/pmem1 /mnt/pm\\0401 xfs rw,dax 0 0\n"
        "/dev/pmem2 /mnt/nodax ext4 rw,relatime 0 0\n"
        "tmpfs /dev/shm tmpfs rw,dax 0 0\n"
    )
    assert dax_mounts(text) == [("/dev/pmem0", "/mnt/pmem0"), ("/dev/pmem1", "/mnt/pm 1")]


def test_a_store_task_off_persistent_memory_says_whether_there_was_any():
    """A devdax namespace, or an fsdax one not mounted with DAX, is persistent memory the load/store
    task did not write to: said apart from a machine without any."""
    assert not_on_pmem_reason([]).startswith("no persistent memory on this machine")
    why = not_on_pmem_reason(["/dev/dax0.0"])
    assert "persistent memory here (/dev/dax0.0) but no /dev/pmem device mounted with -o dax" in why


def test_summarize_takes_the_busiest_thread_after_the_warmup():
    rows = []
    for i in range(11):
        t = i * 0.5
        # the parent sleeps; the worker runs half the time, on CPU 0 then CPU 1
        rows.append(
            {
                "t_s": t,
                "task": "psync",
                "tid": 10,
                "comm": "fio",
                "cpu": 0,
                "util_avg": 5,
                "load_avg": 5,
                "run_ns": 1000,
                "runq_wait_ns": 0,
                "nr_switches": 1,
                "nr_voluntary_switches": 1,
                "nr_involuntary_switches": 0,
                "nr_migrations": 0,
            }
        )
        rows.append(
            {
                "t_s": t,
                "task": "psync",
                "tid": 11,
                "comm": "fio",
                "cpu": 0 if t < 3 else 1,
                "util_avg": 500 if t >= 1 else 1000,
                "load_avg": 510,
                "runnable_avg": 520,
                "run_ns": int(t * 0.5e9),
                "runq_wait_ns": int(t * 0.1e9),
                "nr_switches": int(t * 100),
                "nr_voluntary_switches": int(t * 90),
                "nr_involuntary_switches": int(t * 10),
                "nr_migrations": 1 if t >= 3 else 0,
            }
        )
    s = summarize(rows, warmup_s=1.0, interval_s=0.5)["psync"]
    assert s["tid"] == 11 and s["samples"] == 9 and s["window_s"] == 4.0
    assert s["util_avg_mean"] == 500 and s["cpu_share"] == 0.5 and s["runq_wait_share"] == 0.1
    assert s["voluntary_switches_per_s"] == 90 and s["migrations_per_s"] == 0.25
    assert s["cpus_seen"] == {"0": 4, "1": 5} and s["cpu_changes"] == 1


def pelt(tmp_path, *args):
    return subprocess.run(
        [sys.executable, "-m", "corun.monitors.pelt", "--out", str(tmp_path / "out"), *args],
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize(
    "args, msg",
    [
        (["--duration-s", "0"], "--duration-s: 0.0 (expected 0.5 to 3600)"),
        (["--duration-s", "2", "--warmup-s", "3"], "--warmup-s: 3.0 (expected less than --duration-s"),
        (["--disk-dir", "/nonexistent"], "--disk-dir: '/nonexistent' (expected an existing folder on a disk)"),
        (["--disk-dir", "/dev/shm"], "it is on tmpfs, which has no O_DIRECT"),
        (["--pmem-dir", "/dev/shm"], "--pmem-dir: '/dev/shm' (expected a mount point of a /dev/pmem*"),
    ],
)
def test_usage_errors_start_nothing(tmp_path, args, msg):
    res = pelt(tmp_path, *args)
    assert res.returncode == 2, res.stderr
    assert res.stderr.startswith("corun: ") and msg in res.stderr and res.stderr.count("\n") == 1
    assert not (tmp_path / "out").exists()


needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="fio is not installed")


@needs_fio
def test_premise_alone_on_this_machine(tmp_path, disk_tmp, kernels_built):
    """Each task alone: the CPU task's util_avg exceeds the psync task's (the conventional half
    of the paper's premise); the load/store task's is reported, whatever it is."""
    res = pelt(
        tmp_path,
        "--layout",
        "alone",
        "--duration-s",
        "3",
        "--warmup-s",
        "1",
        "--disk-dir",
        str(disk_tmp),
        "--size-mib",
        "64",
    )
    assert res.returncode == 0, res.stderr
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    t = s["tasks"]
    for name in ("store", "psync", "cpu"):
        for k in (
            "util_avg_mean",
            "load_avg_mean",
            "runnable_avg_mean",
            "cpu_share",
            "runq_wait_share",
            "voluntary_switches_per_s",
            "cpus_seen",
        ):
            assert k in t[name], (name, k, t[name])
        assert 0 <= t[name]["util_avg_mean"] <= 1024
    assert t["cpu"]["util_avg_mean"] > t["psync"]["util_avg_mean"], t
    assert "llc_miss" in t["cpu"]["what"]
    assert t["psync"]["voluntary_switches_per_s"] > t["cpu"]["voluntary_switches_per_s"]
    assert s["store_engine"] in ("mmap", "libpmem") and s["store_medium"]
    assert s["store_on_pmem"] is (s["store_engine"] == "libpmem")
    if s["store_engine"] == "mmap":
        assert any(m["metric"] == "store on persistent memory" for m in s["missing"])
    assert s["comparisons"]["store_util_over_psync_util"] is not None
    # the measuring: three tasks alone, 3 s each (bench/workflow_times.py counts it as measuring)
    assert 9.0 <= s["phases_s"]["jobs_s"] < 60, s["phases_s"]
    print(
        f"util_avg: cpu {t['cpu']['util_avg_mean']}, store {t['store']['util_avg_mean']} "
        f"({s['store_medium']}), psync {t['psync']['util_avg_mean']}"
    )
    assert "util_avg" in res.stdout and "store task on:" in res.stdout


@needs_fio
def test_premise_together_records_cfs_placement(tmp_path, disk_tmp, kernels_built):
    res = pelt(
        tmp_path,
        "--duration-s",
        "2",
        "--warmup-s",
        "0.5",
        "--interval-s",
        "0.05",
        "--disk-dir",
        str(disk_tmp),
        "--size-mib",
        "32",
    )
    assert res.returncode == 0, res.stderr
    rows = list(csv.DictReader(open(tmp_path / "out" / "samples.csv")))
    assert list(rows[0]) == COLUMNS
    assert {r["task"] for r in rows} == {"store", "psync", "cpu"}
    cpus = {int(r["cpu"]) for r in rows}
    import os

    assert cpus <= set(range(os.cpu_count()))
    for r in rows:
        int(r["util_avg"]), int(r["load_avg"]), int(r["run_ns"]), int(r["timeslices"])
    s = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert s["layout"] == "together"
    assert all(sum(s["tasks"][n]["cpus_seen"].values()) == s["tasks"][n]["samples"] for n in s["tasks"])
    assert not list(disk_tmp.iterdir())  # the fio files are removed

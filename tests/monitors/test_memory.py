"""memory monitor: /proc/meminfo, /proc/vmstat and memory cgroup parsing, hand-computed rates
from recorded and hand-written samples, live runs with a fake and a real cgroup."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest
from monitor_helpers import run_live

from corun.monitors import MONITORS, MonitorContext, make_monitors, parse_memory
from corun.monitors.memory import (
    CG_COLUMNS,
    COLUMNS,
    MemoryMonitor,
    cgroup_version,
    limit_bytes,
    parse_flat_keyed,
    parse_meminfo,
)

MIB = 1 << 20
V1_CGROUP_ROOT = Path("/sys/fs/cgroup/memory")
V1_NO_LIMIT = "9223372036854771712"  # what cgroup v1 prints for "no limit" with 4 KiB pages

# a job under the cap: 32 MiB of anonymous memory, 48 MiB written to a file, then read back
# through a file-backed mapping over and over (the implicit I/O of paper 000, section 2.4.2.2)
CHILD = r"""
import mmap, os, sys
with open(sys.argv[1], "w") as f:
    f.write(str(os.getpid()))
anon = bytearray(32 << 20)
for i in range(0, len(anon), 4096):
    anon[i] = 1
block = os.urandom(1 << 20)
with open(sys.argv[2], "wb") as f:
    for _ in range(48):
        f.write(block)
print("ready", flush=True)
with open(sys.argv[2], "rb") as f:
    m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ)
    while True:
        for i in range(0, len(m), 4096):
            m[i]
"""


def write_atomic(path: Path, text: str) -> None:
    """Replace a file the sampler may be reading: it sees the old or the new text, never half."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text)
    os.replace(tmp, path)


def fake_v1_cgroup(path: Path, usage: int, limit: str, cache: int, majfault: int) -> float:
    """Write the files a v1 memory cgroup holds; returns the epoch before the first write."""
    t = time.time()
    path.mkdir(exist_ok=True)
    write_atomic(path / "memory.usage_in_bytes", f"{usage}\n")
    write_atomic(path / "memory.limit_in_bytes", f"{limit}\n")
    write_atomic(path / "memory.max_usage_in_bytes", f"{usage}\n")
    write_atomic(
        path / "memory.stat",
        f"cache {cache}\nrss 0\ntotal_cache {cache}\ntotal_rss {usage - cache}\n"
        f"total_mapped_file {cache // 2}\ntotal_dirty 4096\ntotal_writeback 0\n"
        f"total_pgmajfault {majfault}\ntotal_workingset_refault_file 0\n",
    )
    return t


def test_parse_proc_files():
    meminfo = parse_meminfo("MemTotal:       24684084 kB\nMemAvailable:   24121672 kB\nHugePages_Total:       0\n")
    assert meminfo == {"MemTotal": 24684084, "MemAvailable": 24121672, "HugePages_Total": 0}
    assert parse_flat_keyed("pgpgin 3226453\npgsteal_file 4608\n\n") == {
        "pgpgin": "3226453",
        "pgsteal_file": "4608",
    }


def test_limits_and_versions(tmp_path):
    assert np.isnan(limit_bytes(V1_NO_LIMIT, "v1"))
    assert np.isnan(limit_bytes("9223372036854710272", "v1"))  # the same with 64 KiB pages
    assert limit_bytes("67108864", "v1") == 64 * MIB
    assert np.isnan(limit_bytes("max", "v2")) and limit_bytes("536870912\n", "v2") == 512 * MIB
    assert np.isnan(limit_bytes("", "v1"))
    assert cgroup_version(tmp_path) is None
    (tmp_path / "memory.current").write_text("0\n")
    assert cgroup_version(tmp_path) == "v2"


def test_recorded_v1_sample_by_hand(fixtures):
    """A real run on cgroup v1: a job capped at 64 MiB re-reads a 48 MiB file through mmap."""
    raw = fixtures / "memory" / "basic"
    meta = json.loads((raw / "memory.meta.json").read_text())
    df, records = parse_memory(raw, t0_epoch=meta["start_epoch_s"])
    assert list(df.columns) == COLUMNS + CG_COLUMNS
    assert len(df) == 6  # 7 samples (0.5 s interval, the last one at stop)
    row = df.iloc[1]  # samples 2 -> 3, monotonic 1427.096564977 -> 1427.597346016 s
    dt = 1427.597346016 - 1427.096564977  # 0.500781 s
    assert row["interval_s"] == pytest.approx(dt)
    assert row["time_epoch_s"] == 1795280649.5149348
    assert row["t_s"] == pytest.approx(1795280649.5149348 - meta["start_epoch_s"])
    assert row["mem_used_pct"] == pytest.approx(100 * (24684084 - 23388900) / 24684084)  # 5.247
    assert row["cached_kb"] == 1132356 and row["dirty_kb"] == 260 and row["mapped_kb"] == 93704
    assert row["swap_used_kb"] == 0  # no swap is a real 0, not a missing value
    assert row["pgpgin_kb_s"] == pytest.approx((5190409 - 5008465) / dt)  # 363320 KiB/s
    assert row["pgpgout_kb_s"] == pytest.approx((56322568 - 56322552) / dt)
    assert row["pgmajfault_per_s"] == pytest.approx((3590 - 3580) / dt)
    # reclaim forced by the cgroup's limit shows in pgsteal_file / pgscan_file only: the
    # per-reclaimer counters (kswapd, direct, ...) stay 0 throughout
    assert row["pgsteal_per_s"] == pytest.approx((70275 - 24688) / dt)  # 91032 pages/s
    assert row["pgscan_per_s"] == pytest.approx((136083 - 49738) / dt)
    assert row["refault_per_s"] == pytest.approx((483119 - 437541) / dt)
    assert row["cg_usage_bytes"] == 66965504 and row["cg_limit_bytes"] == 64 * MIB
    assert row["cg_used_pct"] == pytest.approx(100 * 66965504 / (64 * MIB))  # 99.79 %
    assert row["cg_file_bytes"] == 32075776 and row["cg_anon_bytes"] == 34611200
    assert row["cg_file_mapped_bytes"] == 22507520 and row["cg_dirty_bytes"] == 0
    assert row["cg_pgmajfault_per_s"] == pytest.approx((15 - 5) / dt)
    assert row["cg_refault_per_s"] == pytest.approx((61210 - 15656) / dt)
    # the cgroup was removed at teardown before the last two samples: its columns end
    assert df["cg_usage_bytes"].iloc[:4].notna().all()
    assert df[CG_COLUMNS].iloc[4:].isna().all().all()
    assert df[COLUMNS].iloc[4:].notna().all().all()
    assert meta["swap"] == "none" and meta["cgroup_version"] == "v1"
    assert meta["cgroup_gone_epoch_s"] > 1795280650.513096
    # cgroup v1 counts no reclaim of its own
    assert [r["metric"] for r in records] == ["cgroup_memory_pgsteal", "cgroup_memory_pgscan"]
    assert records[0]["reason"] == "memory: cgroup v1 memory.stat has no pgsteal counter"


def test_hand_written_v2_sample(fixtures):
    """cgroup v2 on an older kernel: pgsteal/pgscan by reclaimer only, workingset_refault."""
    raw = fixtures / "memory" / "v2_cgroup"
    df, records = MONITORS["memory"].parse_raw(raw, t0_epoch=1795000000.0)
    assert records == []
    assert df["t_s"].tolist() == [1.25, 3.25]
    assert df["interval_s"].tolist() == [1.0, 2.0]
    first, second = df.iloc[0], df.iloc[1]
    assert df["mem_used_pct"].tolist() == [37.5, 50.0]  # 100 * (8e6 - 5e6) / 8e6, then 4e6
    assert df["swap_used_kb"].tolist() == [4000, 100000]
    assert df["pgpgin_kb_s"].tolist() == [100000, 100000]  # +100000 KiB in 1 s, +200000 in 2 s
    assert df["pgpgout_kb_s"].tolist() == [0, 20000]
    assert df["pswpin_per_s"].tolist() == [0, 50] and df["pswpout_per_s"].tolist() == [1000, 100]
    assert df["pgmajfault_per_s"].tolist() == [300, 300]
    assert df["pgfault_per_s"].tolist() == [10000, 10000]
    # kswapd + direct; pgscan_direct_throttle (7, then 9) counts events and is left out
    assert df["pgsteal_per_s"].tolist() == [1500, 1000]
    assert df["pgscan_per_s"].tolist() == [3000, 2000]
    assert df["refault_per_s"].tolist() == [600, 200]
    assert first["cg_usage_bytes"] == 512 * MIB and first["cg_used_pct"] == 100.0
    assert second["cg_used_pct"] == pytest.approx(100 * 500000000 / (512 * MIB))
    assert df["cg_limit_bytes"].tolist() == [512 * MIB] * 2
    assert df["cg_file_bytes"].tolist() == [440000000, 410000000]
    assert df["cg_anon_bytes"].tolist() == [90000000] * 2
    assert df["cg_writeback_bytes"].tolist() == [4096, 0]
    assert df["cg_pgmajfault_per_s"].tolist() == [250, 500]
    assert df["cg_pgsteal_per_s"].tolist() == [2000, 1500]
    assert df["cg_pgscan_per_s"].tolist() == [4000, 2000]
    assert df["cg_refault_per_s"].tolist() == [500, 500]


def test_registered_without_tool(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))
    (mon,) = make_monitors(["memory"], MonitorContext(tmp_path))
    assert isinstance(mon, MemoryMonitor) and MONITORS["memory"] is MemoryMonitor
    assert mon.raw_files == ["memory.csv", "memory.meta.json"]


def test_missing_fields_and_absent_cgroup(tmp_path):
    proc = tmp_path / "proc"
    proc.mkdir()
    # a kernel without MemAvailable (before 3.14), no swap, and a sparse vmstat
    (proc / "meminfo").write_text(
        "MemTotal: 1000 kB\nMemFree: 500 kB\nCached: 100 kB\nDirty: 0 kB\nWriteback: 0 kB\n"
        "SwapTotal: 0 kB\nSwapFree: 0 kB\nShmem: 0 kB\nMapped: 10 kB\n"
    )
    (proc / "vmstat").write_text("pgpgin 10\npgpgout 20\npswpin 0\npswpout 0\npgfault 5\n")
    raw = tmp_path / "raw"
    ctx = MonitorContext(raw, interval_s=0.05, memory_cgroup=str(tmp_path / "no-such-group"))
    mon = MemoryMonitor(ctx, root=proc)
    mon.start()
    time.sleep(0.12)
    mon.stop()
    mon.stop()
    df, records = parse_memory(raw, time.time())
    assert list(df.columns) == COLUMNS + CG_COLUMNS and len(df) >= 2
    assert df["mem_used_pct"].isna().all() and df["pgmajfault_per_s"].isna().all()
    assert df["pgsteal_per_s"].isna().all() and df[CG_COLUMNS].isna().all().all()
    assert (df["swap_used_kb"] == 0).all() and (df["pgpgin_kb_s"] == 0).all()
    assert json.loads((raw / "memory.meta.json").read_text())["swap"] == "none"
    metrics = {r["metric"]: r["reason"] for r in records}
    assert set(metrics) == {
        "meminfo_MemAvailable",
        "vmstat_pgmajfault",
        "vmstat_pgsteal",
        "vmstat_pgscan",
        "vmstat_workingset_refault_file",
        "cgroup_memory",
    }
    assert metrics["cgroup_memory"].endswith("no-such-group: no such directory")


def test_no_proc_files(tmp_path):
    mon = MemoryMonitor(MonitorContext(tmp_path), root=tmp_path / "no-proc")
    mon.start()
    mon.stop()
    df, records = mon.parse(time.time())
    assert df.empty and list(df.columns) == COLUMNS
    assert [r["metric"] for r in records] == ["memory"]
    assert "FileNotFoundError" in records[0]["reason"]


def test_live_fake_v1_cgroup_rewritten_then_removed(tmp_path):
    group = tmp_path / "group"
    fake_v1_cgroup(group, usage=8 * MIB, limit=V1_NO_LIMIT, cache=4 * MIB, majfault=0)
    raw = tmp_path / "raw"
    mon = MemoryMonitor(MonitorContext(raw, interval_s=0.05, memory_cgroup=str(group)))
    mon.start()
    time.sleep(0.2)
    t_rewrite = fake_v1_cgroup(group, 32 * MIB, limit=str(64 * MIB), cache=16 * MIB, majfault=100)
    t_rewritten = time.time()
    time.sleep(0.2)
    t_remove = time.time()
    for f in group.iterdir():  # removed at teardown, while the monitor still samples
        f.unlink()
    group.rmdir()
    t_removed = time.time()
    time.sleep(0.15)
    mon.stop()
    mon.stop()
    meta = json.loads((raw / "memory.meta.json").read_text())
    assert meta["cgroup_version"] == "v1" and "cgroup_gone_epoch_s" in meta
    df, records = parse_memory(raw, meta["start_epoch_s"])
    assert [r["metric"] for r in records] == ["cgroup_memory_pgsteal", "cgroup_memory_pgscan"]
    # a sample's epoch is read just before its files: allow 10 ms for the reads
    t = df["time_epoch_s"]
    unlimited = df[t < t_rewrite - 0.01]
    capped = df[(t > t_rewritten) & (t < t_remove - 0.01)]
    gone = df[t > t_removed]
    assert len(unlimited) >= 2 and len(capped) >= 2 and len(gone) >= 2
    assert (unlimited["cg_usage_bytes"] == 8 * MIB).all()
    assert unlimited[["cg_limit_bytes", "cg_used_pct"]].isna().all().all()
    assert (capped["cg_limit_bytes"] == 64 * MIB).all() and (capped["cg_used_pct"] == 50).all()
    assert (capped["cg_file_bytes"] == 16 * MIB).all()
    assert (capped["cg_anon_bytes"] == 16 * MIB).all()
    assert gone[CG_COLUMNS].isna().all().all() and gone["mem_total_kb"].notna().all()
    # 100 major faults in the interval that saw the rewrite, none before or after
    assert df["cg_pgmajfault_per_s"].fillna(0).mul(df["interval_s"]).sum() == pytest.approx(100)


def test_live_system(tmp_path):
    raw = tmp_path / "raw"
    mon = MemoryMonitor(MonitorContext(raw, interval_s=0.25))
    t0, t_stop = run_live(mon, tmp_path, seconds=1.0)
    df, records = mon.parse(t0)
    assert list(df.columns) == COLUMNS  # no cgroup asked for: no cg_* columns
    assert len(df) >= 4
    assert df["t_s"].between(0.2, t_stop - t0).all()
    assert df["mem_used_pct"].between(0, 100).all()
    rates = [c for c in COLUMNS if c.endswith(("_per_s", "_kb_s"))]
    assert (df[rates].fillna(0) >= 0).all().all()
    assert all(r["metric"].startswith("vmstat_") for r in records)  # whatever the kernel lacks


@pytest.mark.root
@pytest.mark.skipif(not (V1_CGROUP_ROOT / "memory.limit_in_bytes").exists(), reason="no cgroup v1 memory controller")
def test_live_real_v1_cgroup(tmp_path, disk_tmp):
    """A real memory cgroup capped at 64 MiB, a job paging a file through it on a real disk."""
    group = V1_CGROUP_ROOT / f"corun-test-{os.getpid()}"
    group.mkdir()
    raw = tmp_path / "raw"
    mon = MemoryMonitor(MonitorContext(raw, interval_s=0.25, memory_cgroup=str(group)))
    child = None
    try:
        (group / "memory.limit_in_bytes").write_text(str(64 * MIB))
        mon.start()
        child = subprocess.Popen(
            [sys.executable, "-c", CHILD, str(group / "cgroup.procs"), str(disk_tmp / "data.bin")],
            stdout=subprocess.PIPE,
            text=True,
        )
        time.sleep(2.5)
        mon.stop()
    finally:
        if child is not None:
            child.send_signal(signal.SIGKILL)
            child.wait()
        for _ in range(100):  # the kernel may need a moment to let go of the dead task
            try:
                group.rmdir()
                break
            except FileNotFoundError:
                break
            except OSError:
                time.sleep(0.02)
        mon.stop()
    assert not group.exists()
    assert child.stdout.read() == "ready\n"  # it got past its writes under the cap
    df, records = mon.parse(mon.start_epoch_s)
    assert [r["metric"] for r in records] == ["cgroup_memory_pgsteal", "cgroup_memory_pgscan"]
    assert len(df) >= 9
    assert df["cg_usage_bytes"].notna().all()  # stopped before the group went away
    assert (df["cg_usage_bytes"] > 0).any()
    assert (df["cg_limit_bytes"] == 64 * MIB).all()
    used = df["cg_used_pct"][df["cg_usage_bytes"] > 0]
    # v1 usage is a fuzzy value: the kernel charges in per-CPU batches of up to 64 pages
    fuzz_pct = 100.0 * 64 * os.sysconf("SC_PAGE_SIZE") * os.cpu_count() / (64 * MIB)
    assert ((used > 0) & (used <= 100 + fuzz_pct)).all()
    assert df["cg_file_bytes"].max() > 0 and df["cg_anon_bytes"].max() >= 32 * MIB

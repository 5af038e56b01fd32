"""Calibrate the emulated rotating disk against its preset with fio (JSON output).

Builds the disk stack exactly as a run does (corun.machine.rotating_disk: FUSE daemon, loop
device with direct I/O, host queue settings, ext4), then measures:

  qd1_random_4k    random 4 KiB reads, direct, one at a time, over the whole device:
                   mean latency ~ average seek + half a revolution (+-10 %)
  sequential_read  128 KiB direct reads of the outer zone: ~ the outer-zone rate (+-10 %)
  qd32_random_4k   the same random reads 32 deep (reordering on): 1.5-2.5 x the QD1 IOPS
  readers_N        N concurrent sequential buffered readers of their own files through ext4:
                   aggregate bandwidth must fall as N grows (the point of a rotating disk)
  verify           fio verify=crc32c: written data reads back intact
  lateness         the daemon's completion lateness against the model (p50, p99, max)
  cpu              the daemon's CPU time per request

and prints a table against the preset with PASS/FAIL per tolerance; --out writes it as JSON.
Timings on a busy machine are noisy: the JSON records the load average before and after.

With --device and --dir the same fio suite runs on a real disk instead (a testbed's spare HDD,
docs/howto/grid5000-disk.md): random and sequential reads of the raw device (read only), the
readers' and the verify files in --dir, a folder on a file system of that device (removed
afterwards); the table then says how far the preset is from that disk. --compare prints two
such JSON results side by side (the emulated disk against the real one).

    .venv/bin/python bench/rotating_disk_calibration.py --out results/bench/rotating_disk.json
    .venv/bin/python bench/rotating_disk_calibration.py --quick        # under a minute
    .venv/bin/python bench/rotating_disk_calibration.py --device /dev/sdb --dir /mnt/hdd/cal --out real.json
    .venv/bin/python bench/rotating_disk_calibration.py --compare emulated.json real.json

Exit: 0 all PASS, 1 a check failed, 2 usage error, 4 skipped (not root, no fio, no FUSE).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench import _common  # noqa: E402
from corun.emulators import ROTATING_DISK  # noqa: E402
from corun.errors import ConfigError, CorunError  # noqa: E402
from corun.machine import rotating_disk as rd  # noqa: E402
from corun.machine.block_device import device_of  # noqa: E402
from corun.machine.state import Journal  # noqa: E402
from corun.util import atomic_write_json  # noqa: E402

# The prototype's figures on this kind of VM (issue 11), beside ours in the table.
PROTOTYPE_READERS_MB_S = {1: 108.0, 2: 50.0, 4: 50.0}


def random_4k(name: str, dev: str, runtime: str, depth: int, seed: int) -> list[str]:
    """fio's arguments for random direct 4 KiB reads of DEV at queue depth DEPTH for RUNTIME s."""
    return [
        f"--name={name}",
        f"--filename={dev}",
        "--rw=randread",
        "--bs=4k",
        "--direct=1",
        "--ioengine=libaio",
        f"--iodepth={depth}",
        "--time_based",
        f"--runtime={runtime}",
        f"--randseed={seed}",
    ]


def iops_and_latency(read: dict) -> dict:
    """The IOPS and mean completion latency of fio's READ figures."""
    return {"iops": read["iops"], "mean_latency_ms": read["clat_ns"]["mean"] / 1e6}


def fio(args: list[str], timeout: float = 600) -> dict:
    res = subprocess.run(["fio", "--output-format=json", *args], capture_output=True, text=True, timeout=timeout)
    if res.returncode != 0:
        raise CorunError(f"fio {' '.join(args)} exited {res.returncode}: {res.stderr.strip()[-300:]}")
    return json.loads(res.stdout[res.stdout.index("{") :])


def drop_caches() -> None:
    os.sync()
    Path("/proc/sys/vm/drop_caches").write_text("3")


def snapshot(disk: rd.RotatingDisk | None) -> dict | None:
    return disk.snapshot() if disk is not None else None


def phase(disk: rd.RotatingDisk | None, before: dict | None) -> dict | None:
    """The daemon's own view of one phase: requests, model service time, lateness so far (None
    on a real disk)."""
    if disk is None:
        return None
    after = (disk.snapshot() or {}).get("counters") or {}
    b = (before or {}).get("counters") or {}
    n = after.get("requests", 0) - b.get("requests", 0)
    busy = after.get("busy_ms", 0.0) - b.get("busy_ms", 0.0)
    nbytes = after.get("bytes_read", 0) - b.get("bytes_read", 0)
    return {
        "requests": n,
        "model_service_ms_mean": busy / n if n else None,
        "seeks": after.get("seeks", 0) - b.get("seeks", 0),
        "bytes_read": nbytes,
        "model_busy_mb_s": nbytes / busy / 1e3 if busy else None,
    }


def measure(disk: rd.RotatingDisk | None, dev: str, mnt: Path, quick: bool, readers: list[int], log) -> dict:
    """The fio suite on DEV (raw reads only) and in MNT (files); DISK is the emulated disk's
    stack, or None for a real device."""
    rt = "4" if quick else "20"
    m: dict = {}
    size_mb = 48 if quick else 256
    log(f"writing {max(readers)} files of {size_mb} MB (untimed) ...")
    for i in range(max(readers)):
        subprocess.run(
            ["dd", "if=/dev/zero", f"of={mnt}/r{i}", "bs=1M", f"count={size_mb}", "conv=fsync", "status=none"],
            check=True,
        )
    if disk is not None:
        disk.go_timed()
    t_timed = time.monotonic()  # from here on the suite measures (bench/workflow_times.py counts it)
    log("qd1 random 4k ...")
    before = snapshot(disk)
    j = fio(random_4k("qd1", dev, rt, 1, 7))
    r = j["jobs"][0]["read"]
    m["qd1_random_4k"] = {
        **iops_and_latency(r),
        "p99_latency_ms": r["clat_ns"]["percentile"]["99.000000"] / 1e6,
        "ios": r["total_ios"],
        "daemon": phase(disk, before),
    }
    log("qd32 random 4k ...")
    before = snapshot(disk)
    j = fio(random_4k("qd32", dev, rt, 32, 8))
    r = j["jobs"][0]["read"]
    m["qd32_random_4k"] = {**iops_and_latency(r), "ios": r["total_ios"], "daemon": phase(disk, before)}
    log("sequential read ...")
    before = snapshot(disk)
    j = fio(
        [
            "--name=seq",
            f"--filename={dev}",
            "--rw=read",
            "--bs=128k",
            "--direct=1",
            "--ioengine=psync",
            f"--size={'48M' if quick else '256M'}",
        ]
    )
    r = j["jobs"][0]["read"]
    m["sequential_read"] = {"mb_s": r["bw_bytes"] / 1e6, "daemon": phase(disk, before)}
    log("verify crc32c ...")
    res = subprocess.run(
        [
            "fio",
            "--output-format=json",
            "--name=verify",
            f"--filename={mnt}/verify.dat",
            "--rw=randwrite",
            "--bs=64k",
            "--direct=1",
            "--ioengine=libaio",
            "--iodepth=8",
            f"--size={'8M' if quick else '64M'}",
            "--verify=crc32c",
            "--do_verify=1",
            "--verify_state_save=0",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    m["verify"] = {"fio_exit": res.returncode, "errors": res.stderr.strip()[-300:] or None}
    (mnt / "verify.dat").unlink(missing_ok=True)
    m["readers"] = {}
    for n in readers:
        drop_caches()
        log(f"{n} concurrent buffered sequential reader(s) ...")
        args = ["--ioengine=psync", "--rw=read", "--bs=128k", "--direct=0", "--invalidate=1"]
        for i in range(n):
            args += [f"--name=r{i}", f"--filename={mnt}/r{i}", f"--size={size_mb}M"]
        t0 = time.monotonic()
        j = fio(args)
        wall = time.monotonic() - t0
        total = sum(x["read"]["io_bytes"] for x in j["jobs"])
        longest = max(x["read"]["runtime"] for x in j["jobs"]) / 1e3
        m["readers"][str(n)] = {
            "aggregate_mb_s": total / 1e6 / longest,
            "per_reader_mb_s": [x["read"]["bw_bytes"] / 1e6 for x in j["jobs"]],
            "wall_s": wall,
        }
    for i in range(max(readers)):
        (mnt / f"r{i}").unlink(missing_ok=True)
    m["timed_s"] = round(time.monotonic() - t_timed, 3)
    return m


def judge(m: dict, model: dict, readers: list[int]) -> list[dict]:
    p, d = model["params"], model["derived"]
    rows = []

    def row(name, measured, expected, unit, ok, tolerance):
        rows.append(
            {
                "check": name,
                "measured": measured,
                "expected": expected,
                "unit": unit,
                "tolerance": tolerance,
                "verdict": ok if isinstance(ok, str) else ("PASS" if ok else "FAIL"),
            }
        )

    emulated = m["qd1_random_4k"]["daemon"] is not None
    exp = p["seek_avg_ms"] + d["avg_rotational_latency_ms"]
    got = m["qd1_random_4k"]["mean_latency_ms"]
    row("qd1 random 4k latency", got, exp, "ms", abs(got / exp - 1) <= 0.10, "+-10 % of avg seek + half a revolution")
    if emulated:
        row(
            "  the model's own service time",
            m["qd1_random_4k"]["daemon"]["model_service_ms_mean"],
            exp,
            "ms",
            "info",
            "the daemon's busy time per request: the rest of fio's latency is the host's path",
        )
    got = m["sequential_read"]["mb_s"]
    row(
        "sequential read (outer zone)",
        got,
        p["rate_outer_mb_s"],
        "MB/s",
        abs(got / p["rate_outer_mb_s"] - 1) <= 0.10,
        "+-10 % of the outer-zone rate",
    )
    if emulated:
        row(
            "  bytes over the model's busy time",
            m["sequential_read"]["daemon"]["model_busy_mb_s"],
            p["rate_outer_mb_s"],
            "MB/s",
            "info",
            "above the rate when the host's path, not the disk, paces the reads (read-ahead hits)",
        )
    ratio = m["qd32_random_4k"]["iops"] / m["qd1_random_4k"]["iops"]
    row(
        "qd32 / qd1 random IOPS",
        ratio,
        "1.5-2.5",
        "x",
        1.5 <= ratio <= 2.5,
        f"1.5-2.5 (queue window {p['queue_window']})",
    )
    one = m["readers"][str(readers[0])]["aggregate_mb_s"]
    row(
        "1 reader (buffered, ext4)",
        one,
        PROTOTYPE_READERS_MB_S[1],
        "MB/s",
        "info",
        "the prototype's figure beside ours",
    )
    prev = one
    for n in readers[1:]:
        agg = m["readers"][str(n)]["aggregate_mb_s"]
        row(
            f"{n} readers aggregate",
            agg,
            PROTOTYPE_READERS_MB_S.get(n, f"< {prev:.0f}"),
            "MB/s",
            agg < one and agg <= prev * 1.10,
            "below 1 reader, not rising (+10 %) with more readers",
        )
        prev = agg
    if len(readers) > 1:
        last = m["readers"][str(readers[-1])]["aggregate_mb_s"]
        row(
            f"{readers[-1]} readers / 1 reader",
            last / one,
            "< 0.75",
            "x",
            last / one < 0.75,
            "falls by a quarter or more",
        )
    row(
        "fio verify=crc32c",
        "ok" if m["verify"]["fio_exit"] == 0 else "failed",
        "ok",
        "",
        m["verify"]["fio_exit"] == 0,
        "no verify error",
    )
    if emulated:
        c = m["counters"]
        row(
            "completion lateness p99",
            c["lateness_p99_ms"],
            "< 2",
            "ms",
            c["lateness_p99_ms"] < 2.0,
            "p99 < 2 ms (noisy on a shared machine)",
        )
        row("completion lateness max", c["lateness_max_ms"], None, "ms", "info", "")
        row("daemon CPU per request", c["cpu_us_per_request"], None, "us", "info", "")
    return rows


def table(rows: list[dict]) -> str:
    def fmt(x):
        return f"{x:.2f}" if isinstance(x, float) else ("" if x is None else str(x))

    lines = [f"{'check':32} {'measured':>10} {'preset':>10} {'unit':6} verdict  tolerance"]
    for r in rows:
        lines.append(
            f"{r['check']:32} {fmt(r['measured']):>10} {fmt(r['expected']):>10} {r['unit']:6} "
            f"{r['verdict']:8} {r['tolerance']}"
        )
    return "\n".join(lines)


def skipped(out: Path | None, reason: str) -> int:
    """Exit 4 (a needed feature is missing); with --out, the reason as JSON for the report."""
    print(f"rotating_disk_calibration: skipped: {reason}", file=sys.stderr)
    if out is not None:
        atomic_write_json(out, {"bench": "rotating_disk_calibration", "skipped": reason})
    return 4


def log(msg: str) -> None:
    print(f"  {msg}", file=sys.stderr, flush=True)


def preset_model(preset: str) -> dict:
    """The preset's parameters and derived figures, from the emulator's model alone."""
    cfg = rd.resolve({"preset": preset}, ROTATING_DISK)
    with tempfile.NamedTemporaryFile("w", suffix=".trace") as empty:
        res = subprocess.run(
            [str(ROTATING_DISK.binary), "--preset", cfg["preset_file"], "--replay", empty.name],
            capture_output=True,
            text=True,
            timeout=60,
        )
    if res.returncode != 0:
        raise CorunError(f"{ROTATING_DISK.binary.name} --replay exited {res.returncode}: {res.stderr.strip()[-300:]}")
    out = json.loads(res.stdout)
    return {"params": out["params"], "derived": out["derived"]}


def check_real(device: str, folder: Path, need_bytes: int) -> str:
    """The real device and the folder on it, checked; returns the device's name. One-line
    ConfigError otherwise."""
    if not Path(device).is_block_device():
        raise ConfigError("options", "--device", device, "a block device such as /dev/sdb")
    if not folder.is_dir():
        raise ConfigError("options", "--dir", str(folder), "an existing folder on a file system of --device")
    on = device_of(folder, "options", "--dir")
    name = Path(os.path.realpath(device)).name
    if name not in (on.name, on.partition):
        raise ConfigError("options", "--dir", str(folder), f"a folder on {device} (it is on {on.partition or on.name})")
    free = shutil.disk_usage(folder).free
    if free < need_bytes:
        raise ConfigError(
            "options", "--dir", str(folder), f"{need_bytes >> 20} MiB free for the files (it has {free >> 20})"
        )
    return on.name


def real_disk(args: argparse.Namespace, readers: list[int]) -> int:
    """The suite on a real disk: raw reads of --device, files in a folder under --dir."""
    size_mb = 48 if args.quick else 256
    try:
        model = preset_model(args.preset)
        name = check_real(args.device, args.dir, (max(readers) * size_mb + 64) << 20)
    except ConfigError as exc:
        print(f"rotating_disk_calibration: {exc}", file=sys.stderr)
        return 2
    except CorunError as exc:
        return skipped(args.out, str(exc))
    load_before = os.getloadavg()
    t0 = time.time()
    work = Path(tempfile.mkdtemp(prefix="corun-calibration-", dir=args.dir))
    try:
        m = measure(None, args.device, work, args.quick, readers, log)
    except (CorunError, subprocess.CalledProcessError) as exc:
        print(f"rotating_disk_calibration: {exc}", file=sys.stderr)
        return 1
    finally:
        shutil.rmtree(work, ignore_errors=True)
    m["counters"] = None
    rows = judge(m, model, readers)
    host = rd.RotatingDisk.read_host_settings(name)
    out = {
        "bench": "rotating_disk_calibration",
        "quick": args.quick,
        "preset": Path(rd.resolve({"preset": args.preset}, ROTATING_DISK)["preset_file"]).stem,
        **_common.machine(t0, load_before),
        "device": {"kind": "block", "path": args.device, "name": name, "host_settings": host, "model": model},
        "measured": m,
        # the measuring, not the disk's set-up: a workflow's measurement (bench/workflow_times.py)
        "phases_s": {"jobs_s": m["timed_s"]},
        "checks": rows,
        "teardown_errors": [],
        "note": "a real disk measured against the preset: the verdicts say how far the preset is from it",
    }
    print(f"real disk {args.device} ({name}, rotational {host.get('rotational')}) against the preset {out['preset']}")
    print(table(rows))
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(args.out, out)
    return 0


def compare(a_path: Path, b_path: Path) -> int:
    """Two results of this bench side by side, check by check, with B / A."""
    docs = []
    for path in (a_path, b_path):
        try:
            doc = json.loads(path.read_text())
        except (OSError, ValueError) as exc:
            print(
                f"rotating_disk_calibration: --compare: {str(path)!r} (expected this bench's JSON: {exc})",
                file=sys.stderr,
            )
            return 2
        if doc.get("bench") != "rotating_disk_calibration" or "checks" not in doc:
            print(
                f"rotating_disk_calibration: --compare: {str(path)!r} (expected this bench's JSON, with checks)",
                file=sys.stderr,
            )
            return 2
        docs.append(doc)

    def label(doc):
        d = doc["device"]
        return f"{d['kind']} {d.get('path') or d.get('loop_device') or ''}".strip()

    a, b = ({r["check"]: r for r in doc["checks"]} for doc in docs)
    print(f"A: {label(docs[0])} ({a_path})\nB: {label(docs[1])} ({b_path})")
    print(f"{'check':32} {'A':>10} {'B':>10} {'B / A':>7} {'preset':>10} unit")
    for check in [*a, *(c for c in b if c not in a)]:
        ra, rb = a.get(check, {}), b.get(check, {})
        va, vb = ra.get("measured"), rb.get("measured")
        ratio = f"{vb / va:.2f}" if isinstance(va, (int, float)) and isinstance(vb, (int, float)) and va else ""

        def fmt(x):
            return f"{x:.2f}" if isinstance(x, float) else ("" if x is None else str(x))

        print(
            f"{check:32} {fmt(va):>10} {fmt(vb):>10} {ratio:>7} {fmt(ra.get('expected', rb.get('expected'))):>10} "
            f"{ra.get('unit', rb.get('unit', ''))}"
        )
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--preset", default="sata_7200_2010", help="preset name or file (default sata_7200_2010)")
    ap.add_argument(
        "--size-mib",
        type=int,
        default=None,
        help="image size, MiB (default 4096, 512 with --quick): it must hold the readers' files",
    )
    ap.add_argument("--readers", default=None, help="concurrent reader counts (default 1,2,4,8; 1,2,4 with --quick)")
    ap.add_argument(
        "--queue-window",
        type=int,
        default=None,
        help="the drive's reordering window, 1 (FIFO) to 32 (default: the preset's)",
    )
    ap.add_argument("--quick", action="store_true", help="short runs, small files: under a minute")
    ap.add_argument("--out", type=Path, help="write the results as JSON here")
    ap.add_argument("--device", help="a real block device to measure instead (read only; with --dir)")
    ap.add_argument("--dir", type=Path, help="a folder on a file system of --device for the suite's files")
    ap.add_argument("--compare", nargs=2, type=Path, metavar="JSON", help="print two results side by side")
    args = ap.parse_args(argv)
    if args.compare:
        return compare(*args.compare)
    readers = [int(x) for x in (args.readers or ("1,2,4" if args.quick else "1,2,4,8")).split(",")]
    if readers[0] != 1 or sorted(readers) != readers:
        print(f"rotating_disk_calibration: --readers: {args.readers} (expected rising counts from 1)", file=sys.stderr)
        return 2
    if bool(args.device) != bool(args.dir):
        given = "--device" if args.device else "--dir"
        print(
            f"rotating_disk_calibration: {given}: given alone (expected --device and --dir together)", file=sys.stderr
        )
        return 2
    if os.geteuid() != 0 or shutil.which("fio") is None:
        return skipped(args.out, "needs root and fio")
    if args.device:
        return real_disk(args, readers)
    size = (args.size_mib or (512 if args.quick else 4096)) << 20
    try:
        cfg = rd.resolve({"preset": args.preset, "size_bytes": size, "queue_window": args.queue_window}, ROTATING_DISK)
        rd.check_machine(ROTATING_DISK)
    except ConfigError as exc:
        return skipped(args.out, str(exc))

    load_before = os.getloadavg()
    run_id = f"calibration-{os.getpid()}"
    journal = Journal(run_id)
    mnt = Path(tempfile.mkdtemp(prefix="corun-calibration-")) / "mnt"
    disk = rd.RotatingDisk(cfg, journal, mnt, run_id)
    t0 = time.time()
    try:
        disk.start(timed=False)  # the readers' files are written untimed, then the model takes over
        m = measure(disk, disk.loop, mnt, args.quick, readers, log)
        disk.record_end()
    except (CorunError, subprocess.CalledProcessError) as exc:
        print(f"rotating_disk_calibration: {exc}", file=sys.stderr)
        return 1
    finally:
        errors = journal.unwind()
        shutil.rmtree(mnt.parent, ignore_errors=True)
    disk.after_teardown()
    disk.cleanup()
    d = disk.describe()
    m["counters"] = d["counters"]
    rows = judge(m, d["model"], readers)
    out = {
        "bench": "rotating_disk_calibration",
        "quick": args.quick,
        "preset": d["preset"],
        **_common.machine(t0, load_before),
        "device": d,
        "measured": m,
        # the measuring, not the disk's set-up: a workflow's measurement (bench/workflow_times.py)
        "phases_s": {"jobs_s": m["timed_s"]},
        "checks": rows,
        "teardown_errors": errors,
        "note": "timings are noisy when other work shares the machine: compare loadavg_before/after",
    }
    print(table(rows))
    print(f"load average before {load_before[0]:.2f}, after {out['loadavg_after'][0]:.2f} ({os.cpu_count()} CPUs)")
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        atomic_write_json(args.out, out)
    return 0 if all(r["verdict"] in ("PASS", "info") for r in rows) and not errors else 1


if __name__ == "__main__":
    sys.exit(main())

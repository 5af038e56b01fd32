"""The premise of paper 003, measured: how the kernel's load tracking sees three kinds of task.

Three tasks run side by side (or, with --layout alone, each alone in turn), none pinned, for
--duration-s seconds:

  store  fio random writes by loads and stores: ioengine libpmem on a DAX mount of a
         persistent-memory device when one is mounted (or given with --pmem-dir), otherwise
         ioengine mmap on a file in memory (tmpfs): the same load/store path, on DRAM;
  psync  fio random writes with pwrite(2) and O_DIRECT to a file on a disk (--disk-dir): the
         conventional I/O path, where the task sleeps while the device works;
  cpu    corun's LLC-miss kernel on a cache-resident array (a pure CPU task), or a Python
         spin when kernels/build/llc_miss is missing.

Every --interval-s the kernel's own view of every thread of each task is read from
/proc/<pid>/task/<tid>/sched (PELT: se.avg.load_avg, util_avg, runnable_avg; sum_exec_runtime,
switches, migrations, wait_sum when schedstats are on) and /proc/<pid>/task/<tid>/schedstat
(time on CPU, time waiting on a run queue, timeslices), with the CPU it last ran on (the
placement CFS chose). The task's busiest thread (fio's worker) stands for the task. Samples of
the first --warmup-s seconds are discarded from the summary.

    python -m corun.monitors.pelt --out DIR [--duration-s 10] [--warmup-s 2] [--disk-dir D]

DIR/samples.csv (one row per thread and sample), DIR/summary.json (per task: PELT means,
CPU and wait shares, switch rates, the CPUs it ran on; the medium of the store task; what was
missing and why; host and tool versions). Exit 0 ok, 1 runtime error, 2 usage, 3 fio missing.
"""

from __future__ import annotations

import argparse
import csv
import os
import shutil
import signal
import statistics
import subprocess
import sys
import time
from pathlib import Path

from corun.errors import CorunError, MissingTool, missing, one_line_errors
from corun.machine.host import host_state, pmem_devices
from corun.machine.task_cpu import children_map, processor, threads, tree
from corun.util import atomic_write_json, repo_root, tool_version

# /proc/<pid>/sched keys recorded, and their CSV column names (units in the names).
SCHED_FIELDS = {
    "se.avg.load_avg": "load_avg",
    "se.avg.util_avg": "util_avg",
    "se.avg.runnable_avg": "runnable_avg",
    "se.sum_exec_runtime": "sum_exec_runtime_ms",
    "se.nr_migrations": "nr_migrations",
    "nr_switches": "nr_switches",
    "nr_voluntary_switches": "nr_voluntary_switches",
    "nr_involuntary_switches": "nr_involuntary_switches",
    "se.statistics.wait_sum": "wait_sum_ms",  # kernels before 5.19
    "stats.wait_sum": "wait_sum_ms",  # since 5.19, with schedstats on
}
COLUMNS = (
    ["t_s", "task", "pid", "tid", "comm", "cpu"]
    + list(dict.fromkeys(SCHED_FIELDS.values()))
    + ["run_ns", "runq_wait_ns", "timeslices"]
)
TASKS = ("store", "psync", "cpu")


def parse_sched(text: str) -> dict[str, float]:
    """The `key : value` lines of /proc/<pid>/sched with numeric values."""
    out = {}
    for line in text.splitlines():
        key, sep, value = line.partition(":")
        if not sep or key.startswith(("-", " ")):
            continue
        value = value.strip()
        try:
            out[key.strip()] = float(value) if "." in value else int(value)
        except ValueError:
            continue
    return out


def parse_schedstat(text: str) -> dict[str, int]:
    """/proc/<pid>/schedstat: time on CPU (ns), time waiting on a run queue (ns), timeslices."""
    run, wait, slices = (int(x) for x in text.split()[:3])
    return {"run_ns": run, "runq_wait_ns": wait, "timeslices": slices}


def dax_mounts(mounts_text: str) -> list[tuple[str, str]]:
    """(device, mount point) of file systems mounted with DAX on a pmem device."""
    out = []
    for line in mounts_text.splitlines():
        parts = line.split()
        if len(parts) < 4:
            continue
        dev, mnt, _fs, opts = parts[:4]
        flags = opts.split(",")
        if dev.startswith("/dev/pmem") and ("dax" in flags or "dax=always" in flags):
            out.append((dev, mnt.replace("\\040", " ")))
    return out


def fs_type(path: Path) -> str:
    """The file system type of the mount holding path (from /proc/mounts)."""
    best, kind = "", "unknown"
    p = str(path.resolve())
    for line in Path("/proc/mounts").read_text().splitlines():
        parts = line.split()
        mnt = parts[1].replace("\\040", " ")
        if (p == mnt or p.startswith(mnt.rstrip("/") + "/")) and len(mnt) >= len(best):
            best, kind = mnt, parts[2]
    return kind


def store_medium(pmem_dir: str | None, mem_dir: str) -> dict:
    """Where the load/store task writes: a DAX mount of persistent memory, or memory."""
    if pmem_dir:
        mounts = {m: d for d, m in dax_mounts(Path("/proc/mounts").read_text())}
        if str(Path(pmem_dir).resolve()) not in mounts:
            raise CorunError(
                f"--pmem-dir: {pmem_dir!r} (expected a mount point of a /dev/pmem* device mounted with -o dax)", 2
            )
        return {
            "engine": "libpmem",
            "dir": pmem_dir,
            "medium": f"pmem with DAX ({mounts[str(Path(pmem_dir).resolve())]})",
        }
    found = dax_mounts(Path("/proc/mounts").read_text())
    if found:
        dev, mnt = found[0]
        return {"engine": "libpmem", "dir": mnt, "medium": f"pmem with DAX ({dev})"}
    return {
        "engine": "mmap",
        "dir": mem_dir,
        "medium": f"memory ({fs_type(Path(mem_dir))} {mem_dir}): no DAX mount of a /dev/pmem device here",
    }


def not_on_pmem_reason(devices: list[str]) -> str:
    """Why the load/store task did not write to persistent memory: none here, or some that is
    not mounted with DAX (a devdax namespace, or an fsdax one the pmem role has not mounted)."""
    if devices:
        return (
            f"persistent memory here ({', '.join(devices)}) but no /dev/pmem device mounted with -o dax: "
            "the load/store task wrote to memory instead"
        )
    return "no persistent memory on this machine: the load/store task wrote to memory instead"


def task_commands(args, work: Path, store: dict) -> dict[str, dict]:
    fio = shutil.which("fio")
    if fio is None:
        raise MissingTool("fio", "fio", "the premise measurement")
    common = [
        "--rw=randwrite",
        "--bs=4k",
        f"--size={args.size_mib}m",
        "--time_based",
        f"--runtime={int(args.duration_s + 30)}",
        "--thread",
        "--output-format=json",
        "--randrepeat=0",
        "--norandommap",
    ]
    store_file = Path(store["dir"]) / f".corun-pelt-{os.getpid()}.store"
    psync_file = Path(args.disk_dir) / f".corun-pelt-{os.getpid()}.psync"
    cmds = {
        "store": {
            "cmd": [
                fio,
                "--name=store",
                f"--ioengine={store['engine']}",
                f"--filename={store_file}",
                *common,
                *(["--direct=0"] if store["engine"] == "libpmem" else []),
            ],
            "file": store_file,
            "what": f"fio {store['engine']} random write, {store['medium']}",
        },
        "psync": {
            "cmd": [
                fio,
                "--name=psync",
                "--ioengine=psync",
                f"--filename={psync_file}",
                *common,
                *(["--direct=1"] if args.psync_sync == "direct" else ["--fsync=1"]),
            ],
            "file": psync_file,
            "what": "fio psync random write "
            f"({'O_DIRECT' if args.psync_sync == 'direct' else 'fsync after each write'}), "
            f"{fs_type(Path(args.disk_dir))} {args.disk_dir}",
        },
    }
    llc = repo_root() / "kernels" / "build" / "llc_miss"
    if os.access(llc, os.X_OK):
        cmds["cpu"] = {
            "cmd": [str(llc), "--mem-size", "64K", "--iterations", "1000000000"],
            "what": "llc_miss --mem-size 64K (cache-resident: a CPU-bound task)",
        }
    else:
        cmds["cpu"] = {
            "cmd": [sys.executable, "-c", "while True: pass"],
            "what": "a Python spin (kernels/build/llc_miss is not built)",
        }
    return cmds


def _read_thread(pid: int, tid: int) -> dict | None:
    base = Path(f"/proc/{pid}/task/{tid}")
    try:
        sched = parse_sched((base / "sched").read_text())
        stat = (base / "stat").read_text()
        ss = parse_schedstat((base / "schedstat").read_text())
    except (OSError, ValueError, IndexError):
        return None
    row = {"tid": tid, "comm": stat[stat.index("(") + 1 : stat.rindex(")")], "cpu": processor(stat), **ss}
    for key, col in SCHED_FIELDS.items():
        if key in sched:
            row[col] = sched[key]
    return row


def sample_task(name: str, pid: int, t_s: float, kids: dict | None = None) -> list[dict]:
    rows = []
    for p in tree(pid, kids):
        for tid in threads(p):
            r = _read_thread(p, tid)
            if r is not None:
                rows.append({"t_s": round(t_s, 3), "task": name, "pid": p, **r})
    return rows


def summarize(rows: list[dict], warmup_s: float, interval_s: float) -> dict:
    """Per task: its busiest thread over the measured window (after the warm-up)."""
    out = {}
    for name in dict.fromkeys(r["task"] for r in rows):
        mine = [r for r in rows if r["task"] == name and r["t_s"] >= warmup_s]
        if len(mine) < 2:
            out[name] = {"samples": len(mine)}
            continue
        by_tid: dict[int, list[dict]] = {}
        for r in mine:
            by_tid.setdefault(r["tid"], []).append(r)
        tid, tr = max(by_tid.items(), key=lambda kv: kv[1][-1]["run_ns"] - kv[1][0]["run_ns"])
        first, last = tr[0], tr[-1]
        span_s = last["t_s"] - first["t_s"]
        s: dict = {"tid": tid, "comm": first["comm"], "samples": len(tr), "window_s": round(span_s, 3)}
        for col in ("util_avg", "load_avg", "runnable_avg"):
            vals = [r[col] for r in tr if col in r]
            if vals:
                s[f"{col}_mean"] = round(statistics.fmean(vals), 1)
                s[f"{col}_median"] = statistics.median(vals)
                s[f"{col}_min"], s[f"{col}_max"] = min(vals), max(vals)
        if span_s > 0:
            s["cpu_share"] = round((last["run_ns"] - first["run_ns"]) / 1e9 / span_s, 4)
            s["runq_wait_share"] = round((last["runq_wait_ns"] - first["runq_wait_ns"]) / 1e9 / span_s, 4)
            for col in ("nr_switches", "nr_voluntary_switches", "nr_involuntary_switches", "nr_migrations"):
                if col in first:
                    s[f"{col.removeprefix('nr_')}_per_s"] = round((last[col] - first[col]) / span_s, 3)
            if "wait_sum_ms" in first:
                s["wait_sum_share"] = round((last["wait_sum_ms"] - first["wait_sum_ms"]) / 1e3 / span_s, 4)
        cpus: dict[str, int] = {}
        for r in tr:
            cpus[str(r["cpu"])] = cpus.get(str(r["cpu"]), 0) + 1
        s["cpus_seen"] = dict(sorted(cpus.items(), key=lambda kv: int(kv[0])))
        s["cpu_changes"] = sum(1 for a, b in zip(tr, tr[1:]) if a["cpu"] != b["cpu"])
        out[name] = s
    return out


def _run_phase(args, out: Path, cmds: dict, names: list[str]) -> list[dict]:
    """Run some tasks side by side for the duration; their samples (t_s from their start)."""
    procs: dict[str, subprocess.Popen] = {}
    rows: list[dict] = []
    try:
        for name in names:
            log = open(out / f"{name}.out", "ab")
            procs[name] = subprocess.Popen(
                cmds[name]["cmd"],
                stdout=log,
                stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL,
                start_new_session=True,
            )
            log.close()
        t0 = next_t = time.monotonic()
        while (now := time.monotonic()) - t0 < args.duration_s:
            kids = children_map()  # one scan of /proc per sample
            for name, p in procs.items():
                if p.poll() is not None:
                    raise CorunError(f"task {name} exited early with {p.returncode} (see {out}/{name}.out)")
                rows += sample_task(name, p.pid, now - t0, kids)
            next_t += args.interval_s
            time.sleep(max(0.0, next_t - time.monotonic()))
    finally:
        for p in procs.values():
            if p.poll() is None:
                try:
                    os.killpg(p.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for p in procs.values():
            try:
                p.wait(timeout=15)
            except subprocess.TimeoutExpired:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    return rows


def measure(args) -> dict:
    out = Path(args.out)
    if out.exists() and any(out.iterdir()):
        raise CorunError(f"--out: {str(out)!r} (expected a new or empty folder)", 2)
    disk = Path(args.disk_dir)
    if not disk.is_dir():
        raise CorunError(f"--disk-dir: {args.disk_dir!r} (expected an existing folder on a disk)", 2)
    if args.psync_sync == "direct" and fs_type(disk) in ("tmpfs", "ramfs"):
        raise CorunError(
            f"--disk-dir: {args.disk_dir!r} (expected a folder on a disk: it is on "
            f"{fs_type(disk)}, which has no O_DIRECT)",
            2,
        )
    store = store_medium(args.pmem_dir, args.mem_dir)
    cmds = task_commands(args, out, store)
    out.mkdir(parents=True, exist_ok=True)
    rows: list[dict] = []
    phases = [list(TASKS)] if args.layout == "together" else [[t] for t in TASKS]
    t_measure = time.monotonic()
    try:
        for phase in phases:
            rows += _run_phase(args, out, cmds, phase)
    finally:
        for c in cmds.values():
            if "file" in c:
                try:
                    Path(c["file"]).unlink()
                except OSError:
                    pass
    measured_s = round(time.monotonic() - t_measure, 3)  # the tasks' start to their end
    with open(out / "samples.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(rows)
    tasks = summarize(rows, args.warmup_s, args.interval_s)
    for name in TASKS:
        tasks.setdefault(name, {})["what"] = cmds[name]["what"]
        tasks[name]["cmd"] = cmds[name]["cmd"]
    miss = []
    if not any("wait_sum_ms" in r for r in rows):
        miss.append(
            missing(
                "wait_sum_ms",
                "schedstats are off or absent in this kernel "
                "(kernel.sched_schedstats): run-queue waiting comes from "
                "/proc/<pid>/schedstat instead",
                "/proc/<pid>/sched",
            )
        )
    if store["engine"] != "libpmem":
        miss.append(missing("store on persistent memory", not_on_pmem_reason(pmem_devices()), "/proc/mounts"))
    u = (
        tasks.get("cpu", {}).get("util_avg_mean"),
        tasks.get("psync", {}).get("util_avg_mean"),
        tasks.get("store", {}).get("util_avg_mean"),
    )
    summary = {
        "experiment": "noisy_neighbour premise (paper 003)",
        "cmdline": sys.argv,
        "host": host_state(),
        "online_cpus": len(os.sched_getaffinity(0)),
        "fio_version": tool_version(["fio", "--version"]),
        "layout": args.layout,
        "duration_s": args.duration_s,
        "warmup_s": args.warmup_s,
        "interval_s": args.interval_s,
        # the measuring (bench/workflow_times.py counts it as a workflow's measurement)
        "phases_s": {"jobs_s": measured_s},
        "store_medium": store["medium"],
        "store_engine": store["engine"],
        "store_on_pmem": store["engine"] == "libpmem",  # a DAX mount of a /dev/pmem device
        "tasks": tasks,
        "missing": miss,
        "comparisons": {
            "cpu_util_over_psync_util": round(u[0] / u[1], 2) if u[0] and u[1] else None,
            "store_util_over_psync_util": round(u[2] / u[1], 2) if u[2] and u[1] else None,
            "store_util_over_cpu_util": round(u[2] / u[0], 2) if u[2] and u[0] else None,
        },
    }
    atomic_write_json(out / "summary.json", summary)
    return summary


def print_figures(summary: dict, fh=sys.stdout) -> None:
    print(
        f"store task on: {summary['store_medium']}; layout {summary['layout']}; "
        f"{summary['online_cpus']} CPUs; load average {summary['host']['loadavg'][0]:.2f}",
        file=fh,
    )
    print(
        f"{'task':6} {'util_avg':>9} {'load_avg':>9} {'runnable':>9} {'cpu_share':>9} "
        f"{'runq_wait':>9} {'vol_sw/s':>9} {'invol_sw/s':>10} {'migr/s':>7}  cpus seen",
        file=fh,
    )
    for name, s in summary["tasks"].items():

        def f(k, fmt="{:9.1f}", s=s):
            v = s.get(k)
            return fmt.format(v) if isinstance(v, (int, float)) else f"{'-':>9}"

        print(
            f"{name:6} {f('util_avg_mean')} {f('load_avg_mean')} {f('runnable_avg_mean')} "
            f"{f('cpu_share', '{:9.3f}')} {f('runq_wait_share', '{:9.3f}')} "
            f"{f('voluntary_switches_per_s')} {f('involuntary_switches_per_s', '{:10.1f}')} "
            f"{f('migrations_per_s', '{:7.1f}')}  {s.get('cpus_seen', {})}",
            file=fh,
        )
    for k, v in summary["comparisons"].items():
        print(f"{k}: {v if v is not None else 'n/a'}", file=fh)
    for m in summary["missing"]:
        print(f"missing: {m['metric']}: {m['reason']}", file=fh)


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m corun.monitors.pelt", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True, help="a new folder for samples.csv and summary.json")
    ap.add_argument("--duration-s", type=float, default=10.0, help="measured run time (default 10 s)")
    ap.add_argument(
        "--warmup-s",
        type=float,
        default=2.0,
        help="samples before this are left out of the summary (default 2 s; PELT's "
        "half-life is 32 ms, fio needs a moment to lay out its files)",
    )
    ap.add_argument("--interval-s", type=float, default=0.1, help="sampling period (default 0.1 s)")
    ap.add_argument(
        "--disk-dir",
        default=str(repo_root() / "results"),
        help="folder on a disk for the psync task's file (default results/ of the repository)",
    )
    ap.add_argument(
        "--mem-dir",
        default="/dev/shm",
        help="folder in memory for the store task when no pmem DAX mount exists (default /dev/shm)",
    )
    ap.add_argument("--pmem-dir", help="a DAX mount of persistent memory (default: the first found)")
    ap.add_argument(
        "--psync-sync",
        choices=["direct", "fsync"],
        default="direct",
        help="O_DIRECT writes, or buffered writes each followed by fsync (default direct)",
    )
    ap.add_argument(
        "--layout",
        choices=["together", "alone"],
        default="together",
        help="the three tasks side by side, or each alone in turn (default together)",
    )
    ap.add_argument("--size-mib", type=int, default=256, help="file size of each fio task (default 256 MiB)")
    args = ap.parse_args(argv)
    checks = [("duration_s", 0.5, 3600), ("interval_s", 0.01, 10), ("warmup_s", 0, 3600), ("size_mib", 1, 1 << 20)]
    for opt, lo, hi in checks:
        v = getattr(args, opt)
        if not lo <= v <= hi:
            print(f"corun: --{opt.replace('_', '-')}: {v} (expected {lo} to {hi})", file=sys.stderr)
            return 2
    if args.warmup_s >= args.duration_s:
        print(
            f"corun: --warmup-s: {args.warmup_s} (expected less than --duration-s {args.duration_s})", file=sys.stderr
        )
        return 2
    Path(args.disk_dir).mkdir(parents=True, exist_ok=True) if args.disk_dir == str(repo_root() / "results") else None
    summary = measure(args)
    print_figures(summary)
    print(f"written: {args.out}/summary.json, {args.out}/samples.csv")
    return 0


if __name__ == "__main__":
    sys.exit(main())

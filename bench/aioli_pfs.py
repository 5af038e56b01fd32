#!/usr/bin/env python3
"""The corun/aioli policies on the netns file system: aggregation performed and possible, waits,
time requests spend in the translator, and read bandwidth, with concurrent interleaved readers.

Brings up a 2-host netns cluster (scripts/netns-cluster; both hosts data servers, the client on
the first), the file system with the corun/aioli translator on directory bricks (links not
shaped), writes one file, then reads it --reps times per policy in a seeded interleaved order:
--tasks pfs_read processes, each reading one 64 KiB strip per segment (IOR's segmented layout,
so neighbouring tasks' requests are contiguous on a server). Each read runs under one policy
set by `python -m corun.testbed.pfs_sched apply` (counters reset) and its counters are read from
both servers' status files. app_aware reads the trace recorded by the fifo reads. Prints per
policy: mean requests per dispatch performed and possible, waits taken (aggregated / timed
out), mean and p99 (bucket bound) time in the translator, and the read bandwidth (mean, min,
max). Everything it starts is taken down at the end. Root only; the servers and the client
share this machine's CPUs and page cache, so bandwidth is not a disk's.

  .venv/bin/python bench/aioli_pfs.py [--reps 3] [--tasks 8] [--segments 64]
      [--prefix aiob] [--subnet 10.79.12.0/24] [--out results/bench/aioli_pfs.json]
"""

from __future__ import annotations

import argparse
import json
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench import _common  # noqa: E402

CLUSTER = _common.CLUSTER
KERNEL = _common.PFS_READ
POLICIES = ["fifo", "aioli", "aioli_no_wait", "aioli_no_agg", "time_order_agg", "app_aware"]
STRIP = 65536


run = _common.run


def must(res: subprocess.CompletedProcess, what: str) -> str:
    return _common.must(res, "aioli_pfs", what)


def counters(lay: dict, after: float) -> list[dict]:
    deadline = time.monotonic() + 5
    while True:
        docs = []
        for s in lay["servers"]:
            (x,) = [x for x in s["xlators"] if x["type"] == "corun/aioli"]
            docs.append(json.loads(Path(x["options"]["status-file"]).read_text()))
        if all(d["updated_unix"] > after for d in docs) or time.monotonic() > deadline:
            return [d["counters"] for d in docs]
        time.sleep(0.1)


def summarise(cs: list[dict]) -> dict:
    perf = [sum(c["agg_performed"][k] for c in cs) for k in range(len(cs[0]["agg_performed"]))]
    poss = [sum(c["agg_possible"][k] for c in cs) for k in range(len(cs[0]["agg_possible"]))]
    disp = sum(perf)
    wait = [
        sum(c["request_wait"]["hist_log2_us"][k] for c in cs) for k in range(len(cs[0]["request_wait"]["hist_log2_us"]))
    ]
    n = sum(wait)
    acc, p99 = 0, None
    for k, v in enumerate(wait):
        acc += v
        if p99 is None and n and acc >= 0.99 * n:
            p99 = 1 << k if k else 1
    return {
        "requests": sum(c["requests"]["read"] for c in cs),
        "dispatches": disp,
        "agg_performed_mean": sum((k + 1) * v for k, v in enumerate(perf)) / disp if disp else None,
        "agg_possible_mean": sum((k + 1) * v for k, v in enumerate(poss)) / disp if disp else None,
        "waits_taken": sum(c["waits"]["taken"] for c in cs),
        "waits_aggregated": sum(c["waits"]["aggregated"] for c in cs),
        "waits_timed_out": sum(c["waits"]["timed_out"] for c in cs),
        "request_wait_mean_us": sum(c["request_wait"]["sum_us"] for c in cs) / n if n else None,
        "request_wait_p99_us_le": p99,
        "queue_max": max(c["queue"]["max"] for c in cs),
    }


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--reps", type=int, default=3, help="reads per policy (default 3)")
    ap.add_argument("--tasks", type=int, default=8, help="reading processes (default 8)")
    ap.add_argument("--segments", type=int, default=64, help="segments: strips per task (default 64)")
    ap.add_argument("--prefix", default="aiob", help="netns cluster prefix (default aiob)")
    ap.add_argument("--subnet", default="10.79.12.0/24", help="netns cluster subnet (default 10.79.12.0/24)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / "aioli_pfs.json"))
    a = ap.parse_args()
    if not KERNEL.exists():
        sys.exit("aioli_pfs: kernels/build/pfs_read is missing: make -C kernels (needs the glusterfs role)")
    order = [p for p in POLICIES if p != "app_aware"] * a.reps
    random.Random(a.seed).shuffle(order)
    order = ["fifo"] + order + ["app_aware"] * a.reps  # the first fifo read records the trace
    t0 = time.monotonic()
    rows: dict[str, list] = {p: [] for p in POLICIES}
    with tempfile.TemporaryDirectory(prefix="aioli-bench-") as tmp:
        work = Path(tmp)
        state, inventory = work / "netns", work / "inventory.yml"
        cluster = [sys.executable, str(CLUSTER), "--state-dir", str(state)]
        must(
            run(cluster + ["up", "2", "--prefix", a.prefix, "--subnet", a.subnet, "--inventory", str(inventory)]),
            "netns-cluster up",
        )
        try:
            pfs = _common.pfs_command(
                work,
                inventory,
                state,
                servers=2,
                colocate_client=True,
                state_dir=str(work / "pfs-state"),
                brick={"backend": "dir"},
                link={"shape": False},
                server_xlators=[{"name": "corun-aioli", "type": "corun/aioli"}],
            )
            sched = [sys.executable, "-m", "corun.testbed.pfs_sched"]
            must(run(pfs + ["up"]), "pfs up")
            try:
                lay = json.loads((work / "pfs-state" / "layout.json").read_text())
                vol = [x for v in lay["volfiles"] for x in ("--volfile", v)]
                ssh = ["ssh", "-F", str(state / "ssh_config"), f"{a.prefix}-n1"]
                base = [str(KERNEL), *vol, "--file", "/bench.dat"]
                size = a.tasks * a.segments * STRIP
                must(
                    run(ssh + [" ".join(base + ["--write", "--block-size", str(size), "--transfer-size", "1M"])]),
                    "the write",
                )
                read = base + [
                    "--read",
                    "--tasks",
                    str(a.tasks),
                    "--segments",
                    str(a.segments),
                    "--block-size",
                    "64K",
                    "--transfer-size",
                    "64K",
                ]
                st = str(work / "sched.json")
                for i, policy in enumerate(order):
                    sets = []
                    if i == 0:
                        sets = ["--set", "trace_record={dir}/arrivals.trace"]
                    elif policy == "app_aware":
                        sets = ["--set", "trace={dir}/arrivals.trace"]
                    must(
                        run(
                            sched
                            + [
                                "apply",
                                "--policy",
                                policy,
                                "--pfs-state",
                                str(work / "pfs-state"),
                                "--state",
                                st,
                                *sets,
                            ]
                        ),
                        f"apply {policy}",
                    )
                    if i == 1:
                        time.sleep(1.2)  # the recording is flushed every second
                    out = json.loads(must(run(ssh + [" ".join(read)]), f"the read under {policy}"))
                    cs = counters(lay, time.time())
                    rows[policy].append({"read_bw_mib_s": out["read_bw_mean_mib_s"], **summarise(cs)})
                    print(f"  {policy}: {out['read_bw_mean_mib_s']:.1f} MiB/s", flush=True)
                must(run(sched + ["restore", "--state", st]), "restore")
            finally:
                must(run(pfs + ["down"]), "pfs down")
        finally:
            run(cluster + ["down"])
    print()
    print(
        f"{'policy':15s} {'agg perf':>8s} {'possible':>8s} {'waits (agg/t.o.)':>17s} "
        f"{'wait mean us':>12s} {'p99 us<=':>8s} {'MiB/s mean (min-max)':>22s}"
    )
    summary = []
    for p in POLICIES:
        rs = rows[p]

        def mean(k, rs=rs):
            vals = [r[k] for r in rs if r[k] is not None]
            return statistics.fmean(vals) if vals else None

        bw = [r["read_bw_mib_s"] for r in rs]
        s = {
            "policy": p,
            "reps": len(rs),
            "agg_performed_mean": mean("agg_performed_mean"),
            "agg_possible_mean": mean("agg_possible_mean"),
            "waits_taken": sum(r["waits_taken"] for r in rs),
            "waits_aggregated": sum(r["waits_aggregated"] for r in rs),
            "waits_timed_out": sum(r["waits_timed_out"] for r in rs),
            "request_wait_mean_us": mean("request_wait_mean_us"),
            "request_wait_p99_us_le": max((r["request_wait_p99_us_le"] or 0) for r in rs),
            "read_bw_mean_mib_s": statistics.fmean(bw),
            "read_bw_min_mib_s": min(bw),
            "read_bw_max_mib_s": max(bw),
        }
        summary.append(s)
        fmt = lambda v: "-" if v is None else f"{v:.2f}"  # noqa: E731
        print(
            f"{p:15s} {fmt(s['agg_performed_mean']):>8s} {fmt(s['agg_possible_mean']):>8s} "
            f"{str(s['waits_taken']) + ' (' + str(s['waits_aggregated']) + '/' + str(s['waits_timed_out']) + ')':>17s} "
            f"{fmt(s['request_wait_mean_us']):>12s} {s['request_wait_p99_us_le']:>8d} "
            f"{s['read_bw_mean_mib_s']:>8.1f} ({s['read_bw_min_mib_s']:.1f}-{s['read_bw_max_mib_s']:.1f})"
        )
    out = _common.write_figures(
        a.out,
        {
            "bench": "aioli_pfs",
            "args": vars(a),
            "order": order,
            "duration_s": time.monotonic() - t0,
            "summary": summary,
            "runs": rows,
        },
    )
    print(f"\nwritten: {out} ({time.monotonic() - t0:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())

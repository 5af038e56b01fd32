#!/usr/bin/env python3
"""Daemon CPU use per node at MPL 5, on a netns cluster (paper 001, schedulers/mpi_cosched).

The mpl_sweep experiment's local configuration (workflows/config/local.yaml: WL6 jobs of 2
ranks, one per host, the mpi_stencil stand-in unless NPB is provisioned), at MPL 5, with --jobs
jobs all submitted at once (so that five jobs share each host while the queue lasts), on a netns
cluster of 2 hosts with one CPU each; one run per scheme, in the order given. While each run
goes on, every 0.1 s the bench reads /proc/<pid>/stat of each node daemon (corun-cosched,
found by its command line, which holds the run folder): utime + stime at the last sample, over
the daemon's life (its start time, field 22, to the last sample). Printed per scheme and node:
the daemon's CPU seconds, its wall seconds and CPU per second of wall time (% of one core), and
beside it the daemon's own figure (getrusage in its summary.json, cluster.daemons of the run's
metadata). The cluster is removed at the end, whatever happens. Needs root. Figures, not a test;
about 15 s per scheme on 2 vCPUs.

  .venv/bin/python bench/mpi_cosched_daemon_cpu.py [--schemes local,dcs,pb,ib,sb,hybrid,cc_s,cc_b,gang]
      [--jobs 10] [--prefix cormpld] [--subnet 10.77.11.0/24] [--json OUT] [--keep]
"""

from __future__ import annotations

import argparse
import copy
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


from bench import _common  # noqa: E402
from experiments.config import profile_config, validate_config  # noqa: E402
from experiments.mpl_sweep import experiment as ms  # noqa: E402

SCHEMES = ["local", "dcs", "pb", "ib", "sb", "hybrid", "cc_s", "cc_b", "gang"]
MPL = 5
TICK_S = os.sysconf("SC_CLK_TCK")
SAMPLE_S = 0.1


cluster = _common.netns_cluster


def config(jobs: int, inventory: Path, schemes: list[str], tmp: Path) -> dict:
    raw = profile_config(ROOT / "workflows" / "config" / "local.yaml")
    raw["results_dir"] = str(tmp)  # the runs' device.path: an existing folder
    sec = copy.deepcopy(raw["mpl_sweep"])
    sec.update({"schemes": schemes, "mpl_levels": [MPL], "reps": 1, "use_loads": ["heavy"]})
    sec["workloads"]["wl6"] = {**sec["workloads"]["wl6"], "jobs": jobs, "arrival": "burst"}
    sec["cluster"] = {"inventory": str(inventory), "netns": {"hosts": 0}}
    raw["mpl_sweep"] = sec
    raw["experiments"] = ["mpl_sweep"]
    return validate_config(raw, "bench")


def daemons(marker: str) -> dict[int, dict]:
    """pid -> {node, start_ticks, cpu_ticks} of the node daemons whose command line holds marker."""
    out = {}
    for d in os.listdir("/proc"):
        if not d.isdigit():
            continue
        try:
            cmd = Path(f"/proc/{d}/cmdline").read_bytes().split(b"\0")
            if not cmd or not cmd[0].endswith(b"corun-cosched") or marker.encode() not in b" ".join(cmd):
                continue
            stat = Path(f"/proc/{d}/stat").read_text()
        except OSError:
            continue
        f = stat[stat.rindex(")") + 2 :].split()  # fields from 3 on
        args = [a.decode() for a in cmd]
        if "--node-id" not in args:  # --restore or --check of the same state folder, not a daemon
            continue
        node = args[args.index("--node-id") + 1]
        out[int(d)] = {"node": node, "start_ticks": int(f[19]), "cpu_ticks": int(f[11]) + int(f[12])}
    return out


def uptime_s() -> float:
    return float(Path("/proc/uptime").read_text().split()[0])


def run_one(cfg: dict, scheme: str, tmp: Path) -> dict:
    p = {"workload": "wl6", "load": "burst", "scheme": scheme, "mpl": MPL, "rep": 0}
    argv, out = _common.corun_run_command(tmp, ms.run_name(p), ms.make_spec(cfg, p))
    proc = subprocess.Popen(
        argv,
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    seen: dict[int, dict] = {}
    t0 = time.monotonic()
    while proc.poll() is None:
        now = uptime_s()
        for pid, d in daemons(str(out)).items():
            seen.setdefault(pid, d).update(cpu_ticks=d["cpu_ticks"], last_s=now)
        time.sleep(SAMPLE_S)
    _, err = proc.communicate()
    wall = time.monotonic() - t0
    if proc.returncode != 0:
        raise RuntimeError(f"{ms.run_name(p)} failed: {err.strip()[-500:]}")
    meta = json.loads((out / "metadata.json").read_text())
    own = {str(d.get("node_id", d.get("node"))): d for d in (meta.get("cluster") or {}).get("daemons", [])}
    nodes = []
    for pid, d in sorted(seen.items(), key=lambda x: x[1]["node"]):
        cpu = d["cpu_ticks"] / TICK_S
        life = d["last_s"] - d["start_ticks"] / TICK_S
        s = own.get(d["node"], {})
        nodes.append(
            {
                "node": d["node"],
                "pid": pid,
                "cpu_s": cpu,
                "wall_s": life,
                "cpu_per_wall_pct": 100 * cpu / life if life > 0 else None,
                "summary_cpu_s": s.get("cpu_s"),
                "summary_wall_s": s.get("wall_s"),
                "summary_cpu_pct": 100 * s["cpu_share"] if s.get("cpu_share") is not None else None,
                "arrivals": s.get("arrivals"),
                "boosts": s.get("boosts"),
            }
        )
    return {"scheme": scheme, "run_wall_s": wall, "nodes": nodes}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--schemes", default=",".join(SCHEMES), help=f"comma-separated (default {','.join(SCHEMES)})")
    ap.add_argument("--jobs", type=int, default=10, help="jobs per run, all submitted at once (default 10)")
    ap.add_argument("--prefix", default="cormpld", help="netns name prefix (default cormpld)")
    ap.add_argument("--subnet", default="10.77.11.0/24", help="netns cluster subnet (default 10.77.11.0/24)")
    ap.add_argument("--json", type=Path, help="also write the figures as JSON")
    ap.add_argument("--keep", action="store_true", help="keep the run folders (printed at the end)")
    a = ap.parse_args(argv)
    schemes = [s for s in a.schemes.split(",") if s]
    bad = [s for s in schemes if s not in SCHEMES]
    if bad:
        print(f"mpi_cosched_daemon_cpu: --schemes: {bad[0]} (expected some of {','.join(SCHEMES)})", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="mpl-dcpu-"))
    state = tmp / "netns"
    up = cluster(state, "up", "2", "--prefix", a.prefix, "--subnet", a.subnet, "--cpus-per-host", "1",
                 "--inventory", str(state / "inventory.yml"))  # fmt: skip
    results = []
    try:
        if up.returncode != 0:
            print(f"mpi_cosched_daemon_cpu: netns-cluster up failed: {up.stderr.strip()}", file=sys.stderr)
            return up.returncode
        cfg = config(a.jobs, state / "inventory.yml", schemes, tmp)
        for s in schemes:
            try:
                r = run_one(cfg, s, tmp)
            except RuntimeError as exc:
                print(f"mpi_cosched_daemon_cpu: {exc}", file=sys.stderr)
                return 1
            results.append(r)
            for n in r["nodes"]:
                print(
                    f"{s:7s} node {n['node']}: /proc {n['cpu_s']:.2f} s CPU over {n['wall_s']:.2f} s = "
                    f"{n['cpu_per_wall_pct']:.1f}% of a core; summary {n['summary_cpu_pct'] or float('nan'):.1f}%; "
                    f"arrivals {n['arrivals']}, boosts {n['boosts']}",
                    flush=True,
                )
    finally:
        _common.finish_cluster("mpi_cosched_daemon_cpu", state, tmp, a.keep)
    print("\nscheme   mean daemon CPU per node, % of one core (/proc; the daemons' own summary)")
    for r in results:
        p = [n["cpu_per_wall_pct"] for n in r["nodes"] if n["cpu_per_wall_pct"] is not None]
        q = [n["summary_cpu_pct"] for n in r["nodes"] if n["summary_cpu_pct"] is not None]
        print(
            f"{r['scheme']:7s}  {sum(p) / max(1, len(p)):5.1f}  ({sum(q) / max(1, len(q)):5.1f})  "
            f"{len(r['nodes'])} nodes, run {r['run_wall_s']:.1f} s"
        )
    if a.json:
        a.json.write_text(json.dumps({"mpl": MPL, "jobs": a.jobs, "runs": results}, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

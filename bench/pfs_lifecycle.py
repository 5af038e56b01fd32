#!/usr/bin/env python3
"""What a file-system group costs around its runs: netns cluster and file system bring-up and stop.

    .venv/bin/python bench/pfs_lifecycle.py [--experiments aioli,sais]
        [--config workflows/config/local.yaml] [--reps 2] [--out results/bench-pfs_lifecycle]

For each experiment's groups (its specs step on the configuration, into OUT), REPS times, the
steps corun.testbed.pfs_runs takes around a group's runs, each timed: the netns cluster up
(scripts/netns-cluster), the file system up (data servers, their emulated disks, links, client
volfiles: corun.testbed.pfs up), the group's files written, the file system down, the cluster
down. It prints the median of each step per group (0 for a step a pass did not take) and writes
every figure to OUT/times.json. With --share, consecutive groups of one netns cluster run on one,
as `corun.testbed.pfs_runs` runs several groups: the first brings it up, the last takes it down.
Needs root; the groups' clusters use the experiments' own prefixes and subnets, so nothing else
may run them at the same time.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path

import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from corun.testbed import pfs_runs  # noqa: E402
from corun.util import atomic_write_json, repo_root  # noqa: E402
from experiments import get  # noqa: E402
from experiments.config import load_workflow_config  # noqa: E402

STEPS = ["cluster_up", "pfs_up", "write", "pfs_down", "cluster_down"]


def timed(times: dict, step: str, fn, *args) -> None:
    t0 = time.monotonic()
    fn(*args)
    times[step] = time.monotonic() - t0


def one_pass(group: dict, work: Path, shared: Path | None = None, keep: bool = False) -> dict:
    """Every step once, as pfs_runs takes them (on the cluster up in SHARED's folder, if given;
    leaving it up with KEEP); the teardown also after an error."""
    netns = group["cluster"]["kind"] == "netns"
    cfg_file = work / "pfs.yaml"
    left = pfs_runs.teardown(work, cfg_file, netns)
    if left:
        raise SystemExit(f"pfs_lifecycle: could not take down what an earlier pass left: {left[0]}")
    work.mkdir(parents=True, exist_ok=True)
    cfg = dict(group["pfs"])
    if shared is not None:
        cfg["inventory"] = str(shared / "cluster" / "inventory.yml")
        cfg["netns_state"] = str(shared / "cluster" / "state")
    cfg_file.write_text(yaml.safe_dump(cfg, sort_keys=False))
    home = shared or work
    times: dict = {}
    try:
        if netns and shared is None:
            c = group["cluster"]
            args = ["up", str(c["hosts"]), "--prefix", c["prefix"], "--subnet", c["subnet"]]
            args += ["--inventory", cfg["inventory"]]
            timed(times, "cluster_up", pfs_runs._run, pfs_runs.cluster_argv(work, *args), "netns-cluster up")
        timed(times, "pfs_up", pfs_runs._run, pfs_runs.pfs_argv(cfg_file, "up"), "pfs up")
        client = pfs_runs.client_host(group)
        cmds = group.get("write_cmds", [group["write_cmd"]] if group.get("write_cmd") else [])
        t0 = time.monotonic()
        for cmd in cmds:
            pfs_runs._run(client.command(cmd), "writing the file")
        times["write"] = time.monotonic() - t0
    finally:
        if (work / "pfs" / "journal.json").exists():
            timed(times, "pfs_down", pfs_runs._run, pfs_runs.pfs_argv(cfg_file, "down"), "pfs down")
        if netns and not keep and (home / "cluster" / "state" / "state.json").exists():
            timed(times, "cluster_down", pfs_runs._run, pfs_runs.cluster_argv(home, "down"), "netns-cluster down")
    return times


def passes(groups: list[dict], work: Path, share: bool) -> list[dict]:
    """One pass over every group, in order; with SHARE consecutive groups of the same netns
    cluster run on one (pfs_runs with several groups)."""
    out, home = [], None
    for i, g in enumerate(groups):
        key = pfs_runs.cluster_key(g)
        keep = share and key is not None and i + 1 < len(groups) and pfs_runs.cluster_key(groups[i + 1]) == key
        out.append(one_pass(g, work / g["name"], shared=home, keep=keep))
        home = (home or work / g["name"]) if keep else None
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--experiments", default="aioli,sais", help="experiments with file-system groups")
    ap.add_argument("--config", default="workflows/config/local.yaml", help="the workflow configuration")
    ap.add_argument("--reps", type=int, default=2, help="passes per group (default 2)")
    ap.add_argument("--out", type=Path, default=Path("results/bench-pfs_lifecycle"))
    ap.add_argument("--share", action="store_true", help="groups of one netns cluster share it, as pfs_runs runs them")
    a = ap.parse_args(argv)
    if a.reps < 1:
        print(f"pfs_lifecycle: --reps: {a.reps} (expected an integer >= 1)", file=sys.stderr)
        return 2
    cfg = load_workflow_config(repo_root() / a.config)
    out = a.out.resolve()
    rows = []
    for name in a.experiments.split(","):
        exp = get(name)
        specs = out / name / "specs"
        exp.specs(cfg, {}, out / "data", specs)
        groups = json.loads((specs / "groups.json").read_text())["groups"]
        per = [passes(groups, specs.parent.resolve() / "work", a.share) for _ in range(a.reps)]
        for i, group in enumerate(groups):
            ps = [p[i] for p in per]
            row = {
                "experiment": name,
                "group": group["name"],
                "hosts": group["cluster"].get("hosts", "-"),
                "passes": ps,
            }
            row["median_s"] = {s: statistics.median(p.get(s, 0.0) for p in ps) for s in STEPS}
            rows.append(row)
    atomic_write_json(out / "times.json", {"config": a.config, "reps": a.reps, "share": a.share, "groups": rows})
    print(f"median of {a.reps} passes, s ({out / 'times.json'})")
    print(f"{'experiment':<10} {'group':<10} {'hosts':>5} " + " ".join(f"{s:>12}" for s in STEPS) + f" {'total':>8}")
    for r in rows:
        m = r["median_s"]
        cells = " ".join(f"{m[s]:>12.2f}" if s in m else f"{'-':>12}" for s in STEPS)
        print(f"{r['experiment']:<10} {r['group']:<10} {r['hosts']:>5} {cells} {sum(m.values()):>8.2f}")
    for name in a.experiments.split(","):
        total = sum(sum(r["median_s"].values()) for r in rows if r["experiment"] == name)
        print(f"{name}: {total:.2f} s around its runs, every group" + (" (clusters shared)" if a.share else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main())

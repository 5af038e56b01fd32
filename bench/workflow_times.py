#!/usr/bin/env python3
"""Where the time of a workflow went: wall time per rule, from a Snakemake log.

    .venv/bin/python bench/workflow_times.py [LOG]   # default: the newest .snakemake/log/*.log

Snakemake stamps the start of every job (`[date]` then `rule NAME:` ... `jobid: N`) and its end
(`[date]` then `Finished jobid: N (Rule: NAME)`), to the second. This prints, per rule, the
number of jobs, their summed and largest wall time, and the share of the workflow's span; then
the workflow's span, the summed job time and the gap between them (Snakemake's own work: DAG,
scheduling, checks). With `make run` (one core, jobs one after another) the rules `run`,
`run_across_hosts` and `run_groups` are the measurements and the rest is the instrument's own cost around them.

    .venv/bin/python bench/workflow_times.py --runs results/local

adds, per experiment, where its runs' own wall time went (metadata.json `phases_s`): the
process's start, prepare, set-up, jobs, teardown and tables, summed over its runs. A run's
rule time beyond these is the runner's wrapper (a netns cluster brought up and down, say). It
then prints the harness's share per experiment and in total: the experiment's Snakemake time
(the summed wall time of its jobs: data, specs, runs, collect, analyse; one job at a time under
`make run`), its runs' summed job time (`phases_s.jobs_s`), the summed duration of the attempts
measured again because the host or other processes took too much CPU time (`remeasured.earlier`:
repetitions the evidence needs, not the harness's cost), the measurements that are not runs (a
JSON file outside */runs/ with phases_s.jobs_s: the device's calibration, noisy_neighbour's
premise, the jobs a calibrate step timed alone to size the runs), and (time - job time - not runs
- remeasured) / time; the total row takes the workflow's span against every run's job time.

    .venv/bin/python bench/workflow_times.py --make-run [--profile local]

runs `make run` itself (on an up-to-date machine: the second `make run`) and prints where its
wall time went: set-up (the environment and byte-compiling), provisioning (ansible-playbook) and
Snakemake, from the moments make echoes each command.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import time
from collections import defaultdict
from datetime import datetime
from pathlib import Path

WILDCARDS = re.compile(r"^\s+wildcards: (.*)$")
STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
START = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISH = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)$")


def parse(lines: list[str]) -> tuple[list[tuple[str, float]], float]:
    """[(rule, seconds)] of every finished job, and the span from the first stamp to the last."""
    jobs, span = parse_jobs(lines)
    return [(rule, sec) for rule, sec, _ in jobs], span


def parse_jobs(lines: list[str]) -> tuple[list[tuple[str, float, dict[str, str]]], float]:
    """[(rule, seconds, wildcards)] of every finished job, and the span from the first stamp to
    the last."""
    when: datetime | None = None
    first: datetime | None = None
    pending_rule: str | None = None
    started: dict[str, tuple[str, datetime]] = {}
    wildcards: dict[str, dict[str, str]] = {}
    last_job: str | None = None
    done: list[tuple[str, float, dict[str, str]]] = []
    for raw in lines:
        line = raw.rstrip("\n")
        m = STAMP.match(line)
        if m:
            when = datetime.strptime(" ".join(m.group(1).split()), "%a %b %d %H:%M:%S %Y")
            first = first or when
            continue
        m = START.match(line)
        if m and when is not None:
            pending_rule = m.group(1)
            continue
        m = JOBID.match(line)
        if m and pending_rule is not None and when is not None:
            started[m.group(1)] = (pending_rule, when)
            last_job, pending_rule = m.group(1), None
            continue
        m = WILDCARDS.match(line)
        if m and last_job is not None:
            pairs = (kv.split("=", 1) for kv in m.group(1).split(", ") if "=" in kv)
            wildcards[last_job] = {k.strip(): v.strip() for k, v in pairs}
            continue
        m = FINISH.match(line)
        if m and when is not None and m.group(1) in started:
            rule, t0 = started.pop(m.group(1))
            done.append((rule, (when - t0).total_seconds(), wildcards.pop(m.group(1), {})))
    span = (when - first).total_seconds() if when and first else 0.0
    return done, span


PHASES = ["process_start_s", "prepare_s", "setup_s", "jobs_s", "teardown_s", "tables_s"]


def run_phases(results: Path) -> dict[str, dict[str, float]]:
    """{experiment: {phase: seconds summed over its runs, "runs": n, "unrecorded": n,
    "remeasured_s": the summed duration of the attempts measured again}} from
    RESULTS/<experiment>/runs/<run>/metadata.json (a run's client hosts' runs beside it too)."""
    out: dict[str, dict[str, float]] = {}
    for meta_path in sorted(results.glob("*/runs/*/metadata.json")):
        exp = meta_path.parents[2].name
        acc = out.setdefault(exp, {"runs": 0, "unrecorded": 0, "remeasured_s": 0.0, **{k: 0.0 for k in PHASES}})
        acc["runs"] += 1
        try:
            meta = json.loads(meta_path.read_text())
        except (OSError, ValueError):
            meta = {}
        phases = meta.get("phases_s")
        # attempts measured again because the host or other processes took too much CPU time
        # (steal, foreign CPU): repetitions the evidence needed, measured like the kept one
        # (within the run's process_start)
        acc["remeasured_s"] += sum(
            e.get("duration_s") or 0.0 for e in (meta.get("remeasured") or {}).get("earlier", [])
        )
        if not phases:
            acc["unrecorded"] += 1
            continue
        for k in PHASES:
            acc[k] += phases.get(k) or 0.0
    return out


def print_phases(results: Path) -> int:
    per = run_phases(results)
    if not per:
        print(f"workflow_times: {results}: no run with a metadata.json under */runs/", file=sys.stderr)
        return 1
    heads = [k.removesuffix("_s") for k in PHASES] + ["remeasured"]
    print(f"\nwhere the runs' own wall time went (s, summed over runs), {results}")
    print(
        "(remeasured: the attempts set aside for steal, within the process's start; process_start "
        "is shown without them)"
    )
    print(f"{'experiment':<22} {'runs':>5} " + " ".join(f"{h:>13}" for h in heads) + f" {'not jobs':>9}")
    for exp, acc in sorted(per.items(), key=lambda kv: -kv[1]["jobs_s"]):
        row = {**acc, "process_start_s": max(0.0, acc["process_start_s"] - acc["remeasured_s"])}
        other = sum(row[k] for k in PHASES if k != "jobs_s")
        note = f"  ({acc['unrecorded']} runs without phases_s)" if acc["unrecorded"] else ""
        cells = " ".join(f"{row[k]:>13.1f}" for k in [*PHASES, "remeasured_s"])
        print(f"{exp:<22} {acc['runs']:>5} {cells} {other:>9.1f}{note}")
    return 0


def measured_outside_runs(results: Path) -> dict[str, float]:
    """{first folder under RESULTS: seconds} of the workflow's measurements that are not runs
    (the device's calibration, noisy_neighbour's premise, the jobs a calibrate step timed alone:
    its calibration.json): every JSON file outside */runs/ whose top level has phases_s.jobs_s,
    the seconds it measured (not its own set-up)."""
    out: dict[str, float] = defaultdict(float)
    for path in results.glob("*/**/*.json"):
        rel = path.relative_to(results)
        if "runs" in rel.parts or path.stat().st_size > 1 << 20:
            continue
        try:
            text = path.read_text()
            doc = json.loads(text) if '"phases_s"' in text else None
        except (OSError, ValueError):
            continue
        jobs_s = ((doc or {}).get("phases_s") or {}).get("jobs_s") if isinstance(doc, dict) else None
        if isinstance(jobs_s, (int, float)):
            out[rel.parts[0]] += float(jobs_s)
    return dict(out)


def experiment_of(rule: str, wildcards: dict[str, str], names: list[str]) -> str | None:
    """The experiment a job belongs to: its `exp` wildcard, else the longest experiment name in
    its rule's name as a whole part (a log of rules named per experiment, as before one rule served
    every experiment: run_mpl_sweep, make_aioli_specs)."""
    if wildcards.get("exp") in names:
        return wildcards["exp"]
    hits = [n for n in names if re.search(rf"(?:^|_){re.escape(n)}(?:_|$)", rule)]
    return max(hits, key=len) if hits else None


def harness_share(
    jobs: list[tuple[str, float, dict[str, str]]], span: float, per_runs: dict, outside: dict | None = None
) -> list[tuple]:
    """Rows (experiment, Snakemake s, runs, summed job s, measured outside runs s, remeasured s,
    harness share) per experiment with runs, then ("(other rules)", ...) and ("total", workflow
    span, ...). The share is (time - job time - measured outside runs - remeasured attempts) /
    time: an attempt measured again because of steal is a repetition the evidence needs, and a
    measurement that is not a run (OUTSIDE, from measured_outside_runs: the device's calibration,
    a premise) is measuring too; neither is the harness's cost. OUTSIDE of a folder that is no
    experiment with runs counts in "(other rules)"."""
    names = sorted(per_runs)
    outside = outside or {}
    wall: dict[str | None, float] = defaultdict(float)
    for rule, sec, wc in jobs:
        wall[experiment_of(rule, wc, names)] += sec
    rows = []
    for exp in sorted(names, key=lambda n: -wall.get(n, 0.0)):
        t, j, r = wall.get(exp, 0.0), per_runs[exp]["jobs_s"], per_runs[exp].get("remeasured_s", 0.0)
        o = outside.get(exp, 0.0)
        rows.append((exp, t, int(per_runs[exp]["runs"]), j, o, r, (t - j - o - r) / t if t > 0 else None))
    other_o = sum(v for k, v in outside.items() if k not in per_runs)
    if wall.get(None) or other_o:
        t = wall.get(None, 0.0)
        rows.append(("(other rules)", t, 0, 0.0, other_o, 0.0, (t - other_o) / t if t > 0 else None))
    total_jobs = sum(a["jobs_s"] for a in per_runs.values())
    total_o = sum(outside.values())
    total_re = sum(a.get("remeasured_s", 0.0) for a in per_runs.values())
    total_runs = int(sum(a["runs"] for a in per_runs.values()))
    share = (span - total_jobs - total_o - total_re) / span if span > 0 else None
    rows.append(("total", span, total_runs, total_jobs, total_o, total_re, share))
    return rows


def print_share(jobs: list[tuple[str, float, dict[str, str]]], span: float, results: Path) -> None:
    per = run_phases(results)
    print(
        "\nthe harness's share: (Snakemake time - the runs' job time - measurements that are not runs"
        f" - attempts measured again for steal) / Snakemake time, {results}"
    )
    print(
        f"{'experiment':<22} {'snakemake s':>11} {'runs':>5} {'jobs s':>9} {'not runs s':>10}"
        f" {'remeasured s':>12} {'harness %':>9}"
    )
    for exp, t, n, j, o, r, share in harness_share(jobs, span, per, measured_outside_runs(results)):
        cell = f"{100 * share:>9.1f}" if share is not None else f"{'-':>9}"
        print(f"{exp:<22} {t:>11.1f} {n:>5} {j:>9.1f} {o:>10.1f} {r:>12.1f} {cell}")


def time_make_run(profile: str) -> int:
    """Run `make run PROFILE=...` and print its set-up, provisioning and Snakemake times."""
    marks = {"ansible-playbook": "provisioning", "snakemake --profile": "snakemake"}
    t0 = time.monotonic()
    at: dict[str, float] = {}
    proc = subprocess.Popen(
        ["make", "run", f"PROFILE={profile}"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    assert proc.stdout is not None
    for line in proc.stdout:
        sys.stdout.write(line)
        for key, phase in marks.items():
            if phase not in at and key in line and line.lstrip().startswith((".venv/bin/", "/")):
                at[phase] = time.monotonic() - t0
    rc = proc.wait()
    total = time.monotonic() - t0
    prov, snake = at.get("provisioning"), at.get("snakemake")
    print(f"\nmake run PROFILE={profile}: exit {rc}, {total:.1f} s")
    if prov is not None and snake is not None:
        print(f"  set-up (environment, byte-compiling)  {prov:7.1f} s")
        print(f"  provisioning (ansible-playbook)       {snake - prov:7.1f} s")
        print(f"  set-up and provisioning               {snake:7.1f} s")
        print(f"  snakemake                             {total - snake:7.1f} s")
    else:
        print("  (make echoed no ansible-playbook or snakemake command: phases not timed)")
    return rc


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", help="a Snakemake log (default: the newest in .snakemake/log)")
    ap.add_argument("--runs", type=Path, help="a results folder (results/local): per-experiment run phases")
    ap.add_argument("--make-run", action="store_true", help="run `make run` and time its set-up and provisioning")
    ap.add_argument("--profile", default="local", help="the profile of --make-run (default local)")
    a = ap.parse_args(argv)
    if a.make_run:
        return time_make_run(a.profile)
    if a.log:
        path = Path(a.log)
    else:
        logs = sorted(Path(".snakemake/log").glob("*.snakemake.log"))
        if not logs:
            print("workflow_times: no log in .snakemake/log; name one", file=sys.stderr)
            return 2
        path = logs[-1]
    jobs, span = parse_jobs(path.read_text(errors="replace").splitlines())
    done = [(rule, sec) for rule, sec, _ in jobs]
    if not done:
        print(f"workflow_times: {path}: no finished job in this log", file=sys.stderr)
        return 1
    per: dict[str, list[float]] = defaultdict(list)
    for rule, s in done:
        per[rule].append(s)
    total = sum(s for _, s in done)
    print(f"{path}: {len(done)} jobs, span {span / 60:.1f} min, jobs' summed wall time {total / 60:.1f} min")
    print(f"{'rule':<34} {'jobs':>5} {'sum s':>8} {'max s':>7} {'% span':>7}")
    for rule, xs in sorted(per.items(), key=lambda kv: -sum(kv[1])):
        print(f"{rule:<34} {len(xs):>5} {sum(xs):>8.0f} {max(xs):>7.0f} {100 * sum(xs) / max(span, 1):>7.1f}")
    print(f"{'(between jobs: Snakemake itself)':<34} {'':>5} {max(span - total, 0):>8.0f}")
    if not a.runs:
        return 0
    rc = print_phases(a.runs)
    if rc == 0:
        print_share(jobs, span, a.runs)
    return rc


if __name__ == "__main__":
    sys.exit(main())

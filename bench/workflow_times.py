#!/usr/bin/env python3
"""Where the time of a workflow went: wall time per rule, from a Snakemake log.

    .venv/bin/python bench/workflow_times.py [LOG]   # default: the newest .snakemake/log/*.log

Snakemake stamps the start of every job (`[date]` then `rule NAME:` ... `jobid: N`) and its end
(`[date]` then `Finished jobid: N (Rule: NAME)`), to the second. This prints, per rule, the
number of jobs, their summed and largest wall time, and the share of the workflow's span; then
the workflow's span, the summed job time and the gap between them (Snakemake's own work: DAG,
scheduling, checks). With `make run` (one core, jobs one after another) the rules `run_<exp>`
are the measurements and the rest is the instrument's own cost around them.

    .venv/bin/python bench/workflow_times.py --runs results/local

adds, per experiment, where its runs' own wall time went (metadata.json `phases_s`): the
process's start, prepare, set-up, jobs, teardown and tables, summed over its runs. A run's
rule time beyond these is the runner's wrapper (a netns cluster brought up and down, say).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections import defaultdict
from datetime import datetime
from pathlib import Path

STAMP = re.compile(r"^\[(\w{3} \w{3} +\d+ \d\d:\d\d:\d\d \d{4})\]$")
START = re.compile(r"^(?:local)?(?:rule|checkpoint) (\S+):$")
JOBID = re.compile(r"^\s+jobid: (\d+)$")
FINISH = re.compile(r"^Finished jobid: (\d+) \(Rule: (\S+)\)$")


def parse(lines: list[str]) -> tuple[list[tuple[str, float]], float]:
    """[(rule, seconds)] of every finished job, and the span from the first stamp to the last."""
    when: datetime | None = None
    first: datetime | None = None
    pending_rule: str | None = None
    started: dict[str, tuple[str, datetime]] = {}
    done: list[tuple[str, float]] = []
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
            pending_rule = None
            continue
        m = FINISH.match(line)
        if m and when is not None and m.group(1) in started:
            rule, t0 = started.pop(m.group(1))
            done.append((rule, (when - t0).total_seconds()))
    span = (when - first).total_seconds() if when and first else 0.0
    return done, span


PHASES = ["process_start_s", "prepare_s", "setup_s", "jobs_s", "teardown_s", "tables_s"]


def run_phases(results: Path) -> dict[str, dict[str, float]]:
    """{experiment: {phase: seconds summed over its runs, "runs": n, "unrecorded": n}} from
    RESULTS/<experiment>/runs/<run>/metadata.json (a run's client hosts' runs beside it too)."""
    out: dict[str, dict[str, float]] = {}
    for meta_path in sorted(results.glob("*/runs/*/metadata.json")):
        exp = meta_path.parents[2].name
        acc = out.setdefault(exp, {"runs": 0, "unrecorded": 0, **{k: 0.0 for k in PHASES}})
        acc["runs"] += 1
        try:
            phases = json.loads(meta_path.read_text()).get("phases_s")
        except (OSError, ValueError):
            phases = None
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
    heads = [k.removesuffix("_s") for k in PHASES]
    print(f"\nwhere the runs' own wall time went (s, summed over runs), {results}")
    print(f"{'experiment':<22} {'runs':>5} " + " ".join(f"{h:>13}" for h in heads) + f" {'not jobs':>9}")
    for exp, acc in sorted(per.items(), key=lambda kv: -kv[1]["jobs_s"]):
        other = sum(acc[k] for k in PHASES if k != "jobs_s")
        note = f"  ({acc['unrecorded']} runs without phases_s)" if acc["unrecorded"] else ""
        cells = " ".join(f"{acc[k]:>13.1f}" for k in PHASES)
        print(f"{exp:<22} {acc['runs']:>5} {cells} {other:>9.1f}{note}")
    return 0


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("log", nargs="?", help="a Snakemake log (default: the newest in .snakemake/log)")
    ap.add_argument("--runs", type=Path, help="a results folder (results/local): per-experiment run phases")
    a = ap.parse_args(argv)
    if a.log:
        path = Path(a.log)
    else:
        logs = sorted(Path(".snakemake/log").glob("*.snakemake.log"))
        if not logs:
            print("workflow_times: no log in .snakemake/log; name one", file=sys.stderr)
            return 2
        path = logs[-1]
    done, span = parse(path.read_text(errors="replace").splitlines())
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
    return print_phases(a.runs) if a.runs else 0


if __name__ == "__main__":
    sys.exit(main())

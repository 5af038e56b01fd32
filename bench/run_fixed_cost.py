#!/usr/bin/env python3
"""Per-run fixed cost of `corun run`: everything that is not the jobs themselves.

Runs `python -m corun run SPEC --out DIR` as a fresh process (interpreter start, imports, spec
parsing and validation, machine set-up and teardown, metadata, tidy tables) on two trivial
specs: a job that exits at once without monitors, and the same job with the usual monitors
(iostat, pidstat, psi, perf, memory as the workflow configs enable them). The job's own
runtime is subtracted, so the figure is what a campaign pays per run on top of its jobs; the
CPU time of the corun process and the tools it starts is printed too (less sensitive to a busy
machine than wall time). The usual monitors are measured twice: on a spec never seen on this
machine, and on a spec written as the workflow's specs step writes it (corun.plan.base
.stamp_remeasure: its remeasure section, checked against the schema there; the run checks it
again). Also prints the import time of the run path
alone. Prints figures; not a pass/fail test.

  .venv/bin/python bench/run_fixed_cost.py [--reps 5]
"""

from __future__ import annotations

import argparse
import csv
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
from corun.plan.base import stamp_remeasure  # noqa: E402

USUAL_MONITORS = ["iostat", "pidstat", "psi", "perf", "memory"]


def spec(name: str, work: Path, monitors: list[str]) -> dict:
    return {
        "name": name,
        "jobs": [{"name": "true", "cmd": ["/bin/true"]}],
        "device": {"path": str(work)},
        "monitors": {"enabled": monitors},
    }


def one_run(work: Path, i: int, monitors: list[str], from_specs_step: bool = False) -> tuple[float, float, float]:
    """(wall time of the corun process, runtime of the job, CPU time of corun and its children) in s."""
    if from_specs_step:
        (work / f"specs{i}").mkdir()
        path = work / f"specs{i}" / "run.yaml"
        path.write_text(yaml.safe_dump(spec(f"fixed-cost-{i}", work, monitors), sort_keys=False))
        stamp_remeasure(path.parent, {"max_steal_pct": None, "attempts": 3})
    else:
        path = work / f"spec{i}.json"
        path.write_text(json.dumps(spec(f"fixed-cost-{i}", work, monitors)))
    out = work / f"run{i}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.monotonic()
    res = subprocess.run(
        [sys.executable, "-m", "corun", "run", str(path), "--out", str(out), "--quiet"],
        cwd=ROOT,
        capture_output=True,
        text=True,
    )
    wall = time.monotonic() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if res.returncode != 0:
        raise SystemExit(f"bench: corun run exited {res.returncode}: {res.stderr.strip()}")
    with open(out / "jobs.csv", newline="") as fh:
        job = float(next(csv.DictReader(fh))["runtime_s"])
    return wall, job, cpu


def import_time() -> float:
    t = time.monotonic()
    subprocess.run([sys.executable, "-c", "import corun.cli.main, corun.run.runner"], cwd=ROOT, check=True)
    return time.monotonic() - t


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--reps", type=int, default=5, help="runs per case (default 5; one warm-up run is discarded)")
    a = ap.parse_args()
    base = ROOT / "results" / "bench"
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base) as tmp:
        work = Path(tmp)
        i = 0
        imports = []
        for _ in range(a.reps):
            imports.append(import_time())
        print(f"start-up and imports of the run path: median {statistics.median(imports):.3f} s")
        for label, monitors, stamped in (
            ("no monitors", [], False),
            ("usual monitors", USUAL_MONITORS, False),
            ("usual monitors, spec from the specs step", USUAL_MONITORS, True),
        ):
            one_run(work, i, monitors, stamped)  # warm-up, discarded
            i += 1
            costs, cpus = [], []
            for _ in range(a.reps):
                wall, job, cpu = one_run(work, i, monitors, stamped)
                i += 1
                costs.append(wall - job)
                cpus.append(cpu)
            print(
                f"fixed cost per run, {label}: median {statistics.median(costs):.3f} s "
                f"(min {min(costs):.3f}, max {max(costs):.3f}, {a.reps} runs; "
                f"CPU time of corun and its tools: median {statistics.median(cpus):.3f} s)"
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())

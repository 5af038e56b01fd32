"""Collect finished run folders into two tidy tables: one row per job, one row per run.

Run-level labels (spec `labels`) and job labels become plain columns (the `label_`
prefix is dropped); `result_*` columns (the jobs' own JSON output) are kept.
Only finished runs (with metadata.json) are accepted: an `.incomplete` folder is an error.

  python -m analysis.collect --out-jobs jobs.csv --out-runs runs.csv RUN_DIR...
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

import pandas as pd


class CollectError(Exception):
    pass


def read_run(run_dir: Path) -> tuple[pd.DataFrame, dict]:
    meta_path = run_dir / "metadata.json"
    if not meta_path.exists():
        raise CollectError(f"{run_dir}: not a finished run (no metadata.json)")
    meta = json.loads(meta_path.read_text())
    jobs = pd.read_csv(run_dir / "jobs.csv")
    jobs = jobs.rename(columns={c: c[len("label_") :] for c in jobs.columns if c.startswith("label_")})
    run_id = run_dir.name
    jobs.insert(0, "run_id", run_id)
    thr = meta.get("throttle") or {}
    sched = meta.get("scheduler") or {}
    run = {
        "run_id": run_id,
        **(meta.get("labels") or {}),
        "variant": sched.get("name"),
        "variant_params": json.dumps(sched.get("params", {}), sort_keys=True),
        "throttle_read_bps": thr.get("read_bps"),
        "throttle_write_bps": thr.get("write_bps"),
        "elevator": (meta.get("device") or {}).get("elevator"),
        "device": (meta.get("device") or {}).get("name"),
        "memory_limit_bytes": (meta.get("memory_cap") or {}).get("limit_bytes"),
        "caches_dropped": meta.get("caches_dropped"),
        "duration_s": meta.get("duration_s"),
        "status": meta.get("status"),
        "host": (meta.get("host") or {}).get("hostname"),
        "metadata_path": str(meta_path),
        "run_dir": str(run_dir),
    }
    return jobs, run


def collect(run_dirs: list[Path]) -> tuple[pd.DataFrame, pd.DataFrame]:
    frames, runs = [], []
    for d in run_dirs:
        j, r = read_run(Path(d))
        frames.append(j)
        runs.append(r)
    jobs = pd.concat(frames, ignore_index=True) if frames else pd.DataFrame()
    return jobs, pd.DataFrame(runs)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="analysis.collect", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--out-jobs", required=True, type=Path)
    ap.add_argument("--out-runs", required=True, type=Path)
    ap.add_argument("runs", nargs="+", type=Path)
    a = ap.parse_args(argv)
    try:
        jobs, runs = collect(a.runs)
    except CollectError as exc:
        print(f"analysis.collect: {exc}", file=sys.stderr)
        return 1
    a.out_jobs.parent.mkdir(parents=True, exist_ok=True)
    jobs.to_csv(a.out_jobs, index=False)
    runs.to_csv(a.out_runs, index=False)
    print(f"{len(runs)} runs, {len(jobs)} jobs", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""Collect finished run folders into two tidy tables: one row per job, one row per run.

Run-level labels (spec `labels`) and job labels become plain columns (the `label_`
prefix is dropped); `result_*` columns (the jobs' own JSON output) are kept.
Only finished runs (with metadata.json) are accepted: an `.incomplete` folder is an error.
A run made of one run per host (RUN_DIR/hosts/<name>/, each with its own metadata.json: sais with
several client hosts on an inventory) contributes every host's jobs under RUN_DIR's run_id, each
with `host_run` (its folder's name; empty for RUN_DIR's own) and `run_host` (the machine it ran on).

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
    run_id = run_dir.name
    frames = [_jobs(run_dir, run_id, "", meta)]
    parts = sorted(p for p in (run_dir / "hosts").iterdir() if p.is_dir()) if (run_dir / "hosts").is_dir() else []
    for part in parts:
        if not (part / "metadata.json").exists():
            raise CollectError(f"{part}: not a finished run (no metadata.json)")
        frames.append(_jobs(part, run_id, part.name, json.loads((part / "metadata.json").read_text())))
    jobs = pd.concat(frames, ignore_index=True) if parts else frames[0]
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
        "monitor_interval_s": (meta.get("monitors") or {}).get("interval_s"),
        "steal_pct": (meta.get("machine_cpu") or {}).get("steal_pct"),
        "foreign_pct": (meta.get("machine_cpu") or {}).get("foreign_pct"),
        "status": meta.get("status"),
        "host": (meta.get("host") or {}).get("hostname"),
        "metadata_path": str(meta_path),
        "run_dir": str(run_dir),
    }
    if parts:
        run["host_runs"] = len(parts) + 1
    return jobs, run


def _jobs(run_dir: Path, run_id: str, host_run: str, meta: dict) -> pd.DataFrame:
    jobs = pd.read_csv(run_dir / "jobs.csv")
    clash = sorted(c for c in jobs.columns if c.startswith("label_") and c[len("label_") :] in jobs.columns)
    if clash:
        raise CollectError(
            f"{run_dir / 'jobs.csv'}: job label {clash[0][len('label_') :]!r} is also a column of the runner's "
            "(expected labels named apart from jobs.csv's own columns)"
        )
    jobs = jobs.rename(columns={c: c[len("label_") :] for c in jobs.columns if c.startswith("label_")})
    jobs.insert(0, "run_id", run_id)
    if host_run or (run_dir / "hosts").is_dir():
        jobs["host_run"] = host_run
        jobs["run_host"] = (meta.get("host") or {}).get("hostname")
    return jobs


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

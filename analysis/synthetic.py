"""Synthetic run folders with the layout `corun run` writes (metadata.json, jobs.csv, tidy/,
monitors/, sched/), for tests with known answers and for bench/compare_scale.py.

`write_run(folder, variant, runtimes, ...)` writes one finished run whose jobs all start at 0
and take the given runtimes, so per-run metrics are known in advance: runtime_s is their mean,
makespan_s their maximum, unfairness_ratio max/min, io_read_mb_s = jobs * read_bytes / 1e6 /
makespan. Nothing here is a measurement; `host.hostname` says so ("synthetic-...").
"""

from __future__ import annotations

import csv
import json
from pathlib import Path

JOB_COLUMNS = [
    "job_id",
    "name",
    "spec_index",
    "copy",
    "cmp",
    "cpus",
    "submit_s",
    "start_s",
    "end_s",
    "runtime_s",
    "exit_code",
    "cpu_user_s",
    "cpu_sys_s",
    "cpu_s",
    "io_read_bytes",
    "cmd",
]


def write_run(
    folder: Path,
    variant: str,
    runtimes: list[float],
    *,
    labels: dict | None = None,
    host: str = "synthetic-host",
    kernel: str = "6.1.0-synthetic",
    build_id: str | None = None,
    verified_at_end: bool | None = True,
    status: str = "ok",
    read_bytes: int = 100_000_000,
    cpu_s: float | None = None,
    start_epoch_s: float = 1_700_000_000.0,
    extra_meta: dict | None = None,
    tidy: bool = True,
) -> Path:
    """Write one finished synthetic run folder; returns it."""
    folder = Path(folder)
    (folder / "jobs").mkdir(parents=True, exist_ok=True)
    rows = []
    for i, rt in enumerate(runtimes):
        cpu = rt * 0.9 if cpu_s is None else cpu_s
        rows.append(
            {
                "job_id": f"{i:04d}-job-{i}",
                "name": f"job-{i}",
                "spec_index": 0,
                "copy": i,
                "cmp": i % 2,
                "cpus": str(i % 2),
                "submit_s": 0.0,
                "start_s": 0.0,
                "end_s": round(rt, 6),
                "runtime_s": round(rt, 6),
                "exit_code": 0 if status == "ok" else 1,
                "cpu_user_s": round(cpu * 0.9, 6),
                "cpu_sys_s": round(cpu * 0.1, 6),
                "cpu_s": round(cpu, 6),
                "io_read_bytes": read_bytes,
                "cmd": "sensitivity_ranking --file data.bin",
            }
        )
        (folder / "jobs" / f"{rows[-1]['job_id']}.out").write_text(json.dumps({"kernel": "synthetic"}) + "\n")
    with open(folder / "jobs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=JOB_COLUMNS)
        w.writeheader()
        w.writerows(rows)
    duration = max(runtimes) if runtimes else 0.0
    if tidy:
        (folder / "tidy").mkdir(exist_ok=True)
        (folder / "monitors").mkdir(exist_ok=True)
        (folder / "sched").mkdir(exist_ok=True)
        (folder / "tidy" / "psi.csv").write_text(
            f"time_epoch_s,t_s,resource,some_pct,full_pct\n{start_epoch_s + 1},1.0,io,12.5,3.0\n"
        )
        (folder / "monitors" / "psi.csv").write_text(f"{start_epoch_s + 1},io,some avg10=12.50\n")
        (folder / "sched" / "job_events.jsonl").write_text(
            "".join(json.dumps({"event": "start", "job": r["job_id"]}) + "\n" for r in rows)
        )
    sched = {
        "name": variant,
        "kind": "none",
        "params": {},
        "verified": True,
        "verified_at_end": verified_at_end,
        "description": f"synthetic variant {variant}",
    }
    if build_id:
        sched["build_id"] = build_id
    meta = {
        "corun_version": "0.1.0",
        "git_describe": "synthetic",
        "run_id": folder.name,
        "labels": dict(labels or {}),
        "host": {"hostname": host, "kernel_release": kernel},
        "scheduler": sched,
        "status": status,
        "jobs_failed": [] if status == "ok" else [rows[0]["job_id"]],
        "start_epoch_s": start_epoch_s,
        "end_epoch_s": start_epoch_s + duration,
        "duration_s": duration,
        "missing": [],
        "advice": [],
    }
    if verified_at_end is not None:
        meta["variant_verified_at_end"] = verified_at_end
    meta.update(extra_meta or {})
    (folder / "metadata.json").write_text(json.dumps(meta, indent=2, sort_keys=True) + "\n")
    return folder

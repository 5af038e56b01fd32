"""The recorder of a run: its tables and metadata.json, written into the run folder.

jobs.csv has one row per job (command, CMP, CPUs, submit/start/end time, runtime, exit status, CPU
time, the /proc/<pid>/io counters, labels, the job's JSON result); tidy/<monitor>.csv the monitors'
tables, parsed in plain Python (a monitor whose output cannot be parsed is a missing metric with
its reason); metadata.json the machine's state, the spec, the devices, caps, variant, where the
wall time went and what could not be restored. The run is built in `<out>.incomplete/` and
renamed to `<out>/` only when everything is written, metadata.json last (WrittenRun.finish), so an
interrupted run never looks finished and a finished one is never edited in place.
"""

from __future__ import annotations

import csv
import os
import shutil
import time
from dataclasses import dataclass
from pathlib import Path

from corun.errors import CorunError
from corun.machine import host, topology
from corun.run import job_result
from corun.run.checked_spec import CheckedSpec, Job
from corun.run.executor import Executor
from corun.run.session import MachineSession
from corun.util import atomic_write_json

IO_KEYS = ["rchar", "wchar", "syscr", "syscw", "read_bytes", "write_bytes", "cancelled_write_bytes"]


@dataclass
class WrittenRun:
    """A run whose tables are written in its `<out>.incomplete/` folder (`tmp`), not yet in place:
    `meta` is its metadata.json to be, which the caller may still add to (run_spec_file: the
    `remeasured` record) before `finish` writes it, once, and renames the folder."""

    name: str
    tmp: Path
    out: Path
    meta: dict
    failed: list[str]
    allow_job_failures: bool

    def set_aside(self, dest: Path) -> None:
        """An attempt measured again: metadata.json written and the folder moved to DEST (never
        under the run's final name)."""
        self._write_meta()
        os.replace(self.tmp, dest)

    def finish(self) -> Path:
        """metadata.json written, then the folder renamed to `out`; raises when the machine could
        not be restored or (unless allowed) a job failed."""
        self._write_meta()
        if self.out.exists():
            shutil.rmtree(self.out)
        os.replace(self.tmp, self.out)
        if self.meta["teardown_errors"]:
            raise CorunError(
                f"run {self.name}: could not restore the machine: " + "; ".join(self.meta["teardown_errors"])
            )
        if self.failed and not self.allow_job_failures:
            raise CorunError(
                f"run {self.name}: {len(self.failed)} job(s) failed ({', '.join(self.failed[:3])}); "
                f"see {self.out}/jobs/*.err"
            )
        return self.out

    def ends_in_error(self) -> bool:
        """Whether `finish` will raise (the run is kept as it is, not measured again)."""
        return bool(self.meta["teardown_errors"]) or bool(self.failed and not self.allow_job_failures)

    def _write_meta(self) -> None:
        (self.tmp / "status.json").unlink(missing_ok=True)
        atomic_write_json(self.tmp / "metadata.json", self.meta)


def write_run(
    plan: CheckedSpec, session: MachineSession, ex: Executor, meta: dict, phases: dict, allow_job_failures: bool
) -> WrittenRun:
    """The tables, in the run's `.incomplete` folder; metadata.json and the rename are the
    returned run's `finish`. Raises when the run did not finish (stopped by a signal)."""
    t_tables = time.monotonic()
    spec, tmp, out = plan.spec, plan.tmp, plan.out
    if ex.stop_reason is not None:
        raise CorunError(
            f"run {spec['name']} stopped by {ex.stop_reason}: partial data left in {tmp} (not a finished run)",
            exit_code=130,
        )
    t0 = ex.t0_epoch
    rows = [job_row(plan, session, ex, j) for j in plan.jobs]
    write_csv(tmp / "jobs.csv", rows)
    missing: list[dict] = []
    tidy = tmp / "tidy"
    tidy.mkdir(exist_ok=True)
    for m in plan.monitors:
        try:
            table, miss = m.tidy(t0)
            table.write_csv(tidy / f"{m.name}.csv")
            missing.extend(miss)
        except Exception as exc:  # noqa: BLE001 - a broken monitor file is a missing metric, not a crash
            missing.append({"metric": m.name, "reason": f"could not parse raw output: {exc}", "source": m.name})
    failed = [r["job_id"] for r in rows if r["exit_code"] != 0]
    cgroup, thr, mem = plan.cgroup, spec["device"]["throttle"], spec["memory"]["limit_bytes"]
    doc = dict(session.host_meta)
    doc.update(meta)
    doc.update(
        {
            "spec": spec,
            "start_epoch_s": t0,
            "end_epoch_s": t0 + (ex.t_end_mono - ex.t0_mono),
            "duration_s": ex.t_end_mono - ex.t0_mono,
            "topology": {
                **plan.topo.as_dict(),
                "cmp_grouping": plan.grouping,
                "cmps": plan.all_cmps,
                "cmps_used": plan.cmp_ids,
            },
            "device": session.device_during,
            "device_after": session.device_after,
            "device_kind": spec["device"]["kind"],
            "device_setup": plan.run_device.describe() if plan.run_device else None,
            "throttle": {**cgroup.describe(), **thr} if thr else None,
            "memory_cap": {
                "limit_bytes": cgroup.memory_limit,
                "requested_bytes": mem,
                "cgroup": str(cgroup.memory_path),
            }
            if mem is not None
            else None,
            "caches_dropped": bool(spec["device"]["drop_caches"]),
            "evicted": meta.get("evicted"),
            "scheduler": {
                **plan.variant.describe(),
                "applied_by": spec["scheduler"].get("applied_by", "run"),
                "verified": meta.get("variant_verified_at_start", False),
                "verified_at_end": meta.get("variant_verified_at_end"),
            },
            "monitors": {"enabled": spec["monitors"]["enabled"], "interval_s": spec["monitors"]["interval_s"]},
            "cluster": cluster_meta(plan, session),
            "missing": missing,
            "jobs_failed": failed,
            "status": "ok" if not failed else "jobs_failed",
        }
    )
    # the interfaces a steering variant works on, traced to their devices: veth links of a netns
    # cluster have no interrupts of their own, whatever NICs the machine has (analysis.machine)
    steered = (doc["scheduler"].get("params") or {}).get("interfaces")
    if steered and doc["scheduler"].get("kind") == "irq_policy":
        doc["steered_nics"] = host.steered_nics(str(steered))
    # prepare: spec checks and the machine lock (its wait is machine_lock); tables: jobs.csv
    # and the monitors' tidy tables, up to this file
    doc["phases_s"] = {**phases, "tables_s": round(time.monotonic() - t_tables, 4)}
    before, after = session.device_before.get("elevator"), session.device_after.get("elevator")
    if after != before:
        doc["teardown_errors"].append(f"elevator of {session.device.name} is {after} after the run, was {before}")
    return WrittenRun(spec["name"], tmp, out, doc, failed, allow_job_failures)


def cluster_meta(plan: CheckedSpec, session: MachineSession) -> dict | None:
    if plan.cluster is None:
        return None
    out = {
        **plan.cluster,
        # shared_machine: a host of this machine (a netns cluster's), joined by veth links
        "hosts": [
            h.describe()
            | {"cpus": h.vars.get("corun_cpus"), "shared_machine": bool(h.vars.get("corun_shared_machine"))}
            for h in plan.hosts
        ],
        "mpi_network": plan.mpi_network,
    }
    if session.node_daemons is not None and session.node_daemons.active:
        out["daemons"] = session.node_daemons.summaries()
        out["daemon_steps_s"] = dict(session.node_daemons.laps.steps)
    return out


def job_row(plan: CheckedSpec, session: MachineSession, ex: Executor, j: Job) -> dict:
    js, t0 = j.spec, ex.t0_mono
    started = j.start_mono is not None
    rt = (j.end_mono - j.start_mono) if started and j.end_mono else None
    row = {
        "job_id": j.job_id,
        "name": j.name,
        "spec_index": j.index,
        "copy": j.copy,
        "cmp": plan.cmp_ids[j.slot.cmp] if j.slot else None,
        "cpus": topology.format_cpulist(j.slot.cpus) if j.slot else None,
        "pid": j.pid,
        "submit_s": float(js.get("submit_s", 0.0)),
        "start_s": round(j.start_mono - t0, 6) if started else None,
        "end_s": round(j.end_mono - t0, 6) if started and j.end_mono else None,
        "runtime_s": round(rt, 6) if rt is not None else None,
        "exit_code": j.exit_code,
        "signal": j.term_signal,
        "timed_out": j.timed_out,
        "cpu_user_s": _r6(j.cpu_user_s),
        "cpu_sys_s": _r6(j.cpu_sys_s),
        "cpu_s": _r6(j.cpu_user_s + j.cpu_sys_s) if j.cpu_user_s is not None else None,
        "max_rss_kb": j.max_rss_kb,
    }
    if js["kind"] == "mpi":  # the paper's response time: waiting in the queue + execution
        sub = float(js["submit_s"])
        row["ranks"] = js["ranks"]
        row["hosts"] = " ".join(f"{plan.hosts[n].name}:{k}" for n, k in j.alloc.nodes) if j.alloc else None
        row["wait_s"] = round(row["start_s"] - sub, 6) if started else None
        row["response_s"] = round(row["end_s"] - sub, 6) if row["end_s"] is not None else None
    for k in IO_KEYS:
        row[f"io_{k}"] = j.io.get(k) if j.io else None
    row["io_read_mb_s"] = (j.io["read_bytes"] / 1e6 / rt) if j.io and rt else None
    row["io_rchar_mb_s"] = (j.io["rchar"] / 1e6 / rt) if j.io and rt else None
    row["cmd"] = " ".join(js["cmd"])
    for k, v in {**plan.spec["labels"], **js["labels"]}.items():
        row[f"label_{k}"] = v
    if js["result"] != "none":
        res, err = job_result.parse(plan.tmp / "jobs" / f"{j.job_id}.out", js["result"])
        row["result_error"] = err
        for k, v in res.items():
            if isinstance(v, (str, int, float, bool)) or v is None:
                row[f"result_{k}"] = v
    return row


def _r6(x: float | None) -> float | None:
    return None if x is None else round(x, 6)


def write_csv(path: Path, rows: list[dict]) -> None:
    cols: list[str] = []
    for r in rows:
        for k in r:
            if k not in cols:
                cols.append(k)
    with open(path, "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=cols)
        w.writeheader()
        for r in rows:
            w.writerow({k: ("" if r.get(k) is None else r.get(k)) for k in cols})

"""SAIs (paper 004): the in-memory study of section 6 (Figs. 13-14) from the pm runs of
kernels/sais_inmem: Si-SAIs (mode thread: a reader and an assembler, two threads of one process
on one CPU) against Si-Irqbalance (mode process: the same work in two processes the Linux
scheduler may run on different CPUs), 64 KiB strips from files in tmpfs (the paper's RAM disk)
assembled into 1 MiB requests.

Evidence the claims read (claims.yaml, inmem_*):
  inmem       one row per pm run: mode, stands_for, apps, online_cpus, saturates (apps >= the
              CPUs: the paper's saturated point), rep, bw_mb_s (the kernel's MB/s over
              its measured seconds), same_cpu_share (strips consumed on the CPU that read them)
              and moved_share = 1 - same_cpu_share (strips that crossed cores), cpu_util_pct;
              failed when the kernel failed or printed no result;
  inmem_pmu   the same runs' L2 miss rate (experiments.sais.pmu, the perf monitor of the run);
              failed as well when the counters ran too briefly for it.
The bandwidth is timed by the kernel over a fixed measured duration (sais.pm.duration_s), so it
does not depend on how fast the machine is; the miss rate needs the run to span the perf
intervals it is counted over.
"""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.common import fmt_num
from experiments.sais import pmu

STANDS_FOR = {"thread": "Si-SAIs", "process": "Si-Irqbalance"}
COLUMNS = ["run_id", "mode", "stands_for", "apps", "online_cpus", "saturates", "rep", "bw_mb_s", "same_cpu_share",
           "moved_share", "cpu_util_pct", "failed", "failed_reason"]  # fmt: skip
PMU_COLUMNS = ["run_id", "mode", "apps", "online_cpus", "saturates", "rep", *pmu.FIGURES, "perf_intervals", "failed",
               "failed_reason"]  # fmt: skip


def _num(row: dict, key: str) -> float:
    v = pd.to_numeric(pd.Series([row.get(key)]), errors="coerce").iloc[0]
    return float(v) if pd.notna(v) else math.nan


def rows(jobs: pd.DataFrame, dirs: dict[str, Path], sec: dict, log: rt.MissingLog) -> tuple[pd.DataFrame, pd.DataFrame]:
    """(inmem, inmem_pmu): one row per pm run each."""
    pm = jobs[jobs["kind"] == "pm"] if "kind" in jobs else jobs.iloc[0:0]
    out, pmu_rows = [], []
    interval = float(sec.get("monitor_interval_s", 0.5))
    for rid, g in pm.groupby("run_id", sort=True):
        r = g.iloc[0].to_dict()
        mode = str(r.get("mode"))
        bw = _num(r, "result_bw_mb_s")
        ok = bool(g["exit_code"].eq(0).all()) and math.isfinite(bw)
        reason = "" if ok else "sais_inmem failed or printed no result"
        apps = next((int(v) for v in (_num(r, "apps"), _num(r, "result_apps")) if math.isfinite(v)), 1)
        cpus = _num(r, "result_online_cpus")
        # as many applications as CPUs fill them (the paper: 99.47 % utilisation), fewer leave room
        saturates = bool(apps >= cpus) if math.isfinite(cpus) else None
        same = _num(r, "result_same_cpu_share")
        util = _num(r, "result_cpu_util_user_pct") + _num(r, "result_cpu_util_sys_pct")
        if not ok:
            log.add("in-memory bandwidth", reason, "experiments.sais.inmem", rid)
        base = {"run_id": rid, "mode": mode, "apps": apps, "online_cpus": cpus, "saturates": saturates,
                "rep": int(r["rep"])}  # fmt: skip
        out.append({**base, "stands_for": STANDS_FOR.get(mode, mode), "bw_mb_s": bw if ok else math.nan,
                    "same_cpu_share": same, "moved_share": 1 - same if math.isfinite(same) else math.nan,
                    "cpu_util_pct": util, "failed": not ok, "failed_reason": reason})  # fmt: skip
        figures, why, span = pmu.totals(dirs.get(rid), sec)
        if why:
            log.add("in-memory L2 miss rate", why, "experiments.sais.inmem", rid)
        short = pmu.too_short(span, figures, interval)
        bad = reason or short or ""
        pmu_rows.append({**base, **figures, "perf_intervals": span["intervals"], "failed": bool(bad),
                         "failed_reason": bad})  # fmt: skip
    return (pd.DataFrame(out, columns=COLUMNS), pd.DataFrame(pmu_rows, columns=PMU_COLUMNS))


def summary(inmem: pd.DataFrame) -> pd.DataFrame:
    """Per (apps, mode): mean MB/s, mean moved share, runs; and Si-SAIs over Si-Irqbalance per apps
    (ratio of the mean bandwidths, for reading: the claims pair the runs by rep)."""
    good = inmem[~inmem["failed"].astype(bool)] if len(inmem) else inmem
    if good.empty:
        return pd.DataFrame(columns=["apps", "mode", "stands_for", "n_runs", "bw_mb_s", "moved_share"])
    t = (
        good.groupby(["apps", "mode", "stands_for"], sort=True)
        .agg(n_runs=("run_id", "count"), bw_mb_s=("bw_mb_s", "mean"), moved_share=("moved_share", "mean"))
        .reset_index()
    )
    bw = t.pivot(index="apps", columns="mode", values="bw_mb_s")
    if {"thread", "process"} <= set(bw.columns):
        ratio = (bw["thread"] / bw["process"]).replace([np.inf, -np.inf], np.nan)
        t["speedup_pct_thread_over_process"] = t["apps"].map(100 * (ratio - 1))
    return t


def lines(t: pd.DataFrame) -> list[str]:
    """The summary's lines: per application count, each mode's MB/s and moved share, the speed-up."""
    out = []
    for apps, g in t.groupby("apps", sort=True) if len(t) else []:
        by = {r["mode"]: r for r in g.to_dict(orient="records")}
        cells = [
            f"{STANDS_FOR[m]} {fmt_num(by[m]['bw_mb_s'])} MB/s ({fmt_num(100 * by[m]['moved_share'])} % of "
            f"strips consumed on another CPU, {by[m]['n_runs']} runs)"
            for m in ("thread", "process")
            if m in by
        ]
        pct = g["speedup_pct_thread_over_process"].iloc[0] if "speedup_pct_thread_over_process" in g else math.nan
        tail = (
            f"; Si-SAIs over Si-Irqbalance {fmt_num(pct)} % (the paper: up to +53.23 %)" if math.isfinite(pct) else ""
        )
        out.append(f"In-memory study (sec. 6), {apps} application(s): " + "; ".join(cells) + tail + ".")
    return out

"""SAIs (paper 004): read bandwidth per steering policy, servers, transfer size, clients and client hosts.

Inputs: the collected jobs.csv / runs.csv of the `sais` experiment (analysis.collect), each
run's tidy monitor tables (<run_dir>/tidy/cpustat.csv, perf.csv), sais_mark's counters
(<run_dir>/sched/state/sais_mark_counters.json, and on an inventory each data server's in
<run_dir>/server_parts/<host>/) and the effective workflow configuration (the
link rate and the strip size).

Metrics
  bw_mib_s        a read run's bandwidth: the sum over its client jobs (every client host's) of pfs_read's
                  result_read_bw_mean_mib_s (the clients read at the same time);
  speedup_pct     points.csv, for reading: a policy over irqbalance at the same (servers, links, transfer,
                  clients): 100 x (ratio - 1), the paired ratio and its 95% CI, a t-interval of the
                  per-rep log ratios (analysis.stats.paired_ratio_t, rep i of each paired);
  speedup_ratio   the evidence of the trend claims: per rep, a policy's bandwidth over irqbalance's;
  per CPU         busy_pct (100 - idle - iowait), softirq_pct, NET_RX softirqs and softnet
                  packets per second from cpustat, averaged over the run's intervals, and each
                  CPU's share of the run's softnet packets (where receive processing ran);
  unhalted_cycles_per_s / l2_miss_rate   the PMU figures as the paper forms them
                  (experiments.sais.pmu): perf's `cycles` per second the counters ran, and the
                  L2 misses over the L2 accesses of sais.l2_events; missing, with perf's reason,
                  where the PMU has no such counter (the runs' own missing records);
  mark_*          sais_mark's BPF counters over the run (stamped requests, recorded and
                  reflected marks, steered replies, marked packets from elsewhere); a sais_mark
                  run without them, or whose replies were not steered, is failed;
  model           P and M from the pm runs (kernels/sais_inmem, experiments.sais.model.
                  p_m_from_inmem, averaged over reps), eqs. 1-9 evaluated per point with
                  N_S = servers, N_C = the client's CPUs, N_P = clients, N_R = strips read /
                  N_S (one strip per server per model request) and T_R = 0 (the equations then
                  give the client's CPU time; the network and server time is the same under every
                  policy and cancels in eq. 9), beside the measured read times.

Evidence the claims (claims.yaml) read, judged by analysis.verdicts:
  runs       one row per read run: labels, bandwidth, PMU totals, sais_mark's counters, failed;
  speedups   one row per (policy, point, rep): the policy's bandwidth over irqbalance's;
  pmu        one row per read run: its PMU figures, failed as well when the counters ran too
             briefly for them (experiments.sais.pmu);
  cpu        one row per read run: the client's CPU utilisation (experiments.sais.cpu), failed
             as well when cpustat sampled too few intervals;
  inmem, inmem_pmu   one row per pm run: the in-memory study (experiments.sais.inmem).

Run by the workflow: python -m experiments analyze sais.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pandas as pd

from analysis import runtables as rt
from analysis.common import fmt_num, run_checks
from analysis.experiment import Figure, Inputs, Result
from analysis.figures import no_data, plt, save_png
from analysis.stats import CONFIDENCE, paired_ratio_t, t_interval
from corun.errors import ConfigError
from experiments.sais import cpu as sais_cpu
from experiments.sais import inmem as sais_inmem
from experiments.sais import model as sais_model
from experiments.sais import pmu

EXPERIMENT = "sais"
BASELINE = "irqbalance"
POLICIES = {"irqbalance", "spread", "dedicated", "source_aware", "sais_mark"}
SOURCE_AWARE = ("source_aware", "sais_mark")  # the paper's SAIs: RFS in stock Linux, or the mark
MARK = "sais_mark"
FIG_NAME = "bandwidth.png"
JOB_TEXT = ["kind", "policy", "mode", "reader", "host_run"]
RUN_TEXT = ["kind", "policy", "mode", "reader"]
KEY = ["servers", "client_links", "transfer_size_bytes", "clients", "client_hosts"]
DEFAULTS = {"client_hosts": 1}  # runs made before a key existed had its default
# One run per client host (an inventory) is summed only when they read at the same time.
MIN_HOST_OVERLAP = 0.9
PMU_POINT = ("unhalted_cycles_per_s", "l2_miss_rate")  # points.csv: per policy and against irqbalance
# sais_mark's counters (schedulers/irq_steering/bpf/sais_mark.bpf.c, sais_stats), as the run records them
MARK_COUNTERS_FILE = Path("sched") / "state" / "sais_mark_counters.json"
MARK_COUNTERS = ("stamped", "recorded", "reflected", "steered", "foreign")
# the model's values (sais_model.evaluate) in model.csv, in this order
MODEL_COLUMNS = (
    "alpha",
    "eq3_balance_lower_s",
    "eq4_source_aware_s",
    "eq5_source_aware_s",
    "eq6_balance_lower_s",
    "eq7_max_requests_per_s",
    "eq8_source_aware_lower_s",
    "eq8_source_aware_upper_s",
    "eq9_difference_lower_s",
    "m_over_p",
)


# ----------------------------------------------------------------------------- per run


def cpu_rows(run_dir: Path | None, run_id: str, log: rt.MissingLog) -> pd.DataFrame:
    """One row per CPU: the means over the run's cpustat intervals and its softnet share."""
    if run_dir is None:
        return pd.DataFrame()
    df, why = rt.load_tidy(run_dir, "cpustat")
    if df is None:
        log.add("CPU utilisation and softirq per CPU", why, "experiments.sais.analysis", run_id)
        return pd.DataFrame()
    df = df[df["t_s"] > 0]
    g = df.groupby("cpu")
    out = g[["busy_pct", "softirq_pct", "system_pct", "user_pct", "net_rx_per_s", "softnet_processed_per_s"]].mean()
    pk = (df["softnet_processed_per_s"] * df["interval_s"]).groupby(df["cpu"]).sum()
    total = pk.sum()
    out["softnet_share"] = pk / total if total > 0 else np.nan
    out["intervals"] = g["t_s"].nunique()
    out = out.reset_index()
    out.insert(0, "run_id", run_id)
    return out


def key_value(row: pd.Series, k: str) -> int:
    v = row.get(k)
    return DEFAULTS[k] if (v is None or pd.isna(v)) and k in DEFAULTS else int(v)


def host_runs_overlap(g: pd.DataFrame) -> float | None:
    """For a run made of one run per client host (analysis.collect's host_run): the time all of
    them were reading, as a share of the longest one's reading (1: fully together); None for a
    run of one host run. A host run reads from its readers' first start to their last end."""
    if "host_run" not in g or g["host_run"].fillna("").nunique() < 2:
        return None
    t0 = g["result_start_epoch_s"].astype(float)
    t1 = t0 + g["runtime_s"].astype(float)
    spans = (
        pd.DataFrame({"h": g["host_run"].fillna(""), "t0": t0, "t1": t1}).groupby("h").agg({"t0": "min", "t1": "max"})
    )
    longest = float((spans["t1"] - spans["t0"]).max())
    if not longest > 0:
        return 0.0
    return max(0.0, float(spans["t1"].min() - spans["t0"].max())) / longest


def mark_counters(run_dir: Path | None) -> tuple[dict, str | None]:
    """sais_mark's counters over a run ({mark_<counter>: value}), or NaN each and why: the run's
    own (the client's half; on the netns cluster both halves), plus, where the controller applied
    the servers' half on other hosts (metadata.json server_parts), each server's, which the
    controller fetched into server_parts/<host>/."""
    out = {f"mark_{k}": math.nan for k in MARK_COUNTERS}
    if run_dir is None:
        return out, "no run folder"
    files = [MARK_COUNTERS_FILE]
    try:
        parts = json.loads((Path(run_dir) / "metadata.json").read_text()).get("server_parts") or []
    except (OSError, ValueError):
        parts = []
    files += [Path("server_parts") / r["host"] / MARK_COUNTERS_FILE.name for r in parts]
    totals = dict.fromkeys(MARK_COUNTERS, 0.0)
    for rel in files:
        try:
            doc = json.loads((Path(run_dir) / rel).read_text())
            for k in MARK_COUNTERS:
                totals[k] += float(doc["totals"][k])
        except (OSError, ValueError, KeyError, TypeError) as exc:
            return out, (
                f"no sais_mark counters in {rel} ({type(exc).__name__}): the run does not show "
                "that its replies were steered"
            )
    return {f"mark_{k}": v for k, v in totals.items()}, None


def mark_failure(counters: dict, why: str | None) -> str | None:
    """Why a sais_mark run did not run the paper's mechanism, or None: its counters are missing,
    no request was stamped, or no reply came back steered."""
    if why:
        return why
    if not counters["mark_stamped"] > 0:
        return "sais_mark stamped no request (mark_stamped = 0)"
    if not counters["mark_steered"] > 0:
        return (
            f"sais_mark steered no reply ({int(counters['mark_stamped'])} requests stamped, "
            f"{int(counters['mark_reflected'])} marks reflected, 0 replies steered)"
        )
    return None


def read_runs(
    jobs: pd.DataFrame, runs: pd.DataFrame, dirs: dict[str, Path], log: rt.MissingLog, sec: dict | None = None
) -> pd.DataFrame:
    """One row per read run: labels, bandwidth, read time, the PMU figures, sais_mark's counters,
    failed and why (perf_intervals: how long the counters ran; the pmu table judges it)."""
    sec = sec or {}
    rd = jobs[jobs["kind"] == "read"]
    rows = []
    for rid, g in rd.groupby("run_id", sort=True):
        ok = g["exit_code"].eq(0).all() and g["result_read_bw_mean_mib_s"].notna().all()
        first = g.iloc[0]
        reason = "" if ok else "a client job failed or printed no result"
        together = host_runs_overlap(g)
        if together is not None and together < MIN_HOST_OVERLAP:
            ok = False
            reason = (
                f"the client hosts' runs read at different times (their reading overlapped {100 * together:.0f} %, "
                f"below {100 * MIN_HOST_OVERLAP:.0f} %): their bandwidths cannot be summed"
            )
        perf, why, span = pmu.totals(dirs.get(rid), sec)
        if why:
            log.add("unhalted cycles, L2 miss rate", why, "experiments.sais.analysis", rid)
        counters, cwhy = mark_counters(dirs.get(rid))
        if first["policy"] == MARK:
            bad = mark_failure(counters, cwhy)
            if bad and ok:
                ok, reason = False, bad
        if not ok:
            log.add("bandwidth", reason, "experiments.sais.analysis", rid)
        rows.append(
            {
                "run_id": rid,
                "policy": first["policy"],
                **{k: key_value(first, k) for k in KEY},
                "rep": int(first["rep"]),
                "bw_mib_s": float(g["result_read_bw_mean_mib_s"].sum()) if ok else math.nan,
                "read_time_s": float(g["result_read_time_mean_s"].mean()) if ok else math.nan,
                "bytes_per_client": float(first.get("result_bytes_per_phase", math.nan)),
                "strip_size_bytes": float(first.get("result_strip_size_bytes", math.nan)),
                "failed_jobs": int((~g["exit_code"].eq(0)).sum()),
                **perf,
                "perf_intervals": span["intervals"],
                **counters,
                "failed": not ok,
                "failed_reason": reason,
            }
        )
    return pd.DataFrame(rows)


def speedup_rows(per_run: pd.DataFrame) -> pd.DataFrame:
    """One row per (policy, point, rep) beside irqbalance's run of the same point and rep: the
    policy's bandwidth over irqbalance's (the trend claims' evidence); failed when either run is."""
    cols = ["run_id", "base_run_id", "policy", *KEY, "rep", "speedup_ratio", "failed", "failed_reason"]
    if per_run.empty:
        return pd.DataFrame(columns=cols)
    base = per_run[per_run["policy"] == BASELINE]
    head = per_run[per_run["policy"] != BASELINE]
    m = head.merge(base, on=[*KEY, "rep"], suffixes=("", "_base"))
    if m.empty:
        return pd.DataFrame(columns=cols)
    m["base_run_id"] = m["run_id_base"]
    m["speedup_ratio"] = m["bw_mib_s"] / m["bw_mib_s_base"]
    head_failed, base_failed = m["failed"].astype(bool), m["failed_base"].astype(bool)
    m["failed_reason"] = [
        "; ".join(x for x in (a if fa else "", f"{rb}: {b}" if fb else "") if x)
        for a, fa, b, fb, rb in zip(m["failed_reason"], head_failed, m["failed_reason_base"], base_failed,
                                    m["run_id_base"])
    ]  # fmt: skip
    m["failed"] = head_failed | base_failed
    return m[cols].reset_index(drop=True)


# ----------------------------------------------------------------------------- points


def points(per_run: pd.DataFrame, confidence: float = CONFIDENCE) -> pd.DataFrame:
    """Per (policy, servers, links, transfer, clients): mean bandwidth with its t-interval,
    speed-up over irqbalance with its paired CI (both at `confidence`, the verdicts' level of the
    look), and the PMU figures against irqbalance."""
    rows = []
    if per_run.empty:
        return pd.DataFrame()
    for (policy, *key), g in per_run.groupby(["policy", *KEY], sort=True):
        good = g.dropna(subset=["bw_mib_s"]).sort_values("rep")
        lo, hi = t_interval(good["bw_mib_s"], confidence) if len(good) >= 2 else (math.nan, math.nan)
        row = {
            "policy": policy,
            **dict(zip(KEY, key)),
            "n_reps": len(good),
            "bw_mib_s": good["bw_mib_s"].mean() if len(good) else math.nan,
            "bw_ci_low": lo,
            "bw_ci_high": hi,
            "ci_level": confidence,
            "read_time_s": good["read_time_s"].mean() if len(good) else math.nan,
            **{m: good[m].mean() if len(good) else math.nan for m in PMU_POINT},
        }
        base = per_run[
            (per_run["policy"] == BASELINE) & np.logical_and.reduce([per_run[k] == v for k, v in zip(KEY, key)])
        ].dropna(subset=["bw_mib_s"])
        pair = base.merge(good, on="rep", suffixes=("_base", ""))
        if policy != BASELINE and len(pair):
            ratio, low, high = paired_ratio_t(pair["bw_mib_s_base"], pair["bw_mib_s"], confidence)
            row.update(speedup_pct=100 * (ratio - 1), speedup_ci_low=100 * (low - 1), speedup_ci_high=100 * (high - 1))
            for m in PMU_POINT:  # the paper's figures: unhalted time larger, L2 miss rate lower
                b, h = pair[f"{m}_base"].mean(), pair[m].mean()
                row[f"{m}_change_pct"] = 100 * (h / b - 1) if b and np.isfinite(b) and np.isfinite(h) else math.nan
            row["n_pairs"] = len(pair)
        rows.append(row)
    return pd.DataFrame(rows)


def cpu_table(per_run: pd.DataFrame, cpus: pd.DataFrame) -> pd.DataFrame:
    """Per (policy, point, CPU): the means over the reps of each CPU's figures."""
    if cpus.empty or per_run.empty:
        return pd.DataFrame()
    m = cpus.merge(per_run[["run_id", "policy", *KEY]], on="run_id")
    cols = [
        "busy_pct",
        "softirq_pct",
        "system_pct",
        "user_pct",
        "net_rx_per_s",
        "softnet_processed_per_s",
        "softnet_share",
    ]
    return m.groupby(["policy", *KEY, "cpu"], sort=True)[cols].mean().reset_index()


# ----------------------------------------------------------------------------- the model


def pm_inputs(jobs: pd.DataFrame) -> tuple[float | None, float | None, str]:
    """P and M (s per strip) averaged over the reps of the one-application pm runs, or None and why."""
    pm = jobs[jobs["kind"] == "pm"]
    if "apps" in pm:  # runs made before pm.apps existed ran one application
        pm = pm[pd.to_numeric(pm["apps"], errors="coerce").fillna(1) == 1]
    if pm.empty:
        return None, None, "no pm runs (kernels/sais_inmem) in the experiment"
    ps, ms = [], []
    for _rep, g in pm.groupby("rep"):
        by = {r["mode"]: r for r in g.to_dict(orient="records") if r.get("exit_code") == 0}
        if {"thread", "process"} <= set(by):
            t, p = (
                {"strips": by[m].get("result_strips"), "measured_s": by[m].get("result_measured_s"), "apps": 1}
                for m in ("thread", "process")
            )
            try:
                pv, mv = sais_model.p_m_from_inmem(t, p)
            except ConfigError:
                continue
            ps.append(pv)
            ms.append(mv)
    if not ps:
        return None, None, "no rep with both a thread and a process pm run that finished"
    return float(np.mean(ps)), float(np.mean(ms)), ""


def model_table(
    pts: pd.DataFrame, per_run: pd.DataFrame, n_c: int | None, p_s, m_s, why: str, sec: dict
) -> pd.DataFrame:
    """Eqs. 3-9 per point beside the measured read times of irqbalance and source-aware."""
    rows = []
    if pts.empty:
        return pd.DataFrame()
    rate = sec.get("link_rate_mbit", 1000) * 1e6 / 8
    strip = sec.get("strip_size_bytes", 65536)
    for key, g in pts.groupby(KEY, sort=True):
        k = dict(zip(KEY, key))
        by = {r["policy"]: r for r in g.to_dict(orient="records")}
        sa = next((by[p] for p in SOURCE_AWARE if p in by), None)
        base = by.get(BASELINE)
        runs_k = per_run[np.logical_and.reduce([per_run[c] == v for c, v in k.items()])]
        nbytes = runs_k["bytes_per_client"].dropna()
        row = {
            **k,
            "n_c": n_c,
            "measured_irqbalance_s": base["read_time_s"] if base else math.nan,
            "measured_source_aware_s": sa["read_time_s"] if sa else math.nan,
            "source_aware_policy": next((p for p in SOURCE_AWARE if p in by), ""),
        }
        row["measured_difference_s"] = row["measured_irqbalance_s"] - row["measured_source_aware_s"]
        note = ""
        if n_c is None or not len(nbytes):
            note = "client CPU count or bytes read unknown"
        elif k["servers"] % n_c:
            note = f"N_S = {k['servers']} is not a multiple of N_C = {n_c} (the paper's alpha is an integer)"
        if note:
            row["model_note"] = note
            rows.append(row)
            continue
        n_r = max(1, int(nbytes.iloc[0] // (k["servers"] * strip)))
        ev = sais_model.evaluate(
            p_s=p_s,
            m_s=m_s,
            n_s=k["servers"],
            n_c=n_c,
            n_r=n_r,
            n_p=k["clients"],
            t_r_s=0.0,
            size_req_bytes=strip,
            bandwidth_client_bytes_s=rate * k["client_links"],
            missing_reason=why,
        )
        row.update(
            p_s=p_s,
            m_s=m_s,
            n_r=n_r,
            **{c: ev[c] for c in MODEL_COLUMNS},
            model_note="; ".join(f"{a}: {b}" for a, b in ev["missing"].items()),
        )
        rows.append(row)
    return pd.DataFrame(rows)


# ----------------------------------------------------------------------------- figure


def plot(pts: pd.DataFrame, out: Path) -> None:
    fig, ax = plt.subplots(figsize=(7, 3.6))
    if pts.empty:
        no_data(ax, "no read runs")
    else:
        labels = [
            f"{r.servers}s {r.client_links}L {int(r.transfer_size_bytes) // 1024}K c{r.clients}"
            + (f" h{r.client_hosts}" if r.client_hosts > 1 else "")
            for r in pts.drop_duplicates(KEY).itertuples()
        ]
        policies = list(dict.fromkeys(pts["policy"]))
        width = 0.8 / len(policies)
        x = np.arange(len(labels))
        for i, p in enumerate(policies):
            g = pts[pts["policy"] == p].set_index(KEY).reindex(pts.drop_duplicates(KEY).set_index(KEY).index)
            err = np.vstack([g["bw_mib_s"] - g["bw_ci_low"], g["bw_ci_high"] - g["bw_mib_s"]])
            ax.bar(x + i * width, g["bw_mib_s"], width, yerr=np.nan_to_num(err), label=p, capsize=2)
        ax.set_xticks(x + 0.4 - width / 2, labels, rotation=30, ha="right", fontsize=7)
        ax.set_ylabel("read bandwidth (MiB/s)")
        ax.legend(fontsize=7)
    save_png(fig, out)


# ----------------------------------------------------------------------------- entry


def _pmu_reason(inputs: Inputs) -> str:
    pmu = sorted({m["reason"] for meta in inputs.metas.values() for m in meta.get("missing") or []
                  if m.get("source") == "perf" and m.get("reason")})  # fmt: skip
    return "; ".join(pmu) if pmu else "no PMU figures in the runs"


def mark_table(per_run: pd.DataFrame) -> pd.DataFrame:
    """sais_mark's counters per run: what shows that its replies were steered."""
    cols = ["run_id", *KEY, "rep", *(f"mark_{k}" for k in MARK_COUNTERS), "failed", "failed_reason"]
    if per_run.empty:
        return pd.DataFrame(columns=cols)
    return per_run[per_run["policy"] == MARK][cols].reset_index(drop=True)


def summary_lines(sec: dict, per_run: pd.DataFrame, pts: pd.DataFrame, n_c, p_s, m_s) -> list[str]:
    n_failed = int(per_run["failed"].sum()) if len(per_run) else 0
    out = [
        f"{len(per_run)} read run(s), {n_failed} failed, at {len(pts)} (policy, servers, links, transfer, clients, "
        "client hosts) point(s); "
        f"reader: kernels/pfs_read (PVFS2's simple stripe of {sec.get('strip_size_bytes', 65536) // 1024} KiB "
        "strips over the data servers, gfapi in the client process), standing in for IOR (label stands_in_for): "
        "IOR reaches this file system only through its FUSE mount, whose layout is GlusterFS's 4 MiB shards, not "
        "the paper's strips (docs/pfs.md).",
        f"Model inputs from kernels/sais_inmem: P = {fmt_num(None if p_s is None else p_s * 1e6)} us/strip, "
        f"M = {fmt_num(None if m_s is None else m_s * 1e6)} us/strip.",
    ]
    marks = per_run[per_run["policy"] == MARK] if len(per_run) else per_run
    if len(marks):
        steered = marks["mark_steered"].fillna(0)
        out.append(
            f"sais_mark: {int((steered > 0).sum())} of {len(marks)} run(s) show their replies steered "
            f"({fmt_num(marks['mark_steered'].sum())} replies steered, {fmt_num(marks['mark_stamped'].sum())} "
            "requests stamped over them)."
        )
    if sec.get("cluster", {}).get("kind", "netns") == "netns":
        out.append(
            "Locally the client (every client host) and every data server are network namespaces of one machine: "
            f"they share its {n_c or '?'} CPUs, so the servers' and the links' (veth, tc) work competes with the "
            "clients' receive processing and the per-CPU figures hold both; there is no NIC and no hardware "
            "interrupt (RPS/RFS stand in for the APIC): the claims on the paper's NIC experiments (sec. 5) need "
            "physical NICs with their own interrupts and are not measurable on these links."
        )
    return out


def analyse(inputs: Inputs) -> Result:
    sec = (inputs.config or {}).get(EXPERIMENT) or {}
    jobs = inputs.jobs
    log = rt.MissingLog()
    per_run = read_runs(jobs, inputs.runs, inputs.run_dirs, log, sec)
    if per_run.empty:
        per_run = pd.DataFrame(columns=["run_id", "policy", *KEY, "rep", "bw_mib_s", "read_time_s",
                                        "bytes_per_client", "strip_size_bytes", "failed_jobs", *pmu.FIGURES,
                                        "perf_intervals", *(f"mark_{k}" for k in MARK_COUNTERS), "failed",
                                        "failed_reason"])  # fmt: skip
    cpus = pd.concat([cpu_rows(inputs.run_dirs.get(r), r, log) for r in per_run["run_id"]] or [pd.DataFrame()])
    n_c = int(cpus["cpu"].nunique()) if len(cpus) else None
    pts = points(per_run, inputs.looks.confidence)
    p_s, m_s, why = pm_inputs(jobs)
    if why:
        log.add("model P and M", why, "experiments.sais.analysis", "-")
    model = model_table(pts, per_run, n_c, p_s, m_s, why, sec)
    per_cpu = cpu_table(per_run, cpus)
    interval = float(sec.get("monitor_interval_s", 0.5))
    pmu_table = pmu.evidence(per_run, ["run_id", "policy", *KEY, "rep"], interval)
    cpu_runs = sais_cpu.evidence(per_run, cpus, ["run_id", "policy", *KEY, "rep"], interval)
    inmem, inmem_pmu = sais_inmem.rows(jobs, inputs.run_dirs, sec, log)
    inmem_points = sais_inmem.summary(inmem)
    l2_why = pmu.l2_missing_reason(sec)
    notes = [
        "points.csv, for reading: speedup_pct = 100 x (the policy's bandwidth over irqbalance's, paired by rep - 1) "
        "at the same point; 95% CI: t-interval of the per-rep log ratios, exponentiated (rep i of each policy ran in "
        "the same repetition block; analysis.stats.paired_ratio_t). The claims read the runs, paired by rep, at "
        "the point each names in advance.",
        "sais_mark's counters (mark_stamped: requests stamped with the sending CPU; mark_recorded and "
        "mark_reflected: marks the servers recorded and wrote into replies; mark_steered: replies the client's "
        "XDP program sent to the marked CPU; mark_foreign: marked packets from elsewhere, passed on) are read "
        "from the BPF maps when the policy is restored; a sais_mark run without them or with no reply steered "
        "is failed.",
        "PMU figures: "
        + _pmu_reason(inputs)
        + (f"; {l2_why}" if l2_why else "")
        + ". unhalted_cycles_per_s: perf's cycles (the paper's CPU_CLK_UNHALTED) per second the counters ran; "
        "l2_miss_rate: L2 misses / L2 accesses (Figs. 6-7); a run whose counters ran fewer than "
        f"{pmu.MIN_PERF_INTERVALS} intervals is failed in the pmu table, never pooled.",
        "In-memory study (sec. 6, inmem.csv): kernels/sais_inmem, Si-SAIs = mode thread (reader and assembler "
        "threads of one process on one CPU), Si-Irqbalance = mode process (two processes the Linux scheduler "
        "places); bw_mb_s timed by the kernel over sais.pm.duration_s; moved_share: strips consumed on another "
        "CPU than the one that read them.",
        "Per-CPU: busy_pct and softirq_pct are shares of each CPU's time (/proc/stat), softnet_share its share "
        "of the packets the stack processed (/proc/net/softnet_stat); counters are machine-wide, so on the "
        "netns cluster they include the servers' side.",
        "Model: T_R = 0, N_R = bytes read / (N_S x strip), N_C = CPUs of the client; see experiments/sais/model.py.",
        *run_checks(jobs, inputs.runs),
    ]
    marks = mark_table(per_run)
    outputs = {"points.csv": pts, "per_cpu.csv": per_cpu, "model.csv": model, "read_runs.csv": per_run,
               "sais_mark.csv": marks, "inmem.csv": inmem_points, "inmem_runs.csv": inmem,
               "pmu_runs.csv": pmu_table, "cpu_runs.csv": cpu_runs}  # fmt: skip
    tables = [
        {"title": "Bandwidth and speed-up over irqbalance per point (for reading)", "csv": "points.csv"},
        {"title": "CPU utilisation, softirq and receive processing per CPU", "csv": "per_cpu.csv"},
        {"title": "Eqs. 1-9 with measured P and M beside the measured read times", "csv": "model.csv"},
        {"title": "sais_mark's counters per run: requests stamped, replies steered", "csv": "sais_mark.csv"},
        {"title": "Read runs", "csv": "read_runs.csv"},
        {"title": "In-memory study (sec. 6): Si-SAIs and Si-Irqbalance per application count", "csv": "inmem.csv"},
        {"title": "In-memory runs", "csv": "inmem_runs.csv"},
        {"title": "PMU figures per read run (unhalted cycles per second, L2 miss rate)", "csv": "pmu_runs.csv"},
    ]
    figures = [
        Figure(FIG_NAME, "Read bandwidth per policy at each (servers, client links, transfer size, clients) point; "
               "error bars: 95% t-interval over reps.", lambda out: plot(pts, out)),
    ]  # fmt: skip
    return Result(
        summary=summary_lines(sec, per_run, pts, n_c, p_s, m_s) + sais_inmem.lines(inmem_points),
        evidence={
            "runs": per_run,
            "speedups": speedup_rows(per_run),
            "pmu": pmu_table,
            "cpu": cpu_runs,
            "inmem": inmem,
            "inmem_pmu": inmem_pmu,
        },  # fmt: skip
        levels={
            "policy": POLICIES | set(sec.get("policies") or []) | set(per_run["policy"].dropna()),
            "mode": set(sais_inmem.STANDS_FOR),
        },
        outputs=outputs,
        tables=tables,
        figures=figures,
        notes=notes,
        log=log,
    )

"""cpustat monitor: CPU utilisation, softirq time and receive processing per CPU.

What `sar -P ALL -u ALL` and `sar -I` / `sar -n SOFT` report, read straight from the kernel: a
thread samples every interval (paced as in base.SampledMonitor)

- ``/proc/stat``: each CPU's cumulative user, nice, system, idle, iowait, irq, softirq and steal
  time in USER_HZ ticks;
- ``/proc/softirqs``: each CPU's NET_RX and NET_TX softirq count;
- ``/proc/net/softnet_stat``: each CPU's packets processed (first column) and dropped (second),
  one line per possible CPU (the CPU number is the last column on kernels >= 5.10, else the
  line's index);

and appends one row per CPU to ``cpustat.csv``. Paper 004 reads where receive processing ran
from these counters (docs/schedulers/irq_steering.md).

Tidy columns, per CPU and interval (the first sample has no delta and is dropped):
``user_pct``, ``system_pct``, ``irq_pct``, ``softirq_pct``, ``iowait_pct``, ``idle_pct``,
``busy_pct`` (100 - idle - iowait), as shares of the CPU's ticks in the interval;
``net_rx_per_s``, ``net_tx_per_s`` (softirqs), ``softnet_processed_per_s``, ``softnet_dropped_per_s``.

Missing, never zero: an unreadable file -> missing(cpustat_<file>) and its columns NaN.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from corun.errors import missing
from corun.machine.host import CPU_FIELDS
from corun.monitors import base
from corun.monitors.base import diff, div, isnan, nan_last, to_float

NAME = "cpustat"
RAW_FILE = "cpustat.csv"
# /proc/stat's columns, as the run's own CPU accounting reads them (corun.machine.host)
STAT_FIELDS = CPU_FIELDS

RAW_FIELDS = [
    "epoch_s",
    "monotonic_s",
    "cpu",
    *(f"{f}_ticks" for f in STAT_FIELDS),
    "net_rx",
    "net_tx",
    "softnet_processed",
    "softnet_dropped",
]

COLUMNS = [
    "time_epoch_s",
    "t_s",
    "cpu",
    "user_pct",
    "system_pct",
    "irq_pct",
    "softirq_pct",
    "iowait_pct",
    "idle_pct",
    "busy_pct",
    "net_rx_per_s",
    "net_tx_per_s",
    "softnet_processed_per_s",
    "softnet_dropped_per_s",
    "interval_s",
]


def parse_stat(text: str) -> dict[int, dict[str, int]]:
    """``cpuN user nice system idle iowait irq softirq steal ...`` lines -> {cpu: {field: ticks}}."""
    out: dict[int, dict[str, int]] = {}
    for line in text.splitlines():
        parts = line.split()
        if not parts or not parts[0].startswith("cpu") or parts[0] == "cpu":
            continue
        values = [int(v) for v in parts[1 : 1 + len(STAT_FIELDS)]]
        values += [0] * (len(STAT_FIELDS) - len(values))
        out[int(parts[0][3:])] = dict(zip(STAT_FIELDS, values))
    return out


def parse_softirqs(text: str) -> dict[int, dict[str, int]]:
    """/proc/softirqs -> {cpu: {"net_rx": n, "net_tx": n}} (the header names the CPUs)."""
    lines = text.splitlines()
    if not lines:
        return {}
    cpus = [int(c[3:]) for c in lines[0].split()]
    out: dict[int, dict[str, int]] = {c: {} for c in cpus}
    for line in lines[1:]:
        parts = line.split()
        if not parts or parts[0] not in ("NET_RX:", "NET_TX:"):
            continue
        key = parts[0][:-1].lower()
        for c, v in zip(cpus, parts[1:]):
            out[c][key] = int(v)
    return out


def parse_softnet(text: str) -> dict[int, dict[str, int]]:
    """/proc/net/softnet_stat (hex columns) -> {cpu: {"softnet_processed", "softnet_dropped"}}."""
    out: dict[int, dict[str, int]] = {}
    for i, line in enumerate(text.splitlines()):
        cols = line.split()
        if len(cols) < 2:
            continue
        cpu = int(cols[12], 16) if len(cols) >= 13 else i
        out[cpu] = {"softnet_processed": int(cols[0], 16), "softnet_dropped": int(cols[1], 16)}
    return out


class CpustatMonitor(base.SampledMonitor):
    name = NAME
    raw_csv = RAW_FILE
    purpose = "CPU utilisation, softirq time and receive processing per CPU"

    def begin(self) -> list[str] | None:
        self._meta.update(proc=str(self.root), user_hz=os.sysconf("SC_CLK_TCK"), unreadable={})
        if not (self.root / "stat").is_file():
            self._meta["unavailable"] = f"cpustat: no {self.root / 'stat'}"
            return None
        return RAW_FIELDS

    def _read(self, rel: str, parse) -> dict[int, dict[str, int]]:
        try:
            return parse((self.root / rel).read_text())
        except (OSError, ValueError, IndexError) as exc:
            self._meta["unreadable"][rel] = base.os_error_text(exc)
            return {}

    def sample(self) -> list[dict]:
        now, mono = time.time(), time.monotonic()
        stat = self._read("stat", parse_stat)
        soft = self._read("softirqs", parse_softirqs)
        net = self._read("net/softnet_stat", parse_softnet)
        return [
            {
                "epoch_s": repr(now),
                "monotonic_s": repr(mono),
                "cpu": cpu,
                **{f"{k}_ticks": v for k, v in stat[cpu].items()},
                **soft.get(cpu, {}),
                **net.get(cpu, {}),
            }
            for cpu in sorted(stat)
        ]

    @classmethod
    def tidy_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[base.Table, list[dict]]:
        """Tidy per-CPU table from cpustat.csv (+ meta); see COLUMNS."""
        meta, header, raw, why = base.read_sampled(raw_dir, NAME, RAW_FILE)
        if why:
            return base.finish_table([], COLUMNS, t0_epoch), [missing(NAME, why, NAME)]
        unreadable = meta.get("unreadable", {})
        records = [missing(f"cpustat_{k.replace('/', '_')}", f"cpustat: {k}: {v}", NAME) for k, v in unreadable.items()]
        records += base.sampling_stopped(meta, NAME)
        by_cpu: dict[float, list[dict]] = {}
        for r in raw:
            cpu = to_float(r.get("cpu"))
            if not isnan(cpu):
                by_cpu.setdefault(cpu, []).append({k: to_float(r.get(k)) for k in header})
        out: list[dict] = []
        for cpu in sorted(by_cpu):
            rows = sorted(by_cpu[cpu], key=lambda r: nan_last(r["monotonic_s"]))
            d = {k: diff([r.get(k, float("nan")) for r in rows]) for k in (*RAW_FIELDS[1:], *header)}
            for i in range(1, len(rows)):
                di = {k: v[i] for k, v in d.items()}
                ticks = sum(di[f"{f}_ticks"] for f in STAT_FIELDS)
                dt = di["monotonic_s"]
                out.append(
                    {
                        "time_epoch_s": rows[i]["epoch_s"],
                        "cpu": int(cpu),
                        "user_pct": div(100 * (di["user_ticks"] + di["nice_ticks"]), ticks),
                        "system_pct": div(100 * di["system_ticks"], ticks),
                        "irq_pct": div(100 * di["irq_ticks"], ticks),
                        "softirq_pct": div(100 * di["softirq_ticks"], ticks),
                        "iowait_pct": div(100 * di["iowait_ticks"], ticks),
                        "idle_pct": div(100 * di["idle_ticks"], ticks),
                        "busy_pct": div(100 * (ticks - di["idle_ticks"] - di["iowait_ticks"]), ticks),
                        "net_rx_per_s": div(di["net_rx"], dt),
                        "net_tx_per_s": div(di["net_tx"], dt),
                        "softnet_processed_per_s": div(di["softnet_processed"], dt),
                        "softnet_dropped_per_s": div(di["softnet_dropped"], dt),
                        "interval_s": dt,
                    }
                )
        return base.finish_table(out, COLUMNS, t0_epoch), records


parse_cpustat = CpustatMonitor.parse_raw  # tidy_raw as a pandas DataFrame

"""memory monitor: memory use, paging and reclaim from /proc/meminfo, /proc/vmstat and the run's
memory cgroup (paper 000, section 2.4.2.2, Fig. 8: memory utilization against I/O contention for
jobs whose file-backed mappings exceed memory, so that their I/O is paging and writeback).

No external tool: a thread reads the files every interval, paced on time.monotonic() like the
psi monitor (base.SampledMonitor: tick k is due at start + k x interval; ticks missed while the
machine stalled are skipped, not bunched), and appends the values as the kernel printed them to
``memory.csv``. stop() takes one last sample, so the table covers the run up to the stop.

Raw files: ``memory.csv`` (epoch_s, monotonic_s, then one column per field: ``meminfo_<Key>`` in
kB, ``vmstat_<key>`` cumulative counters, ``cg_<file>`` / ``cg_stat_<key>`` for the cgroup;
an unreadable value is left empty, ``error`` says why), ``memory.meta.json`` (start epoch,
interval, cgroup path and version, the fields present at start, swap: none|present, and the
epoch at which the cgroup disappeared if it did).

The cgroup (``MonitorContext.memory_cgroup``, a directory, read at start()) must exist then; its
version is told by the files present (v1 ``memory.usage_in_bytes``, v2 ``memory.current``). A
cgroup removed while the monitor runs (the runner's teardown) just ends its columns.

Tidy columns, one row per interval (the first sample starts the first interval and is dropped):
levels at the end of the interval (``mem_*_kb``, ``cached_kb``, ``dirty_kb``, ...,
``mem_used_pct`` = 100 x (MemTotal - MemAvailable) / MemTotal, ``swap_used_kb`` = SwapTotal -
SwapFree, a true 0 without swap) and rates over it, from counter deltas over the monotonic
interval: ``pgpgin_kb_s`` / ``pgpgout_kb_s`` (the kernel reports pgpgin/pgpgout in KiB; they
count all block I/O, explicit reads and writes as well as paging), ``pswp*_per_s``,
``pg*fault_per_s``, ``pgsteal_per_s`` / ``pgscan_per_s`` (pages reclaimed / scanned:
``pgsteal_anon + pgsteal_file`` where the kernel splits reclaim by page type, which counts every
reclaim, that forced by a cgroup's limit included; else the sum of the ``pgsteal_<reclaimer>``
counters, which leave cgroup-limit reclaim out; ``pgscan_direct_throttle`` counts throttling
events, not pages, and is never summed), ``refault_per_s`` (``workingset_refault_file``;
``workingset_refault`` on kernels before 5.9, which tracked file pages only). With a cgroup:
``cg_usage_bytes``, ``cg_limit_bytes`` (NaN when unlimited: v2 ``max``, v1 the page counter's
maximum, 2^63 rounded down to a page), ``cg_used_pct`` (NaN when unlimited; it may pass 100 by a
few pages, as the kernel charges in per-CPU batches and reports a fuzzy usage), ``cg_file_bytes``
(v1 total_cache, v2 file), ``cg_anon_bytes`` (v1 total_rss, v2 anon), ``cg_file_mapped_bytes``,
``cg_dirty_bytes``, ``cg_writeback_bytes``, ``cg_pgmajfault_per_s``, ``cg_refault_per_s``
(workingset_refault_file) and ``cg_pgsteal_per_s`` / ``cg_pgscan_per_s`` (the group's own
reclaim; v2 only, cgroup v1 memory.stat has no such counter).

Missing, never zero: a field the kernel does not print -> missing(meminfo_<Key>) or
missing(vmstat_<key>) (vmstat_pgsteal / vmstat_pgscan when no such counter exists); a cgroup
requested but absent or unreadable at start -> missing(cgroup_memory), or a stat key it does not
print -> missing(cgroup_memory_<key>) (always cgroup_memory_pgsteal and _pgscan on v1); values
unreadable in some samples -> one record per source. SwapTotal 0 is no swap, not a missing
value: ``swap_used_kb`` is 0 and the meta says ``"swap": "none"``.
"""

from __future__ import annotations

import math
import time
from pathlib import Path

from corun.errors import missing
from corun.monitors import base
from corun.monitors.base import NAN, diff, div, isnan, to_number

NAME = "memory"
RAW_FILE = "memory.csv"

MEMINFO_KEYS = [
    "MemTotal",
    "MemAvailable",
    "MemFree",
    "Cached",
    "Dirty",
    "Writeback",
    "SwapTotal",
    "SwapFree",
    "Shmem",
    "Mapped",
]
VMSTAT_KEYS = ["pgpgin", "pgpgout", "pswpin", "pswpout", "pgmajfault", "pgfault"]
REFAULT_KEYS = ["workingset_refault_file", "workingset_refault"]  # newest first
RECLAIM_PREFIXES = ("pgsteal_", "pgscan_")
RECLAIM_BY_TYPE = ("anon", "file")  # every reclaimed page once, cgroup-limit reclaim included
RECLAIM_NOT_PAGES = {"pgscan_direct_throttle"}

# cgroup files by version: raw column -> file
CG_FILES = {
    "v1": {
        "cg_usage_in_bytes": "memory.usage_in_bytes",
        "cg_limit_in_bytes": "memory.limit_in_bytes",
        "cg_max_usage_in_bytes": "memory.max_usage_in_bytes",
    },
    "v2": {"cg_current": "memory.current", "cg_max": "memory.max"},
}
CG_USAGE = {"v1": "cg_usage_in_bytes", "v2": "cg_current"}
CG_LIMIT = {"v1": "cg_limit_in_bytes", "v2": "cg_max"}
# tidy column <- memory.stat keys that may hold it, newest name first, per version. Reclaim
# forced by the cgroup's own limit is counted in its memory.stat only, never in /proc/vmstat;
# cgroup v1 has no such counter.
CG_STAT_LEVELS = {
    "cg_file_bytes": {"v1": ["total_cache"], "v2": ["file"]},
    "cg_anon_bytes": {"v1": ["total_rss"], "v2": ["anon"]},
    "cg_file_mapped_bytes": {"v1": ["total_mapped_file"], "v2": ["file_mapped"]},
    "cg_dirty_bytes": {"v1": ["total_dirty"], "v2": ["file_dirty"]},
    "cg_writeback_bytes": {"v1": ["total_writeback"], "v2": ["file_writeback"]},
}
CG_STAT_RATES = {
    "cg_pgmajfault_per_s": {"v1": ["total_pgmajfault"], "v2": ["pgmajfault"]},
    "cg_pgsteal_per_s": {"v1": [], "v2": ["pgsteal"]},
    "cg_pgscan_per_s": {"v1": [], "v2": ["pgscan"]},
    "cg_refault_per_s": {
        "v1": ["total_workingset_refault_file", "total_workingset_refault"],
        "v2": ["workingset_refault_file", "workingset_refault"],
    },
}
CG_STAT_KEYS = {
    v: [k for spec in (*CG_STAT_LEVELS.values(), *CG_STAT_RATES.values()) for k in spec[v]] for v in ("v1", "v2")
}
# v1 reports "no limit" as PAGE_COUNTER_MAX pages: LONG_MAX rounded down to the page size
# (9223372036854771712 with 4 KiB pages); anything from 2^63 - 64 KiB up is unlimited.
V1_UNLIMITED_BYTES = 2**63 - 2**16

COLUMNS = [
    "time_epoch_s",
    "t_s",
    "interval_s",
    "mem_total_kb",
    "mem_available_kb",
    "mem_used_pct",
    "mem_free_kb",
    "cached_kb",
    "dirty_kb",
    "writeback_kb",
    "mapped_kb",
    "shmem_kb",
    "swap_used_kb",
    "pgpgin_kb_s",
    "pgpgout_kb_s",
    "pswpin_per_s",
    "pswpout_per_s",
    "pgmajfault_per_s",
    "pgfault_per_s",
    "pgsteal_per_s",
    "pgscan_per_s",
    "refault_per_s",
]
CG_COLUMNS = [
    "cg_usage_bytes",
    "cg_limit_bytes",
    "cg_used_pct",
    "cg_file_bytes",
    "cg_anon_bytes",
    "cg_file_mapped_bytes",
    "cg_dirty_bytes",
    "cg_writeback_bytes",
    "cg_pgmajfault_per_s",
    "cg_pgsteal_per_s",
    "cg_pgscan_per_s",
    "cg_refault_per_s",
]


def parse_meminfo(text: str) -> dict[str, int]:
    """``MemTotal:       24684084 kB`` lines -> {key: value} (kB, or pages for HugePages_*)."""
    out = {}
    for line in text.splitlines():
        key, sep, rest = line.partition(":")
        parts = rest.split()
        if sep and parts:
            try:
                out[key.strip()] = int(parts[0])
            except ValueError:
                continue
    return out


def parse_flat_keyed(text: str) -> dict[str, str]:
    """``key value`` lines (/proc/vmstat, memory.stat) -> {key: value text}."""
    out = {}
    for line in text.splitlines():
        parts = line.split()
        if len(parts) == 2:
            out[parts[0]] = parts[1]
    return out


def cgroup_version(path: Path) -> str | None:
    """'v1' or 'v2' by the files the memory cgroup directory holds, or None."""
    if (path / "memory.usage_in_bytes").exists():
        return "v1"
    if (path / "memory.current").exists():
        return "v2"
    return None


def limit_bytes(text: object, version: str) -> float:
    """A cgroup memory limit as printed -> bytes, NaN when unlimited (v2 'max', v1 ~2^63)."""
    if text is None or (isinstance(text, float) and math.isnan(text)):
        return NAN
    s = str(text).strip()
    if s in ("", "max"):
        return NAN
    try:
        value = int(s)
    except ValueError:
        return NAN
    if version == "v1" and value >= V1_UNLIMITED_BYTES:
        return NAN
    return float(value)


class MemoryMonitor(base.SampledMonitor):
    name = NAME
    raw_csv = RAW_FILE
    purpose = "memory use, paging and reclaim"

    def __init__(self, ctx: base.MonitorContext, root: Path | None = None):
        super().__init__(ctx, root)
        self.cgroup: Path | None = None  # read from ctx at start(): the runner sets it late
        self.cg_version: str | None = None
        self._cg_gone = False
        self._fields: list[str] = []
        self._meminfo_keys: list[str] = []
        self._vmstat_keys: list[str] = []
        self._cg_stat_keys: list[str] = []

    def begin(self) -> list[str] | None:
        self.cgroup = Path(self.ctx.memory_cgroup) if self.ctx.memory_cgroup else None
        self._meta.update(proc=str(self.root), cgroup=str(self.cgroup) if self.cgroup else None)
        try:
            meminfo = parse_meminfo((self.root / "meminfo").read_text())
            vmstat = parse_flat_keyed((self.root / "vmstat").read_text())
        except OSError as exc:
            self._meta["unavailable"] = f"memory: {self.root}/meminfo or vmstat unreadable ({base.os_error_text(exc)})"
            return None
        self._meminfo_keys = [k for k in MEMINFO_KEYS if k in meminfo]
        reclaim = sorted(k for k in vmstat if k.startswith(RECLAIM_PREFIXES))
        self._vmstat_keys = [k for k in VMSTAT_KEYS + REFAULT_KEYS if k in vmstat] + reclaim
        fields = {
            "meminfo": list(self._meminfo_keys),
            "vmstat": list(self._vmstat_keys),
        }
        self._meta["swap"] = "none" if meminfo.get("SwapTotal", 0) == 0 else "present"
        cg_fields: list[str] = []
        if self.cgroup is not None:
            cg_fields = self._cgroup_start()
            fields["cgroup"] = cg_fields
        self._meta["fields"] = fields
        self._fields = (
            [f"meminfo_{k}" for k in self._meminfo_keys] + [f"vmstat_{k}" for k in self._vmstat_keys] + cg_fields
        )
        return ["epoch_s", "monotonic_s", *self._fields, "error"]

    def _cgroup_start(self) -> list[str]:
        """Detect the cgroup's version and the fields it prints; [] (and a reason) if unusable."""
        path = self.cgroup
        version = cgroup_version(path)
        self._meta["cgroup_version"] = version
        if version is None:
            why = "no such directory" if not path.is_dir() else (
                "neither memory.usage_in_bytes (v1) nor memory.current (v2): "
                "memory controller not enabled for it")  # fmt: skip
            self._meta["cgroup_unavailable"] = f"memory: cgroup {path}: {why}"
            return []
        try:
            for f in CG_FILES[version].values():
                (path / f).read_text()
            stat = parse_flat_keyed((path / "memory.stat").read_text())
        except OSError as exc:
            self._meta["cgroup_unavailable"] = f"memory: cgroup {path} unreadable ({base.os_error_text(exc)})"
            self.cg_version = None
            return []
        self.cg_version = version
        keys = [k for k in CG_STAT_KEYS[version] if k in stat]
        self._cg_stat_keys = keys
        return list(CG_FILES[version]) + [f"cg_stat_{k}" for k in keys]

    def _sample_cgroup(self, row: dict, errors: list[str]) -> None:
        if self.cg_version is None or self._cg_gone:
            return
        path = self.cgroup
        try:
            for col, f in CG_FILES[self.cg_version].items():
                row[col] = (path / f).read_text().strip()
            stat = parse_flat_keyed((path / "memory.stat").read_text())
        except OSError as exc:
            for col in CG_FILES[self.cg_version]:
                row[col] = ""
            if not path.exists():  # removed at teardown: its columns end here
                self._cg_gone = True
                self._meta["cgroup_gone_epoch_s"] = time.time()
            else:
                errors.append(f"cgroup: {base.os_error_text(exc)}")
            return
        for k in self._cg_stat_keys:
            row[f"cg_stat_{k}"] = stat.get(k, "")

    def sample(self) -> list[dict]:
        row = {f: "" for f in self._fields}
        errors: list[str] = []
        epoch, mono = time.time(), time.monotonic()
        for source, parse, keys in (
            ("meminfo", parse_meminfo, self._meminfo_keys),
            ("vmstat", parse_flat_keyed, self._vmstat_keys),
        ):
            try:
                values = parse((self.root / source).read_text())
            except OSError as exc:
                errors.append(f"{source}: {base.os_error_text(exc)}")
                continue
            for k in keys:
                row[f"{source}_{k}"] = values.get(k, "")
        self._sample_cgroup(row, errors)
        row["epoch_s"] = repr(epoch)
        row["monotonic_s"] = repr(mono)
        row["error"] = "; ".join(errors)
        return [row]

    @classmethod
    def tidy_raw(cls, raw_dir: Path, t0_epoch: float) -> tuple[base.Table, list[dict]]:
        """Tidy per-interval table from memory.csv (+ meta); see COLUMNS and CG_COLUMNS."""
        meta, header, raw, why = base.read_sampled(raw_dir, NAME, RAW_FILE)
        with_cg = bool(meta.get("cgroup"))
        columns = COLUMNS + (CG_COLUMNS if with_cg else [])
        if why:
            return base.finish_table([], columns, t0_epoch), [missing(NAME, why, NAME)]
        present = set(header)
        n = len(raw)
        records = base.sampling_stopped(meta, NAME)

        def num(col: str | None) -> list:
            if col not in present:
                return [NAN] * n
            return [to_number(r[col]) for r in raw]

        # what the kernel did not print
        for k in MEMINFO_KEYS:
            if f"meminfo_{k}" not in present:
                records.append(missing(f"meminfo_{k}", f"memory: no {k} in /proc/meminfo", NAME))
        for k in VMSTAT_KEYS:
            if f"vmstat_{k}" not in present:
                records.append(missing(f"vmstat_{k}", f"memory: no {k} in /proc/vmstat", NAME))
        vm_cols = [c for c in header if c.startswith("vmstat_")]
        sums = {}
        for prefix in RECLAIM_PREFIXES:
            by_type = [f"vmstat_{prefix}{t}" for t in RECLAIM_BY_TYPE]
            if all(c in present for c in by_type):
                cols = by_type
            else:  # older kernels: by reclaimer (kswapd, direct, ...), or by zone before 4.8
                cols = [c for c in vm_cols if c[len("vmstat_") :].startswith(prefix)
                        and c[len("vmstat_") :] not in RECLAIM_NOT_PAGES]  # fmt: skip
            name = prefix.rstrip("_")
            if cols:
                total = [0.0] * n
                for c in cols:
                    total = [a + b for a, b in zip(total, num(c))]
                sums[name] = total
            else:
                sums[name] = [NAN] * n
                reason = f"memory: no {prefix}* counters in /proc/vmstat"
                records.append(missing(f"vmstat_{name}", reason, NAME))
        refault_col = next((f"vmstat_{k}" for k in REFAULT_KEYS if f"vmstat_{k}" in present), None)
        if refault_col is None:
            reason = "memory: no workingset_refault_file (or workingset_refault) in /proc/vmstat"
            records.append(missing("vmstat_workingset_refault_file", reason, NAME))

        # per-sample read errors
        errors = [r.get("error", "") for r in raw]
        for source in ("meminfo", "vmstat", "cgroup"):
            bad = [e for e in errors if f"{source}: " in e]
            if bad:
                metric = "cgroup_memory" if source == "cgroup" else source
                first = next(e for e in bad[0].split("; ") if e.startswith(f"{source}: "))
                reason = f"memory: {source} unreadable in {len(bad)} of {n} samples ({first})"
                records.append(missing(metric, reason, NAME))

        mono = num("monotonic_s")
        clock = mono if not any(isnan(x) for x in mono) else num("epoch_s")
        dt = diff(clock)
        total, avail = num("meminfo_MemTotal"), num("meminfo_MemAvailable")
        cols = {
            "time_epoch_s": num("epoch_s"),
            "interval_s": dt,
            "mem_total_kb": total,
            "mem_available_kb": avail,
            "mem_used_pct": [div(100.0 * (t - a), t) if t > 0 else NAN for t, a in zip(total, avail)],
            "mem_free_kb": num("meminfo_MemFree"),
            "cached_kb": num("meminfo_Cached"),
            "dirty_kb": num("meminfo_Dirty"),
            "writeback_kb": num("meminfo_Writeback"),
            "mapped_kb": num("meminfo_Mapped"),
            "shmem_kb": num("meminfo_Shmem"),
            "swap_used_kb": [a - b for a, b in zip(num("meminfo_SwapTotal"), num("meminfo_SwapFree"))],
            "pgpgin_kb_s": _rate(num("vmstat_pgpgin"), dt),
            "pgpgout_kb_s": _rate(num("vmstat_pgpgout"), dt),
            "pswpin_per_s": _rate(num("vmstat_pswpin"), dt),
            "pswpout_per_s": _rate(num("vmstat_pswpout"), dt),
            "pgmajfault_per_s": _rate(num("vmstat_pgmajfault"), dt),
            "pgfault_per_s": _rate(num("vmstat_pgfault"), dt),
            "pgsteal_per_s": _rate(sums["pgsteal"], dt),
            "pgscan_per_s": _rate(sums["pgscan"], dt),
            "refault_per_s": _rate(num(refault_col), dt) if refault_col else [NAN] * n,
        }
        if with_cg:
            records += _cgroup_columns(cols, raw, present, meta, num, dt)
        rows = [{c: v[i] for c, v in cols.items()} for i in range(1, n)]
        return base.finish_table(rows, columns, t0_epoch), records


def _rate(counter: list, dt: list) -> list[float]:
    """Per-second rate of a cumulative counter; NaN across a gap or a (impossible) decrease."""
    return [div(d, t) if d >= 0 else NAN for d, t in zip(diff(counter), dt)]


def _cgroup_columns(cols: dict, raw: list[dict], present: set, meta: dict, num, dt: list) -> list[dict]:
    """Fill the cg_* entries of `cols` in place; the missing records for the cgroup."""
    version = meta.get("cgroup_version")
    if meta.get("cgroup_unavailable") or version not in CG_FILES:
        reason = meta.get("cgroup_unavailable") or f"memory: cgroup {meta['cgroup']}: no version"
        return [missing("cgroup_memory", reason, NAME)]
    records = []
    usage = cols["cg_usage_bytes"] = num(CG_USAGE[version])
    limits = cols["cg_limit_bytes"] = [limit_bytes(r.get(CG_LIMIT[version], ""), version) for r in raw]
    cols["cg_used_pct"] = [div(100.0 * u, lim) for u, lim in zip(usage, limits)]
    for table, as_rate in ((CG_STAT_LEVELS, False), (CG_STAT_RATES, True)):
        for tidy, spec in table.items():
            keys = spec[version]
            col = next((f"cg_stat_{k}" for k in keys if f"cg_stat_{k}" in present), None)
            if col is None:
                if keys:
                    name, reason = keys[0], f"memory: no {keys[0]} in the cgroup's memory.stat"
                else:
                    name = tidy[len("cg_") :].removesuffix("_per_s")
                    reason = f"memory: cgroup {version} memory.stat has no {name} counter"
                records.append(missing(f"cgroup_memory_{name}", reason, NAME))
                continue
            cols[tidy] = _rate(num(col), dt) if as_rate else num(col)
    return records


parse_memory = MemoryMonitor.parse_raw  # tidy_raw as a pandas DataFrame

"""Runs as records you can select by any recorded key, from run folders or from a SQLite index.

A run record holds the run's metadata.json flattened to dotted keys (`host.kernel_release`,
`scheduler.params.quantum_ms`, `labels.rep`; lists as JSON text), a few short names, its
per-run metrics (analysis.metrics) and where it lives:

  variant   scheduler.name          build     scheduler.build_id
  host      host.hostname           kernel    host.kernel_release
  campaign  labels.campaign, else the folder holding `runs/` (results/local/<campaign>/runs/<run>)
  run       the run folder relative to the source it was found under

A selector is one or more terms separated by spaces or ';': `key=value`, `key!=value`;
values may list alternatives (`variant=linux,elevator_bfq`) and use shell wildcards
(`host=node-*`). A key that is not recorded is looked up as a label (`k=2` means
`labels.k=2`). Values compare as text, and as numbers when both sides are numbers.

Run folders are found below every source folder (a campaign folder, results/, an extracted
archive): any folder with metadata.json and jobs.csv; `*.incomplete` folders are skipped.

The index (`corun index build RESULTS_DIR... --db FILE`) stores the same records in SQLite
(stdlib sqlite3): tables runs, run_keys (run, key, JSON value, number) and run_metrics.
Building again re-reads only run folders whose metadata.json or jobs.csv changed (size and
modification time), adds new ones and drops those that are gone from the folders indexed; a
change to the metric registry re-reads everything. Paths are stored relative to the index file,
so an index next to an extracted archive moves with it.
"""

from __future__ import annotations

import csv
import fnmatch
import json
import math
import os
import re
import sqlite3
import time
from dataclasses import dataclass, field
from pathlib import Path

from analysis import metrics as metrics_mod
from corun.errors import ConfigError, CorunError

SCHEMA_VERSION = "1"
ALIASES = {
    "variant": "scheduler.name",
    "build": "scheduler.build_id",
    "host": "host.hostname",
    "kernel": "host.kernel_release",
}
SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class RunRecord:
    run: str  # folder relative to its source
    path: Path  # the folder itself
    keys: dict = field(default_factory=dict)
    metrics: dict = field(default_factory=dict)

    def get(self, key: str) -> object:
        """The value of `key` (an alias, a dotted metadata key or a bare label name)."""
        if key in self.keys:
            return self.keys[key]
        if key in ALIASES:
            return self.keys.get(ALIASES[key])
        return self.keys.get(f"labels.{key}")

    def has(self, key: str) -> bool:
        return key in self.keys or (key in ALIASES and ALIASES[key] in self.keys) or f"labels.{key}" in self.keys


# ----------------------------------------------------------------------------- run folders


def is_run_dir(path: Path) -> bool:
    return (
        (path / "metadata.json").is_file() and (path / "jobs.csv").is_file() and not path.name.endswith(".incomplete")
    )


def find_run_dirs(source: Path) -> list[Path]:
    """Finished run folders at or below `source`, sorted; a run folder is not searched further."""
    source = Path(source)
    if is_run_dir(source):
        return [source]
    found = []
    for dirpath, dirnames, filenames in os.walk(source):
        if "metadata.json" in filenames and "jobs.csv" in filenames and not dirpath.endswith(".incomplete"):
            found.append(Path(dirpath))
            dirnames[:] = []
            continue
        dirnames[:] = sorted(d for d in dirnames if not d.endswith(".incomplete") and not d.startswith("."))
    return sorted(found)


def flatten(obj: object, prefix: str = "", out: dict | None = None) -> dict:
    """Nested dicts as dotted keys; lists as JSON text; scalars as they are."""
    out = {} if out is None else out
    if isinstance(obj, dict):
        for k, v in obj.items():
            flatten(v, f"{prefix}.{k}" if prefix else str(k), out)
    elif isinstance(obj, list):
        out[prefix] = json.dumps(obj, sort_keys=True, default=str)
    else:
        out[prefix] = obj
    return out


def _campaign(meta: dict, run_dir: Path) -> str:
    labels = meta.get("labels") if isinstance(meta.get("labels"), dict) else {}
    if labels.get("campaign") not in (None, ""):
        return str(labels["campaign"])
    parent = run_dir.parent
    return parent.parent.name if parent.name == "runs" else parent.name


def read_jobs(path: Path) -> list[dict]:
    with open(path, newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def load_run(run_dir: Path, source: Path) -> RunRecord:
    """One run folder as a record; a malformed metadata.json is a one-line error."""
    run_dir = Path(run_dir)
    meta_path = run_dir / "metadata.json"
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise CorunError(f"{meta_path}: not readable JSON ({exc})", exit_code=2) from None
    if not isinstance(meta, dict):
        raise ConfigError(str(meta_path), "", type(meta).__name__, "a JSON object")
    jobs = read_jobs(run_dir / "jobs.csv")
    keys = flatten(meta)
    keys.pop("hwloc", None)  # a long text drawing, not a selectable value
    rel = os.path.relpath(run_dir, source) if Path(source).resolve() != run_dir.resolve() else run_dir.name
    keys.setdefault("run_id", run_dir.name)
    keys["campaign"] = _campaign(meta, run_dir)
    keys["run"] = Path(rel).as_posix()
    keys["n_jobs"] = len(jobs)
    return RunRecord(run=keys["run"], path=run_dir, keys=keys, metrics=metrics_mod.run_metrics(jobs, meta))


def load_runs(sources: list[Path], keys: set[str] | None = None) -> list[RunRecord]:
    """Records of every run below the sources (folders) or in them (index files; with `keys`,
    only those keys are read from an index)."""
    records: list[RunRecord] = []
    for src in sources:
        src = Path(src)
        if not src.exists():
            raise ConfigError("command line", "source", str(src), "a run folder, a folder of runs or an index file")
        if src.is_file():
            records.extend(load_index(src, keys))
            continue
        dirs = find_run_dirs(src)
        if not dirs:
            raise ConfigError(
                "command line", "source", str(src), "a folder holding finished runs (metadata.json and jobs.csv)"
            )
        records.extend(load_run(d, src) for d in dirs)
    return records


# ----------------------------------------------------------------------------- selection


def as_text(value: object) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _number(text: str) -> float | None:
    try:
        x = float(text)
    except (TypeError, ValueError):
        return None
    return x if math.isfinite(x) else None


def value_matches(value: object, pattern: str) -> bool:
    text = as_text(value)
    if any(c in pattern for c in "*?["):
        return fnmatch.fnmatchcase(text, pattern)
    if text == pattern or text.lower() == pattern.lower() and pattern.lower() in ("true", "false", "null"):
        return True
    a, b = _number(text) if not isinstance(value, bool) else None, _number(pattern)
    return a is not None and b is not None and a == b


TERM = re.compile(r"^(?P<key>[A-Za-z0-9_.\-]+)(?P<op>!=|=)(?P<values>.*)$")


@dataclass(frozen=True)
class Term:
    key: str
    negate: bool
    values: tuple[str, ...]

    def matches(self, rec: RunRecord) -> bool:
        hit = any(value_matches(rec.get(self.key), v) for v in self.values) if rec.has(self.key) else False
        return hit != self.negate


def parse_selector(text: str, source: str = "command line", what: str = "selector") -> list[Term]:
    terms = []
    for part in re.split(r"[\s;]+", text.strip()):
        if not part:
            continue
        m = TERM.match(part)
        if not m or not m.group("values"):
            raise ConfigError(
                source, what, text, "terms key=value or key!=value separated by spaces, e.g. 'variant=linux labels.k=2'"
            )
        terms.append(Term(m.group("key"), m.group("op") == "!=", tuple(m.group("values").split(","))))
    if not terms:
        raise ConfigError(source, what, text, "at least one term key=value")
    return terms


def select(
    records: list[RunRecord], terms: list[Term], source: str = "command line", what: str = "selector"
) -> list[RunRecord]:
    """The records matching every term; a key no record has is a one-line error."""
    for t in terms:
        if records and not any(r.has(t.key) for r in records):
            some = ", ".join(
                [
                    "variant",
                    "host",
                    "kernel",
                    "build",
                    "campaign",
                    "run_id",
                    *sorted({k for r in records[:50] for k in r.keys if k.startswith("labels.")}),
                ][:12]
            )
            raise ConfigError(source, f"{what} key", t.key, f"a key recorded by the runs, e.g. {some}")
    return [r for r in records if all(t.matches(r) for t in terms)]


# ----------------------------------------------------------------------------- SQLite index

SCHEMA = """
CREATE TABLE IF NOT EXISTS meta(key TEXT PRIMARY KEY, value TEXT);
CREATE TABLE IF NOT EXISTS runs(run_dir TEXT PRIMARY KEY, run TEXT, run_id TEXT, campaign TEXT,
                                signature TEXT, indexed_epoch_s REAL);
CREATE TABLE IF NOT EXISTS run_keys(run_dir TEXT, key TEXT, value TEXT, num REAL,
                                    PRIMARY KEY(run_dir, key)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_metrics(run_dir TEXT, metric TEXT, value REAL,
                                       PRIMARY KEY(run_dir, metric)) WITHOUT ROWID;
CREATE INDEX IF NOT EXISTS run_keys_by_key ON run_keys(key, value);
"""


def _signature(run_dir: Path) -> str:
    parts = []
    for name in ("metadata.json", "jobs.csv"):
        st = (run_dir / name).stat()
        parts.append(f"{st.st_size}:{st.st_mtime_ns}")
    return "/".join(parts)


def _connect(db: Path) -> sqlite3.Connection:
    try:
        con = sqlite3.connect(db)
        con.executescript(SCHEMA)
    except sqlite3.DatabaseError as exc:
        raise ConfigError("command line", "--db", str(db), f"a corun run index (SQLite: {exc})") from None
    return con


def _json_value(value: object) -> tuple[str, float | None]:
    num = None
    if isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value):
        num = float(value)
    return json.dumps(value, default=str), num


def build_index(sources: list[Path], db: Path) -> dict:
    """Index (or re-index) every run below the source folders; returns counts."""
    db = Path(db)
    db.parent.mkdir(parents=True, exist_ok=True)
    base = db.resolve().parent
    con = _connect(db)
    counts = {"added": 0, "updated": 0, "unchanged": 0, "removed": 0}
    reg = metrics_mod.registry_hash()
    with con:
        old = dict(con.execute("SELECT key, value FROM meta").fetchall())
        if old.get("metrics") != reg or old.get("schema_version") != SCHEMA_VERSION:
            con.execute("UPDATE runs SET signature = ''")  # recompute every run
        con.executemany(
            "INSERT OR REPLACE INTO meta VALUES (?, ?)",
            [
                ("schema_version", SCHEMA_VERSION),
                ("metrics", reg),
                ("metric_registry", json.dumps([m.describe() for m in metrics_mod.METRICS.values()])),
            ],
        )
        known = dict(con.execute("SELECT run_dir, signature FROM runs").fetchall())
        roots, seen = [], set()
        for src in sources:
            src = Path(src)
            if not src.is_dir():
                raise ConfigError("command line", "results folder", str(src), "an existing folder")
            roots.append(src.resolve())
            for d in find_run_dirs(src):
                key = os.path.relpath(d.resolve(), base)
                if key in seen:
                    continue
                seen.add(key)
                sig = _signature(d)
                if known.get(key) == sig:
                    counts["unchanged"] += 1
                    continue
                rec = load_run(d, src)
                counts["updated" if key in known else "added"] += 1
                con.execute("DELETE FROM run_keys WHERE run_dir = ?", (key,))
                con.execute("DELETE FROM run_metrics WHERE run_dir = ?", (key,))
                con.execute(
                    "INSERT OR REPLACE INTO runs VALUES (?, ?, ?, ?, ?, ?)",
                    (key, rec.run, str(rec.keys.get("run_id")), rec.keys["campaign"], sig, time.time()),
                )
                con.executemany(
                    "INSERT INTO run_keys VALUES (?, ?, ?, ?)", [(key, k, *_json_value(v)) for k, v in rec.keys.items()]
                )
                con.executemany(
                    "INSERT INTO run_metrics VALUES (?, ?, ?)", [(key, m, v) for m, v in rec.metrics.items()]
                )
        for k in known:
            if k in seen:
                continue
            where = (base / k).resolve()
            if any(where == r or r in where.parents for r in roots):  # under a folder indexed now, gone
                for table in ("runs", "run_keys", "run_metrics"):
                    con.execute(f"DELETE FROM {table} WHERE run_dir = ?", (k,))  # noqa: S608 - fixed names
                counts["removed"] += 1
    con.close()
    counts["total"] = counts["added"] + counts["updated"] + counts["unchanged"]
    return counts


def is_index(path: Path) -> bool:
    try:
        with open(path, "rb") as fh:
            return fh.read(16) == SQLITE_MAGIC
    except OSError:
        return False


def load_index(db: Path, keys: set[str] | None = None) -> list[RunRecord]:
    """Records from an index file (all keys, or only `keys` and the label forms of them)."""
    db = Path(db)
    if not is_index(db):
        raise ConfigError("command line", "source", str(db), "a run folder, a folder of runs or a corun index file")
    con = sqlite3.connect(db)
    base = db.resolve().parent
    recs: dict[str, RunRecord] = {}
    for run_dir, run in con.execute("SELECT run_dir, run FROM runs ORDER BY run_dir"):
        recs[run_dir] = RunRecord(run=run, path=base / run_dir)
    if keys is None:
        rows = con.execute("SELECT run_dir, key, value FROM run_keys")
    else:
        wanted = set(keys) | {f"labels.{k}" for k in keys} | {ALIASES[k] for k in keys if k in ALIASES}
        marks = ",".join("?" * len(wanted))
        rows = con.execute(
            f"SELECT run_dir, key, value FROM run_keys WHERE key IN ({marks})",  # noqa: S608
            sorted(wanted),
        )
    for run_dir, key, value in rows:
        if run_dir in recs:
            recs[run_dir].keys[key] = json.loads(value)
    for run_dir, metric, value in con.execute("SELECT run_dir, metric, value FROM run_metrics"):
        if run_dir in recs:
            recs[run_dir].metrics[metric] = value
    con.close()
    return list(recs.values())

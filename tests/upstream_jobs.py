"""What a finished workflow's jobs say about the upstream programs: each experiment that runs
one ran it where its role built it, with the role's source pin in the job's labels and in every
run's metadata.json, and its output parsed; else the stand-in ran, labelled with why
(docs/upstream.md). Used by the smoke run's test (tests/test_workflow.py)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

from corun import upstream

# experiment -> (role, the program's manifest key, which of its jobs run it, the result field)
TEPS = "result_bfs_harmonic_mean_teps"
CHECKS = {
    "cmp_stacking": ("graph500", "seq-csr", lambda r: r["workload"].startswith("graph"), TEPS),
    "implicit_io": ("graph500", "seq-csr", lambda r: True, TEPS),
    "mpl_sweep": ("npb", None, lambda r: True, "result_time_s"),
    "sais": ("ior", "ior", lambda r: r.get("kind") == "read", "result_read_bw_mean_mib_s"),
    "aioli": ("ior", "ior", lambda r: True, None),
    "dynamic_io": ("parsec", "x264", lambda r: r.get("app") == "x264", None),
}


def jobs(out: Path, experiment: str) -> list[dict]:
    with open(out / experiment / "jobs.csv", newline="") as f:
        return list(csv.DictReader(f))


def check(out: Path, experiment: str) -> str:
    """Asserts the experiment's jobs ran the upstream program with its pin (or a labelled
    stand-in); returns what ran, for the test's message."""
    role, program, selects, field = CHECKS[experiment]
    entry = upstream.read().get(role) or {}
    built = upstream.programs(role, {role: entry})
    rows = [r for r in jobs(out, experiment) if selects(r)]
    assert rows, f"{experiment}: no jobs of {role}'s program"
    pin = (entry.get("source") or {}).get("sha256")
    upstream_rows = [r for r in rows if r.get("source_sha256")]
    if program is None:  # npb: the stream's benchmarks at the counts built
        expected = bool(built)
    else:
        expected = program in built
    if not expected:
        assert not upstream_rows, f"{experiment}: jobs claim {role}'s pin but the role built no program"
        assert all(r.get("stand_in_reason") for r in rows), f"{experiment}: a stand-in job without its reason"
        return f"{experiment}: stand-in ({rows[0]['stand_in_reason']})"
    assert upstream_rows, f"{experiment}: no job ran {role}'s program although it was built"
    for r in upstream_rows:
        assert r["source_sha256"] == pin and r["program_version"] == entry["version"], r
        assert r["exit_code"] in ("0", "0.0"), r
        if field is not None:
            assert float(r[field]) > 0, (field, r)
        if role in ("graph500", "npb"):
            assert r["result_check"] == "ok", r
        if role == "parsec":  # PARSEC's program, and the input it read (corun.run.parsec)
            assert r["binary"].startswith("PARSEC ") and r["input_provenance"], r
    for meta in (out / experiment / "runs").glob("*/metadata.json"):
        rec = json.loads(meta.read_text())["upstream"][role]
        assert rec["status"] == "built" and rec["source"]["sha256"] == pin, (meta, rec)
    names = sorted({r["binary"] for r in upstream_rows})
    return f"{experiment}: {', '.join(names)} ({len(upstream_rows)} of {len(rows)} jobs), {entry['source']['file']}"

"""A job's result: what its output says, by the job's `result` kind (corun/schemas/run_spec).

- `json`: the last non-empty stdout line is a JSON object (corun's kernels);
- `graph500`: Graph500's `key: value` lines (corun.run.graph500), and `check` "ok": 2.1.4
  validates every BFS and prints its statistics only when all passed;
- `npb`: the NAS Parallel Benchmarks' summary (corun.run.npb), `check` "ok" when NPB's own
  verification says SUCCESSFUL, else "failed verification".

`parse(path, kind)` gives (fields, error): the fields become the job's result_* columns, the
error (None when the output was read) its result_error.
"""

from __future__ import annotations

import json
from pathlib import Path

from corun.errors import ConfigError
from corun.run import graph500, npb

KINDS = ("none", "json", "graph500", "npb")


def _json(text: str) -> tuple[dict, str | None]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if not lines:
        return {}, "no output"
    try:
        obj = json.loads(lines[-1])
    except ValueError as exc:
        return {}, f"last line is not JSON: {exc}"
    return (obj, None) if isinstance(obj, dict) else ({}, "last line is not a JSON object")


def _graph500(text: str) -> dict:
    return {**graph500.parse_output(text), "check": "ok"}


def _npb(text: str) -> dict:
    out = npb.parse_output(text)
    out["check"] = "ok" if out["verified"] else "failed verification"
    return out


def parse(path: Path, kind: str) -> tuple[dict, str | None]:
    try:
        text = path.read_text(errors="replace")
    except OSError as exc:
        return {}, str(exc)
    if kind == "json":
        return _json(text)
    if not text.strip():
        return {}, "no output"
    try:
        return (_graph500(text) if kind == "graph500" else _npb(text)), None
    except ConfigError as exc:
        return {}, str(exc)

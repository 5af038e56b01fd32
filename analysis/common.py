"""Helpers shared by the analysis modules: schema validation with one-line errors, atomic writes,
input tables and JSON files read with one-line errors, the runs' checks and the setup table (the paper's setup
beside ours, compared and never judged: verdicts are analysis.verdicts' alone)."""

from __future__ import annotations

import json
import math
import os
from functools import cache
from pathlib import Path

import jsonschema
import numpy as np
import pandas as pd

from corun.config import describe_error
from corun.errors import CorunError
from corun.util import atomic_write_bytes

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


class AnalysisInputError(CorunError):
    """Bad input to an analysis step: `<file>: <key>: <value> (expected ...)`, exit code 2."""

    exit_code = 2


@cache
def _validator(schema_name: str) -> jsonschema.protocols.Validator:
    schema = json.loads((SCHEMA_DIR / schema_name).read_text(encoding="utf-8"))
    cls = jsonschema.validators.validator_for(schema)
    cls.check_schema(schema)
    return cls(schema)


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def validate(instance: object, schema_name: str, source: str) -> None:
    """Validate against analysis/schemas/<schema_name>; raise a one-line AnalysisInputError."""
    error = jsonschema.exceptions.best_match(_validator(schema_name).iter_errors(instance))
    if error is not None:
        key, value, expected = describe_error(error)
        raise AnalysisInputError(f"{source}: {key or '(top level)'}: {_shown(value)} (expected {expected})")


def read_json(path: str | os.PathLike, not_found: str) -> object:
    """A JSON file's content; a missing file is the one-line error `<path>: <not_found>`, an
    unreadable one `<path>: not readable JSON (...)`."""
    path = Path(path)
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise AnalysisInputError(f"{path}: {not_found}") from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise AnalysisInputError(f"{path}: not readable JSON ({exc})") from None


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write a file so that a reader never sees it half-written (corun.util.atomic_write_bytes)."""
    atomic_write_bytes(path, data.encode("utf-8") if isinstance(data, str) else data)


def dumps_json(obj: object) -> str:
    """Strict JSON (no NaN), stable key order as given, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def fmt_num(x: float | int | None, digits: int = 3) -> str:
    """A number for people: `digits` significant digits, never scientific notation.

    None and NaN are shown as "missing", never as a number.
    """
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "missing"
    if abs(x) >= 10**digits or float(x).is_integer():
        return f"{x:.0f}"
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")


# ----------------------------------------------------------------------------- input tables


def check_columns(df: pd.DataFrame, wanted: list[str], source: str) -> None:
    """One-line error naming the absent columns of a CSV table."""
    absent = [c for c in wanted if c not in df.columns]
    if absent:
        raise AnalysisInputError(
            f"{source}: columns: {', '.join(absent)} absent (expected columns {', '.join(wanted)})"
        )


def check_ints(df: pd.DataFrame, columns: dict[str, int | None], source: str) -> pd.DataFrame:
    """Columns as int64, each >= its minimum (None: no minimum); one-line error on the first bad row."""
    df = df.copy()
    for col, minimum in columns.items():
        num = pd.to_numeric(df[col], errors="coerce")
        bad = num.isna() | (num != np.floor(num))
        if minimum is not None:
            bad |= num < minimum
        if bad.any():
            row = int(np.flatnonzero(bad.to_numpy())[0])
            want = "an integer" + (f" >= {minimum}" if minimum is not None else "")
            raise AnalysisInputError(f"{source}: row {row + 2}: {col}: {df[col].iloc[row]!r} (expected {want})")
        df[col] = num.astype("int64")
    return df


def read_csv(path: str | os.PathLike, text_columns: list[str]) -> pd.DataFrame:
    """A CSV file with `text_columns` kept as strings; one-line errors for absent or bad files."""
    try:
        return pd.read_csv(path, dtype={c: "str" for c in text_columns}, keep_default_na=True)
    except FileNotFoundError:
        raise AnalysisInputError(f"{path}: not found (expected a CSV file)") from None
    except (pd.errors.ParserError, pd.errors.EmptyDataError, UnicodeDecodeError) as exc:
        raise AnalysisInputError(f"{path}: not a readable CSV ({exc})") from None


def resolve_run_paths(runs: pd.DataFrame, runs_csv: str | os.PathLike, column: str = "metadata_path") -> list[Path]:
    """Each run's `column` path. An absolute path as given if it exists. A relative path (the
    workflow writes them relative to the repository root) under the runs.csv folder or the
    nearest of its parents that holds it, so that the tables of another checkout are read with
    that checkout's runs, not those of the current folder; else relative to the current folder.
    Else, for tables moved to another place or machine (an extracted archive), the longest tail
    of the path found under the runs.csv folder or one of its parents. A path found nowhere is
    returned as given (its reader reports it missing)."""
    base = Path(runs_csv).parent
    out = []
    for i, value in enumerate(runs[column]):
        if not isinstance(value, str) or not value.strip():
            raise AnalysisInputError(f"{runs_csv}: row {i + 2}: {column}: {value!r} (expected a path)")
        out.append(_find_moved(Path(value), base))
    return out


def _find_moved(path: Path, base: Path) -> Path:
    if path.is_absolute():
        if path.exists():
            return path
    else:
        here = path.exists()
        for root in [base, *base.resolve().parents]:
            cand = root / path
            if cand.exists():
                return path if here and os.path.samefile(cand, path) else cand  # the same file: as given
        if here:
            return path
    parts = path.parts[1:] if path.is_absolute() else path.parts
    for k in range(max(1, len(parts) - 1)):  # longest tail first, at least two parts
        for root in [base, *list(base.parents)[:4]]:
            cand = root.joinpath(*parts[k:])
            if cand.exists():
                return cand
    return path


def table_to_csv(table: pd.DataFrame) -> str:
    """A table as CSV text, floats rounded to 6 decimals (stable for golden tests)."""
    out = table.copy()
    for col in out.columns:
        if out[col].dtype == "float64":
            out[col] = out[col].round(6) + 0.0  # + 0.0 turns -0.0 into 0.0
    return out.to_csv(index=False, lineterminator="\n")


def run_checks(jobs: pd.DataFrame, runs: pd.DataFrame) -> list[str]:
    """Validity checks on the data, reported as notes (they do not change any metric).

    Runs absent from either table, and (for the stacking experiments, whose jobs have k and
    jobs_per_cmp) runs without k x jobs_per_cmp jobs on k distinct CMPs.
    """
    notes = []
    unknown = sorted(set(jobs["run_id"]) - set(runs["run_id"]))
    if unknown:
        notes.append(
            f"{len(unknown)} run(s) in the job table are absent from runs.csv: "
            f"{', '.join(unknown[:5])}{' ...' if len(unknown) > 5 else ''}"
        )
    empty = sorted(set(runs["run_id"]) - set(jobs["run_id"]))
    if empty:
        notes.append(
            f"{len(empty)} run(s) in runs.csv have no jobs: {', '.join(empty[:5])}{' ...' if len(empty) > 5 else ''}"
        )
    if not {"k", "jobs_per_cmp", "cmp"} <= set(jobs.columns):
        return notes  # not a stacking experiment: no k x jobs_per_cmp layout to check
    per_run = jobs.groupby("run_id").agg(
        n=("job_id", "size"),
        k=("k", "first"),
        jpc=("jobs_per_cmp", "first"),
        cmps=("cmp", "nunique"),
    )
    off = per_run[(per_run["n"] != per_run["k"] * per_run["jpc"]) | (per_run["cmps"] != per_run["k"])]
    if len(off):
        notes.append(
            f"{len(off)} run(s) do not have k x jobs_per_cmp jobs on k distinct CMPs: "
            f"{', '.join(off.index[:5])}{' ...' if len(off) > 5 else ''}"
        )
    return notes


# ----------------------------------------------------------------------------- paper setup


def setup_frame(rows: list[tuple[str, dict, object]]) -> pd.DataFrame:
    """setup.csv: one row per (quantity, paper value item, this run's value); no verdict."""
    return pd.DataFrame(
        [
            {
                "quantity": q,
                "paper_value": p["value"],
                "this_run_value": m,
                "unit": p["unit"],
                "paper_source": p["source"],
            }
            for q, p, m in rows
        ],
        dtype=object,  # keep integers as integers
    )

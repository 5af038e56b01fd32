"""Helpers shared by the analysis modules: schema validation with one-line errors, atomic writes."""

from __future__ import annotations

import json
import math
import os
from functools import cache
from pathlib import Path

import jsonschema
import numpy as np

from corun.errors import CorunError

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


def _key_path(parts) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out


def _shown(value: object) -> str:
    if isinstance(value, dict):
        return "an object"
    if isinstance(value, list):
        return "a list"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _describe(error: jsonschema.ValidationError) -> tuple[str, str, str]:
    """(key, shown value, expected) for one validation error."""
    key = _key_path(error.absolute_path)
    kind, want, inst = error.validator, error.validator_value, error.instance
    if kind == "required":
        absent = [name for name in want if name not in inst]
        return _key_path([*error.absolute_path, absent[0]]), "absent", "a value for this key"
    if kind == "additionalProperties" and isinstance(inst, dict):
        known = set(error.schema.get("properties", {}))
        extra = sorted(name for name in inst if name not in known)
        return (
            _key_path([*error.absolute_path, extra[0]]),
            "unknown key",
            f"one of {', '.join(sorted(known))}",
        )
    if kind == "enum":
        return key, _shown(inst), "one of " + ", ".join(repr(v) for v in want)
    if kind == "type":
        types = want if isinstance(want, list) else [want]
        return key, _shown(inst), "type " + " or ".join(types)
    if kind == "pattern":
        return key, _shown(inst), error.schema.get("description", f"a string matching {want}")
    if kind == "minLength":
        return key, _shown(inst), f"a string of at least {want} characters"
    if kind in ("minimum", "exclusiveMinimum"):
        op = ">=" if kind == "minimum" else ">"
        return key, _shown(inst), f"a number {op} {want}"
    return key, _shown(inst), error.message


def validate(instance: object, schema_name: str, source: str) -> None:
    """Validate against analysis/schemas/<schema_name>; raise a one-line AnalysisInputError."""
    error = jsonschema.exceptions.best_match(_validator(schema_name).iter_errors(instance))
    if error is not None:
        key, shown, expected = _describe(error)
        raise AnalysisInputError(f"{source}: {key or '(top level)'}: {shown} (expected {expected})")


def write_atomic(path: str | os.PathLike, data: str | bytes) -> None:
    """Write a file so that a reader never sees it half-written (temp file, then rename)."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as out:
            out.write(data.encode("utf-8") if isinstance(data, str) else data)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def dumps_json(obj: object) -> str:
    """Strict JSON (no NaN), stable key order as given, trailing newline."""
    return json.dumps(obj, indent=2, ensure_ascii=False, allow_nan=False) + "\n"


def fmt_num(x: float | int | None, digits: int = 3) -> str:
    """A number for people: `digits` significant digits, never scientific notation.

    None and NaN are shown as "missing", never as a number.
    """
    if x is None or (isinstance(x, float) and not math.isfinite(x)):
        return "missing"
    if abs(x) >= 10 ** digits or float(x).is_integer():
        return f"{x:.0f}"
    return np.format_float_positional(x, precision=digits, unique=False, fractional=False, trim="-")

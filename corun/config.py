"""Load YAML/JSON documents and check them against a JSON schema.

Defaults live in the schema (`default:`), so this module also fills them in.
Every failure is a ConfigError: one line naming the file, the key, the value
and what was expected.

Every load validates: the campaign's configuration is validated once, when its plan is made
(experiments.campaign); a run spec, a variant's manifest or parameters each time they are read.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

import jsonschema
import yaml

from corun.errors import ConfigError

SafeLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml's parser when built with it: same result, faster

SCHEMA_DIR = Path(__file__).resolve().parent / "schemas"


def load_schema(name_or_path: str | Path) -> dict:
    """A schema by name (corun/schemas/<name>.schema.json) or path; loaded once per process, so do
    not change it (copy.deepcopy first)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = SCHEMA_DIR / f"{name_or_path}.schema.json"
    return _load_schema_file(path.resolve())


@functools.cache
def _load_schema_file(path: Path) -> dict:
    with open(path, encoding="utf-8") as fh:
        return json.load(fh)


def read_document(path: str | Path) -> Any:
    """Parse a YAML or JSON file; a syntax error is a one-line ConfigError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(str(path), "", str(path), "an existing file") from None
    except OSError as exc:
        raise ConfigError(str(path), "", str(path), f"a readable file: {exc.strerror}") from None
    try:
        return yaml.load(text, Loader=SafeLoader) if text.strip() else {}
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f"line {mark.line + 1}" if mark is not None else "document"
        problem = getattr(exc, "problem", None) or "syntax error"
        raise ConfigError(str(path), where, problem, "valid YAML") from None


def _key_path(path) -> str:
    out = ""
    for part in path:
        if isinstance(part, int):
            out += f"[{part}]"
        else:
            out += ("." if out else "") + str(part)
    return out


def describe_error(err: jsonschema.ValidationError) -> tuple[str, Any, str]:
    """(key, value, expected) for one validation error: the one wording of schema errors, for
    corun's documents and analysis's tables alike."""
    key = _key_path(err.absolute_path)
    v, vv, inst = err.validator, err.validator_value, err.instance
    type_names = {
        "integer": "an integer",
        "number": "a number",
        "string": "a string",
        "boolean": "true or false",
        "array": "a list",
        "object": "a mapping",
        "null": "null",
    }
    if v == "type":
        types = vv if isinstance(vv, list) else [vv]
        exp = " or ".join(type_names.get(t, t) for t in types)
        # say the bound too, it saves the user a second try
        sch = err.schema
        if "minimum" in sch:
            exp += f" >= {sch['minimum']}"
        if "maximum" in sch:
            exp += f" <= {sch['maximum']}"
        return key, inst, exp
    if v in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        op = {"minimum": ">=", "maximum": "<=", "exclusiveMinimum": ">", "exclusiveMaximum": "<"}[v]
        kind = "an integer" if err.schema.get("type") == "integer" else "a number"
        return key, inst, f"{kind} {op} {vv}"
    if v == "enum":
        return key, inst, "one of " + ", ".join(str(x) for x in vv)
    if v == "const":
        return key, inst, f"{vv!r}"
    if v == "additionalProperties":
        allowed = sorted(err.schema.get("properties", {}))
        extra = [k for k in inst if k not in err.schema.get("properties", {})]
        bad = extra[0] if extra else "?"
        sub = f"{key}.{bad}" if key else bad
        return sub, "unknown key", "one of " + ", ".join(allowed) if allowed else "no keys"
    if v == "required":
        missing_key = vv[0] if isinstance(vv, list) else vv
        for name in vv:
            if isinstance(inst, dict) and name not in inst:
                missing_key = name
                break
        sub = f"{key}.{missing_key}" if key else missing_key
        return sub, "missing", "a value for this required key"
    if v == "pattern":
        desc = err.schema.get("description") or f"a string matching {vv}"
        return key, inst, desc
    if v in ("minItems", "maxItems"):
        return key, inst, f"a list with {'at least' if v == 'minItems' else 'at most'} {vv} items"
    if v in ("minLength",):
        return key, inst, "a non-empty string"
    if v == "uniqueItems":
        return key, inst, "a list without duplicates"
    if v in ("oneOf", "anyOf"):
        desc = err.schema.get("description") or "one of the documented forms"
        return key, inst, desc
    return key, inst, err.message


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        target = root
        for part in schema["$ref"].lstrip("#/").split("/"):
            target = target[part]
        schema = target
    return schema


def _fill_defaults(instance: Any, schema: dict, root: dict) -> Any:
    """Return a copy of `instance` with schema defaults filled in (objects only)."""
    schema = _resolve(schema, root)
    kind = schema.get("type")
    if isinstance(instance, dict) and (kind == "object" or (isinstance(kind, list) and "object" in kind)):
        out = dict(instance)
        for name, given in schema.get("properties", {}).items():
            sub = _resolve(given, root)
            holder = given if "default" in given else sub  # a default beside a $ref wins
            if name not in out and "default" in holder:
                out[name] = copy.deepcopy(holder["default"])
            if name in out:
                out[name] = _fill_defaults(out[name], sub, root)
        extra = schema.get("additionalProperties")
        if isinstance(extra, dict):
            for name in out:
                if name not in schema.get("properties", {}):
                    out[name] = _fill_defaults(out[name], extra, root)
        return out
    if isinstance(instance, list) and isinstance(schema.get("items"), dict):
        return [_fill_defaults(x, schema["items"], root) for x in instance]
    return instance


_VALIDATORS: dict[int, tuple[dict, jsonschema.protocols.Validator]] = {}


_BY_CONTENT: dict[str, jsonschema.protocols.Validator] = {}


def _validator(schema: dict):
    """A compiled validator per schema object (schemas are loaded once, see load_schema); a
    schema built on the fly (a variant's params) shares the validator of an equal one."""
    hit = _VALIDATORS.get(id(schema))
    if hit is not None and hit[0] is schema:
        return hit[1]
    key = json.dumps(schema, sort_keys=True, default=str)
    if key not in _BY_CONTENT:
        _BY_CONTENT[key] = jsonschema.Draft202012Validator(schema)
    _VALIDATORS[id(schema)] = (schema, _BY_CONTENT[key])
    return _BY_CONTENT[key]


def _of_no_type(err) -> bool:
    """A oneOf/anyOf whose every alternative refused the value's type (at the value itself)."""
    return err.validator in ("oneOf", "anyOf") and all(
        e.validator == "type" and list(e.absolute_path) == list(err.absolute_path) for e in err.context
    )


def _alternatives(err) -> tuple[str, Any, str]:
    """(key, value, the alternatives in words) of a value that is none of a oneOf's forms."""
    key = ".".join(str(p) for p in err.absolute_path)
    words = []
    for alt in err.schema.get(err.validator, []):
        kinds = alt.get("type")
        kinds = kinds if isinstance(kinds, list) else [kinds]
        for kind in kinds:
            if kind == "null":
                words.append("null")
            elif kind == "array":
                item = alt.get("items") or {}
                words.append("a list" + (f" of {item['description']}" if item.get("description") else ""))
            elif kind == "object":
                keys = sorted(alt.get("properties") or {})
                words.append("a mapping" + (f" with keys {', '.join(keys)}" if keys else ""))
            elif kind:
                words.append({"string": "a string", "integer": "an integer", "number": "a number"}.get(kind, kind))
    expected = (
        ", ".join(words[:-1]) + f" or {words[-1]}" if len(words) > 1 else (words[0] if words else "a documented form")
    )
    return key, err.instance, expected


def validate(instance: Any, schema: dict | str, source: str) -> Any:
    """Validate; return the instance with defaults filled in. Raise ConfigError on the first error."""
    if isinstance(schema, str):
        schema = load_schema(schema)
    errors = list(_validator(schema).iter_errors(instance))
    if errors:
        err = jsonschema.exceptions.best_match(errors)
        # prefer the deepest, most specific error; but a value of none of a oneOf's types is
        # wrong as a whole: its alternatives are what was expected, not the first of them
        while err.context and not _of_no_type(err):
            err = jsonschema.exceptions.best_match(err.context)
        key, value, expected = _alternatives(err) if err.context else describe_error(err)
        raise ConfigError(source, key, value, expected)
    return _fill_defaults(instance, schema, schema)


def load(path: str | Path, schema: dict | str) -> Any:
    """Read and validate a document; `source` in errors is the path as given."""
    doc = read_document(path)
    return validate(doc, schema, str(path))

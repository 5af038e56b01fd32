"""The workflow configuration (workflows/config/*.yaml).

Its schema is workflows/schemas/config.schema.json with one section per registered experiment
merged in from experiments/<name>/config.schema.json (as `$ref: #/$defs/experiment_<name>`).
Each experiment's values for the configuration's `profile` (local, smoke, paper ...) are
experiments/<name>/profiles/<profile>.yaml; a section in the configuration file overrides them
key by key (nested mappings merged), and the schema's defaults fill in the rest.
Validation fills the defaults, runs each selected experiment's own checks, and checks every
scheduler parameter the runs would pass against the variant's manifest, so a bad value is one
line before anything runs.
"""

from __future__ import annotations

import copy
import functools
import json
from pathlib import Path
from typing import Any

from corun import config
from corun.errors import ConfigError
from corun.plan import device_section
from corun.run import schedulers
from corun.util import repo_root
from experiments import EXPERIMENTS_DIR, registry

SCHEMA_DIR = repo_root() / "workflows" / "schemas"
SCHEMA = SCHEMA_DIR / "config.schema.json"


# Every experiment with repetitions has the sequential design's keys (experiments/looks.py).
SEQUENTIAL = {
    "max_reps": {
        "type": ["integer", "null"],
        "minimum": 1,
        "default": None,
        "description": "the sequential design's cap: while a claim stays inconclusive and more reps could decide "
        "it, the workflow adds reps_step reps (a look) up to this many; null: reps only, one look",
    },
    "reps_step": {
        "type": ["integer", "null"],
        "minimum": 1,
        "default": None,
        "description": "reps each further look adds (null: reps)",
    },
}


def experiment_schema_file(name: str) -> Path:
    return EXPERIMENTS_DIR / name / "config.schema.json"


def profile_file(name: str, profile: str) -> Path:
    return EXPERIMENTS_DIR / name / "profiles" / f"{profile}.yaml"


def _merged(base: Any, over: Any) -> Any:
    """`over` on top of `base`: mappings merged key by key, anything else replaced."""
    if isinstance(base, dict) and isinstance(over, dict):
        out = dict(base)
        for k, v in over.items():
            out[k] = _merged(base.get(k), v) if k in base else v
        return out
    return over


def with_profiles(raw: dict, source: str) -> dict:
    """Each experiment's section of the configuration's profile under the file's own section."""
    profile = raw.get("profile")
    if not isinstance(profile, str):
        return raw  # none (the schemas' defaults only), or the schema reports it in one line
    out = dict(raw)
    for name in registry():
        path = profile_file(name, profile)
        if not path.is_file():
            continue
        section = config.read_document(path)
        if section is None:
            continue
        if not isinstance(section, dict):
            raise ConfigError(str(path), "(top level)", section, f"the {name} section as a mapping")
        out[name] = _merged(section, raw[name]) if isinstance(raw.get(name), dict) else raw.get(name, section)
    return out


@functools.cache
def _schema() -> dict:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    defs = schema.setdefault("$defs", {})
    # the run spec's remeasure section, with its defaults: one definition for the configuration
    # and the specs (corun.plan.base.stamp_remeasure writes it into each)
    defs["remeasure"] = copy.deepcopy(config.load_schema("run_spec")["$defs"]["remeasure"])
    names = list(registry())
    for name in names:
        path = experiment_schema_file(name)
        if not path.exists():
            continue  # an experiment without settings of its own
        section = json.loads(path.read_text(encoding="utf-8"))
        defs.update(section.pop("$defs", {}))
        for key in ("$schema", "$comment", "title"):
            section.pop(key, None)
        if "reps" in section.get("properties", {}):
            section["properties"].update(SEQUENTIAL)
        defs[f"experiment_{name}"] = section
        schema["properties"][name] = {"$ref": f"#/$defs/experiment_{name}"}
    schema["properties"]["experiments"]["items"] = {"enum": names}
    schema["properties"]["multi_host"]["properties"]["experiments"]["items"] = {"enum": names}
    return schema


def workflow_schema() -> dict:
    """The merged schema (a copy: callers may change it)."""
    return copy.deepcopy(_schema())


def check_variant_params(cfg: dict, source: str) -> None:
    """Every (variant, parameter) the selected experiments' runs would use, against the manifests."""
    exps = registry()
    for name in cfg["experiments"]:
        for key, variant, param, value in exps[name].variant_params(cfg, source):
            schedulers.check_param(variant, param, value, source, key, kinds=exps[name].variant_kinds)


def validate_config(cfg: Any, source: str) -> dict:
    """Defaults filled in; a bad key or value is a one-line ConfigError."""
    schema = _schema()
    exps = registry()
    raw = cfg or {}
    if isinstance(raw, dict):
        raw = with_profiles(raw, source)
        for exp in exps.values():
            # an experiment without settings of its own (io_latency_split) has no section: the
            # schema then reports the key as unknown, in one line
            if isinstance(raw.get(exp.name), dict) and f"experiment_{exp.name}" in schema["$defs"]:
                raw = exp.prepare_config(raw, schema["$defs"][f"experiment_{exp.name}"])
    cfg = config.validate(raw, schema, source)
    for name in registry():
        sec = cfg.get(name) or {}
        if sec.get("max_reps") is not None and sec["max_reps"] < sec.get("reps", 1):
            raise ConfigError(source, f"{name}.max_reps", sec["max_reps"], f"an integer >= {name}.reps ({sec['reps']})")
    device_section.check(cfg, source)
    for name in cfg["experiments"]:
        exps[name].check(cfg, source)
    check_variant_params(cfg, source)
    return cfg


def profile_config(path: str | Path) -> dict:
    """A configuration file as written, with its profile's experiment sections merged under its own
    and `profile` then cleared (not yet validated): a starting point for a configuration of one's
    own, in which a section set or replaced stays exactly as set."""
    raw = config.read_document(path) or {}
    if not isinstance(raw, dict):
        return raw
    return {**with_profiles(raw, str(path)), "profile": None}


def load_workflow_config(path: str | Path) -> dict:
    return validate_config(config.read_document(path), str(path))


def experiments_with_runs(cfg: dict) -> list[str]:
    """The experiments whose runs the selected ones need (io_latency_split needs cmp_stacking's)."""
    exps = registry()
    out = []
    for name in cfg["experiments"]:
        owner = exps[name].runs_of or name
        if owner not in out:
            out.append(owner)
    return [n for n in exps if n in out]

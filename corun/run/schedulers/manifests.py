"""Scheduler variant manifests: reading, checking and resolving schedulers/<name>/manifest.yaml.

The rules are corun.run.schedulers' (its docstring says them); this module finds the manifests
on the search path (CORUN_SCHEDULERS_PATH, then schedulers/), resolves what a variant extends
and the names a `named_by` manifest stands for, and checks every param and placeholder. The
manifests of one state of the search path are read once (a catalog, rebuilt when any manifest
changes); a manifest that cannot be read makes errors only for its own names.
"""

from __future__ import annotations

import copy
import difflib
import functools
import os
import re
from collections.abc import Iterable
from pathlib import Path

from corun import config
from corun.errors import ConfigError
from corun.util import repo_root

SCHEDULERS_DIR = repo_root() / "schedulers"
# what a variant that extends another takes from it unless it says so itself
INHERITED = (
    "kind",
    "build",
    "start",
    "stop",
    "verify",
    "daemon",
    "job_events",
    "requires",
    "node_args",
    "peer_args",
    "lifeline_args",
)
COMMANDS = ("build", "start", "stop", "verify", "node_args", "peer_args", "lifeline_args")
PARAM_PLACEHOLDER = re.compile(r"\{param\.([^}]*)\}")


def search_path() -> list[Path]:
    extra = os.environ.get("CORUN_SCHEDULERS_PATH", "")
    return [Path(p) for p in extra.split(":") if p] + [SCHEDULERS_DIR]


def show(path: Path) -> str:
    """A manifest's path as errors name it: relative to the working directory when under it."""
    try:
        return str(Path(path).resolve().relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)


def nearest(word: str, choices: Iterable[str], n: int = 3) -> list[str]:
    return difflib.get_close_matches(word, sorted(set(choices)), n=n, cutoff=0.6)


def _kinds(kinds: str | Iterable[str] | None) -> tuple[str, ...] | None:
    if kinds is None:
        return None
    return (kinds,) if isinstance(kinds, str) else tuple(kinds)


# ----------------------------------------------------------------------------- reading manifests


def _merge_params(base: dict, own: dict, source: str, key: str, base_name: str, allow_new: bool) -> dict:
    """The base's params with the own ones over them, key by key (an override of `default:`
    alone keeps the type, description and bounds)."""
    out = copy.deepcopy(base)
    for pname, spec in own.items():
        if pname in out:
            out[pname] = {**out[pname], **spec}
        elif not allow_new:
            near = nearest(pname, base) or ["none near"]
            raise ConfigError(source, f"{key}.{pname}", spec, f"a parameter of {base_name}: nearest {', '.join(near)}")
        else:
            out[pname] = dict(spec)
    return out


def _param_schema(man: dict) -> dict:
    props = {}
    for pname, p in man["params"].items():
        s = {k: v for k, v in p.items() if k in ("type", "minimum", "maximum", "exclusiveMinimum", "enum")}
        props[pname] = s
    return {"type": "object", "additionalProperties": False, "properties": props}


def _check_param(man, pname, value, source, key):
    sch = _param_schema(man)["properties"][pname]
    try:
        config.validate({pname: value}, {"type": "object", "properties": {pname: sch}}, source)
    except ConfigError as exc:
        raise ConfigError(source, key, value, exc.expected) from None


def _check_defaults(man: dict, source: str, key: str = "params") -> None:
    defaults = {pname: p["default"] for pname, p in man["params"].items() if "default" in p}
    try:  # all at once (one validation per manifest); one by one only to name the bad one
        config.validate(defaults, _param_schema(man), source)
    except ConfigError:
        for pname, value in defaults.items():
            _check_param(man, pname, value, source, f"{key}.{pname}.default")
        raise


def _named(man: dict) -> dict[str, tuple[str, object, dict]]:
    """{name: (param, value, entry)} of the names a `named_by` variant stands for."""
    nb = man.get("named_by")
    if not nb:
        return {}
    if isinstance(nb, str):
        return {f"{man['name']}_{str(v).replace('-', '_')}": (nb, v, {}) for v in man["params"][nb]["enum"]}
    return {n: (nb["param"], e.get("value", n), e) for n, e in nb["variants"].items()}


def _changed_defaults(base: dict, params: dict) -> list[str]:
    """The params whose default differs from the one a variant inherits."""
    return sorted(p for p, spec in params.items() if p in base and spec.get("default") != base[p].get("default"))


def _named_manifest(family: dict, name: str, pname: str, value, entry: dict, source: str) -> dict:
    """The manifest of a name a `named_by` variant stands for: the family's, with the param
    fixed to the value, and the name's own description, paper and param overrides."""
    man = copy.deepcopy(family)
    key = f"named_by.variants.{name}"
    man["name"] = name
    man["family"] = family["name"]
    man.pop("named_by")
    if entry:
        man["description"] = entry["description"]
        if "paper" in entry:
            man["paper"] = entry["paper"]
    inherited = man["params"]
    man["params"] = _merge_params(inherited, entry.get("params", {}), source, f"{key}.params", family["name"], False)
    man["own_defaults"] = _changed_defaults(inherited, man["params"])
    man["params"][pname] = {**man["params"][pname], "enum": [value], "default": value}
    _check_defaults(man, source, f"{key}.params")
    return man


def _check_commands(man: dict, doc: dict, base: dict | None, source: str) -> None:
    """Every {param.NAME} a command uses is a param, and every param is used by a command: a
    param nothing uses is a misspelt override or a leftover."""
    used = set()
    for key in COMMANDS:
        for arg in man.get(key) or []:
            for m in PARAM_PLACEHOLDER.finditer(arg):
                if m.group(1) not in man["params"]:
                    near = nearest(m.group(1), man["params"]) or sorted(man["params"]) or ["none"]
                    raise ConfigError(source, key, arg, f"{{param.NAME}} of a declared param: {', '.join(near)}")
                used.add(m.group(1))
    own = (doc.get("params") or {}) if isinstance(doc, dict) else {}
    for pname, spec in own.items():
        new = base is None or pname not in base["params"]
        lacks = [k for k in ("type", "description") if k not in spec]
        if not new or (not lacks and pname in used):
            continue
        if base is None:
            expected = (
                f"a param with {' and '.join(lacks)}" if lacks else f"a param that a command uses as {{param.{pname}}}"
            )
        else:
            near = ", ".join(nearest(pname, base["params"]) or ["none near"])
            tail = (
                "with type and description" if lacks else f"that a command of {man['name']} uses as {{param.{pname}}}"
            )
            expected = f"a parameter of {base['name']} to override (nearest: {near}), or a new parameter {tail}"
        raise ConfigError(source, f"params.{pname}", spec, expected)


def _resolve(path: Path, cat: _Catalog, chain: tuple[str, ...]) -> dict:
    """A folder's manifest, checked, with what it inherits from the variant it `extends`."""
    source = show(path)
    doc = config.read_document(path)
    man = config.validate(doc, "scheduler_manifest", source)
    name = man["name"]
    if name != path.parent.name:
        raise ConfigError(source, "name", name, f"the folder name {path.parent.name!r}")
    base = None
    man["own_defaults"] = []  # params whose default differs from the inherited one (extends)
    base_name = man.get("extends")
    if base_name:
        if base_name == name or base_name in chain:
            raise ConfigError(source, "extends", base_name, "a variant that does not extend this one")
        if cat.where(base_name) is None:
            raise cat.unknown(base_name, source, "extends", None)
        base = cat.manifest(base_name, chain + (name,))
        rel = os.path.relpath(cat.directory(base_name), path.parent)
        man["params"] = _merge_params(base["params"], man["params"], source, "params", base_name, True)
        man["own_defaults"] = _changed_defaults(base["params"], man["params"])
        for key in INHERITED:  # what the variant does not say itself, it does as its base does
            if key in base and key not in doc:
                value = base[key]
                if isinstance(value, list) and key != "requires":  # commands run in the base's folder
                    value = [a.replace("{scheduler_dir}", "{scheduler_dir}/" + rel) for a in value]
                man[key] = value
        man["sources"] = [rel] + [os.path.normpath(os.path.join(rel, s)) for s in base["sources"]] + man["sources"]
    if "kind" not in man:
        kinds = config.load_schema("scheduler_manifest")["properties"]["kind"]["enum"]
        raise ConfigError(source, "kind", "missing", f"one of {', '.join(kinds)}, or extends: a variant to share it")
    for key, command in (("start_args", "start"), ("verify_args", "verify")):
        extra = man.pop(key, None)
        if extra:
            if not man.get(command):
                raise ConfigError(source, key, extra, f"a {command} command (its own or its base's)")
            man[command] = man[command] + extra
    _check_commands(man, doc, base, source)
    nb = man.get("named_by")
    if nb:
        pname = nb if isinstance(nb, str) else nb["param"]
        if not (pname in man["params"] and man["params"][pname].get("enum")):
            raise ConfigError(source, "named_by", pname, "a param of this variant with an enum")
    _check_defaults(man, source)
    for gname, (pname, value, entry) in _named(man).items():
        if value not in man["params"][pname]["enum"]:
            enum = ", ".join(map(str, man["params"][pname]["enum"]))
            raise ConfigError(source, f"named_by.variants.{gname}.value", value, f"one of params.{pname}.enum: {enum}")
        _named_manifest(man, gname, pname, value, entry, source)
    return man


def _stamp() -> tuple[tuple[str, int, int], ...]:
    """Every manifest on the search path with its mtime and size: a change of any is a new catalog."""
    out = []
    for d in search_path():
        for p in sorted(d.glob("*/manifest.yaml")):
            try:
                st = p.stat()
                out.append((str(p), st.st_mtime_ns, st.st_size))
            except OSError:
                out.append((str(p), 0, 0))
    return tuple(out)


def stamp() -> list[list]:
    """Every manifest on the search path with its mtime and size (JSON-able): what a cache of
    anything read from the manifests is kept under."""
    return [list(s) for s in _stamp()]


class _Catalog:
    """The variants of one state of the search path: folders (the first of a name wins) and the
    names their `named_by` stands for, each resolved once, on first use."""

    def __init__(self, stamp: tuple):
        self.paths: dict[str, Path] = {}
        for p, _mtime, _size in stamp:
            self.paths.setdefault(Path(p).parent.name, Path(p))
        self._folders: dict[str, dict | ConfigError] = {}
        self._names: dict[str, tuple[str, str, object, dict]] | None = None
        self._named_cache: dict[str, dict] = {}

    def folder(self, name: str, chain: tuple[str, ...] = ()) -> dict:
        hit = self._folders.get(name)
        if hit is None:
            try:
                hit = _resolve(self.paths[name], self, chain)
            except ConfigError as exc:
                hit = exc
            self._folders[name] = hit
        if isinstance(hit, ConfigError):
            raise hit
        return hit

    def named(self) -> dict[str, tuple[str, str, object, dict]]:
        """{name: (family, param, value, entry)} of every name a readable `named_by` stands for."""
        if self._names is None:
            names: dict[str, tuple[str, str, object, dict]] = {}
            for fam in self.paths:
                try:
                    man = self.folder(fam)
                except ConfigError:
                    continue
                for gname, (pname, value, entry) in _named(man).items():
                    if gname not in self.paths:
                        names.setdefault(gname, (fam, pname, value, entry))
            self._names = names
        return self._names

    def where(self, name: str) -> tuple[Path, dict] | None:
        """(manifest path, fixed params) of a name, or None."""
        if name in self.paths:
            return self.paths[name], {}
        hit = self.named().get(name)
        if hit is None:
            return None
        fam, pname, value, _entry = hit
        return self.paths[fam], {pname: value}

    def directory(self, name: str) -> Path:
        return self.where(name)[0].parent

    def manifest(self, name: str, chain: tuple[str, ...] = ()) -> dict:
        if name in self.paths:
            return self.folder(name, chain)
        if name not in self._named_cache:
            fam, pname, value, entry = self.named()[name]
            family = self.folder(fam, chain)
            self._named_cache[name] = _named_manifest(family, name, pname, value, entry, show(self.paths[fam]))
        return self._named_cache[name]

    def names(self) -> list[str]:
        return sorted({*self.paths, *self.named()})

    def kind(self, name: str) -> str | None:
        try:
            return self.manifest(name)["kind"]
        except ConfigError:
            return None

    def broken(self) -> list[ConfigError]:
        out = []
        for fam in sorted(self.paths):
            try:
                self.folder(fam)
            except ConfigError as exc:
                out.append(exc)
        return out

    def unknown(self, name: str, source: str, key: str, kinds: tuple[str, ...] | None) -> ConfigError:
        """The error for a name that is not a variant (of the kinds a key expects): the nearest
        names of those kinds, or all of them when few."""
        names = [n for n in self.names() if kinds is None or self.kind(n) in kinds]
        what = "variants" if kinds is None else f"variants of kind {' or '.join(kinds)}"
        near = nearest(name, names)
        if near:
            expected = f"one of {', '.join(near)} (the nearest {what}"
        elif names and len(names) <= 12:
            expected = f"one of {', '.join(names)} (the {what}"
        else:
            expected = f"one of the {what} (corun sched list shows them"
        if kinds is not None and isinstance(name, str) and (name in self.paths or name in self.named()):
            expected += f"; {name} is of kind {self.kind(name)}"
        unread = [show(self.paths[f]) for f in sorted(self.paths) if isinstance(self._folders.get(f), ConfigError)]
        if unread and kinds is None:
            expected += f"; not readable: {', '.join(unread)}"
        return ConfigError(source, key, name, expected + ")")


@functools.lru_cache(maxsize=4)
def _catalog_of(stamp: tuple) -> _Catalog:
    return _Catalog(stamp)


def _catalog() -> _Catalog:
    return _catalog_of(_stamp())


# ----------------------------------------------------------------------------- the public lookups


def available(kinds: str | Iterable[str] | None = None) -> list[str]:
    """Every variant name: folders (readable or not) and the names `named_by` variants stand
    for; with `kinds`, only readable variants of those kinds."""
    cat, kinds = _catalog(), _kinds(kinds)
    return [n for n in cat.names() if kinds is None or cat.kind(n) in kinds]


def lookup(
    name: str, source: str = "spec", key: str = "scheduler.name", kinds: str | Iterable[str] | None = None
) -> tuple[Path, dict]:
    """(manifest path, fixed params) of a variant name: a folder of schedulers/, or a name a
    `named_by` variant stands for (elevator_bfq: the elevator variant with elevator: bfq).
    An unknown name, or one of another kind than `kinds`, is a ConfigError naming the nearest
    names of those kinds."""
    cat, kinds = _catalog(), _kinds(kinds)
    hit = cat.where(name) if isinstance(name, str) else None
    if hit is None:
        raise cat.unknown(name, source, key, kinds)
    if kinds is not None:
        # a broken manifest's own error, when it is the variant asked for
        kind = cat.folder(name)["kind"] if name in cat.paths else cat.kind(name)
        if kind not in kinds:
            raise cat.unknown(name, source, key, kinds)
    return hit


def find(
    name: str, source: str = "spec", key: str = "scheduler.name", kinds: str | Iterable[str] | None = None
) -> Path:
    return lookup(name, source, key, kinds)[0]


def manifest(
    name: str, source: str = "spec", key: str = "scheduler.name", kinds: str | Iterable[str] | None = None
) -> dict:
    """The manifest of a variant name, with what it extends and what its name fixes resolved."""
    lookup(name, source, key, kinds)
    return copy.deepcopy(_catalog().manifest(name))


def manifest_files(name: str, source: str = "spec", key: str = "scheduler.name") -> list[Path]:
    """The manifest files a variant depends on: its own (or its family's) and those of every
    variant it extends, nearest first. A workflow declares them as inputs of the variant's runs."""
    cat = _catalog()
    out: list[Path] = []
    while name is not None:
        path, _fixed = lookup(name, source, key)
        if path in out:
            break
        out.append(path)
        name = cat.folder(path.parent.name).get("extends")
        source, key = show(path), "extends"
    return out


def load_manifest(path: Path) -> dict:
    """A folder's manifest, checked, with what it inherits from the variant it `extends`."""
    path = Path(path)
    cat = _catalog()
    if cat.paths.get(path.parent.name) == path:
        return copy.deepcopy(cat.folder(path.parent.name))
    return _resolve(path, cat, ())  # a folder outside the search path


def listing() -> tuple[list[dict], list[ConfigError]]:
    """(the manifest of every readable variant name, by name; the error of every unreadable
    manifest): one broken manifest does not hide the others."""
    cat = _catalog()
    good = []
    for name in cat.names():
        try:
            good.append(copy.deepcopy(cat.manifest(name)))
        except ConfigError:
            continue
    return good, cat.broken()


def check_param(
    variant: str,
    param: str | None,
    value,
    source: str,
    key: str,
    kinds: str | Iterable[str] | None = None,
) -> None:
    """One parameter a configuration gives a variant, checked against the variant's manifest
    (param None: only that the variant exists, and is of `kinds`)."""
    _path, fixed = lookup(variant, source, key if param is None else key.rsplit(".", 1)[0], kinds)
    if param is None:
        return
    man = _catalog().manifest(variant)
    if param not in man["params"]:
        near = nearest(param, man["params"]) or sorted(man["params"])
        raise ConfigError(source, key, value, f"a parameter of {variant}: {', '.join(near)}")
    if param in fixed and value != fixed[param]:
        raise ConfigError(source, key, value, f"{fixed[param]!r}, which the name {variant} stands for")
    _check_param(man, param, value, source, key)


def resolve_params(man: dict, given: dict, source: str = "spec", key: str = "scheduler.params") -> dict:
    """Defaults from the manifest, overridden by `given`; every value checked."""
    try:
        config.validate(given, _param_schema(man), source)
    except ConfigError as exc:
        raise ConfigError(source, f"{key}.{exc.key}", exc.value, exc.expected) from None
    out = {k: p.get("default") for k, p in man["params"].items()}
    out.update(given)
    missing = [k for k, v in out.items() if v is None]
    if missing:
        raise ConfigError(source, f"{key}.{missing[0]}", "missing", "a value (the manifest has no default)")
    return out

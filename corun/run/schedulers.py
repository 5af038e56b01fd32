"""Scheduler variants as plugins: schedulers/<name>/manifest.yaml.

A variant declares what it changes (`kind`), its parameters with defaults, and
argv commands: build (at provisioning), start, verify (exit 0 = in effect),
stop (restores what start changed). Commands may use these placeholders:

  {python} {name} {scheduler_dir} {state_dir} {run_dir} {device} {device_majmin}
  {cgroup} {job_events} {cpus} {param.NAME}

Before each run the host starts the variant and runs verify; after it, stop.
The stop command is journalled before start runs, so it is run even if the
runner dies (see corun.machine.state). Daemon variants (kind daemon, `daemon: true`)
keep running during the run and get the runner's job events in {job_events}.

Families. A variant that `extends` another shares its kind, params, sources and commands; a
param it names again overrides only the keys it gives (a `default:` alone keeps the type,
description and bounds), and a param of its own must be used by one of its commands, so a
misspelt override is an error naming the nearest params of the base. A variant with `named_by`
stands for several names, each with one param fixed: `NAME_VALUE` for every value of the
param's enum (`named_by: PARAM`), or the names it lists with their own descriptions
(`named_by: {param: PARAM, variants: {...}}`). `manifest(name)` is a name's manifest with
all of this resolved; `manifest_files(name)` the manifest files it depends on.

A broken manifest breaks only its own names: the others are listed and run (`listing()`).
"""

from __future__ import annotations

import copy
import difflib
import functools
import hashlib
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from corun import config
from corun.errors import ConfigError, CorunError, MissingTool
from corun.machine.state import Journal
from corun.util import proc_starttime, repo_root

SCHEDULERS_DIR = repo_root() / "schedulers"
# what a variant that extends another takes from it unless it says so itself
INHERITED = ("kind", "build", "start", "stop", "verify", "daemon", "job_events", "requires", "node_args", "peer_args")
COMMANDS = ("build", "start", "stop", "verify", "node_args", "peer_args")
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
    man["params"] = _merge_params(
        man["params"], entry.get("params", {}), source, f"{key}.params", family["name"], False
    )
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
    base_name = man.get("extends")
    if base_name:
        if base_name == name or base_name in chain:
            raise ConfigError(source, "extends", base_name, "a variant that does not extend this one")
        if cat.where(base_name) is None:
            raise cat.unknown(base_name, source, "extends", None)
        base = cat.manifest(base_name, chain + (name,))
        rel = os.path.relpath(cat.directory(base_name), path.parent)
        man["params"] = _merge_params(base["params"], man["params"], source, "params", base_name, True)
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


def build_id(directory: Path, sources: list[str] | tuple[str, ...] = ()) -> str:
    """sha256 over the variant's source files (manifest, code) and its shared `sources`
    (files or folders relative to it), build outputs excluded; short."""
    h = hashlib.sha256()
    for rel in [".", *sources]:
        root = (directory / rel).resolve()
        files = [root] if root.is_file() else sorted(root.rglob("*"))
        for f in files:
            parts = f.relative_to(root).parts if f != root else ()
            if f.is_file() and "build" not in parts[:1] and "__pycache__" not in parts:
                h.update(f"{rel}/{'/'.join(parts)}".encode())
                h.update(f.read_bytes())
    return h.hexdigest()[:16]


def command_env() -> dict:
    """Environment for variant commands: corun importable even when not installed."""
    env = dict(os.environ)
    root = str(repo_root())
    env["PYTHONPATH"] = root + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    return env


def push_stop(journal: Journal, argv: list[str], cwd: Path, what: str) -> dict:
    """Journal a variant's stop command (run at undo, or by recovery after a killed runner)."""
    return journal.push(
        {
            "kind": "command",
            "argv": argv,
            "cwd": str(cwd),
            "env": {"PYTHONPATH": command_env()["PYTHONPATH"]},
            "what": what,
        }
    )


def start_daemon(
    journal: Journal, argv: list[str], log_path: Path, what: str, cwd: Path | None = None
) -> tuple[subprocess.Popen, dict]:
    """Start a variant's daemon in its own session, output appended to `log_path`, and journal
    its process (killed at undo, or by recovery after a killed runner); (process, action)."""
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=command_env(),
        )
    action = journal.push({"kind": "processes", "what": what, "pids": {str(process.pid): proc_starttime(process.pid)}})
    return process, action


@dataclass
class Variant:
    name: str
    manifest: dict
    directory: Path
    params: dict
    ctx: dict = field(default_factory=dict)
    process: subprocess.Popen | None = None
    _journal_action: dict | None = None
    _daemon_action: dict | None = None

    @classmethod
    def load(
        cls,
        name: str,
        params: dict | None = None,
        source: str = "spec",
        need_built: bool = True,
        kinds: str | Iterable[str] | None = None,
    ) -> Variant:
        path, fixed = lookup(name, source, kinds=kinds)
        man = copy.deepcopy(_catalog().manifest(name))
        given = params or {}
        for pname, value in fixed.items():
            if pname in given and given[pname] != value:
                raise ConfigError(
                    source, f"scheduler.params.{pname}", given[pname], f"{value!r}, which the name {name} stands for"
                )
        resolved = resolve_params(man, {**given, **fixed}, source)
        for tool in man["requires"]:
            if shutil.which(tool) is None:
                raise MissingTool(tool, "corun_schedulers", f"scheduler variant {name}")
        variant = cls(name, man, path.parent, resolved)
        start = man.get("start") or []
        if need_built and man["daemon"] and start and "{scheduler_dir}" in start[0]:
            exe = start[0].replace("{scheduler_dir}", str(path.parent))
            if not os.access(exe, os.X_OK):  # a daemon that was never built
                raise MissingTool(os.path.normpath(exe), "corun_schedulers", f"scheduler variant {name}")
        return variant

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    def describe(self) -> dict:
        return {
            "name": self.name,
            "kind": self.kind,
            "description": self.manifest["description"],
            "params": self.params,
            "build_id": build_id(self.directory, self.manifest["sources"]),
            "paper": self.manifest.get("paper"),
        }

    def expand(self, argv: list[str]) -> list[str]:
        values = {"python": sys.executable, "name": self.name, "scheduler_dir": str(self.directory), **self.ctx}
        values["param"] = _Params(self.params)
        out = []
        for a in argv:
            try:
                out.append(a.format_map(_Fmt(values)))
            except (KeyError, ValueError) as exc:
                raise CorunError(f"{show(self.directory / 'manifest.yaml')}: bad placeholder in {a!r}: {exc}") from None
        return out

    def _run(self, step: str, check: bool = True) -> subprocess.CompletedProcess | None:
        argv = self.manifest.get(step)
        if not argv:
            return None
        cmd = self.expand(argv)
        res = subprocess.run(cmd, cwd=self.directory, capture_output=True, text=True, timeout=300, env=command_env())
        if check and res.returncode != 0:
            err = (res.stderr or res.stdout).strip().splitlines()
            raise CorunError(
                f"scheduler {self.name}: {step} failed (exit {res.returncode}): {err[-1] if err else ' '.join(cmd)}"
            )
        return res

    def build(self) -> str:
        res = self._run("build")
        return res.stdout if res else ""

    def start(self, journal: Journal, ctx: dict) -> None:
        """Apply the variant; its undo is journalled first."""
        self.ctx = {k: str(v) for k, v in ctx.items()}
        Path(self.ctx.get("state_dir", ".")).mkdir(parents=True, exist_ok=True)
        stop = self.manifest.get("stop")
        if stop:
            self._journal_action = push_stop(journal, self.expand(stop), self.directory, f"stop scheduler {self.name}")
        if self.manifest["daemon"]:
            self.process, self._daemon_action = start_daemon(
                journal,
                self.expand(self.manifest["start"]),
                Path(self.ctx["state_dir"]) / "daemon.log",
                f"daemon of {self.name}",
                cwd=self.directory,
            )
        else:
            self._run("start")

    def verify(self) -> bool:
        """True if the variant is in effect (no verify command: nothing to check)."""
        if self.process is not None and self.process.poll() is not None:
            raise CorunError(
                f"scheduler {self.name}: daemon exited with {self.process.returncode} "
                f"(see {self.ctx.get('state_dir')}/daemon.log)"
            )
        res = self._run("verify", check=False)
        if res is None:
            return True
        if res.returncode != 0:
            err = (res.stderr or res.stdout).strip().splitlines()
            raise CorunError(f"scheduler {self.name}: not in effect: {err[-1] if err else 'verify failed'}")
        return True

    def alive(self) -> bool:
        return self.process is None or self.process.poll() is None

    def stop(self, journal: Journal) -> list[str]:
        errors = []
        if self.process is not None:
            if self.process.poll() is None:
                try:
                    os.killpg(self.process.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
                try:
                    self.process.wait(timeout=10)
                except subprocess.TimeoutExpired:
                    os.killpg(self.process.pid, signal.SIGKILL)
                    self.process.wait()
            if self._daemon_action in journal.actions:
                journal.actions.remove(self._daemon_action)
                journal.update(self._daemon_action)
            self._daemon_action = None
        if self._journal_action is not None:
            err = journal.undo(self._journal_action)
            if err:
                errors.append(err)
            self._journal_action = None
        return errors


class _Params:
    """{param.NAME} in a command: the value as text, booleans as true/false."""

    def __init__(self, params: dict):
        self._params = params

    def __getattr__(self, name: str) -> str:
        try:
            v = self._params[name]
        except KeyError:
            raise KeyError(f"param.{name}") from None
        return ("true" if v else "false") if isinstance(v, bool) else str(v)


class _Fmt(dict):
    def __missing__(self, key):
        raise KeyError(key)

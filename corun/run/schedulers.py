"""Scheduler variants as plugins: schedulers/<name>/manifest.yaml.

A variant declares what it changes (`kind`), its parameters with defaults, and
argv commands: build (at provisioning), start, verify (exit 0 = in effect),
stop (restores what start changed). Commands may use these placeholders:

  {python} {scheduler_dir} {state_dir} {run_dir} {device} {device_majmin}
  {cgroup} {job_events} {cpus} {param.NAME}

Before each run the host starts the variant and runs verify; after it, stop.
The stop command is journalled before start runs, so it is run even if the
runner dies (see corun.machine.state). Daemon variants (kind daemon, `daemon: true`)
keep running during the run and get the runner's job events in {job_events}.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import os
import shutil
import signal
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

from corun import config
from corun.errors import ConfigError, CorunError, MissingTool
from corun.machine.state import Journal
from corun.util import proc_starttime, repo_root

SCHEDULERS_DIR = repo_root() / "schedulers"


def search_path() -> list[Path]:
    extra = os.environ.get("CORUN_SCHEDULERS_PATH", "")
    return [Path(p) for p in extra.split(":") if p] + [SCHEDULERS_DIR]


def _named_by(path: Path) -> str | None:
    """The param a parametrised variant's generated names select (`named_by`), or None."""
    return load_manifest(path).get("named_by")


def _generated(path: Path) -> dict[str, dict]:
    """{name: fixed params} of the names a parametrised variant stands for:
    `<variant>_<value>` for each value of its `named_by` param, `-` written `_`."""
    pname = _named_by(path)
    if not pname:
        return {}
    man = load_manifest(path)
    return {f"{man['name']}_{str(v).replace('-', '_')}": {pname: v} for v in man["params"][pname]["enum"]}


def available() -> list[str]:
    names = set()
    for d in search_path():
        for p in d.glob("*/manifest.yaml"):
            names.add(p.parent.name)
            names.update(_generated(p))
    return sorted(names)


def lookup(name: str, source: str = "spec", key: str = "scheduler.name") -> tuple[Path, dict]:
    """(manifest path, fixed params) of a variant name: a folder of schedulers/, or a name a
    parametrised variant generates (elevator_bfq: the elevator variant with elevator: bfq)."""
    for d in search_path():
        m = d / name / "manifest.yaml"
        if m.exists():
            return m, {}
    for d in search_path():
        for m in d.glob("*/manifest.yaml"):
            if name.startswith(m.parent.name + "_") and name in _generated(m):
                return m, _generated(m)[name]
    raise ConfigError(source, key, name, "one of " + ", ".join(available()))


def find(name: str, source: str = "spec", key: str = "scheduler.name") -> Path:
    return lookup(name, source, key)[0]


INHERITED = ("build", "start", "stop", "verify", "daemon", "job_events", "requires", "node_args", "peer_args")


@functools.cache
def _load_manifest(path: Path, mtime_ns: int, chain: tuple[str, ...]) -> dict:
    doc = config.read_document(path)
    man = config.validate(doc, "scheduler_manifest", str(path))
    if man["name"] != path.parent.name:
        raise ConfigError(str(path), "name", man["name"], f"the folder name {path.parent.name!r}")
    base_name = man.get("extends")
    if base_name:
        if base_name in chain or base_name == man["name"]:
            raise ConfigError(str(path), "extends", base_name, "a variant that does not extend this one")
        base_path = find(base_name, str(path), "extends")
        base = load_manifest(base_path, chain + (man["name"],))
        rel = os.path.relpath(base_path.parent, path.parent)
        man["params"] = {**base["params"], **man["params"]}
        for key in INHERITED:  # what the variant does not say itself, it does as its base does
            if key in base and not (isinstance(doc, dict) and key in doc):
                value = base[key]
                if isinstance(value, list) and key != "requires":  # commands run in the base's folder
                    value = [a.replace("{scheduler_dir}", "{scheduler_dir}/" + rel) for a in value]
                man[key] = value
        man["sources"] = [rel] + [os.path.normpath(os.path.join(rel, s)) for s in base["sources"]] + man["sources"]
    if man.get("start_args"):
        if not man.get("start"):
            raise ConfigError(str(path), "start_args", man["start_args"], "a start command (its own or its base's)")
        man["start"] = man["start"] + man.pop("start_args")
    pname = man.get("named_by")
    if pname and not (pname in man["params"] and man["params"][pname].get("enum")):
        raise ConfigError(str(path), "named_by", pname, "a param of this variant with an enum")
    defaults = {pname: p["default"] for pname, p in man["params"].items() if "default" in p}
    try:  # all at once (one validation per manifest); one by one only to name the bad one
        config.validate(defaults, _param_schema(man), str(path))
    except ConfigError:
        for pname, value in defaults.items():
            _check_param(man, pname, value, str(path), f"params.{pname}.default")
        raise
    return man


def load_manifest(path: Path, _chain: tuple[str, ...] = ()) -> dict:
    """A variant's manifest, checked, with what it inherits from the variant it `extends`."""
    try:
        mtime = path.stat().st_mtime_ns
    except OSError:
        mtime = 0
    return copy.deepcopy(_load_manifest(Path(path), mtime, tuple(_chain)))


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


def check_param(variant: str, param: str | None, value, source: str, key: str) -> None:
    """One parameter a configuration gives a variant, checked against the variant's manifest
    (param None: only that the variant exists)."""
    path, fixed = lookup(variant, source, key if param is None else key.rsplit(".", 1)[0])
    if param is None:
        return
    man = load_manifest(path)
    if param not in man["params"]:
        raise ConfigError(source, key, value, f"a parameter of {variant}: " + ", ".join(sorted(man["params"])))
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
    def load(cls, name: str, params: dict | None = None, source: str = "spec", need_built: bool = True) -> Variant:
        path, fixed = lookup(name, source)
        man = load_manifest(path)
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
        values = {"python": sys.executable, "scheduler_dir": str(self.directory), **self.ctx}
        values["param"] = _Params(self.params)
        out = []
        for a in argv:
            try:
                out.append(a.format_map(_Fmt(values)))
            except (KeyError, ValueError) as exc:
                raise CorunError(f"schedulers/{self.name}/manifest.yaml: bad placeholder in {a!r}: {exc}") from None
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

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

import hashlib
import json
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
from corun.util import repo_root

SCHEDULERS_DIR = repo_root() / "schedulers"


def search_path() -> list[Path]:
    extra = os.environ.get("CORUN_SCHEDULERS_PATH", "")
    return [Path(p) for p in extra.split(":") if p] + [SCHEDULERS_DIR]


def available() -> list[str]:
    names = set()
    for d in search_path():
        names.update(p.parent.name for p in d.glob("*/manifest.yaml"))
    return sorted(names)


def find(name: str, source: str = "spec", key: str = "scheduler.name") -> Path:
    for d in search_path():
        m = d / name / "manifest.yaml"
        if m.exists():
            return m
    raise ConfigError(source, key, name, "one of " + ", ".join(available()))


def load_manifest(path: Path, _chain: tuple[str, ...] = ()) -> dict:
    man = config.load(path, "scheduler_manifest")
    if man["name"] != path.parent.name:
        raise ConfigError(str(path), "name", man["name"], f"the folder name {path.parent.name!r}")
    base_name = man.get("extends")
    if base_name:
        if base_name in _chain or base_name == man["name"]:
            raise ConfigError(str(path), "extends", base_name, "a variant that does not extend this one")
        base_path = find(base_name, str(path), "extends")
        base = load_manifest(base_path, _chain + (man["name"],))
        rel = os.path.relpath(base_path.parent, path.parent)
        man["params"] = {**base["params"], **man["params"]}
        if "build" not in man and "build" in base:  # built in the base's folder
            man["build"] = [a.replace("{scheduler_dir}", "{scheduler_dir}/" + rel) for a in base["build"]]
        man["sources"] = [rel] + [os.path.normpath(os.path.join(rel, s)) for s in base["sources"]] + man["sources"]
    for pname, p in man["params"].items():
        if "default" in p:
            _check_param(man, pname, p["default"], str(path), f"params.{pname}.default")
    return man


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
    def load(cls, name: str, params: dict | None = None, source: str = "spec",
             need_built: bool = True) -> "Variant":
        path = find(name, source)
        man = load_manifest(path)
        resolved = resolve_params(man, params or {}, source)
        for tool in man["requires"]:
            if shutil.which(tool) is None:
                raise MissingTool(tool, "corun_schedulers", f"scheduler variant {name}")
        variant = cls(name, man, path.parent, resolved)
        start = man.get("start") or []
        if need_built and man["daemon"] and start and "{scheduler_dir}" in start[0]:
            exe = start[0].replace("{scheduler_dir}", str(path.parent))
            if not os.access(exe, os.X_OK):  # a daemon that was never built
                raise MissingTool(os.path.normpath(exe), "corun_schedulers",
                                  f"scheduler variant {name}")
        return variant

    @property
    def kind(self) -> str:
        return self.manifest["kind"]

    def describe(self) -> dict:
        return {"name": self.name, "kind": self.kind, "description": self.manifest["description"],
                "params": self.params, "build_id": build_id(self.directory, self.manifest["sources"]),
                "paper": self.manifest.get("paper")}

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
        res = subprocess.run(cmd, cwd=self.directory, capture_output=True, text=True, timeout=300,
                             env=command_env())
        if check and res.returncode != 0:
            err = (res.stderr or res.stdout).strip().splitlines()
            raise CorunError(f"scheduler {self.name}: {step} failed (exit {res.returncode}): "
                             f"{err[-1] if err else ' '.join(cmd)}")
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
            self._journal_action = journal.push({
                "kind": "command", "argv": self.expand(stop), "cwd": str(self.directory),
                "env": {"PYTHONPATH": command_env()["PYTHONPATH"]},
                "what": f"stop scheduler {self.name}"})
        if self.manifest["daemon"]:
            argv = self.expand(self.manifest["start"])
            log = open(Path(self.ctx["state_dir"]) / "daemon.log", "ab")
            self.process = subprocess.Popen(argv, cwd=self.directory, stdout=log, stderr=subprocess.STDOUT,
                                            start_new_session=True, env=command_env())
            log.close()
            from corun.util import proc_starttime
            self._daemon_action = journal.push({
                "kind": "processes", "what": f"daemon of {self.name}",
                "pids": {str(self.process.pid): proc_starttime(self.process.pid)}})
        else:
            self._run("start")

    def verify(self) -> bool:
        """True if the variant is in effect (no verify command: nothing to check)."""
        if self.process is not None and self.process.poll() is not None:
            raise CorunError(f"scheduler {self.name}: daemon exited with {self.process.returncode} "
                             f"(see {self.ctx.get('state_dir')}/daemon.log)")
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

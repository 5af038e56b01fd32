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

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from corun import config
from corun.errors import ConfigError, CorunError, MissingTool
from corun.machine.doctor import finding
from corun.machine.state import Journal, state_dir
from corun.run.schedulers.manifests import (
    COMMANDS,
    INHERITED,
    SCHEDULERS_DIR,
    available,
    check_param,
    find,
    listing,
    load_manifest,
    lookup,
    manifest,
    manifest_files,
    nearest,
    resolve_params,
    search_path,
    show,
)
from corun.run.schedulers.manifests import stamp as manifest_stamp
from corun.util import atomic_write_json, proc_starttime, repo_root

__all__ = [
    "COMMANDS",
    "INHERITED",
    "SCHEDULERS_DIR",
    "Variant",
    "available",
    "build_id",
    "check_param",
    "command",
    "command_env",
    "find",
    "listing",
    "load_manifest",
    "lookup",
    "manifest",
    "manifest_files",
    "nearest",
    "push_stop",
    "resolve_params",
    "search_path",
    "show",
    "start_daemon",
]


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
    journal: Journal, argv: list[str], log_path: Path, what: str, cwd: Path | None = None, lifeline: bool = False
) -> tuple[subprocess.Popen, dict]:
    """Start a variant's daemon in its own session, output appended to `log_path`, and journal
    its process (killed at undo, or by recovery after a killed runner); (process, action).
    LIFELINE: its stdin is a pipe the caller writes to (else it reads nothing)."""
    with open(log_path, "ab") as log:
        process = subprocess.Popen(
            argv,
            cwd=cwd,
            stdin=subprocess.PIPE if lifeline else subprocess.DEVNULL,
            stdout=log,
            stderr=subprocess.STDOUT,
            start_new_session=True,
            env=command_env(),
        )
    action = journal.push({"kind": "processes", "what": what, "pids": {str(process.pid): proc_starttime(process.pid)}})
    return process, action


def terminate(process: subprocess.Popen) -> None:
    """SIGTERM to a running daemon's session (start_daemon starts it in one of its own)."""
    if process.poll() is None:
        try:
            os.killpg(process.pid, signal.SIGTERM)
        except ProcessLookupError:
            pass


def undo_now(journal: Journal, action: dict | None) -> list[str]:
    """Undo a journalled action now, if there is one: its error, or none."""
    err = journal.undo(action) if action is not None else None
    return [err] if err else []


def reap(process: subprocess.Popen, timeout_s: float) -> None:
    """Wait for a daemon to exit; SIGKILL its session if it has not within `timeout_s`."""
    try:
        process.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


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
        need_tools: bool = True,
    ) -> Variant:
        path, fixed = lookup(name, source, kinds=kinds)
        man = manifest(name)
        given = params or {}
        for pname, value in fixed.items():
            if pname in given and given[pname] != value:
                raise ConfigError(
                    source, f"scheduler.params.{pname}", given[pname], f"{value!r}, which the name {name} stands for"
                )
        resolved = resolve_params(man, {**given, **fixed}, source)
        variant = cls(name, man, path.parent, resolved)
        missing = variant.missing()
        for tool in missing["tools"] if need_tools else []:
            raise MissingTool(tool, "corun_schedulers", f"scheduler variant {name}")
        if need_built and missing["build"]:  # a daemon that was never built
            raise MissingTool(missing["build"], "corun_schedulers", f"scheduler variant {name}")
        return variant

    def missing(self) -> dict:
        """What this machine lacks to run the variant: {"tools": the required programs not on
        PATH, "build": the daemon's executable when it was never built, else None}."""
        man = self.manifest
        tools = [tool for tool in man["requires"] if shutil.which(tool) is None]
        start = man.get("start") or []
        exe = None
        if man["daemon"] and start and "{scheduler_dir}" in start[0]:
            path = start[0].replace("{scheduler_dir}", str(self.directory))
            exe = None if os.access(path, os.X_OK) else os.path.normpath(path)
        return {"tools": tools, "build": exe}

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
        if self.process is not None:
            terminate(self.process)
            reap(self.process, timeout_s=10)
            journal.forget(self._daemon_action)
            self._daemon_action = None
        errors = undo_now(journal, self._journal_action)
        self._journal_action = None
        return errors


def command(name: str, step: str = "start", params: dict | None = None, **ctx) -> list[str]:
    """A variant's `step` command (start, verify, stop) as a run makes it: `params` over the
    manifest's defaults (checked), the placeholders in `ctx` (state_dir, job_events ...)
    filled. For benchmarks and tests that run a variant's program by hand with the manifest's
    options; neither the programs on PATH nor the build are checked."""
    path, fixed = lookup(name)
    man = manifest(name)
    variant = Variant(name, man, path.parent, resolve_params(man, {**(params or {}), **fixed}))
    variant.ctx = {k: str(v) for k, v in ctx.items()}
    return variant.expand(man[step])


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


def build_findings() -> list[dict]:
    """corun doctor's finding on the variants: those that declare a build command must have built
    the program their start runs (checked now; which program each runs is read from the manifests
    once per state of them, see _build_programs)."""
    unbuilt, checked = [], 0
    for name, program, error in _build_programs():
        if error is not None:
            unbuilt.append(f"{name} ({error})")
            continue
        checked += 1
        if program and not os.access(program, os.X_OK):
            unbuilt.append(name)
    if unbuilt:
        return [
            finding(
                "scheduler builds",
                "fail",
                f"not built: {', '.join(unbuilt)}",
                "build them: ansible-playbook site.yml --tags corun_schedulers",
            )
        ]
    return [finding("scheduler builds", "ok", f"{checked} built")]


def _build_programs() -> list[list]:
    """[name, program its start runs (None: not a plain path), manifest error or None] of every
    variant that declares a build command or cannot be read. Reading every manifest takes about
    0.1 s, which each run would pay (its metadata carries these findings): the list is kept in
    the state folder under the manifests' and their schema's paths, mtimes and sizes."""
    schema = Path(config.SCHEMA_DIR) / "scheduler_manifest.schema.json"
    st = schema.stat()
    stamp = [[str(schema), st.st_mtime_ns, st.st_size], *manifest_stamp()]
    cache_path = state_dir() / "build_programs.json"
    try:
        cached = json.loads(cache_path.read_text())
        if cached.get("stamp") == stamp:
            return cached["programs"]
    except (OSError, ValueError, AttributeError):
        pass
    out = []
    for name in available():
        try:
            path = find(name)
            man = load_manifest(path)
        except CorunError as exc:
            out.append([name, None, str(exc)])
            continue
        if "build" not in man:
            continue
        program = (man.get("start") or [""])[0].replace("{scheduler_dir}", str(path.parent))
        out.append([name, None if "{" in program or not program else program, None])
    try:
        atomic_write_json(cache_path, {"stamp": stamp, "programs": out})
    except OSError:
        pass  # a cache only
    return out

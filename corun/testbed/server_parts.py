"""The parts of a run's policy that act on other hosts than the run's own: on an inventory, the
data servers' half of a policy (aioli's translator control files, sais_mark's programs on the
servers' interfaces) cannot be applied by `corun run` on the client node, which has neither the
file system's layout nor a way into the servers. corun.testbed.pfs_runs, on the controller,
applies them around each run of its group.

A group of groups.json may carry `server_parts`: {run name: [part, ...]}, each part

    what       what it is, for messages ("sais_mark's server half on n3")
    host       the inventory host it runs on (null: the controller itself)
    state_dir  a folder on that host for the part's state (made before apply)
    apply, verify, restore
               argv lists; "{python}" is the host's corun Python (inventory var corun_python,
               else the checkout's .venv), "{state_dir}" the part's state_dir
    fetch      files of state_dir copied into the run folder after restore, as
               RUN/server_parts/<host or controller>/<file> (sais_mark's server counters)

Around a run, in this order: every part's restore is journalled (the guard's journal of
pfs_runs, so `corun recover` runs it after a SIGKILL of the controller), then the parts are
applied and verified, then the run, then every part is verified again and restored (also after
an error or a signal), its files fetched; the parts of several hosts go at once (48 data
servers one after another would add their sum to every run). The run's metadata.json then
records what was done (`server_parts`: per part, verified at the start and at the end,
restored, and the seconds each step took: apply_s with its verify, verify_end_s, and
restore_s, the parts' restore together) and its `variant_verified_at_start` / `_at_end` (and
`scheduler.verified` / `verified_at_end`) hold only when the parts were in effect too; a run
whose spec says `scheduler.applied_by: controller` took no part of its variant itself, so
those are the parts' alone. A part not in effect at the end fails the run: its folder is
removed and it is measured again.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

from corun.errors import CorunError
from corun.machine.state import Journal
from corun.testbed import inventory
from corun.testbed.hosts import remote_python, rsync_argv
from corun.util import atomic_write_json, on_each, repo_root

RECORD_KEY = "server_parts"
TIMEOUT_S = 120
WORKERS = 32  # the parts of this many hosts at once


@dataclass
class Part:
    what: str
    host: inventory.Host | None
    state_dir: str
    apply: list[str]
    verify: list[str]
    restore: list[str]
    fetch: list[str]

    @property
    def where(self) -> str:
        return self.host.name if self.host is not None else "controller"

    def argv(self, step: str) -> list[str]:
        """The step's command as this machine runs it (through ssh for a host): the part's
        state folder made first."""
        python = remote_python(self.host) if self.host is not None else sys.executable
        cmd = [a.replace("{python}", python).replace("{state_dir}", self.state_dir) for a in getattr(self, step)]
        root = shlex.quote(str(repo_root()))  # corun importable by a variant's script
        script = f"mkdir -p {shlex.quote(self.state_dir)} && PYTHONPATH={root} exec {shlex.join(cmd)}"
        if self.host is None:
            return ["sh", "-c", script]
        return self.host.command(["sh", "-c", script], cwd=str(repo_root()))


def parts_of(group: dict, run: str) -> list[Part]:
    """The run's parts (none for a group without server_parts), hosts looked up in the group's
    inventory; an unknown host is one line naming it."""
    raw = (group.get("server_parts") or {}).get(run) or []
    if not raw:
        return []
    pfs = group.get("pfs") or {}
    by = {h.name: h for h in inventory.load(pfs["inventory"], pfs.get("group", "testbed"))} if pfs else {}
    out = []
    for p in raw:
        host = None
        if p.get("host") is not None:
            if p["host"] not in by:
                raise CorunError(f"pfs_runs: server part {p['what']!r}: host {p['host']!r} is not in the inventory")
            host = by[p["host"]]
        out.append(
            Part(p["what"], host, p["state_dir"], p["apply"], p["verify"], p["restore"], list(p.get("fetch") or []))
        )
    return out


def _call(argv: list[str]) -> subprocess.CompletedProcess:
    """ARGV's run; one that cannot start or outlasts TIMEOUT_S is a CorunError."""
    try:
        return subprocess.run(
            argv, capture_output=True, text=True, timeout=TIMEOUT_S, stdin=subprocess.DEVNULL, cwd=repo_root()
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CorunError(f"pfs_runs: {type(exc).__name__}: {exc}") from None


def _last(res: subprocess.CompletedProcess) -> str:
    lines = (res.stderr or res.stdout or "").strip().splitlines()
    return lines[-1] if lines else f"exit {res.returncode}"


class Applied:
    """The parts of one run, applied (start), checked (check_end) and restored (stop), the
    parts of several hosts at once."""

    def __init__(self, parts: list[Part], journal: Journal | None):
        if parts and journal is None:
            raise CorunError("pfs_runs: server parts need a journal for their restore")
        self.parts, self.journal = parts, journal
        self.actions: list[dict] = []
        self.records = [{"what": p.what, "host": p.where} for p in parts]

    def start(self) -> None:
        for part in self.parts:  # every restore journalled before anything changes
            self.actions.append(
                self.journal.push(
                    {
                        "kind": "command",
                        "what": f"restore {part.what}",
                        "argv": part.argv("restore"),
                        "cwd": str(repo_root()),
                        "timeout_s": TIMEOUT_S,
                    }
                )
            )
        on_each(list(zip(self.parts, self.records)), lambda pr: self._apply(*pr), WORKERS)

    def _apply(self, part: Part, rec: dict) -> None:
        t0 = time.monotonic()
        res = _call(part.argv("apply"))
        if res.returncode != 0:
            raise CorunError(f"pfs_runs: {part.what}: apply failed (exit {res.returncode}): {_last(res)}")
        rec["verified_at_start"] = self._verify(part)
        rec["apply_s"] = round(time.monotonic() - t0, 3)  # with its verify: the part's cost before the run

    def _verify(self, part: Part) -> bool:
        res = _call(part.argv("verify"))
        if res.returncode != 0:
            raise CorunError(f"pfs_runs: {part.what}: not in effect: {_last(res)}")
        return True

    def check_end(self) -> None:
        """Every part still in effect after the run (else a CorunError naming the first not)."""

        def one(part: Part, rec: dict) -> None:
            rec["verified_at_end"] = False
            t0 = time.monotonic()
            rec["verified_at_end"] = self._verify(part)
            rec["verify_end_s"] = round(time.monotonic() - t0, 3)

        on_each(list(zip(self.parts, self.records)), lambda pr: one(*pr), WORKERS)

    def stop(self, out: Path | None) -> list[str]:
        """Restore every part applied, at once, whatever failed before; fetch each part's files
        into OUT/server_parts/<where>/ (when OUT is a run folder). The errors met."""
        errors = []
        applied = list(zip(self.parts, self.records, self.actions))
        t0 = time.monotonic()
        undone = self.journal.undo_each([a for _, _, a in applied]) if applied else []
        took = round(time.monotonic() - t0, 3)
        for (part, rec, _), err in zip(applied, undone):
            rec["restored"] = err is None
            rec["restore_s"] = took  # all of them together
            if err:
                errors.append(f"pfs_runs: {part.what}: restore failed: {err}")
        fetching = [p for p, _, _ in applied if out is not None and p.fetch and out.is_dir()]
        for errs in on_each(fetching, lambda p: fetch(p, out / RECORD_KEY / p.where), WORKERS):
            errors += errs
        self.actions = []
        return errors


def fetch(part: Part, dest: Path) -> list[str]:
    """The part's `fetch` files into DEST; the errors met (never raises: stop goes on)."""
    try:
        dest.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        return [f"pfs_runs: {part.what}: {dest}: {exc.strerror}"]
    errors = []
    for name in part.fetch:
        src = f"{part.state_dir}/{name}"
        if part.host is None:
            try:
                shutil.copy2(src, dest / name)
            except OSError as exc:
                errors.append(f"pfs_runs: {part.what}: {src}: {exc.strerror}")
            continue
        try:
            res = _call(rsync_argv(part.host, f":{src}", str(dest / name)))
        except CorunError as exc:
            errors.append(str(exc))
            continue
        if res.returncode != 0:
            errors.append(f"pfs_runs: {part.what}: copying {src} back failed: {_last(res)}")
    return errors


def record(out: Path, records: list[dict]) -> None:
    """The parts into the run's metadata.json (atomically): its verified flags hold only with
    every part's."""
    path = out / "metadata.json"
    meta = json.loads(path.read_text())
    sched = meta.setdefault("scheduler", {})
    own = sched.get("applied_by", "run") != "controller"  # the run applied a half itself
    start = all(r.get("verified_at_start") is True for r in records)
    end = all(r.get("verified_at_end") is True for r in records)
    for key, sched_key, parts_ok in (
        ("variant_verified_at_start", "verified", start),
        ("variant_verified_at_end", "verified_at_end", end),
    ):
        value = (meta.get(key) is True if own else True) and parts_ok
        meta[key] = value
        sched[sched_key] = value
    meta[RECORD_KEY] = records
    atomic_write_json(path, meta)


def recorded(out: Path) -> bool:
    """Whether the run folder's metadata.json carries the parts' record."""
    try:
        return RECORD_KEY in json.loads((out / "metadata.json").read_text())
    except (OSError, ValueError):
        return False

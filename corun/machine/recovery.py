"""Undo what runners that are gone left behind: their journals (corun.machine.state), with the
undo handlers of every kind of action (the cgroup's are registered by corun.machine.cgroup).
Journals of testbed commands (corun.testbed.guard: a netns cluster, a file system group) are
undone after those of the runs, which ran on them."""

from __future__ import annotations

import json
from pathlib import Path

from corun.machine import (
    cgroup,  # noqa: F401 - registers its undo handlers
    rotating_disk,  # noqa: F401 - registers the emulated disk's undo handlers
    run_device,  # noqa: F401 - registers a run's block device's undo handler
)
from corun.machine.state import journal_alive, lock_file, run_undo, state_dir

TESTBED_PREFIX = "testbed-"  # corun.testbed.guard's journals


def recover_stale(directory: Path | None = None) -> list[str]:
    """Undo the journals of runners that are gone. Returns one line per journal undone."""
    d = directory or state_dir()
    done = []
    # the runs' journals first, then those of the clusters and file systems they ran on
    for path in sorted(d.glob("*.journal.json"), key=lambda p: (p.name.startswith(TESTBED_PREFIX), p.name)):
        try:
            data = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if journal_alive(path, data):
            continue
        errs = []
        for action in reversed(data.get("actions", [])):
            err = run_undo(action)
            if err:
                errs.append(err)
        path.unlink(missing_ok=True)
        lock_file(path).unlink(missing_ok=True)
        msg = f"recovered run {data.get('run_id')}: undid {len(data.get('actions', []))} change(s)"
        if errs:
            msg += " with errors: " + "; ".join(errs)
        done.append(msg)
    return done

"""What a testbed command brings up outlives it if it is killed (SIGKILL: no teardown runs): a
netns cluster (corun.testbed.cluster_run), or a group's cluster and file system with its
emulated disks, their loop devices, mounts and daemons (corun.testbed.pfs_runs). Before
bringing anything up such a command holds a journal in corun's state folder
(corun.machine.state) whose one action takes it all down; `corun recover` runs that action
once the command is gone, after undoing the journals of the runs it had started.

    python -m corun.testbed.takedown pfs-group WORK     # pfs_runs' teardown of every group in WORK
    python -m corun.testbed.takedown cluster STATE_DIR  # scripts/netns-cluster down

A command that ends normally takes down what it brought up itself and drops the journal.
"""

from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from corun.machine.recovery import TESTBED_PREFIX  # undone after the runs' own journals
from corun.machine.state import Journal, state_dir
from corun.util import repo_root

TIMEOUT_S = 600


class Guard:
    """A journal held while KIND's state in FOLDER is up; `corun recover` takes it down."""

    def __init__(self, kind: str, folder: Path):
        folder = folder.resolve()
        digest = hashlib.sha1(str(folder).encode()).hexdigest()[:12]
        self.journal = Journal(f"{TESTBED_PREFIX}{kind}-{digest}", directory=state_dir())
        self.action = self.journal.push(
            {
                "kind": "command",
                "what": f"take down the {kind} of {folder}",
                "argv": [sys.executable, "-m", "corun.testbed.takedown", kind, str(folder)],
                "cwd": str(repo_root()),
                "timeout_s": TIMEOUT_S,
            }
        )

    def close(self) -> None:
        """The command took its state down itself: nothing left to recover."""
        self.journal.forget(self.action)
        self.journal.unwind()

"""What `corun recover` runs for a killed testbed command (corun.testbed.guard's journal action).

    python -m corun.testbed.takedown pfs-group WORK     # pfs_runs' teardown of every group in WORK
    python -m corun.testbed.takedown cluster STATE_DIR  # scripts/netns-cluster down

Exit 0 when everything is down, 1 when something is left (each on a line of stderr), 2 on a
usage error.
"""

from __future__ import annotations

import sys
from pathlib import Path

from corun.testbed.cluster_run import cluster
from corun.testbed.pfs_runs import teardown_all


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 2 or args[0] not in ("pfs-group", "cluster"):
        print("usage: python -m corun.testbed.takedown {pfs-group WORK | cluster STATE_DIR}", file=sys.stderr)
        return 2
    folder = Path(args[1])
    if args[0] == "pfs-group":
        errors = teardown_all(folder)
    else:
        res = cluster(folder, "down")
        errors = [] if res.returncode == 0 else [res.stderr.strip() or f"netns-cluster down exited {res.returncode}"]
    for e in errors:
        print(f"takedown: {e}", file=sys.stderr)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main())

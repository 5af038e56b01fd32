#!/usr/bin/env python3
"""Write an Ansible inventory of the nodes of a Grid'5000 OAR job.

usage: inventory/grid5000/oar_inventory.py (--job JOBID | --nodefile FILE | --oarstat-json FILE)
                                           [--user root] [--corun-dir DIR] [--jump USER@HOST] [--out FILE]

--job runs `oarstat -fj JOBID -J` (on a frontend); --nodefile reads $OAR_NODEFILE (inside the
job); --oarstat-json reads saved oarstat output. Nodes go into group testbed under their short
names, reached as --user (root on nodes deployed with kadeploy3), optionally through a jump host
(--jump you@access.grid5000.fr from outside Grid'5000). --corun-dir is where corun is checked
out on the nodes (default: this checkout's path). Default output: inventory/grid5000.yml.
Exit 0 ok, 1 oarstat failed, 2 bad input. See docs/howto/grid5000.md.
"""

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from corun.errors import ConfigError, one_line_errors  # noqa: E402
from corun.testbed import testbeds  # noqa: E402


@one_line_errors(prefix="oar_inventory")
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    src = ap.add_mutually_exclusive_group(required=True)
    src.add_argument("--job", help="OAR job id (runs oarstat -fj JOBID -J)")
    src.add_argument("--nodefile", help="the job's $OAR_NODEFILE")
    src.add_argument("--oarstat-json", help="saved output of oarstat -fj JOBID -J")
    ap.add_argument("--user", default="root", help="ssh user on the nodes (default root)")
    ap.add_argument("--corun-dir", default=str(REPO), help="corun checkout on the nodes (default: this one's path)")
    ap.add_argument("--jump", help="ssh jump host, e.g. you@access.grid5000.fr")
    ap.add_argument("--out", default=str(REPO / "inventory" / "grid5000.yml"), help="inventory file, - for stdout")
    a = ap.parse_args(argv)
    if a.nodefile:
        source = a.nodefile
        try:
            nodes = testbeds.oar_nodes_from_nodefile(Path(a.nodefile).read_text(), a.nodefile)
        except OSError:
            raise ConfigError("--nodefile", "nodefile", a.nodefile, "a readable $OAR_NODEFILE") from None
    else:
        source = a.oarstat_json or f"OAR job {a.job}"
        if a.oarstat_json:
            try:
                doc = json.loads(Path(a.oarstat_json).read_text())
            except (OSError, ValueError) as exc:
                raise ConfigError(
                    "--oarstat-json", "file", a.oarstat_json, f"readable oarstat -J output ({exc})"
                ) from None
        else:
            doc = testbeds.run_oarstat(a.job)
        nodes = testbeds.oar_nodes_from_oarstat(doc, a.job, source)
    testbeds.write(a.out, testbeds.grid5000_inventory(nodes, a.user, a.corun_dir, a.jump, source))
    return 0


if __name__ == "__main__":
    sys.exit(main())

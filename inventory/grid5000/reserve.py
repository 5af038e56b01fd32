#!/usr/bin/env python3
"""Reserve and deploy Grid'5000 nodes through EnOSlib and write corun's Ansible inventory.

usage: .venv-grid5000/bin/python inventory/grid5000/reserve.py [CONFIG.yaml] [--site SITE]
           [--cluster CLUSTER] [--nodes N] [--walltime H:MM[:SS]] [--image ENV] [--job-name NAME]
           [--job-id ID] [--reservation 'YYYY-MM-DD HH:MM:SS'] [--project P] [--queue Q]
           [--key FILE.pub] [--reservable-disks] [--corun-dir DIR] [--out FILE] [--print-conf | --release]

One OAR deploy job of N nodes of one cluster (default 1 node, walltime 2:00:00, image
debian12-min, job name corun), each node installed by kadeploy with your public keys for root.
Run again with the same job name while the job lasts: EnOSlib reloads it (and deploys again
only nodes not running the image) instead of reserving more; --job-id reloads a job by number.
Settings come from CONFIG (YAML: site, cluster, nodes, walltime, image, job_name, job_id,
reservation, project, queue, key, reservable_disks, corun_dir), the command line overriding
it. The inventory (default inventory/grid5000.yml) has the nodes in group testbed under their
short names, root over ssh, and corun_source_copy with corun_source_dir (default /root/corun),
where roles/corun_source copies corun on every node. --print-conf prints the settings handed to
EnOSlib and stops (no Grid'5000 needed); --release deletes the job. Needs EnOSlib
(requirements-grid5000.txt, in a Python environment of its own). Exit 0 ok, 1 EnOSlib or
Grid'5000 failed, 2 bad input. See docs/howto/grid5000.md.
"""

import argparse
import json
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from corun.errors import one_line_errors  # noqa: E402
from corun.testbed import g5k, testbeds  # noqa: E402


@one_line_errors(prefix="reserve")
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("config", nargs="?", help="reservation settings (YAML)")
    ap.add_argument("--site", help="Grid'5000 site, e.g. grenoble")
    ap.add_argument("--cluster", help="cluster of the site, e.g. dahu")
    ap.add_argument("--nodes", type=int, help="number of nodes (default 1)")
    ap.add_argument("--walltime", help="hours:minutes[:seconds] (default 2:00:00)")
    ap.add_argument("--image", help="kadeploy environment (default debian12-min)")
    ap.add_argument("--job-name", help="OAR job name; the same name reloads the job (default corun)")
    ap.add_argument("--job-id", help="reload this running OAR job of the site instead")
    ap.add_argument("--reservation", help="start later: 'YYYY-MM-DD HH:MM:SS' (Paris time)")
    ap.add_argument("--project", help="Grid'5000 project of the job")
    ap.add_argument("--queue", help="OAR queue (default, production, testing, besteffort)")
    ap.add_argument("--key", help="public key for root on the nodes (default every ~/.ssh/*.pub)")
    ap.add_argument("--reservable-disks", action="store_const", const=True, help="reserve the nodes' extra disks too")
    ap.add_argument("--corun-dir", help="where corun goes on the nodes (default /root/corun)")
    ap.add_argument("--out", default=str(REPO / "inventory" / "grid5000.yml"), help="inventory file, - for stdout")
    act = ap.add_mutually_exclusive_group()
    act.add_argument("--print-conf", action="store_true", help="print EnOSlib's settings and stop")
    act.add_argument("--release", action="store_true", help="delete the job")
    a = ap.parse_args(argv)
    s, source = g5k.read_config(a.config, {k: getattr(a, k) for k in g5k.KEYS})
    if a.print_conf:
        settings, machine = g5k.enoslib_settings(s)
        print(json.dumps({"settings": settings, "machine": machine}, indent=2))
        return 0
    if a.release:
        g5k.release(s)
        print(f"released: job {s.get('job_id') or s['job_name']} on {s['site']}")
        return 0
    roles, networks, jobs = g5k.reserve(s)
    testbeds.write(a.out, g5k.inventory_text(roles, networks, s, jobs, source))
    return 0


if __name__ == "__main__":
    sys.exit(main())

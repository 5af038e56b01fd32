#!/usr/bin/env python3
"""Write an Ansible inventory of the nodes of a CloudLab experiment, from its manifest rspec.

usage: inventory/cloudlab/manifest_inventory.py MANIFEST.xml [--user NAME] [--corun-dir DIR] [--out FILE]

Each node goes into group testbed under its client_id (node0, node1, ...), reached with the
manifest's ssh login for --user (default: the first login listed, usually the experiment's
creator). The LAN's network becomes corun_mpi_network, each node's LAN address
corun_lan_address. --corun-dir is where corun is checked out on the nodes (default: this
checkout's path). Default output: inventory/cloudlab.yml. Exit 0 ok, 2 bad input.
See docs/howto/cloudlab.md.
"""

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO))

from corun.errors import ConfigError, one_line_errors  # noqa: E402
from corun.testbed import testbeds  # noqa: E402


@one_line_errors(prefix="manifest_inventory")
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("manifest", help="the experiment's manifest rspec (XML)")
    ap.add_argument("--user", help="login user (default: the first ssh login of each node)")
    ap.add_argument("--corun-dir", default=str(REPO), help="corun checkout on the nodes (default: this one's path)")
    ap.add_argument("--out", default=str(REPO / "inventory" / "cloudlab.yml"), help="inventory file, - for stdout")
    a = ap.parse_args(argv)
    try:
        text = Path(a.manifest).read_text()
    except OSError:
        raise ConfigError("command line", "manifest", a.manifest, "a readable manifest rspec file") from None
    testbeds.write(a.out, testbeds.cloudlab_inventory(text, a.user, a.corun_dir, a.manifest))
    return 0


if __name__ == "__main__":
    sys.exit(main())

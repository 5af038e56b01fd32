"""Set, check and restore the block elevator of a device (used by the elevator_* variants).

python -m corun.machine.elevator set DEV NAME --save FILE   # remembers the current one in FILE first
python -m corun.machine.elevator check DEV NAME             # exit 0 if NAME is in effect, 1 if not
python -m corun.machine.elevator restore DEV --from FILE    # puts back the remembered one (no FILE: nothing to do)
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from corun.errors import one_line_errors
from corun.machine.block_device import current_elevator, device_by_name, set_elevator
from corun.util import atomic_write_text


@one_line_errors(prefix="corun.machine.elevator")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(
        prog="corun.machine.elevator", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("set")
    s.add_argument("device")
    s.add_argument("name")
    s.add_argument("--save", type=Path)
    c = sub.add_parser("check")
    c.add_argument("device")
    c.add_argument("name")
    r = sub.add_parser("restore")
    r.add_argument("device")
    r.add_argument("--from", dest="src", type=Path, required=True)
    a = ap.parse_args(argv)
    dev = device_by_name(a.device)
    if a.cmd == "set":
        if a.save and not a.save.exists():  # never overwrite the original with our own setting
            atomic_write_text(a.save, (current_elevator(dev) or "") + "\n")
        set_elevator(dev, a.name)
        return 0
    if a.cmd == "check":
        cur = current_elevator(dev)
        if cur != a.name:
            print(f"corun.machine.elevator: {a.device}: elevator is {cur}, expected {a.name}", file=sys.stderr)
            return 1
        return 0
    if a.cmd == "restore":
        if not a.src.exists():
            return 0
        prev = a.src.read_text().strip()
        if prev:
            set_elevator(dev, prev)
        a.src.unlink()
        return 0
    return 2


if __name__ == "__main__":
    sys.exit(main())

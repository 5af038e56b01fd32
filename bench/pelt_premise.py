"""The premise of paper 003 on this machine: the kernel's load tracking (PELT util_avg,
load_avg, runnable_avg), CPU and run-queue shares, switch rates and CFS's placement of a
load/store I/O task (fio mmap on memory, or libpmem on a DAX mount of persistent memory),
a conventional I/O task (fio psync with O_DIRECT on a disk) and a CPU task, each alone and then
the three side by side. Prints the figures of both layouts; the raw samples and summaries are
written under --out.

    .venv/bin/python bench/pelt_premise.py [--duration-s 10] [--out results/bench/pelt]
"""

import argparse
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from corun.monitors import pelt  # noqa: E402


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--duration-s", type=float, default=10.0)
    ap.add_argument("--warmup-s", type=float, default=2.0)
    ap.add_argument("--out", default=str(ROOT / "results" / "bench" / f"pelt-{time.strftime('%Y%m%dT%H%M%S')}"))
    ap.add_argument("--disk-dir", default=str(ROOT / "results"))
    args = ap.parse_args()
    Path(args.disk_dir).mkdir(parents=True, exist_ok=True)
    code = 0
    for layout in ("alone", "together"):
        print(f"== {layout}")
        code = code or pelt.main(
            [
                "--out",
                f"{args.out}/{layout}",
                "--layout",
                layout,
                "--duration-s",
                str(args.duration_s),
                "--warmup-s",
                str(args.warmup_s),
                "--disk-dir",
                args.disk_dir,
            ]
        )
    return code


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Analysis and comparison at scale: 10,000 synthetic runs (analysis.synthetic), indexed and
compared. Prints figures; it is not a pass/fail test.

Timed, each on its own:
  index build          `corun index build` over every run folder (flattened metadata, metrics)
  index rebuild        the same again with nothing changed (incremental: signatures only)
  compare (index)      `corun compare` of two variants of 5,000 runs each, from the index:
                       every metric, bootstrap CIs (10,000 resamples), Mann-Whitney, Holm,
                       Markdown, HTML and PNG figures
  compare (folders)    the same comparison read straight from the run folders
  archive + verify     `corun archive` of the whole campaign and `corun verify` of the result
The headline is index build + compare (index): the target is 60 s or less.

  .venv/bin/python bench/compare_scale.py [--runs 10000] [--keep DIR] [--no-archive]
"""

from __future__ import annotations

import argparse
import random
import shutil
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import compare_runs, runindex  # noqa: E402
from analysis.synthetic import write_run  # noqa: E402
from corun.results import archive  # noqa: E402

TARGET_S = 60.0


def generate(root: Path, n: int) -> None:
    rng = random.Random(0)
    for i in range(n):
        variant = "linux" if i % 2 == 0 else "dynamic_io"
        base = 10.0 * (0.97 if variant == "dynamic_io" else 1.0)
        rts = [rng.lognormvariate(0, 0.05) * base for _ in range(4)]
        write_run(
            root / "runs" / f"r{i:05d}",
            variant,
            rts,
            labels={"campaign": "scale", "rep": i // 2, "block": i // 2, "warmup": i < 4, "k": 1 + i % 4},
            host=f"node-{i % 8}",
            build_id="b1",
            start_epoch_s=1_700_000_000.0 + i * 20,
        )


def timed(label: str, fn):
    t = time.perf_counter()
    out = fn()
    dt = time.perf_counter() - t
    print(f"{label:<22s} {dt:8.2f} s", flush=True)
    return out, dt


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=10000)
    ap.add_argument("--keep", type=Path, help="generate into DIR and keep it (default: a temporary folder)")
    ap.add_argument("--no-archive", action="store_true", help="skip archive + verify")
    a = ap.parse_args(argv)
    work = a.keep or Path(tempfile.mkdtemp(prefix="corun-compare-scale-"))
    camp = work / "scale"
    try:
        if not (camp / "runs").is_dir():
            _, gen = timed(f"generate {a.runs} runs", lambda: generate(camp, a.runs))
        db = work / "runs.sqlite"
        db.unlink(missing_ok=True)
        counts, t_index = timed("index build", lambda: runindex.build_index([camp], db))
        again, _ = timed("index rebuild", lambda: runindex.build_index([camp], db))
        assert again["unchanged"] == counts["total"] == a.runs, (counts, again)
        (res, _, _), t_cmp = timed(
            "compare (index)",
            lambda: compare_runs.run([db], by="variant", baseline="linux", fail_if_worse=0.05, out=work / "cmp-index"),
        )
        timed(
            "compare (folders)",
            lambda: compare_runs.run([camp], by="variant", baseline="linux", out=work / "cmp-folders", plots=False),
        )
        if not a.no_archive:
            out = work / "scale.tar.gz"
            timed("archive", lambda: archive.archive(camp, out))
            (problems, n), _ = timed("verify", lambda: archive.verify(out))
            print(f"{'':22s} {n} files, {len(problems)} problems, {out.stat().st_size / 1e6:.1f} MB")
        row = next(r for r in res["rows"] if r["metric"] == "runtime_s")
        print(
            f"runtime_s dynamic_io / linux: {row['ratio']:.4f} [{row['ci95_low']:.4f}, {row['ci95_high']:.4f}] "
            f"{row['verdict']} ({row['n_baseline']} + {row['n_set']} runs, "
            f"{sum(s['excluded'] for s in res['sets'])} warm-ups excluded)"
        )
        total = t_index + t_cmp
        print(
            f"analysis + comparison of {a.runs} runs (index build + compare): {total:.1f} s "
            f"(target <= {TARGET_S:.0f} s)"
        )
    finally:
        if a.keep is None:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())

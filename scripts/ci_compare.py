"""Compare two scheduler variants on this machine, as the testbed CI does (`make ci-compare`).

1. writes a small run spec: two Sensitivity_RANKING readers of one data file (O_DIRECT reads,
   its cached pages evicted first) under a shared read cap, PSI monitored;
2. runs it as a controlled campaign (corun.campaign): --warmup warm-up runs and --reps measured
   runs per variant, in a randomised interleaved order whose seed is recorded in every run;
3. compares HEAD against BASE with `corun compare` (Mann-Whitney, Holm, bootstrap CIs) into
   OUT/compare/ (comparison.md/.html/.json/.csv, figures/).

Exit status: 0, 1 when a metric is significantly worse by --fail-if-worse or more, 2 bad input.
With the defaults (16 MiB per reader at 16 MB/s, 2 x (1 + 5) runs) it takes 1-3 minutes.

  python scripts/ci_compare.py --base linux --head elevator_bfq --out results/ci-compare
"""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import compare_runs  # noqa: E402
from corun import campaign  # noqa: E402
from corun.errors import ConfigError, CorunError  # noqa: E402


def write_inputs(out: Path, size_mib: int, readers: int, read_bps: int) -> Path:
    import yaml
    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    f = data / "ci_input.bin"
    want = size_mib << 20
    if not f.exists() or f.stat().st_size != want:
        with open(f, "wb") as fh:
            for _ in range(size_mib):
                fh.write(os.urandom(1 << 20))
            os.fsync(fh.fileno())
    kernel = ROOT / "kernels" / "build" / "sensitivity_ranking"
    spec = {
        "name": "ci-compare",
        "labels": {"experiment": "ci_compare"},
        "jobs": [{"name": "reader", "cmd": [str(kernel), "--file", str(f), "--block-size", "65536",
                                            "--nops", "2000", "--cache-mode", "direct"],
                  "repeat": readers, "result": "json"}],
        "device": {"path": str(data), "evict": [str(f)], "throttle": {"read_bps": read_bps}},
        "monitors": {"enabled": ["psi"]},
    }
    path = out / "spec_template.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", default="linux", help="baseline scheduler variant (default linux)")
    ap.add_argument("--head", required=True, help="scheduler variant under test")
    ap.add_argument("--out", type=Path, default=Path("results/ci-compare"), help="output folder")
    ap.add_argument("--reps", type=int, default=5, help="measured runs per variant (default 5)")
    ap.add_argument("--warmup", type=int, default=1, help="warm-up runs per variant (default 1)")
    ap.add_argument("--seed", type=int, default=None, help="order seed (default: drawn, recorded)")
    ap.add_argument("--size-mib", type=int, default=16, help="MiB each reader reads (default 16)")
    ap.add_argument("--readers", type=int, default=2, help="concurrent readers (default 2)")
    ap.add_argument("--read-bps", type=int, default=16_000_000, help="shared read cap, B/s (default 16000000)")
    ap.add_argument("--fail-if-worse", default="5%", help="gate threshold (default 5%%)")
    ap.add_argument("--summary", help="append the Markdown summary to this file (e.g. $GITHUB_STEP_SUMMARY)")
    a = ap.parse_args(argv)
    try:
        if a.base == a.head:
            raise ConfigError("command line", "--head", a.head, "a variant other than --base")
        for key in ("reps", "size_mib", "readers", "read_bps"):
            if getattr(a, key) < 1:
                raise ConfigError("command line", f"--{key.replace('_', '-')}", getattr(a, key), "an integer >= 1")
        threshold = compare_runs.parse_percent(a.fail_if_worse)
        spec = write_inputs(a.out, a.size_mib, a.readers, a.read_bps)
        camp_dir = a.out / "campaign"
        state = campaign.run_campaign(spec, [a.base, a.head], camp_dir, reps=a.reps, warmup=a.warmup, seed=a.seed,
                                      name="ci_compare", log=lambda line: print(line, file=sys.stderr))
        print(f"campaign: {len(state['runs'])} runs, seed {state['seed']}", file=sys.stderr)
        result, _, md = compare_runs.run([camp_dir], by="variant", baseline=a.base,
                                         where=f"labels.campaign=ci_compare variant={a.base},{a.head}",
                                         fail_if_worse=threshold, out=a.out / "compare")
    except CorunError as exc:
        print(f"ci_compare: {exc}", file=sys.stderr)
        return exc.exit_code
    sys.stdout.write(md)
    if a.summary:
        with open(a.summary, "a", encoding="utf-8") as fh:
            fh.write(md)
    print(f"\ncomparison: {a.out / 'compare' / 'comparison.html'}", file=sys.stderr)
    return 1 if result["gate"]["status"] == "failed" else 0


if __name__ == "__main__":
    sys.exit(main())

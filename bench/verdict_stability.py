"""Are the report's verdicts the same from one fresh campaign to the next?

Clones this repository at one commit N times (default 3) into a scratch folder, runs `make run`
(PROFILE, default local) in each clone one after another, and then `corun verdicts diff` on their
results: every claim whose outcome differs, the claims that flipped between reproduced and
contradicted, and the share that moved between a decided outcome and inconclusive. Prints the
wall time of each `make run` and the claims per outcome per paper of each campaign.

    .venv/bin/python bench/verdict_stability.py                  # 3 fresh clones of HEAD (about 35 min each)
    .venv/bin/python bench/verdict_stability.py --clones 2 --ref main
    .venv/bin/python bench/verdict_stability.py --results A B C  # only the diff of campaigns you have
    .venv/bin/python bench/verdict_stability.py --results A B C --reps-factor 2 4  # and at more reps

The diff ends with how many moves sampling alone would give at the measured effects
(analysis/campaign_chance.py); --reps-factor says how many it would give at F times the reps.

Targets (issue: stable verdicts): no claim flips between reproduced and contradicted; at most 5 %
of the claims move between a decided outcome and inconclusive. Needs root (make run provisions).
A clone's `make run` that fails is reported with its exit status and log; the others go on.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO))

from analysis import campaign_chance, campaign_verdicts  # noqa: E402


def _make_run(repo: Path, ref: str, scratch: Path, i: int, profile: str) -> Path | None:
    clone = scratch / f"clone{i}"
    subprocess.run(["git", "clone", "-q", str(repo), str(clone)], check=True)
    subprocess.run(["git", "-C", str(clone), "checkout", "-q", ref], check=True)
    log = scratch / f"make-run-{i}.log"
    t0 = time.monotonic()
    with log.open("w") as f:
        rc = subprocess.run(
            ["make", "run", f"PROFILE={profile}"], cwd=clone, stdout=f, stderr=subprocess.STDOUT
        ).returncode
    wall = time.monotonic() - t0
    print(f"clone {i}: make run exit {rc} in {wall / 60:.1f} min (log {log})", flush=True)
    results = clone / "results" / profile
    return results if results.is_dir() else None


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--clones", type=int, default=3, help="fresh clones to run (default 3)")
    ap.add_argument("--ref", default="HEAD", help="the commit every clone checks out (default HEAD)")
    ap.add_argument("--profile", default="local")
    ap.add_argument("--scratch", type=Path, help="where the clones go (default: a new temporary folder)")
    ap.add_argument("--results", nargs="+", type=Path, help="diff these campaigns instead of running")
    ap.add_argument(
        "--reps-factor",
        nargs="+",
        type=float,
        default=[],
        metavar="F",
        help="also print the moves sampling alone would give if every claim had F times its reps",
    )
    a = ap.parse_args(argv)
    if a.results:
        campaigns = [str(p) for p in a.results]
    else:
        if a.clones < 2:
            print(f"bench: --clones {a.clones}: expected 2 or more (a diff needs two campaigns)", file=sys.stderr)
            return 2
        ref = subprocess.run(
            ["git", "-C", str(REPO), "rev-parse", a.ref], capture_output=True, text=True, check=True
        ).stdout.strip()
        scratch = a.scratch or Path(tempfile.mkdtemp(prefix="corun-verdict-stability-"))
        scratch.mkdir(parents=True, exist_ok=True)
        print(f"commit {ref[:12]}, {a.clones} fresh clones in {scratch}", flush=True)
        campaigns = []
        for i in range(1, a.clones + 1):
            results = _make_run(REPO, ref, scratch, i, a.profile)
            if results is not None:
                campaigns.append(str(results))
        if len(campaigns) < 2:
            print("bench: fewer than two campaigns have results; nothing to diff", file=sys.stderr)
            return 1
    loaded = [campaign_verdicts.load(c) for c in campaigns]
    sys.stdout.write(campaign_verdicts.show_text(campaigns, loaded))
    sys.stdout.write(campaign_verdicts.diff_text(campaigns, loaded))
    filled = campaign_chance.with_basis(loaded)
    for f in a.reps_factor:
        if f <= 0:
            print(f"bench: --reps-factor {f}: expected a number above 0", file=sys.stderr)
            return 2
        c = campaign_chance.chance(filled, f)
        print(
            f"at {f:g} x the reps: about {c['moves']:.1f} moves from sampling alone "
            f"({100 * c['moves'] / max(1, c['claims']):.1f} % of the claims)"
        )
    return 0


if __name__ == "__main__":
    sys.exit(main())

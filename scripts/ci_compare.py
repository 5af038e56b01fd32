"""Compare two scheduler variants, or two builds of one variant, on this machine, as the testbed
CI does (`make ci-compare`).

Variants (--base A --head B):
1. writes a small run spec: two Sensitivity_RANKING readers of one data file (O_DIRECT reads,
   its cached pages evicted first) under a shared read cap, PSI monitored;
2. runs it as a controlled campaign (corun.results.campaign): --warmup warm-up runs and --reps measured
   runs per variant, in a randomised interleaved order whose seed is recorded in every run;
3. compares HEAD against BASE with `corun compare`, paired by block, decided by the verdict
   engine (the geometric mean of the per-block ratios with its t-interval, Bonferroni over the
   metrics; better / worse / inconclusive with the runs that would decide: docs/verdicts.md)
   into OUT/compare/ (comparison.md/.html/.json/.csv, figures/).

Builds (--variant NAME --base-ref REF [--head-ref REF]): the variant as built from commit REF
against the variant as built from the working tree (or from --head-ref):
1. checks REF out with `git worktree add --detach` into a temporary folder (removed at the end,
   also on an error or Ctrl-C) and builds the variant there (`corun sched build NAME` with
   CORUN_SCHEDULERS_PATH=<worktree>/schedulers, so its manifest, code and `sources` are REF's);
   builds the head's variant in the working tree;
2. checks that the two build ids (scheduler.build_id: a hash over the variant's folder and its
   `sources`) differ, and stops with exit 2 when they do not, unless --allow-same;
3. runs the spec as one campaign of two arms, `base` and `head`, interleaved as above; a base
   run is executed with CORUN_SCHEDULERS_PATH=<worktree>/schedulers. Every run carries
   labels build (base|head), git_ref, git_commit and build_id, and the build id each run
   recorded is checked against its arm's;
4. compares head against base with `corun compare --by labels.build --baseline base`.
The instrument (corun, the benchmark) is the working tree's for both arms: only the scheduler
build differs.

Exit status: 0; 1 when a metric is surely worse by --fail-if-worse or more (its interval, paired
by block, lies wholly beyond it) or a run or build failed; 5 when the runs cannot tell whether it
is (the summary says how many runs per arm would); 2 bad input. With the defaults (16 MiB per
reader at 16 MB/s, 2 x (1 + 5) runs) it takes 1-3 minutes.

  python scripts/ci_compare.py --base linux --head elevator_bfq --out results/ci-compare
  python scripts/ci_compare.py --variant dynamic_io --base-ref origin/main --out results/ci-compare
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from analysis import compare_runs  # noqa: E402
from corun.errors import ConfigError, CorunError, one_line_errors  # noqa: E402
from corun.results import campaign  # noqa: E402
from corun.run import schedulers  # noqa: E402
from corun.run.inputs import fits, write_random  # noqa: E402

CAMPAIGN = "ci_compare"


def write_inputs(out: Path, size_mib: int, readers: int, read_bps: int) -> Path:
    import yaml

    data = out / "data"
    data.mkdir(parents=True, exist_ok=True)
    f = data / "ci_input.bin"
    want = size_mib << 20
    if not fits(f, want):
        write_random(f, want)
    kernel = ROOT / "kernels" / "build" / "sensitivity_ranking"
    spec = {
        "name": "ci-compare",
        "labels": {"experiment": "ci_compare"},
        "jobs": [
            {
                "name": "reader",
                "cmd": [
                    str(kernel),
                    "--file",
                    str(f),
                    "--block-size",
                    "65536",
                    "--nops",
                    "2000",
                    "--cache-mode",
                    "direct",
                ],
                "repeat": readers,
                "result": "json",
            }
        ],
        "device": {"path": str(data), "evict": [str(f)], "throttle": {"read_bps": read_bps}},
        "monitors": {"enabled": ["psi"]},
    }
    path = out / "spec_template.yaml"
    path.write_text(yaml.safe_dump(spec, sort_keys=False))
    return path


# ----------------------------------------------------------------------------- builds


def git(*args: str) -> str:
    res = subprocess.run(["git", "-C", str(ROOT), *args], capture_output=True, text=True)
    if res.returncode != 0:
        last = (res.stderr.strip().splitlines() or ["(no message)"])[-1]
        raise CorunError(f"git {' '.join(args)}: {last}")
    return res.stdout.strip()


def resolve_ref(ref: str, option: str) -> str:
    """The commit `ref` names; a one-line usage error when it names none."""
    res = subprocess.run(
        ["git", "-C", str(ROOT), "rev-parse", "--verify", "--quiet", "--end-of-options", f"{ref}^{{commit}}"],
        capture_output=True,
        text=True,
    )
    if res.returncode != 0 or not ref or ref.startswith("-"):
        raise ConfigError(
            "command line",
            option,
            ref,
            "a commit, branch or tag of this repository (fetched, e.g. git fetch origin main)",
        )
    return res.stdout.strip()


class Worktree:
    """`git worktree add --detach` of a commit into a temporary folder; removed on exit."""

    def __init__(self, commit: str, label: str):
        self.commit, self.label = commit, label
        self.tmp: Path | None = None
        self.path: Path | None = None

    def __enter__(self) -> Path:
        self.tmp = Path(tempfile.mkdtemp(prefix=f"corun-ci-{self.label}-"))
        self.path = self.tmp / "tree"
        git("worktree", "add", "--detach", "--quiet", str(self.path), self.commit)
        return self.path

    def __exit__(self, *exc) -> None:
        if self.path is not None and self.path.exists():
            subprocess.run(
                ["git", "-C", str(ROOT), "worktree", "remove", "--force", str(self.path)], capture_output=True
            )
        if self.tmp is not None:
            shutil.rmtree(self.tmp, ignore_errors=True)
        subprocess.run(["git", "-C", str(ROOT), "worktree", "prune"], capture_output=True)


def variant_build_id(name: str, sched_dir: Path, ref: str) -> str:
    """The build id `corun run` will record for variant `name` found first in `sched_dir`."""
    if not (sched_dir / name / "manifest.yaml").is_file():
        raise ConfigError("command line", "--variant", name, f"a scheduler variant in schedulers/ at {ref}")
    old = os.environ.get("CORUN_SCHEDULERS_PATH")
    os.environ["CORUN_SCHEDULERS_PATH"] = str(sched_dir)
    try:
        path = schedulers.find(name, "command line", "--variant")
        man = schedulers.load_manifest(path)
        return schedulers.build_id(path.parent, man["sources"])
    finally:
        if old is None:
            del os.environ["CORUN_SCHEDULERS_PATH"]
        else:
            os.environ["CORUN_SCHEDULERS_PATH"] = old


def build_variant(name: str, env: dict, ref: str) -> None:
    res = subprocess.run(
        [sys.executable, "-m", "corun", "sched", "build", name],
        cwd=ROOT,
        env={**os.environ, **env},
        capture_output=True,
        text=True,
    )
    if res.returncode != 0:
        last = ((res.stderr or res.stdout).strip().splitlines() or ["(no message)"])[-1]
        raise CorunError(f"building {name} at {ref} failed: {last}")


def check_recorded_builds(camp_dir: Path, expected: dict[str, str]) -> None:
    """Every run recorded the build id of its arm (the base runs really ran the base build)."""
    for run in sorted((camp_dir / "runs").glob("*/metadata.json")):
        meta = json.loads(run.read_text())
        arm = (meta.get("labels") or {}).get("build")
        got = (meta.get("scheduler") or {}).get("build_id")
        if arm in expected and got != expected[arm]:
            raise CorunError(f"{run.parent}: scheduler.build_id {got} is not the {arm} build {expected[arm]}")


def compare_builds(a, threshold: float) -> tuple[dict, str]:
    name = a.variant
    base_commit = resolve_ref(a.base_ref, "--base-ref")
    head_commit = resolve_ref(a.head_ref, "--head-ref") if a.head_ref else git("rev-parse", "HEAD")
    head_ref = a.head_ref or "HEAD"  # the working tree, uncommitted changes included
    pythonpath = str(ROOT) + (os.pathsep + os.environ["PYTHONPATH"] if os.environ.get("PYTHONPATH") else "")
    with (
        Worktree(base_commit, "base") as base_tree,
        Worktree(head_commit, "head") if a.head_ref else _Here() as head_tree,
    ):
        head_sched = head_tree / "schedulers"
        head_id = variant_build_id(name, head_sched, head_ref)
        base_id = variant_build_id(name, base_tree / "schedulers", a.base_ref)
        if base_id == head_id and not a.allow_same:
            raise ConfigError(
                "command line",
                "--base-ref",
                a.base_ref,
                f"a commit where {name} builds differently from {head_ref} (both are build "
                f"{base_id}; --allow-same compares them anyway)",
            )
        spec = write_inputs(a.out, a.size_mib, a.readers, a.read_bps)
        envs = {
            "base": {"CORUN_SCHEDULERS_PATH": str(base_tree / "schedulers"), "PYTHONPATH": pythonpath},
            # the head: the working tree's schedulers/ (or the head worktree's) and nothing else
            "head": {"CORUN_SCHEDULERS_PATH": str(head_sched) if a.head_ref else "", "PYTHONPATH": pythonpath},
        }
        for arm, ref in (("base", a.base_ref), ("head", head_ref)):
            print(f"building {name} at {ref}", file=sys.stderr)
            build_variant(name, envs[arm], ref)
        print(
            f"builds: base {base_id} ({a.base_ref} {base_commit[:12]}), head {head_id} ({head_ref} {head_commit[:12]})",
            file=sys.stderr,
        )
        ids = {"base": base_id, "head": head_id}
        arms = {
            arm: {
                "variant": name,
                "env": envs[arm],
                "labels": {"build": arm, "git_ref": ref, "git_commit": commit, "build_id": ids[arm]},
            }
            for arm, ref, commit in (("base", a.base_ref, base_commit), ("head", head_ref, head_commit))
        }
        camp_dir = a.out / "campaign"
        state = campaign.run_campaign(
            spec,
            ["base", "head"],
            camp_dir,
            reps=a.reps,
            warmup=a.warmup,
            seed=a.seed,
            name=CAMPAIGN,
            arms=arms,
            log=lambda line: print(line, file=sys.stderr),
        )
    print(f"campaign: {len(state['runs'])} runs, seed {state['seed']}", file=sys.stderr)
    check_recorded_builds(camp_dir, ids)
    result, _, md = compare_runs.run(
        [camp_dir],
        by="labels.build",
        baseline="base",
        where=f"labels.campaign={CAMPAIGN} labels.build=base,head",
        pair_by="labels.block",
        fail_if_worse=threshold,
        out=a.out / "compare",
    )
    header = (
        f"Builds of `{name}`: base `{base_id}` from {a.base_ref} ({base_commit[:12]}), "
        f"head `{head_id}` from {head_ref} ({head_commit[:12]}{'' if a.head_ref else ', working tree'}).\n\n"
    )
    (a.out / "compare" / "comparison.md").write_text(header + md, encoding="utf-8")
    return result, header + md


class _Here:
    """The working tree, as a context like Worktree."""

    def __enter__(self) -> Path:
        return ROOT

    def __exit__(self, *exc) -> None:
        return None


def _interrupted(signum, frame):
    raise KeyboardInterrupt  # unwinds through the worktree's removal


@one_line_errors(prefix="ci_compare")
def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--base", help="baseline scheduler variant (default linux)")
    ap.add_argument("--head", help="scheduler variant under test")
    ap.add_argument("--variant", help="compare two builds of this variant (with --base-ref)")
    ap.add_argument("--base-ref", help="git commit, branch or tag whose build of --variant is the baseline")
    ap.add_argument("--head-ref", help="git commit whose build is under test (default: the working tree)")
    ap.add_argument("--allow-same", action="store_true", help="compare builds even when their build ids are equal")
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
    signal.signal(signal.SIGTERM, _interrupted)
    if a.variant is not None:
        for opt in ("base", "head"):
            if getattr(a, opt) is not None:
                raise ConfigError(
                    "command line",
                    f"--{opt}",
                    getattr(a, opt),
                    "no --base/--head with --variant (builds are chosen by --base-ref/--head-ref)",
                )
        if not a.base_ref:
            raise ConfigError("command line", "--base-ref", "missing", "a git commit to build --variant from")
    else:
        for opt in ("base_ref", "head_ref"):
            if getattr(a, opt) is not None:
                raise ConfigError(
                    "command line", f"--{opt.replace('_', '-')}", getattr(a, opt), "no git ref without --variant NAME"
                )
        if a.head is None:
            raise ConfigError(
                "command line",
                "--head",
                "missing",
                "a scheduler variant (or --variant NAME --base-ref REF to compare builds)",
            )
        a.base = a.base or "linux"
        if a.base == a.head:
            raise ConfigError("command line", "--head", a.head, "a variant other than --base")
    for key in ("reps", "size_mib", "readers", "read_bps"):
        if getattr(a, key) < 1:
            raise ConfigError("command line", f"--{key.replace('_', '-')}", getattr(a, key), "an integer >= 1")
    threshold = compare_runs.parse_percent(a.fail_if_worse)
    if a.variant is not None:
        resolve_ref(a.base_ref, "--base-ref")  # before writing anything
        if a.head_ref:
            resolve_ref(a.head_ref, "--head-ref")
        else:  # a variant the working tree lacks: said before any worktree or input is made
            variant_build_id(a.variant, ROOT / "schedulers", "HEAD")
        result, md = compare_builds(a, threshold)
    else:
        for name in (a.base, a.head):  # each variant compared is built here first, as a run needs it
            print(f"building {name}", file=sys.stderr)
            build_variant(name, {}, "the working tree")
        spec = write_inputs(a.out, a.size_mib, a.readers, a.read_bps)
        camp_dir = a.out / "campaign"
        state = campaign.run_campaign(
            spec,
            [a.base, a.head],
            camp_dir,
            reps=a.reps,
            warmup=a.warmup,
            seed=a.seed,
            name=CAMPAIGN,
            log=lambda line: print(line, file=sys.stderr),
        )
        print(f"campaign: {len(state['runs'])} runs, seed {state['seed']}", file=sys.stderr)
        result, _, md = compare_runs.run(
            [camp_dir],
            by="variant",
            baseline=a.base,
            where=f"labels.campaign={CAMPAIGN} variant={a.base},{a.head}",
            pair_by="labels.block",
            fail_if_worse=threshold,
            out=a.out / "compare",
        )
    sys.stdout.write(md)
    if a.summary:
        with open(a.summary, "a", encoding="utf-8") as fh:
            fh.write(md)
    print(f"\ncomparison: {a.out / 'compare' / 'comparison.html'}", file=sys.stderr)
    status = result["gate"]["status"]
    return 1 if status == "failed" else compare_runs.GATE_UNDECIDED_EXIT if status == "undecided" else 0


if __name__ == "__main__":
    sys.exit(main())

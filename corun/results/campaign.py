"""Campaigns as controlled experiments: a randomised, interleaved order of variants with the
seed recorded, warm-up runs marked, and adaptive repetition.

`order(variants, reps, seed, warmup)` is the plan. Each variant first gets `warmup` warm-up
runs, then `reps` measured runs; the runs are laid out in blocks, one run of every variant
per block, each block in its own random order (a randomised complete block design), so slow
drift of the machine (temperature, page cache, background load) falls on every variant alike.
The seed is drawn when not given and is recorded in every entry: the order can be rebuilt.

Every run of a campaign carries `labels(entry, campaign)`: campaign, campaign_seed, order,
block, rep, warmup and variant. Analyses drop `warmup: true` runs (corun compare lists them
as excluded), and `block` is the natural key to pair runs by (`corun compare --pair-by block`).

Adaptive repetition: `more_blocks` is what a campaign calls between blocks; whether more are
needed is a statistical question, answered by `analysis.campaign_decision` (corun does not
import analysis: the caller passes the decision function). `run_campaign` is a ready driver: it
runs a spec template once per planned entry with the variant and labels set (`corun run`, one
run at a time), skips runs already finished (resumable), and with a target adds blocks until
`decide` says stop. `corun campaign order|decide|run` (analysis/cli.py) expose all three.

Arms: `run_campaign(..., arms={name: {"variant": ..., "env": {...}, "labels": {...}}})` makes
the names in `variants` arms rather than variants: a run of arm `name` uses the arm's variant,
runs with the arm's environment added (e.g. `CORUN_SCHEDULERS_PATH` pointing at another build
of the variant) and carries the arm's labels, plus `arm: name` and `variant: <its variant>`.
Two builds of one variant are then two arms (scripts/ci_compare.py --variant).

    from corun.results import campaign
    for e in campaign.order(["linux", "dynamic_io"], reps=5, seed=42, warmup=1):
        spec["scheduler"] = campaign.scheduler_for(spec, e["variant"])
        spec["labels"].update(campaign.labels(e, "dynamic_io"))
        ...  # write the spec, `corun run` it into runs/<campaign.run_name(e)>
"""

from __future__ import annotations

import json
import os
import random
import secrets
import signal
import subprocess
import sys
import time
from pathlib import Path

import yaml

from corun import config
from corun.errors import ConfigError, CorunError
from corun.run.schedulers import Variant, lookup, manifest
from corun.util import atomic_write_json

CAMPAIGN_FILE = "campaign.json"


def _check(variants: list[str], reps: int, warmup: int) -> None:
    if not variants or any(not isinstance(v, str) or not v for v in variants):
        raise ConfigError("campaign", "variants", variants, "a non-empty list of variant names")
    if len(set(variants)) != len(variants):
        raise ConfigError("campaign", "variants", variants, "distinct variant names")
    if not isinstance(reps, int) or isinstance(reps, bool) or reps < 1:
        raise ConfigError("campaign", "reps", reps, "an integer >= 1")
    if not isinstance(warmup, int) or isinstance(warmup, bool) or warmup < 0:
        raise ConfigError("campaign", "warmup", warmup, "an integer >= 0")


def new_seed() -> int:
    return secrets.randbits(31)


def _block(variants: list[str], rng: random.Random) -> list[str]:
    block = list(variants)
    rng.shuffle(block)
    return block


def order(variants: list[str], reps: int, seed: int | None = None, warmup: int = 1) -> list[dict]:
    """The planned runs, in the order to run them (see module doc). Each entry:
    position, block, variant, rep (0-based within warm-up or measured runs), warmup, seed."""
    _check(list(variants), reps, warmup)
    seed = new_seed() if seed is None else int(seed)
    rng = random.Random(seed)
    out = []
    for b in range(warmup + reps):
        is_warm = b < warmup
        for v in _block(list(variants), rng):
            out.append(
                {
                    "position": len(out),
                    "block": b,
                    "variant": v,
                    "rep": b if is_warm else b - warmup,
                    "warmup": is_warm,
                    "seed": seed,
                }
            )
    return out


def more_blocks(variants: list[str], seed: int, done_blocks: int, count: int = 1) -> list[dict]:
    """`count` further measured blocks after `done_blocks` blocks of order(...); the same seed
    gives the same continuation, so a resumed adaptive campaign keeps its order."""
    rng = random.Random(f"{seed}:{done_blocks}")
    out = []
    for b in range(done_blocks, done_blocks + count):
        for v in _block(list(variants), rng):
            out.append({"block": b, "variant": v, "warmup": False, "seed": seed})
    return out


def labels(entry: dict, campaign: str) -> dict:
    """Labels a campaign run carries (merged into the run spec's labels)."""
    return {
        "campaign": campaign,
        "campaign_seed": entry["seed"],
        "order": entry["position"],
        "block": entry["block"],
        "rep": entry["rep"],
        "warmup": entry["warmup"],
        "variant": entry["variant"],
    }


def run_name(entry: dict) -> str:
    kind = "w" if entry["warmup"] else "r"
    return f"{entry['position']:03d}-{entry['variant']}-{kind}{entry['rep']}"


# ----------------------------------------------------------------------------- driver


def scheduler_for(template: dict, variant: str) -> dict:
    """The template's scheduler section for `variant`: its params that the variant declares (a
    variant and its variants share theirs: timeslice_s, io_bound_mbps ...), except those whose
    default the variant changes itself (a variant that extends dynamic_io with io_bound_mbps 20
    runs with 20, whatever the template gives dynamic_io), the others left to the variant's
    defaults; the runner checks every value before anything runs."""
    given = (template.get("scheduler") or {}).get("params") or {}
    if not given:
        return {"name": variant}
    man = manifest(variant, "command line", "--variants")
    params = {k: v for k, v in given.items() if k in man["params"] and k not in man["own_defaults"]}
    return {"name": variant, "params": params} if params else {"name": variant}


def check_names(variants: list[str], key: str = "--variants") -> None:
    """Each name is a variant of schedulers/ (one line with the nearest names, else)."""
    for name in variants:
        lookup(name, "command line", key)


def check_variants(template: dict, variants: list[str], arms: dict | None, source: str) -> None:
    """Every variant a campaign would run, checked before the first run: the name (one line with
    the nearest names), the template's params for it, the programs it needs and its build. An
    arm's variant is looked up with the arm's environment (another build's search path)."""
    for name in variants:
        arm = arms[name] if arms else None
        variant = arm["variant"] if arm else name
        saved = {k: os.environ.get(k) for k in (arm["env"] if arm else {})}
        os.environ.update(arm["env"] if arm else {})
        try:
            lookup(variant, "command line", "--variants" if not arm else f"arms.{name}.variant")
            Variant.load(variant, scheduler_for(template, variant).get("params") or {}, source)
        finally:
            for k, v in saved.items():
                if v is None:
                    os.environ.pop(k, None)
                else:
                    os.environ[k] = v


def _load_template(spec_path: Path) -> dict:
    return config.load(spec_path, "run_spec")


def _corun_run(spec: dict, spec_file: Path, out: Path, env: dict | None = None) -> None:
    spec_file.parent.mkdir(parents=True, exist_ok=True)
    spec_file.write_text(yaml.safe_dump(spec, sort_keys=False))
    # absolute paths: a daemon variant may run in another working directory
    proc = subprocess.Popen(
        [sys.executable, "-m", "corun", "run", str(spec_file.resolve()), "--out", str(out.resolve()), "--quiet"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env={**os.environ, **env} if env else None,
    )
    try:
        _, stderr = proc.communicate()
    except KeyboardInterrupt:  # let the run stop its variant and jobs before we go
        if proc.poll() is None:
            proc.send_signal(signal.SIGINT)
        try:
            proc.communicate(timeout=60)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.communicate()
        raise
    if proc.returncode != 0:
        last = (stderr.strip().splitlines() or ["(no message)"])[-1]
        raise CorunError(f"campaign run {out.name} failed: {last}", exit_code=proc.returncode)


def _check_arms(variants: list[str], arms: dict) -> dict:
    """{name: {"variant", "env", "labels"}} for every name in `variants`."""
    out = {}
    for name in variants:
        arm = arms.get(name) if isinstance(arms, dict) else None
        if (
            not isinstance(arm, dict)
            or not isinstance(arm.get("variant"), str)
            or not arm["variant"]
            or set(arm) - {"variant", "env", "labels"}
        ):
            raise ConfigError("campaign", f"arms.{name}", arm, "{variant: NAME, env: {...}, labels: {...}}")
        out[name] = {
            "variant": arm["variant"],
            "env": {str(k): str(v) for k, v in (arm.get("env") or {}).items()},
            "labels": dict(arm.get("labels") or {}),
        }
    return out


def run_campaign(
    spec_path: Path,
    variants: list[str],
    out_dir: Path,
    *,
    reps: int = 3,
    warmup: int = 1,
    seed: int | None = None,
    name: str | None = None,
    target: float | None = None,
    max_reps: int = 20,
    metric: str = "runtime_s",
    runner=_corun_run,
    log=print,
    arms: dict | None = None,
    decide=None,
    check: bool | None = None,
) -> dict:
    """Run a spec template once per planned entry (see module doc); returns campaign.json.

    Every variant is checked before the first run (check_variants); `check` None: when the runs
    are `corun run`s (the default runner), whose variants are real.

    `runner(spec, spec_file, out)` makes one run folder (default: `corun run`); with `arms`,
    an arm's environment is passed as `runner(..., env=ENV)` when it has one. With a `target`,
    `decide(runs_dir, by, target, max_reps, min_reps)` -> {"decision": "more" | "stop", ...}
    says whether to add a block (analysis.campaign_decision.decider(metric))."""
    if target is not None and decide is None:
        raise ConfigError("campaign", "target", target, "a decide function with it (analysis.campaign_decision)")
    spec_path, out_dir = Path(spec_path), Path(out_dir)
    template = _load_template(spec_path)
    name = name or out_dir.name
    arms = _check_arms(list(variants), arms) if arms is not None else None
    if check or (check is None and runner is _corun_run):
        check_variants(template, list(variants), arms, str(spec_path))
    recorded_arms = {k: {"variant": a["variant"], "labels": a["labels"]} for k, a in arms.items()} if arms else None
    state_path = out_dir / CAMPAIGN_FILE
    if state_path.exists():
        prev = json.loads(state_path.read_text())
        if prev.get("variants") != list(variants):
            raise ConfigError(
                str(state_path),
                "variants",
                list(variants),
                f"the variants of the campaign already there ({prev.get('variants')})",
            )
        if prev.get("arms") != recorded_arms:
            raise ConfigError(
                str(state_path),
                "arms",
                recorded_arms,
                f"the arms of the campaign already there ({prev.get('arms')}); use another folder",
            )
        if seed is not None and seed != prev["seed"]:
            raise ConfigError(str(state_path), "seed", seed, f"the recorded seed {prev['seed']} (or none)")
        seed = prev["seed"]
    plan = order(list(variants), reps, seed, warmup)
    seed = plan[0]["seed"]
    state = {
        "name": name,
        "seed": seed,
        "variants": list(variants),
        "reps": reps,
        "warmup": warmup,
        "spec": spec_path.name,
        "target": target,
        "max_reps": max_reps,
        "metric": metric,
        "created_epoch_s": time.time(),
        "runs": [],
    }
    if arms:
        state["arms"] = recorded_arms
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "spec_template.json").write_text(json.dumps(template, indent=2, sort_keys=True) + "\n")

    def execute(entries: list[dict]) -> None:
        for e in entries:
            run_dir = out_dir / "runs" / run_name(e)
            if not (run_dir / "metadata.json").exists():
                spec = json.loads(json.dumps(template))
                spec["scheduler"] = scheduler_for(template, e["variant"])
                spec["labels"] = {**(spec.get("labels") or {}), **labels(e, name)}
                spec["name"] = f"{name}-{run_name(e)}"
                env = {}
                if arms:
                    arm = arms[e["variant"]]
                    spec["scheduler"] = scheduler_for(template, arm["variant"])
                    spec["labels"].update({**arm["labels"], "arm": e["variant"], "variant": arm["variant"]})
                    env = arm["env"]
                log(f"campaign {name}: {e['position'] + 1} {run_name(e)}")
                runner(spec, out_dir / "specs" / f"{run_name(e)}.yaml", run_dir, **({"env": env} if env else {}))
            state["runs"].append({**e, "run": f"runs/{run_name(e)}"})
            atomic_write_json(state_path, state)

    execute(plan)
    if target is not None:
        blocks = warmup + reps
        while True:
            verdict = decide(
                out_dir / "runs", "labels.arm" if arms else "labels.variant", target, max_reps, min(reps, max_reps)
            )
            state["decision"] = verdict
            atomic_write_json(state_path, state)
            if verdict["decision"] == "stop":
                break
            extra = more_blocks(list(variants), seed, blocks)
            for e in extra:
                e["position"] = len(state["runs"]) + extra.index(e)
                e["rep"] = e["block"] - warmup
            execute(extra)
            blocks += 1
    atomic_write_json(state_path, state)
    return state

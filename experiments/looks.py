"""The sequential design: more repetitions while a claim stays undecided, up to a cap.

An experiment whose section sets `max_reps` above its `reps` is measured in looks: look 1 runs
`reps` repetitions; look l runs `reps_step` more (default: `reps` more), up to `max_reps`. After
each look but the last, its analysis (and that of the experiments that read its runs) is judged,
and `decide` says whether another look can decide a claim that is still inconclusive: it can
when some inconclusive claim measured something (n > 0) and the engine's estimate of the reps
that would decide it is within FUTILITY_SLACK times the cap: an estimate from 3 to 8 reps rests
on a spread that is itself uncertain by a factor of two or more, so a claim just beyond the cap
still runs to it rather than stop in one campaign and be decided in the next; and before
MIN_FUTILITY_REPS reps no estimate stops a look at all (from 3 reps they varied tenfold between
campaigns). Every look judges
its claims at the level computed for the plan (analysis.stats.look_alpha: t-intervals with the
degrees of freedom its looks have), so the chance of a false decision over all looks stays at
5 %; the rows record the look. Without
`max_reps` (or with it at `reps`) there is one look, judged at 95 %, as before.

The workflow (workflows/rules/experiments.smk) writes the specs of every look at once, runs the
runs look by look (a look's runs are those of its repetitions only), collects and analyses each
look under RESULTS/<experiment>/looks/<look>/, and a checkpoint decides whether the next look is
needed; the last look reached is copied to RESULTS/<experiment>/ (jobs.csv, runs.csv, analysis/).
"""

from __future__ import annotations

import copy

from corun.run import schedulers
from corun.util import lazy_module, repo_root

stats = lazy_module("analysis.stats")  # SciPy: loaded where a level is needed, not by every step

# A claim takes the next look while its estimate of the reps that would decide it is at most this
# many times the cap. Stopping only for futility never raises the error rate (each look's level is
# set for every planned look); stopping early on a noisy estimate moved verdicts between campaigns:
# four of the five claims that moved between two campaigns of one commit had stopped on an
# estimate between 1.2 and 2.3 times their cap.
FUTILITY_SLACK = 2.0


def reps_per_look(cfg: dict, name: str) -> list[int]:
    """The repetitions each look has run once it is done, e.g. [3, 6, 9]; [reps] without a cap."""
    sec = cfg.get(name) or {}
    reps = sec.get("reps")
    cap = sec.get("max_reps")
    if not isinstance(reps, int) or cap is None or cap <= reps:
        return [reps] if isinstance(reps, int) else [1]
    step = sec.get("reps_step") or reps
    out = [reps]
    while out[-1] < cap:
        out.append(min(cap, out[-1] + step))
    return out


def at_reps(cfg: dict, name: str, reps: int) -> dict:
    """The configuration with the experiment's `reps` set (its runs at that many repetitions)."""
    out = copy.deepcopy(cfg)
    out[name]["reps"] = reps
    return out


def names_by_look(exp, cfg: dict) -> list[list[str]]:
    """The run names each look adds (look 1: every run of its reps; look l: those of its new reps)."""
    looks = reps_per_look(cfg, exp.name)
    seen: list[str] = []
    out = []
    for r in looks:
        names = exp.run_names(at_reps(cfg, exp.name, r)) if len(looks) > 1 else exp.run_names(cfg)
        new = [n for n in names if n not in set(seen)]
        out.append(new)
        seen += new
    return out


def group_name(group: str, look: int) -> str:
    return group if look == 1 else f"{group}-look{look}"


def look_groups(exp, cfg: dict) -> list[dict]:
    """Each run group split by look: [{"name": the group (look 1) or <group>-look<l>, "of": the
    experiment's group, "look", "runs": its runs of that look}]."""
    looks = reps_per_look(cfg, exp.name)
    full = exp.group_runs(at_reps(cfg, exp.name, looks[-1]) if len(looks) > 1 else cfg)
    by_look = names_by_look(exp, cfg)
    out = []
    for g, runs in full.items():
        for look, names in enumerate(by_look, 1):
            part = [r for r in runs if r in set(names)]
            if part:
                out.append({"name": group_name(g, look), "of": g, "look": look, "runs": part})
    return out


def groups_by_look(exp, cfg: dict) -> dict[str, list[str]]:
    """{group (look 1) or group-look<l>: its runs of that look} (look_groups)."""
    return {g["name"]: g["runs"] for g in look_groups(exp, cfg)}


def run_manifests(exp, cfg: dict):
    """run -> the manifests (own and extended, relative to the repository) of the variants the
    run uses: an edited manifest is an input that changed, so its runs are measured again (the
    workflow's inputs of a run of its own, and a group's `run_inputs`)."""
    root = repo_root()
    memo: dict[str, list[str]] = {}

    def files(v: str) -> list[str]:
        if v not in memo:
            memo[v] = [str(p.resolve().relative_to(root)) for p in schedulers.manifest_files(v)]
        return memo[v]

    return lambda run: sorted({f for v in exp.run_variants(cfg, run) for f in files(v)})


def groups_file(doc: dict, exp, cfg: dict) -> dict:
    """A specs step's groups.json DOC (the experiment's groups) as the group runner takes it: each
    group split by look (the same cluster and file system, each look's runs: look_groups), and
    with the files each of its runs depends on besides its spec (`run_inputs`: run_manifests), so
    that the runner measures again a run older than one of them (corun.testbed.pfs_runs.finished),
    as Snakemake does for a run of its own."""
    manifests = run_manifests(exp, cfg)
    groups = [
        {**g, "name": part["name"], "runs": part["runs"], "run_inputs": {r: manifests(r) for r in part["runs"]}}
        for g in doc["groups"]
        for part in look_groups(exp, cfg)
        if part["of"] == g["name"]
    ]
    return {**doc, "groups": groups}


# Below this many reps no estimate stops a look for futility: from 3 reps the engine's estimates
# of one claim in three campaigns of one commit were 15, 15 and 201 reps (another 11, 11 and 70),
# an estimate's spread and its effect both resting on three values; the campaign whose estimates
# came out high stopped at 3 reps with its claims inconclusive while the others decided them.
MIN_FUTILITY_REPS = 6


def decide(sections: list[dict], look: int, looks: list[int]) -> dict:
    """Whether another look is worth running, from this look's sections (the experiment's and
    those of the experiments that read its runs): {"more", "why", "undecided"}."""
    cap = looks[-1]
    if look >= len(looks):
        return {"more": False, "why": "the last look planned", "undecided": []}
    undecided, futile = [], []
    early = looks[look - 1] < MIN_FUTILITY_REPS  # too few reps for an estimate to stop on
    for s in sections:
        for r in s.get("claims", []):
            if r["outcome"] != "inconclusive" or r["n"] == 0:
                continue
            need = r.get("reps_needed")
            item = f"{s['experiment']}.{r['claim']}" + (f" ({need} reps)" if need else "")
            # an estimate at or below the reps already run (a trend's points, a Bonferroni-level
            # point) still asks for the next look: the claim is undecided at these reps
            if early or (need is not None and need <= FUTILITY_SLACK * cap):
                undecided.append(item)
            else:
                futile.append(item)
    if undecided:
        whose = (
            f"(fewer than {MIN_FUTILITY_REPS} reps: no estimate stops a look)"
            if early
            else f"whose estimate is within {FUTILITY_SLACK:g} x the cap of {cap}"
        )
        return {
            "more": True,
            "why": f"{len(undecided)} claim(s) inconclusive at {looks[look - 1]} reps {whose}",
            "undecided": undecided,
        }
    why = f"no inconclusive claim whose estimate is within {FUTILITY_SLACK:g} x the cap of {cap}"
    if futile:
        why += f" ({len(futile)} would need more than {FUTILITY_SLACK * cap:g} reps, or have no estimate)"
    return {"more": False, "why": why, "undecided": futile}


def alpha(looks: list[int]) -> float:
    """Each look's level: the plan's, for t-intervals with the degrees of freedom its looks have."""
    return stats.look_alpha(len(looks), looks)


def describe(looks: list[int]) -> str:
    if len(looks) == 1:
        return f"one look of {looks[0]} reps at 95 %"
    return (
        f"up to {len(looks)} looks at {', '.join(map(str, looks))} reps, each at "
        f"{100 * (1 - alpha(looks)):.4g} % (5 % over the looks for t with their df)"
    )

"""The campaign's plan, made once from the validated configuration: every run with its spec, its
group, its look, its inputs and what it needs of the testbed, every analysis with its inputs and
outputs, and the results layout (corun.layout). The workflow writes it as RESULTS/plan.json
(schema corun/schemas/campaign_plan.schema.json) and its rules read it; `python -m experiments
plan --config FILE` writes the same file by hand.

A run's spec is the file its experiment's specs step writes (`spec`): its content needs the data
and the calibration, which the plan comes before.
"""

from __future__ import annotations

import json
from pathlib import Path

from corun import config as documents
from corun.errors import ConfigError
from corun.layout import Layout
from corun.util import atomic_write_text
from experiments import looks as LOOKS

SCHEMA = "campaign_plan"
VERSION = 1


def _runs_of(exp, cfg: dict, lay: Layout) -> dict:
    """One experiment's runs, groups and looks."""
    name = exp.name
    reps = LOOKS.reps_per_look(cfg, name)
    by_look = LOOKS.names_by_look(exp, cfg)
    look_of = {r: look for look, names in enumerate(by_look, 1) for r in names}
    groups = LOOKS.groups_by_look(exp, cfg)
    group_of = {r: g for g, members in groups.items() for r in members}
    manifests = LOOKS.run_manifests(exp, cfg)
    priority = exp.run_priority(cfg)
    figures = exp.run_figures(LOOKS.at_reps(cfg, name, reps[-1]) if len(reps) > 1 else cfg)
    # every run holds the testbed alone (one run or group at a time); a run of its own uses one
    # host as it is (all_hosts repeats it on each), a group or a multi-host run the experiment's
    hosts = "one" if exp.host_runs else "the experiment's"
    runs = [
        {
            "name": r,
            "look": look_of[r],
            "group": group_of.get(r),
            "spec": lay.spec(name, r),
            "dir": lay.run(name, r),
            "inputs": [*exp.run_inputs, *manifests(r)],
            "priority": priority.get(r, 0),
            "needs": {"exclusive": True, "hosts": hosts},
            "figures": figures.get(r, []),
        }
        for look in by_look
        for r in look
    ]
    group_list = [
        {
            "name": g,
            "look": look_of[members[0]],
            "runs": members,
            "stamp": lay.group_stamp(name, g, look_of[members[0]]),
            "inputs": sorted({*exp.run_inputs, *(m for r in members for m in manifests(r))}),
        }
        for g, members in groups.items()
    ]
    collect = []
    for look in range(1, len(reps) + 1):
        names = [r["name"] for r in runs if r["look"] <= look]
        collect.append(
            {
                "look": look,
                "reps": reps[look - 1],
                "runs": [lay.run(name, r) for r in names if r not in group_of],
                "groups": sorted({lay.group_stamps(name, g["look"]) for g in group_list if g["look"] <= look}),
                "dirs": [lay.run(name, r) for r in names],
            }
        )
    return {
        "data": f"{lay.data_dir(name)}/{exp.data_file}" if exp.data_file else None,
        "data_dir": lay.data_dir(name),
        "calibration": lay.calibration(name) if exp.calibrates else None,
        "step_inputs": list(exp.step_inputs),
        "specs_dir": lay.specs(name),
        "specs": [lay.spec(name, r["name"]) for r in runs] + [f"{lay.specs(name)}/{f}" for f in exp.spec_files],
        "run_command": exp.run_command(cfg, lay.netns(name)),
        "runs": runs,
        "groups": group_list,
        "looks": collect,
    }


def build(cfg: dict, experiments: dict, run_experiments: list[str]) -> dict:
    """The plan of the validated configuration CFG (experiments: the registry; run_experiments:
    the selected experiments and those whose runs they use)."""
    lay = Layout(cfg["results_dir"], cfg["data_dir"])
    runs = {}
    for name in run_experiments:
        readers = [e for e in cfg["experiments"] if (experiments[e].runs_of or e) == name]
        runs[name] = {**_runs_of(experiments[name], cfg, lay), "readers": readers}
    analyses = {}
    for name in cfg["experiments"]:
        exp = experiments[name]
        owner = exp.runs_of or name
        n_looks = len(runs[owner]["looks"]) if owner in runs else 1
        analyses[name] = {
            "owner": owner,
            "looks": n_looks,
            "inputs": exp.analysis_inputs(cfg, lay.results),
            "outputs": exp.analysis_outputs(lay.results),
        }
    return {
        "version": VERSION,
        "profile": cfg.get("profile"),
        "config": cfg,
        "experiments": list(cfg["experiments"]),
        "layout": lay.describe(list(dict.fromkeys([*run_experiments, *cfg["experiments"]]))),
        "runs": runs,
        "analyses": analyses,
    }


def text(plan: dict) -> str:
    documents.validate(plan, SCHEMA, "plan.json")
    return json.dumps(plan, indent=1, sort_keys=True) + "\n"


def write(path: str | Path, plan: dict) -> bool:
    """Write the plan when it changed (its time then marks what must be made again); whether it
    was written."""
    body = text(plan)
    p = Path(path)
    if p.exists() and p.read_text() == body:
        return False
    atomic_write_text(p, body)
    return True


def load(path: str | Path) -> dict:
    """A plan.json as written by `write`: not checked again (its configuration was validated
    before the plan was made); a file that is not one is a one-line error."""
    try:
        plan = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise ConfigError("command line", "--plan", str(path), f"a plan.json of the workflow ({exc})") from None
    if not isinstance(plan, dict) or plan.get("version") != VERSION:
        raise ConfigError(str(path), "version", plan.get("version") if isinstance(plan, dict) else plan, f"{VERSION}")
    return plan


def last_look(decisions: list[str | Path]) -> int:
    """The last look the sequential design reached, from the decisions of the looks so far (look
    1's first): the first that asks no more, else the one after the last decision."""
    for look, path in enumerate(decisions, 1):
        if not json.loads(Path(path).read_text())["more"]:
            return look
    return len(decisions) + 1

"""The workflow's steps of one experiment: data, calibrate, specs, analyze (see experiments)."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from corun.errors import ConfigError, one_line_errors
from corun.layout import Layout
from corun.plan.base import stamp_remeasure
from corun.run import run_length
from corun.util import atomic_write_json, lazy_module
from experiments import PAPERS_DIR, campaign, get, looks, registry
from experiments.config import experiments_with_runs, load_workflow_config

# loaded by the analyze step only: the data, specs and decide steps need neither SciPy nor pandas
# (about 1.5 s of imports in each of the workflow's dozens of such steps)
analysis_experiment = lazy_module("analysis.experiment")
verdicts = lazy_module("analysis.verdicts")


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m experiments", description=__doc__)
    sub = ap.add_subparsers(dest="step", required=True)
    d = sub.add_parser("data", help="write the experiment's input files")
    c = sub.add_parser("calibrate", help="measure what its specs need on this machine")
    c.add_argument("--out", required=True, type=Path)
    s = sub.add_parser("specs", help="write every run spec of the experiment")
    s.add_argument("--out-dir", required=True, type=Path)
    s.add_argument("--calibration", type=Path, help="calibration.json of the calibrate step, if it has one")
    for p in (d, c, s):
        p.add_argument("experiment")
        p.add_argument("--data-dir", required=True, type=Path)
    a = sub.add_parser("analyze", help="analyse its collected runs into its report section")
    a.add_argument("experiment")
    a.add_argument("--out-dir", required=True, help="the section's folder")
    a.add_argument("--look", type=int, help="a look of the sequential design: its tables under looks/<look>/")
    k = sub.add_parser("decide", help="whether another look of the sequential design can decide a claim")
    k.add_argument("experiment")
    k.add_argument("--look", type=int, required=True)
    k.add_argument("--sections", nargs="+", required=True, type=Path, help="this look's section.json files")
    k.add_argument("--out", required=True, type=Path)
    n = sub.add_parser("plan", help="validate the configuration and write the campaign's plan (plan.json)")
    n.add_argument("--config", required=True, help="the configuration file")
    n.add_argument("--out", type=Path, help="where (default: RESULTS/plan.json)")
    for p in (d, c, s, a, k):
        src = p.add_mutually_exclusive_group(required=True)
        src.add_argument("--plan", type=Path, help="the campaign's plan.json (the workflow's steps read it)")
        src.add_argument("--config", help="a configuration file, validated (by hand)")
    return ap


def analyze(exp, cfg: dict, results: str, out_dir: str, look: int | None = None) -> int:
    """Run the experiment's analysis (`exp.analyse`: its analysis.py) on its inputs: its metrics,
    its claims judged by the verdict engine, its section (analysis.experiment). With `look`, on
    that look's collected tables, judged at the level of the design's number of looks."""
    ins = exp.analysis_inputs(cfg, results)
    owner, lay = exp.runs_of or exp.name, Layout(results)
    plan = looks.reps_per_look(cfg, owner)
    look = look or 1
    if len(plan) > 1:
        ins = {
            **ins,
            "jobs": lay.table(owner, "jobs", look),
            "runs": lay.table(owner, "runs", look),
        }
    files = {k: v for k, v in ins.items() if k not in ("jobs", "runs")}
    files["cache_dir"] = lay.cache(exp.name)
    files.setdefault("device_calibration", lay.device_calibration)
    inputs = analysis_experiment.read_inputs(
        exp.name,
        exp.folder,
        PAPERS_DIR,
        ins["jobs"],
        ins["runs"],
        job_text=exp.job_text,
        run_text=exp.run_text,
        files=files,
        config=cfg,
        looks=verdicts.Looks(look, len(plan), plan[min(look, len(plan)) - 1], tuple(plan)),
    )
    analysis_experiment.write(out_dir, inputs, exp.analyse(inputs))
    return 0


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    a = build_parser().parse_args(argv)
    if a.step == "plan":
        cfg = load_workflow_config(a.config)
        plan = campaign.build(cfg, registry(), experiments_with_runs(cfg))
        out = a.out or Path(plan["layout"]["plan"])
        campaign.write(out, plan)
        runs = sum(len(r["runs"]) for r in plan["runs"].values())
        print(f"{out}: {runs} run(s) of {len(plan['runs'])} experiment(s)", file=sys.stderr)
        return 0
    # the workflow's steps read the plan: its configuration was validated when it was made
    whole = campaign.load(a.plan) if a.plan else None
    cfg = whole["config"] if whole else load_workflow_config(a.config)
    exp = get(a.experiment)
    if a.step == "data":
        print(exp.data(cfg, a.data_dir), file=sys.stderr)
    elif a.step == "calibrate":
        with run_length.timed_jobs() as timed:  # the jobs it timed alone: a measurement, not its cost
            cal = exp.calibrate(cfg, a.data_dir)
        atomic_write_json(a.out, {**cal, "phases_s": {"jobs_s": round(sum(timed), 4)}})
    elif a.step == "analyze":
        return analyze(exp, cfg, cfg["results_dir"], a.out_dir, a.look)
    elif a.step == "decide":
        sections = []
        for p in a.sections:
            try:
                sections.append(json.loads(p.read_text()))
            except (OSError, ValueError) as exc:
                raise ConfigError("command line", "--sections", str(p), f"a section.json ({exc})") from None
        decision = looks.decide(sections, a.look, looks.reps_per_look(cfg, exp.name))
        atomic_write_json(a.out, {"experiment": exp.name, "look": a.look, **decision})
        print(
            f"{exp.name} look {a.look}: {'another look' if decision['more'] else 'done'}: {decision['why']}",
            file=sys.stderr,
        )
    else:
        try:
            cal = json.loads(a.calibration.read_text()) if a.calibration else {"needed": False}
        except (OSError, ValueError) as exc:
            raise ConfigError(
                "command line", "--calibration", str(a.calibration), f"a calibration.json ({exc})"
            ) from None
        plan = looks.reps_per_look(cfg, exp.name)
        at_cap = looks.at_reps(cfg, exp.name, plan[-1]) if len(plan) > 1 else cfg
        n = exp.specs(at_cap, cal, a.data_dir, a.out_dir)
        stamp_remeasure(a.out_dir, cfg["remeasure"])  # a spec run by hand measures as in the workflow
        groups = a.out_dir / "groups.json"
        if groups.is_file():  # split by look, with each run's inputs: written once more, whole
            atomic_write_json(groups, looks.groups_file(json.loads(groups.read_text()), exp, cfg))
        if whole and exp.name in whole["runs"]:
            # the workflow's rule has the folder as its output: every file the plan names is in it
            for f in whole["runs"][exp.name]["specs"]:
                if not (a.out_dir / Path(f).name).is_file():
                    raise ConfigError(
                        f"experiments/{exp.name}/experiment.py",
                        "specs",
                        str(a.out_dir / Path(f).name),
                        "a file its specs step writes (the campaign's plan names it)",
                    )
        print(f"{n} run spec(s) written in {a.out_dir} ({looks.describe(plan)})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

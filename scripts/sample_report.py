#!/usr/bin/env python3
"""The sample report in docs/sample-report/: a small published campaign, rendered by this code.

    sample_report.py publish [--from results/smoke]   keep a campaign's analysis inputs, render
    sample_report.py render --out DIR                 render the kept campaign into DIR
    sample_report.py check                            does the committed report match? (exit 1)

`publish` (make sample-report) keeps of a finished campaign what its analyses read (the
collected job and run tables of every experiment, the run folders they name (metadata, job
outputs, tidy tables, scheduler state), calibrations, the plan with its
configuration; not the runs' raw monitor files) in docs/sample-report/campaign/, then renders
it. `render` analyses the kept campaign again with this code (python -m experiments analyze,
per experiment, in a temporary results folder) and writes report.html from the sections, as
the workflow does (in the workflow's order and with its title; from a kept copy of the
workflow's own campaign it is the workflow's report, time stamp aside). `check` renders into a
temporary folder and compares it with the committed docs/sample-report/report.html, the
report's time stamp and versions aside.
"""

from __future__ import annotations

import argparse
import csv
import difflib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SAMPLE = ROOT / "docs" / "sample-report"
KEPT = SAMPLE / "campaign"
# what changes from one rendering to the next without the data changing
_VOLATILE = [
    (re.compile(r'<p class="meta">Generated [^<]*</p>'), '<p class="meta">Generated (time, version)</p>'),
    (re.compile(r"<dc:date>[^<]*</dc:date>"), "<dc:date/>"),
    (re.compile(r"Matplotlib v[0-9.]+"), "Matplotlib"),
]


def _analysis_dirs(plan: dict) -> set[str]:
    return {str(Path(o).parent) for a in plan["analyses"].values() for o in a["outputs"]}


def publish(campaign: Path, plan_file: Path | None = None) -> None:
    plan_file = plan_file or campaign / "plan.json"
    plan = json.loads(plan_file.read_text())
    missing = [
        e
        for e, a in plan["analyses"].items()
        if not (campaign / Path(a["outputs"][0]).relative_to(plan["config"]["results_dir"])).is_file()
    ]
    if missing:
        sys.exit(f"corun: {plan_file}: the campaign in {campaign} has no section of {', '.join(missing)}")
    results = plan["config"]["results_dir"].rstrip("/")
    produced = _analysis_dirs(plan)
    if KEPT.exists():
        shutil.rmtree(KEPT)
    keep: set[str] = set()
    for a in plan["analyses"].values():
        for path in a["inputs"].values():
            for p in path if isinstance(path, list) else [path]:
                if isinstance(p, str) and p.startswith(results + "/") and str(Path(p).parent) not in produced:
                    keep.add(p[len(results) + 1 :])
    for rel in sorted(keep):
        src = campaign / rel
        if src.is_file():
            (KEPT / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, KEPT / rel)
        elif src.is_dir():  # a folder an analysis reads whole (noisy_neighbour's premise runs)
            shutil.copytree(src, KEPT / rel)
    # the run folders the collected tables name (each run's metadata, job outputs, tidy tables
    # and scheduler state, which the analyses read), without the raw monitor files
    for runs_csv in sorted(KEPT.rglob("runs.csv")):
        with runs_csv.open(newline="") as fh:
            run_dirs = [r.get("run_dir") or "" for r in csv.DictReader(fh)]
        for run_dir in run_dirs:
            if run_dir.startswith(results + "/") and (campaign / run_dir[len(results) + 1 :]).is_dir():
                rel = run_dir[len(results) + 1 :]
                shutil.copytree(
                    campaign / rel, KEPT / rel, ignore=shutil.ignore_patterns("monitors", ".snakemake_timestamp")
                )
    shutil.copy2(plan_file, KEPT / "plan.json")
    # this checkout's place on the machine it ran on is no part of the data: paths in it are
    # made relative to the repository (kernels/build/..., as the workflow names them)
    for f in KEPT.rglob("*"):
        if f.is_file():
            try:
                text = f.read_text()
            except UnicodeDecodeError:
                continue
            if f"{ROOT}/" in text:
                f.write_text(text.replace(f"{ROOT}/", ""))
    render(SAMPLE)


def render(out: Path) -> Path:
    with tempfile.TemporaryDirectory(prefix="corun-sample-") as tmp:
        work = Path(tmp) / "results"
        shutil.copytree(KEPT, work)
        plan = json.loads((work / "plan.json").read_text())
        old = plan["config"]["results_dir"].rstrip("/")
        # every path of the kept campaign names its copy here, so that nothing is read from a
        # results folder of this checkout
        for f in work.rglob("*"):
            if f.is_file() and f.suffix in (".csv", ".json"):
                text = f.read_text()
                if old in text:
                    f.write_text(text.replace(f"{old}/", f"{work}/").replace(f'"{old}"', f'"{work}"'))
        plan = json.loads((work / "plan.json").read_text())
        todo = list(plan["analyses"].items())
        while todo:  # an analysis that reads another's output runs after it
            ready = [
                (e, a)
                for e, a in todo
                if all(Path(p).exists() for p in a["inputs"].values() if isinstance(p, str) and p.startswith(str(work)))
            ] or todo[:1]
            for exp, a in ready:
                out_dir = str(Path(a["outputs"][0]).parent)
                argv = [sys.executable, "-m", "experiments", "analyze", exp, "--plan", str(work / "plan.json")]
                res = subprocess.run([*argv, "--out-dir", out_dir], cwd=ROOT, capture_output=True, text=True)
                if res.returncode != 0:
                    sys.exit(f"corun: sample report: analysing {exp} failed: {res.stderr.strip().splitlines()[-1:]}")
                todo.remove((exp, a))
        # in the workflow's order (workflows/rules/common.smk, section_files)
        order = plan["config"]["experiments"]
        sections = [plan["analyses"][e]["outputs"][0] for e in order if e in plan["analyses"]]
        out.mkdir(parents=True, exist_ok=True)
        title = plan["config"]["report"]["title"]
        argv = [sys.executable, "-m", "analysis.report", "--sections", *sections, "--title", title]
        res = subprocess.run([*argv, "--out", str(out / "report.html")], cwd=ROOT, capture_output=True, text=True)
        if res.returncode != 0:
            sys.exit(f"corun: sample report: rendering failed: {res.stderr.strip()}")
        html = (out / "report.html").read_text().replace(str(work), "results/smoke").replace(f"{ROOT}/", "")
        (out / "report.html").write_text(html)
    return out / "report.html"


def normalised(html: str) -> str:
    for pattern, repl in _VOLATILE:
        html = pattern.sub(repl, html)
    return html


def check() -> int:
    with tempfile.TemporaryDirectory(prefix="corun-sample-check-") as tmp:
        fresh = normalised(render(Path(tmp)).read_text())
    committed = normalised((SAMPLE / "report.html").read_text())
    if fresh == committed:
        print("corun: docs/sample-report/report.html is what this code renders")
        return 0
    diff = list(difflib.unified_diff(committed.splitlines(), fresh.splitlines(), "committed", "rendered", n=0))
    print("corun: docs/sample-report/report.html differs from what this code renders (make sample-report):")
    print("\n".join(diff[:40]))
    return 1


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[1], formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("action", choices=["publish", "render", "check"])
    ap.add_argument("--from", dest="campaign", type=Path, default=ROOT / "results" / "smoke")
    ap.add_argument("--plan", type=Path, help="the campaign's plan (default: its plan.json)")
    ap.add_argument("--out", type=Path, default=SAMPLE)
    a = ap.parse_args(argv)
    if a.action == "publish":
        if not (a.campaign / "report.html").is_file():
            sys.exit(f"corun: {a.campaign}: no finished campaign (no report.html; make run PROFILE=smoke first)")
        publish(a.campaign, a.plan)
        print(f"corun: {(SAMPLE / 'report.html').relative_to(ROOT)} from {a.campaign}")
        return 0
    if a.action == "render":
        print(render(a.out))
        return 0
    return check()


if __name__ == "__main__":
    sys.exit(main())

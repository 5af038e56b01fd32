"""The one analysis interface every experiment shares.

An experiment's analysis (experiments/<name>/analysis.py, called by the experiment's object:
its `analyse`, `job_text` and `run_text`, corun.plan.base.Experiment) defines

    JOB_TEXT, RUN_TEXT        the text columns of its jobs.csv and runs.csv (read as strings)
    analyse(inputs) -> Result its metrics: the evidence tables its claims read, the levels of its
                              factors, the files and figures it writes, summary and notes

and nothing else of the section: `run` reads the collected tables and the runs' metadata, loads
the experiment's claims.yaml, checks every claim against what the analysis declares, judges them
all with the verdict engine (analysis.verdicts) on the machine the runs describe, and writes the
figures, the tables and section.json (analysis/schemas/section.schema.json) atomically, the section
last. No analysis writes a verdict itself. The range a metric's definition gives it (requests per
dispatch >= 1, a share in [0, 1]) is data of the claims file, its `metric_bounds:`.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import pandas as pd

from analysis import machine as machine_mod
from analysis import rotating_disk, runmeta, stand_ins
from analysis import runtables as rt
from analysis.claims import ClaimSet, check_claims, load_claims, stand_in_texts
from analysis.common import AnalysisInputError, read_csv, resolve_run_paths
from analysis.verdicts import Looks, judge_all

JOB_TEXT_DEFAULT = ["run_id", "job_id", "name", "binary", "stands_in_for"]
RUN_TEXT_DEFAULT = ["run_id", "variant"]


@dataclass
class Inputs:
    """What an analysis reads: the collected tables, each run's metadata and folder, the
    experiment's extra files (its plan, say), its claims and the effective configuration."""

    experiment: str
    jobs: pd.DataFrame
    runs: pd.DataFrame
    runs_csv: Path
    metadata_paths: list[Path]
    metas: dict[str, dict]
    run_dirs: dict[str, Path]
    claims: ClaimSet
    files: dict = field(default_factory=dict)
    config: dict | None = None
    looks: Looks = field(default_factory=Looks)


@dataclass
class Figure:
    path: str  # relative to the section
    caption: str
    plot: Callable[[Path], None]  # draws and saves to the path it is given


@dataclass
class Result:
    """What an analysis hands back: metrics, never verdicts."""

    summary: list[str]
    evidence: dict[str, pd.DataFrame]
    levels: dict[str, set] = field(default_factory=dict)
    outputs: dict[str, pd.DataFrame | str] = field(default_factory=dict)
    tables: list[dict] = field(default_factory=list)
    figures: list[Figure] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    log: rt.MissingLog = field(default_factory=rt.MissingLog)
    checks: list[dict] = field(default_factory=list)  # of corun's own instruments: pass or fail


def read_inputs(
    experiment: str,
    folder: Path,
    papers_dir: Path,
    jobs_csv: str | os.PathLike,
    runs_csv: str | os.PathLike,
    *,
    job_text: list[str] = (),
    run_text: list[str] = (),
    files: dict | None = None,
    config: dict | None = None,
    looks: Looks | None = None,
) -> Inputs:
    """The collected tables, each run's metadata and folder, and the claims, with one-line errors."""
    claims = load_claims(folder / "claims.yaml", experiment, papers_dir, shown=f"experiments/{experiment}/claims.yaml")
    jobs = read_csv(jobs_csv, list(dict.fromkeys([*JOB_TEXT_DEFAULT, *job_text])))
    runs = read_csv(runs_csv, list(dict.fromkeys([*RUN_TEXT_DEFAULT, *run_text])))
    if "run_id" not in runs.columns:
        raise AnalysisInputError(f"{runs_csv}: columns: run_id absent (expected the collected runs.csv)")
    meta_paths = resolve_run_paths(runs, runs_csv, "metadata_path") if len(runs) else []
    metas = {}
    for rid, p in zip(runs["run_id"].astype(str), meta_paths):
        try:
            metas[rid] = json.loads(Path(p).read_text())
        except (OSError, ValueError) as exc:
            raise AnalysisInputError(f"{p}: not readable ({exc}) (expected a run's metadata.json)") from None
    dirs = rt.run_dirs(runs, runs_csv) if len(runs) and "run_dir" in runs.columns else {}
    return Inputs(
        experiment=experiment,
        jobs=jobs,
        runs=runs,
        runs_csv=Path(runs_csv),
        metadata_paths=[Path(p) for p in meta_paths],
        metas=metas,
        run_dirs=dirs,
        claims=claims,
        files=files or {},
        config=config,
        looks=looks or Looks(),
    )


def mark_disk_failures(inputs: Inputs, result: Result) -> None:
    """Runs on an emulated disk whose calibration failed a check (the device section) are failed in
    every evidence table that names its runs, with the reason: their timings are not the preset's."""
    path = inputs.files.get("device_calibration")
    if not path or not Path(path).is_file():
        return
    try:
        cal = json.loads(Path(path).read_text())
    except (OSError, ValueError) as exc:
        raise AnalysisInputError(f"{path}: not readable ({exc}) (expected the device's calibration.json)") from None
    bad = rotating_disk.failed_runs(cal, inputs.metas)
    if not bad:
        return
    for name, table in result.evidence.items():
        if "run_id" not in table.columns:
            continue
        hit = table["run_id"].astype(str).isin(bad)
        if not hit.any():
            continue
        table = table.copy()
        if "failed" not in table.columns:
            table["failed"] = False
            table["failed_reason"] = ""
        table.loc[hit, "failed"] = True
        table.loc[hit, "failed_reason"] = table.loc[hit, "run_id"].astype(str).map(bad)
        result.evidence[name] = table
    result.notes.insert(0, f"{len(bad)} run(s) ran on an emulated disk that failed its calibration: failed here.")


def claim_rows(inputs: Inputs, result: Result) -> list[dict]:
    """Every declared claim judged on the result's evidence, on the machine the runs describe
    (this machine when there are none)."""
    check_claims(inputs.claims, {t: set(df.columns) for t, df in result.evidence.items()}, result.levels)
    metas = list(inputs.metas.values())
    machine = machine_mod.from_metadata(metas) if metas else machine_mod.here()
    rows = judge_all(inputs.claims.claims, result.evidence, machine, inputs.looks)
    for row in rows:
        row["paper"] = inputs.claims.paper
        # the declared stand-ins the row's runs used (analysis.stand_ins), not every one declared
        words = stand_ins.row_words(inputs.claims.claims[row["claim"]], row, inputs.metas)
        row["stand_ins"] = stand_in_texts(words)
    return rows


def section(inputs: Inputs, result: Result, rows: list[dict]) -> dict:
    cs = inputs.claims
    return {
        "experiment": inputs.experiment,
        "paper_id": cs.paper,
        "title": f"{cs.title} (paper {cs.paper}: {cs.figure})",
        "paper": cs.citation,
        "summary": " ".join(result.summary),
        "figures": [{"path": f.path, "caption": f.caption} for f in result.figures],
        "claims": rows,
        "looks": {"look": inputs.looks.look, "of": inputs.looks.of, "reps": inputs.looks.reps},
        "checks": result.checks,
        "tables": result.tables,
        "missing": rt.section_missing(inputs.metadata_paths, result.log),
        "runs": [runmeta.summarize_metadata(p) for p in inputs.metadata_paths],
        "notes": [*result.notes, *cs.notes],
    }


def write(out_dir: str | os.PathLike, inputs: Inputs, result: Result) -> dict:
    """Judge, then write the tables, the figures and section.json (last)."""
    mark_disk_failures(inputs, result)
    rows = claim_rows(inputs, result)
    sec = section(inputs, result, rows)
    rt.write_outputs(out_dir, sec, result.outputs, [lambda out, f=f: f.plot(out / f.path) for f in result.figures])
    return sec

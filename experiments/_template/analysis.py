"""The template's analysis: metrics only; analysis.experiment judges the claims and writes the section.

Per run: the mean runtime of its jobs (`runtime_s`), failed when a job did not exit 0. The claims
compare `kind` head (every variant but the baseline) against `kind` baseline, paired by rep.
"""

from __future__ import annotations

import math

import pandas as pd

from analysis.experiment import Figure, Inputs, Result
from analysis.figures import plt, save_png

JOB_TEXT = ["variant"]
RUN_TEXT = []


def per_run(inputs: Inputs) -> pd.DataFrame:
    baseline = (inputs.config or {}).get(inputs.experiment, {}).get("baseline", "linux")
    rows = []
    for _, r in inputs.runs.iterrows():
        js = inputs.jobs[inputs.jobs["run_id"] == r["run_id"]]
        failed = int((js["exit_code"] != 0).sum())
        rows.append(
            {
                "run_id": r["run_id"],
                "variant": r["variant"],
                "kind": "baseline" if r["variant"] == baseline else "head",
                "rep": int(r["rep"]),
                "runtime_s": float(js["runtime_s"].mean()) if len(js) else math.nan,
                "failed": bool(failed) or not len(js),
                "failed_reason": f"{failed} of {len(js)} jobs failed" if failed else "" if len(js) else "no job",
            }
        )
    return pd.DataFrame(rows, columns=["run_id", "variant", "kind", "rep", "runtime_s", "failed", "failed_reason"])


def plot(table: pd.DataFrame, out) -> None:
    fig, ax = plt.subplots(figsize=(4.5, 3))
    for i, (_variant, g) in enumerate(table.groupby("variant")):
        ax.plot([i] * len(g), g["runtime_s"], "o")
    ax.set_xticks(range(table["variant"].nunique()), sorted(table["variant"].unique()))
    ax.set_ylabel("mean job runtime (s)")
    fig.tight_layout()
    save_png(fig, out)


def analyse(inputs: Inputs) -> Result:
    table = per_run(inputs)
    return Result(
        summary=[f"{len(table)} run(s) of {table['variant'].nunique()} variant(s)."],
        evidence={"runs": table},
        levels={"kind": {"head", "baseline"}},
        outputs={"runs_table.csv": table},
        tables=[{"title": "Runs: mean job runtime", "csv": "runs_table.csv"}],
        figures=[Figure("runtime.png", "Mean job runtime per run and variant.", lambda out: plot(table, out))],
    )

"""The papers' published values: analysis/paper_values/<paper_id>.yaml, validated on load.

Each value carries its unit, the paper's section/figure (`source`) and the paper's own words
(`quote`), so every paper number in a report can be traced back to the text.
"""

from __future__ import annotations

from pathlib import Path

import yaml

from analysis.common import AnalysisInputError, validate

PAPER_VALUES_DIR = Path(__file__).resolve().parent / "paper_values"


def available_papers() -> list[str]:
    return sorted(p.stem for p in PAPER_VALUES_DIR.glob("*.yaml"))


def load_paper_values(paper_id: str) -> dict:
    """Load and validate the published values of paper `paper_id` (e.g. "000")."""
    path = PAPER_VALUES_DIR / f"{paper_id}.yaml"
    shown = f"analysis/paper_values/{paper_id}.yaml"
    if not path.is_file():
        raise AnalysisInputError(f"{shown}: paper_id: {paper_id!r} (expected one of {', '.join(available_papers())})")
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except yaml.YAMLError as exc:
        raise AnalysisInputError(f"{shown}: not valid YAML: {str(exc).splitlines()[0]}") from None
    validate(data, "paper_values.schema.json", shown)
    if data["paper_id"] != paper_id:
        raise AnalysisInputError(f"{shown}: paper_id: {data['paper_id']!r} (expected {paper_id!r})")
    return data


def experiment_values(paper: dict, experiment: str) -> dict:
    """The `experiments.<experiment>` block of a loaded paper, or a one-line error."""
    try:
        return paper["experiments"][experiment]
    except KeyError:
        raise AnalysisInputError(
            f"analysis/paper_values/{paper['paper_id']}.yaml: experiments.{experiment}: absent "
            f"(expected one of {', '.join(sorted(paper['experiments']))})"
        ) from None

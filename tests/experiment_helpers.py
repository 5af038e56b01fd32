"""What the experiments' own tests (experiments/<name>/tests/) share: a configuration of the smoke
profile with one experiment's section changed, the profiles validated, the analysis inputs read
from a folder's tables, and the columns every CMP stacking job row carries."""

from pathlib import Path

import pytest

from analysis.experiment import Inputs, read_inputs
from corun.errors import ConfigError
from corun.util import repo_root
from experiments import PAPERS_DIR, get
from experiments.config import profile_config, validate_config

CONFIGS = repo_root() / "workflows" / "config"


def cfg_with(experiment: str, section: dict) -> dict:
    """The smoke profile with EXPERIMENT's section replaced by SECTION, validated (as test.yaml)."""
    raw = profile_config(CONFIGS / "smoke.yaml")
    raw[experiment] = section
    return validate_config(raw, "test.yaml")


def config_error(experiment: str, section: dict) -> str:
    """The message of the ConfigError that cfg_with(EXPERIMENT, SECTION) raises."""
    with pytest.raises(ConfigError) as e:
        cfg_with(experiment, section)
    return str(e.value)


def validated_profiles(experiment: str):
    """(name, validated configuration) of the smoke, local and paper profiles, each running
    EXPERIMENT; the paper profile's cluster is a netns one (the testbed's inventory is not here)."""
    for name in ("smoke", "local", "paper"):
        raw = profile_config(CONFIGS / f"{name}.yaml")
        if name == "paper":
            raw[experiment]["cluster"] = {"kind": "netns"}
        cfg = validate_config(raw, f"{name}.yaml")
        assert experiment in cfg["experiments"]
        yield name, cfg


def read_tables(experiment: str, tables: Path, **kw) -> Inputs:
    """EXPERIMENT's analysis inputs from TABLES/jobs.csv and TABLES/runs.csv, read with its
    analysis's column types (exp.job_text, exp.run_text); KW (files, config) as read_inputs takes them."""
    exp = get(experiment)
    jobs, runs = tables / "jobs.csv", tables / "runs.csv"
    return read_inputs(
        experiment, exp.folder, PAPERS_DIR, jobs, runs, job_text=exp.job_text, run_text=exp.run_text, **kw
    )


def cmp_job_fields(i: int, k: int, rep: int, cmp: int, runtime_s: float, exit_code: int) -> dict:
    """The columns of a CMP stacking job row that say where and how job I ran: K jobs stacked per
    CMP, repetition REP, on CMP, its runtime and exit code."""
    return {"k": k, "rep": rep, "cmp": cmp, "job_id": f"j{i}", "runtime_s": runtime_s, "exit_code": exit_code}

# Shared helpers: one-line config validation, paths, the effective config file.
import os
import sys
from pathlib import Path

from corun.errors import CorunError
from experiments import registry
from experiments.estimate import describe, progress_plan
from snakemake.logging import logger
from experiments.config import experiments_with_runs, validate_config
from corun.util import atomic_write_text
import yaml

try:
    CONFIG_SOURCES = [str(f) for f in workflow.configfiles] + (
        ["--config"] if workflow.config_settings.config else []
    )
    config = validate_config(config, " + ".join(CONFIG_SOURCES) or "config")
except CorunError as exc:
    sys.exit(f"corun: {exc}")

EXPERIMENTS = registry()  # name -> corun.plan.base.Experiment
# the selected experiments and those whose runs they use
RUN_EXPERIMENTS = experiments_with_runs(config)
PY = sys.executable
RESULTS = config["results_dir"]
DATA = config["data_dir"]
REPORT = f"{RESULTS}/report.html"
KERNELS = "kernels/build"
EFFECTIVE_CONFIG = f"{RESULTS}/config.yaml"


def write_if_changed(path, text):
    """Rewrite a file only when its content changes, so its mtime triggers reruns only then."""
    p = Path(path)
    if p.exists() and p.read_text() == text:
        return
    atomic_write_text(p, text)


write_if_changed(EFFECTIVE_CONFIG, yaml.safe_dump(config, sort_keys=True))


def section_files():
    device = (
        [f"{RESULTS}/device/analysis/section.json"]
        if config["report"]["device"]["enabled"]
        else []
    )
    return device + [
        f"{RESULTS}/{exp}/analysis/section.json" for exp in config["experiments"]
    ]


# The plan and a lower-bound duration, on every invocation (so `snakemake -n` shows it too).
try:
    print(describe(config), file=sys.stderr)
    # the same estimate for corun's progress display (workflows/logger), as one log record
    logger.info("", extra=dict(corun_plan=progress_plan(config, globals().get("PLAN"))))
except CorunError as exc:
    sys.exit(f"corun: {exc}")

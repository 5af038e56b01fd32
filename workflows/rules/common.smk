# Shared helpers: the configuration validated once (one line on error), the campaign's plan
# (RESULTS/plan.json, which every step reads), the results layout (corun.layout).
import os
import sys
from pathlib import Path

from corun.errors import CorunError
from experiments import registry
from experiments.estimate import describe, progress_plan
from snakemake.logging import logger
from experiments import campaign
from experiments.config import experiments_with_runs, validate_config
from corun.layout import Layout
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
LAYOUT = Layout(config["results_dir"], config["data_dir"])
RESULTS = LAYOUT.results
DATA = LAYOUT.data
REPORT = LAYOUT.report
KERNELS = "kernels/build"
EFFECTIVE_CONFIG = LAYOUT.config
PLAN_FILE = LAYOUT.plan


def write_if_changed(path, text):
    """Rewrite a file only when its content changes, so its mtime triggers reruns only then."""
    p = Path(path)
    if p.exists() and p.read_text() == text:
        return
    atomic_write_text(p, text)


write_if_changed(EFFECTIVE_CONFIG, yaml.safe_dump(config, sort_keys=True))
try:
    PLAN = campaign.build(config, EXPERIMENTS, RUN_EXPERIMENTS)
    campaign.write(PLAN_FILE, PLAN)
except CorunError as exc:
    sys.exit(f"corun: {exc}")


def section_files():
    device = [LAYOUT.section("device")] if config["report"]["device"]["enabled"] else []
    return device + [LAYOUT.section(exp) for exp in config["experiments"]]


# The plan and a lower-bound duration, on every invocation (so `snakemake -n` shows it too).
try:
    print(describe(config), file=sys.stderr)
    # the same estimate for corun's progress display (workflows/logger), as one log record
    logger.info("", extra=dict(corun_plan=progress_plan(config, PLAN)))
except CorunError as exc:
    sys.exit(f"corun: {exc}")

# corun: the experiment workflow. Configuration, validation and generic rules live under
# workflows/; each experiment's own settings, plan and analysis in experiments/<name>/.
from snakemake.utils import min_version

min_version("9.0")


configfile: "workflows/config/local.yaml"


# Snakemake's rate-limit timers kept from waking the scheduler while runs measure
include: "workflows/rules/scheduler.smk"
include: "workflows/rules/common.smk"
include: "workflows/rules/build.smk"
# every experiment of experiments/ (experiments.registry()), from one rule file
include: "workflows/rules/experiments.smk"
include: "workflows/rules/device_calibration.smk"
include: "workflows/rules/report.smk"
include: "workflows/rules/hosts.smk"


rule all:
    default_target: True
    input:
        REPORT,


# last, once every rule is defined: which rules run on a Slurm cluster's nodes, and where
include: "workflows/rules/slurm.smk"

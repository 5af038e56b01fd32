# corun: the experiment workflow. Configuration, validation and rules live under workflows/.
from snakemake.utils import min_version

min_version("9.0")


configfile: "workflows/config/local.yaml"


include: "workflows/rules/common.smk"


# one rule file per experiment (corun.experiments.registry() names them)
for rule_file in EXPERIMENT_RULE_FILES:

    include: f"workflows/rules/{rule_file}"


include: "workflows/rules/device.smk"
include: "workflows/rules/report.smk"
include: "workflows/rules/hosts.smk"


rule all:
    default_target: True
    input:
        REPORT,

# corun: the experiment workflow. Configuration, validation and rules live under workflows/.
from snakemake.utils import min_version

min_version("9.0")


configfile: "workflows/config/local.yaml"


include: "workflows/rules/common.smk"
include: "workflows/rules/sensitivity_ranking.smk"
include: "workflows/rules/stacking.smk"
include: "workflows/rules/dynamic_io.smk"
include: "workflows/rules/report.smk"
include: "workflows/rules/hosts.smk"


rule all:
    default_target: True
    input:
        REPORT,

# On a Slurm cluster (roles/slurm; the testbed-slurm profile runs Snakemake's Slurm executor):
# each measuring run of a single-node experiment is its own exclusive one-node Slurm job, pinned
# to the node of its repetition (corun.testbed.slurm_placement: the runs a claim pairs are
# measured on one node), and every other step (plan, data, calibration, specs, groups, collect,
# analysis, report) runs here, on the controller. Under the local executor (laptop, CI) nothing
# changes: local rules are all there is, and slurm_extra is a resource no one reads.
from corun.testbed import slurm_placement

# what measures one run on one host is experiments.smk's `run` (the runs the plan gives
# needs.hosts "one"); groups (run_groups) and multi-host runs (run_across_hosts) stay here
SLURM_MEASURED = ["run"] if STEPS.on_one_host else []


# the partition's nodes are read (sinfo) only when Slurm's executor submits the jobs: a dry run
# or the local executor on a machine that has Slurm's client pays nothing for them. Asked when a
# job's resources are evaluated: Snakemake sets its executor plugin only after this file is read.
def _on_slurm() -> bool:
    return getattr(workflow.executor_plugin, "name", None) == "slurm"


workflow.localrules(*(r.name for r in workflow.rules if r.name not in SLURM_MEASURED))
for _name in SLURM_MEASURED:
    _rule = workflow.get_rule(_name)
    _rule.resources["nodes"] = 1
    _rule.resources["slurm_extra"] = lambda wildcards: slurm_placement.slurm_extra(
        wildcards.run, slurm_placement.partition_nodes() if _on_slurm() else []
    )

# Paper 001: MPI coscheduling schemes x multi-programming level x workload. Every run is an MPI
# job stream on the hosts of a cluster; locally a netns cluster that cluster_run brings up for
# the run and removes after it (docs/experiments/mpl_sweep.md).
import os

MS_DIR = f"{RESULTS}/mpl_sweep"
MS_DATA = f"{DATA}/mpl_sweep"
MS_ON = "mpl_sweep" in config["experiments"]
MS_NAMES = EXPERIMENTS["mpl_sweep"].run_names(config) if MS_ON else []
MS_NETNS = config["mpl_sweep"]["cluster"]["netns"] if MS_ON else {"hosts": 0}
MS_STATE = f"{MS_DIR}/netns"
# corun run, inside a netns cluster of its own when the section asks for one
MS_RUNNER = (
    "-m corun run"
    if MS_NETNS["hosts"] == 0
    else f"-m corun.testbed.cluster_run --hosts {MS_NETNS['hosts']}"
    f" --cpus-per-host {MS_NETNS['cpus_per_host']} --prefix {MS_NETNS['prefix']}"
    f" --subnet {MS_NETNS['subnet']} --state-dir {MS_STATE} --"
)


rule make_mpl_sweep_data:
    input:
        config=EFFECTIVE_CONFIG,
    output:
        f"{MS_DATA}/plan.json",
    log:
        f"{MS_DIR}/logs/make_mpl_sweep_data.log",
    params:
        py=PY,
        data=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m corun.experiments data mpl_sweep --config {input.config}"
        " --data-dir {params.data} > {log} 2>&1"


rule make_mpl_sweep_specs:
    input:
        config=EFFECTIVE_CONFIG,
        plan=f"{MS_DATA}/plan.json",
    output:
        [f"{MS_DIR}/specs/{name}.yaml" for name in MS_NAMES],
        plan=f"{MS_DIR}/specs/plan.json",
    log:
        f"{MS_DIR}/logs/make_mpl_sweep_specs.log",
    params:
        py=PY,
        data=lambda wildcards, input: os.path.dirname(input.plan),
        out_dir=lambda wildcards, output: os.path.dirname(output.plan),
    shell:
        "{params.py} -m corun.experiments specs mpl_sweep --config {input.config}"
        " --data-dir {params.data} --out-dir {params.out_dir} > {log} 2>&1"


rule run_mpl_sweep:
    input:
        f"{MS_DIR}/specs/{{run}}.yaml",
    output:
        directory(f"{MS_DIR}/runs/{{run}}"),
    log:
        f"{MS_DIR}/logs/run_mpl_sweep_{{run}}.log",
    resources:
        testbed=1,
    params:
        py=PY,
        runner=MS_RUNNER,
    shell:
        "{params.py} {params.runner} {input} --out {output} > {log} 2>&1"


rule collect_mpl_sweep:
    input:
        [f"{MS_DIR}/runs/{name}" for name in MS_NAMES],
    output:
        jobs=f"{MS_DIR}/jobs.csv",
        runs=f"{MS_DIR}/runs.csv",
    log:
        f"{MS_DIR}/logs/collect_mpl_sweep.log",
    params:
        py=PY,
    shell:
        "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs} {input} > {log} 2>&1"


rule analyze_mpl_sweep:
    input:
        jobs=f"{MS_DIR}/jobs.csv",
        runs=f"{MS_DIR}/runs.csv",
        plan=f"{MS_DIR}/specs/plan.json",
    output:
        f"{MS_DIR}/analysis/section.json",
    log:
        f"{MS_DIR}/logs/analyze_mpl_sweep.log",
    params:
        py=PY,
        module=EXPERIMENTS["mpl_sweep"].analysis,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
        " --plan {input.plan} --out-dir {params.out_dir} > {log} 2>&1"

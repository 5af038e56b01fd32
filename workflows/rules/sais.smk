# Paper 004 (SAIs): steering policies x data servers x transfer size x clients on the striped
# parallel file system. One rule invocation per (servers, client links) group brings up the
# netns cluster and the file system, runs the group's runs with corun run, and takes both down
# (corun.testbed.pfs_runs); the P and M runs of the model are plain runs.
import os

SA_DIR = f"{RESULTS}/sais"
SA_DATA = f"{DATA}/sais"
SA_ON = "sais" in config["experiments"]
SA_GROUPS = EXPERIMENTS["sais"].group_runs(config) if SA_ON else {}
SA_NAMES = EXPERIMENTS["sais"].run_names(config) if SA_ON else []
SA_PM = [n for n in SA_NAMES if n.startswith("pm_")]


wildcard_constraints:
    sais_group=r"s[0-9]+_l[0-9]+(_h[0-9]+)?",
    sais_pm=r"pm_(thread|process)_r[0-9]+",


rule make_sais_specs:
    input:
        config=EFFECTIVE_CONFIG,
    output:
        [f"{SA_DIR}/specs/{name}.yaml" for name in SA_NAMES],
        groups=f"{SA_DIR}/specs/groups.json",
    log:
        f"{SA_DIR}/logs/make_sais_specs.log",
    params:
        py=PY,
        data=SA_DATA,
        out_dir=lambda wildcards, output: os.path.dirname(output.groups),
    shell:
        "{params.py} -m corun.experiments specs sais --config {input.config}"
        " --data-dir {params.data} --out-dir {params.out_dir} > {log} 2>&1"


rule run_sais_group:
    input:
        groups=f"{SA_DIR}/specs/groups.json",
        specs=lambda wildcards: [
            f"{SA_DIR}/specs/{name}.yaml" for name in SA_GROUPS[wildcards.sais_group]
        ],
        pfs_read=f"{KERNELS}/pfs_read",
    output:
        f"{SA_DIR}/groups/{{sais_group}}.json",
    log:
        f"{SA_DIR}/logs/run_sais_group_{{sais_group}}.log",
    resources:
        testbed=1,
    params:
        py=PY,
        specs=lambda wildcards, input: os.path.dirname(input.groups),
        runs=f"{SA_DIR}/runs",
        work=f"{SA_DIR}/work",
    shell:
        "{params.py} -m corun.testbed.pfs_runs --groups {input.groups} --group {wildcards.sais_group}"
        " --specs {params.specs} --runs {params.runs} --work {params.work} --done {output} > {log} 2>&1"


rule run_sais_pm:
    input:
        spec=f"{SA_DIR}/specs/{{sais_pm}}.yaml",
        kernel=f"{KERNELS}/sais_inmem",
    output:
        directory(f"{SA_DIR}/runs/{{sais_pm}}"),
    log:
        f"{SA_DIR}/logs/run_sais_pm_{{sais_pm}}.log",
    resources:
        testbed=1,
    params:
        py=PY,
    shell:
        "{params.py} -m corun run {input.spec} --out {output} > {log} 2>&1"


rule collect_sais:
    input:
        groups=[f"{SA_DIR}/groups/{g}.json" for g in SA_GROUPS],
        pm=[f"{SA_DIR}/runs/{name}" for name in SA_PM],
    output:
        jobs=f"{SA_DIR}/jobs.csv",
        runs=f"{SA_DIR}/runs.csv",
    log:
        f"{SA_DIR}/logs/collect_sais.log",
    params:
        py=PY,
        dirs=[f"{SA_DIR}/runs/{name}" for name in SA_NAMES],
    shell:
        "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs} {params.dirs} > {log} 2>&1"


rule analyze_sais:
    input:
        jobs=f"{SA_DIR}/jobs.csv",
        runs=f"{SA_DIR}/runs.csv",
        groups=[f"{SA_DIR}/groups/{g}.json" for g in SA_GROUPS],
    output:
        f"{SA_DIR}/analysis/section.json",
    log:
        f"{SA_DIR}/logs/analyze_sais.log",
    params:
        py=PY,
        module=EXPERIMENTS["sais"].analysis,
        config=EFFECTIVE_CONFIG,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
        " --config {params.config} --out-dir {params.out_dir} > {log} 2>&1"

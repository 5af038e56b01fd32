# Paper 002 (aIOLi): server-side scheduling policies x pattern x request size x clients on the
# striped parallel file system, each data server's brick on an emulated rotating disk. One rule
# invocation brings up the netns cluster, the disks and the file system, runs every run with
# corun run (the servers' counters read around each), and takes all down (corun.testbed.pfs_runs).
import os

AI_DIR = f"{RESULTS}/aioli"
AI_DATA = f"{DATA}/aioli"
AI_ON = "aioli" in config["experiments"]
AI_GROUPS = EXPERIMENTS["aioli"].group_runs(config) if AI_ON else {}
AI_NAMES = EXPERIMENTS["aioli"].run_names(config) if AI_ON else []


wildcard_constraints:
    aioli_group=r"s[0-9]+",


rule make_aioli_specs:
    input:
        config=EFFECTIVE_CONFIG,
    output:
        [f"{AI_DIR}/specs/{name}.yaml" for name in AI_NAMES],
        groups=f"{AI_DIR}/specs/groups.json",
    log:
        f"{AI_DIR}/logs/make_aioli_specs.log",
    params:
        py=PY,
        data=AI_DATA,
        out_dir=lambda wildcards, output: os.path.dirname(output.groups),
    shell:
        "{params.py} -m corun.experiments specs aioli --config {input.config}"
        " --data-dir {params.data} --out-dir {params.out_dir} > {log} 2>&1"


rule run_aioli_group:
    input:
        groups=f"{AI_DIR}/specs/groups.json",
        specs=lambda wildcards: [
            f"{AI_DIR}/specs/{name}.yaml" for name in AI_GROUPS[wildcards.aioli_group]
        ],
        pfs_read=f"{KERNELS}/pfs_read",
    output:
        f"{AI_DIR}/groups/{{aioli_group}}.json",
    log:
        f"{AI_DIR}/logs/run_aioli_group_{{aioli_group}}.log",
    resources:
        testbed=1,
    params:
        py=PY,
        specs=lambda wildcards, input: os.path.dirname(input.groups),
        runs=f"{AI_DIR}/runs",
        work=f"{AI_DIR}/work",
    shell:
        "{params.py} -m corun.testbed.pfs_runs --groups {input.groups} --group {wildcards.aioli_group}"
        " --specs {params.specs} --runs {params.runs} --work {params.work} --done {output} > {log} 2>&1"


rule collect_aioli:
    input:
        groups=[f"{AI_DIR}/groups/{g}.json" for g in AI_GROUPS],
    output:
        jobs=f"{AI_DIR}/jobs.csv",
        runs=f"{AI_DIR}/runs.csv",
    log:
        f"{AI_DIR}/logs/collect_aioli.log",
    params:
        py=PY,
        dirs=[f"{AI_DIR}/runs/{name}" for name in AI_NAMES],
    shell:
        "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs} {params.dirs} > {log} 2>&1"


rule analyze_aioli:
    input:
        jobs=f"{AI_DIR}/jobs.csv",
        runs=f"{AI_DIR}/runs.csv",
        groups=[f"{AI_DIR}/groups/{g}.json" for g in AI_GROUPS],
    output:
        f"{AI_DIR}/analysis/section.json",
    log:
        f"{AI_DIR}/logs/analyze_aioli.log",
    params:
        py=PY,
        module=EXPERIMENTS["aioli"].analysis,
        config=EFFECTIVE_CONFIG,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
        " --config {params.config} --out-dir {params.out_dir} > {log} 2>&1"

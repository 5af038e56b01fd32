# Paper 003: noisy neighbours from persistent-memory I/O. CPU-bound programs of graded cache
# sensitivity beside fio random writes, placed by the placement variants at the SMT, LLC and
# NUMA levels; alone runs for the normalised performance; the premise (PELT) measured.
import os

NN_DIR = f"{RESULTS}/noisy_neighbour"
NN_DATA = f"{DATA}/noisy_neighbour"
NN_ON = "noisy_neighbour" in config["experiments"]
NN_NAMES = EXPERIMENTS["noisy_neighbour"].run_names(config) if NN_ON else []
NN_PREMISE = config["noisy_neighbour"]["premise"] if NN_ON else {"layouts": []}


rule make_noisy_neighbour_data:
    input:
        config=EFFECTIVE_CONFIG,
    output:
        f"{NN_DATA}/plan.json",
    log:
        f"{NN_DIR}/logs/make_noisy_neighbour_data.log",
    params:
        py=PY,
        data=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m corun.experiments data noisy_neighbour --config {input.config}"
        " --data-dir {params.data} > {log} 2>&1"


rule make_noisy_neighbour_specs:
    input:
        config=EFFECTIVE_CONFIG,
        plan=f"{NN_DATA}/plan.json",
    output:
        [f"{NN_DIR}/specs/{name}.yaml" for name in NN_NAMES],
        plan=f"{NN_DIR}/specs/plan.json",
    log:
        f"{NN_DIR}/logs/make_noisy_neighbour_specs.log",
    params:
        py=PY,
        data=lambda wildcards, input: os.path.dirname(input.plan),
        out_dir=lambda wildcards, output: os.path.dirname(output.plan),
    shell:
        "{params.py} -m corun.experiments specs noisy_neighbour --config {input.config}"
        " --data-dir {params.data} --out-dir {params.out_dir} > {log} 2>&1"


rule run_noisy_neighbour:
    input:
        f"{NN_DIR}/specs/{{run}}.yaml",
    output:
        directory(f"{NN_DIR}/runs/{{run}}"),
    log:
        f"{NN_DIR}/logs/run_noisy_neighbour_{{run}}.log",
    resources:
        testbed=1,
    params:
        py=PY,
    shell:
        "{params.py} -m corun run {input} --out {output} > {log} 2>&1"


rule measure_noisy_neighbour_premise:
    input:
        plan=f"{NN_DATA}/plan.json",  # the data folder holds the psync task's file
    output:
        directory(f"{NN_DIR}/premise/{{layout}}"),
    log:
        f"{NN_DIR}/logs/measure_noisy_neighbour_premise_{{layout}}.log",
    resources:
        testbed=1,
    params:
        py=PY,
        duration=NN_PREMISE.get("duration_s"),
        warmup=NN_PREMISE.get("warmup_s"),
        size=NN_PREMISE.get("size_mib"),
        disk=lambda wildcards, input: os.path.dirname(input.plan),
    shell:
        "{params.py} -m corun.monitors.pelt --out {output} --layout {wildcards.layout}"
        " --duration-s {params.duration} --warmup-s {params.warmup} --size-mib {params.size}"
        " --disk-dir {params.disk} > {log} 2>&1"


rule collect_noisy_neighbour:
    input:
        [f"{NN_DIR}/runs/{name}" for name in NN_NAMES],
    output:
        jobs=f"{NN_DIR}/jobs.csv",
        runs=f"{NN_DIR}/runs.csv",
    log:
        f"{NN_DIR}/logs/collect_noisy_neighbour.log",
    params:
        py=PY,
    shell:
        "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs} {input} > {log} 2>&1"


rule analyze_noisy_neighbour:
    input:
        jobs=f"{NN_DIR}/jobs.csv",
        runs=f"{NN_DIR}/runs.csv",
        plan=f"{NN_DIR}/specs/plan.json",
        premise=[f"{NN_DIR}/premise/{layout}" for layout in NN_PREMISE["layouts"]],
    output:
        f"{NN_DIR}/analysis/section.json",
    log:
        f"{NN_DIR}/logs/analyze_noisy_neighbour.log",
    params:
        py=PY,
        module=EXPERIMENTS["noisy_neighbour"].analysis,
        premise=lambda wildcards, input: " ".join(
            f"--premise {p}" for p in input.premise
        ),
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
        " --plan {input.plan} {params.premise} --out-dir {params.out_dir} > {log} 2>&1"

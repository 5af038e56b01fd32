# Paper 000, section 3.3.2 (Figs. 13-14): duplicated Sensitivity_RANKING kernels with rising
# I/O demand per CMP, stacked on k = 1..K CMPs; degradation against k and the safe demand.
import os

SR = config["sensitivity_ranking"]
SR_DIR = f"{RESULTS}/sensitivity_ranking"
SR_DATA = f"{DATA}/sensitivity_ranking"
SR_NAMES = EXPERIMENTS["sensitivity_ranking"].run_names(config)
SR_RUNS = [f"{SR_DIR}/runs/{name}" for name in SR_NAMES]


rule make_sensitivity_data:
    input:
        config=EFFECTIVE_CONFIG,
    output:
        f"{SR_DATA}/layout.json",
    log:
        f"{SR_DIR}/logs/make_sensitivity_data.log",
    params:
        py=PY,
        data=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m corun.experiments data sensitivity_ranking --config {input.config}"
        " --data-dir {params.data} > {log} 2>&1"


rule calibrate_sensitivity:
    input:
        config=EFFECTIVE_CONFIG,
        layout=f"{SR_DATA}/layout.json",
        kernel=f"{KERNELS}/sensitivity_ranking",
    output:
        f"{SR_DIR}/calibration.json",
    log:
        f"{SR_DIR}/logs/calibrate_sensitivity.log",
    params:
        py=PY,
        data=lambda wildcards, input: os.path.dirname(input.layout),
    shell:
        "{params.py} -m corun.experiments calibrate sensitivity_ranking --config {input.config}"
        " --data-dir {params.data} --out {output} > {log} 2>&1"


rule make_sensitivity_specs:
    input:
        config=EFFECTIVE_CONFIG,
        calibration=f"{SR_DIR}/calibration.json",
    output:
        [f"{SR_DIR}/specs/{name}.yaml" for name in SR_NAMES],
    log:
        f"{SR_DIR}/logs/make_sensitivity_specs.log",
    params:
        py=PY,
        data=SR_DATA,
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m corun.experiments specs sensitivity_ranking --config {input.config}"
        " --calibration {input.calibration} --data-dir {params.data} --out-dir {params.out_dir} > {log} 2>&1"


rule run_sensitivity:
    input:
        f"{SR_DIR}/specs/g{{group}}_k{{k}}_r{{rep}}.yaml",
    output:
        directory(f"{SR_DIR}/runs/g{{group}}_k{{k}}_r{{rep}}"),
    log:
        f"{SR_DIR}/logs/run_sensitivity_g{{group}}_k{{k}}_r{{rep}}.log",
    resources:
        testbed=1,
    params:
        py=PY,
    shell:
        "{params.py} -m corun run {input} --out {output} > {log} 2>&1"


rule collect_sensitivity:
    input:
        SR_RUNS,
    output:
        jobs=f"{SR_DIR}/jobs.csv",
        runs=f"{SR_DIR}/runs.csv",
    log:
        f"{SR_DIR}/logs/collect_sensitivity.log",
    params:
        py=PY,
    shell:
        "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs} {input} > {log} 2>&1"


rule analyze_sensitivity:
    input:
        jobs=f"{SR_DIR}/jobs.csv",
        runs=f"{SR_DIR}/runs.csv",
    output:
        f"{SR_DIR}/analysis/section.json",
    log:
        f"{SR_DIR}/logs/analyze_sensitivity.log",
    params:
        py=PY,
        module=EXPERIMENTS["sensitivity_ranking"].analysis,
        tol=SR["tol_pct"],
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
        " --tol-pct {params.tol} --out-dir {params.out_dir} > {log} 2>&1"

# Paper 000 section 4 (Table 3, Figs. 16-24): the dynamic I/O-aware scheduler and its variants
# against Linux on the Table 3 workloads, plus T_alone runs of every job type (eq. 4).
# Runs are measured in the campaign's interleaved order (corun.experiments.dynamic_io.campaign):
# each run's priority is its distance from the end of the campaign, and measuring rules run one
# at a time (resource testbed), so of the runs still to measure Snakemake always starts the
# earliest. Runs do not depend on each other: an interrupted campaign keeps its finished runs and
# measures only the missing ones, still in campaign order.
import os

DIO_DIR = f"{RESULTS}/dynamic_io"
DIO_DATA = f"{DATA}/dynamic_io"
DIO_NAMES = (
    EXPERIMENTS["dynamic_io"].run_names(config)
    if "dynamic_io" in config["experiments"]
    else []
)
DIO_PRIORITY = {name: len(DIO_NAMES) - i for i, name in enumerate(DIO_NAMES)}


rule make_dynamic_io_data:
    input:
        config=EFFECTIVE_CONFIG,
    output:
        f"{DIO_DATA}/layout.json",
    log:
        f"{DIO_DIR}/logs/make_dynamic_io_data.log",
    params:
        py=PY,
        data=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m corun.experiments data dynamic_io --config {input.config}"
        " --data-dir {params.data} > {log} 2>&1"


rule calibrate_dynamic_io:
    input:
        config=EFFECTIVE_CONFIG,
        layout=f"{DIO_DATA}/layout.json",
        kernel=f"{KERNELS}/sensitivity_ranking",
    output:
        f"{DIO_DIR}/calibration.json",
    log:
        f"{DIO_DIR}/logs/calibrate_dynamic_io.log",
    params:
        py=PY,
        data=lambda wildcards, input: os.path.dirname(input.layout),
    shell:
        "{params.py} -m corun.experiments calibrate dynamic_io --config {input.config}"
        " --data-dir {params.data} --out {output} > {log} 2>&1"


rule make_dynamic_io_specs:
    input:
        config=EFFECTIVE_CONFIG,
        calibration=f"{DIO_DIR}/calibration.json",
    output:
        [f"{DIO_DIR}/specs/{n}.yaml" for n in DIO_NAMES],
        campaign=f"{DIO_DIR}/specs/campaign.json",
    log:
        f"{DIO_DIR}/logs/make_dynamic_io_specs.log",
    params:
        py=PY,
        data=DIO_DATA,
        out_dir=lambda wildcards, output: os.path.dirname(output.campaign),
    shell:
        "{params.py} -m corun.experiments specs dynamic_io --config {input.config}"
        " --calibration {input.calibration} --data-dir {params.data}"
        " --out-dir {params.out_dir} > {log} 2>&1"


rule run_dynamic_io:
    input:
        spec=f"{DIO_DIR}/specs/{{run}}.yaml",
    output:
        directory(f"{DIO_DIR}/runs/{{run}}"),
    log:
        f"{DIO_DIR}/logs/run_dynamic_io_{{run}}.log",
    priority: lambda wildcards: DIO_PRIORITY.get(wildcards.run, 0)
    resources:
        testbed=1,
    params:
        py=PY,
    shell:
        "{params.py} -m corun run {input.spec} --out {output} > {log} 2>&1"


rule collect_dynamic_io:
    input:
        [f"{DIO_DIR}/runs/{name}" for name in DIO_NAMES],
    output:
        jobs=f"{DIO_DIR}/jobs.csv",
        runs=f"{DIO_DIR}/runs.csv",
    log:
        f"{DIO_DIR}/logs/collect_dynamic_io.log",
    params:
        py=PY,
    shell:
        "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
        " {input} > {log} 2>&1"


rule analyze_dynamic_io:
    input:
        jobs=f"{DIO_DIR}/jobs.csv",
        runs=f"{DIO_DIR}/runs.csv",
    output:
        f"{DIO_DIR}/analysis/section.json",
    log:
        f"{DIO_DIR}/logs/analyze_dynamic_io.log",
    params:
        py=PY,
        module=EXPERIMENTS["dynamic_io"].analysis,
        baseline=config["dynamic_io"]["baseline"],
        variant=config["dynamic_io"]["paper_variant"],
        tol=config["dynamic_io"]["tol_pct"],
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
        " --baseline {params.baseline} --paper-variant {params.variant} --tol-pct {params.tol}"
        " --out-dir {params.out_dir} > {log} 2>&1"

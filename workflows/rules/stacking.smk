# Paper 000 section 2 (Figs. 1-8): CMP stacking of Table 2's workloads, the iostat latency
# split of those runs, LLC-miss kernels (cache-coherence cost) and implicit I/O of graph jobs.
# One set of rules per experiment: make data, write specs, run, collect, analyse.
import os

from corun.experiments import stacking as st

# the stacking experiments with runs of their own (io_latency_split analyses cmp_stacking's)
ST_EXPERIMENTS = [
    e for e in RUN_EXPERIMENTS if e in ("cmp_stacking", "llc_miss", "implicit_io")
]


for exp in ST_EXPERIMENTS:

    rule:
        name:
            f"make_{exp}_data"
        input:
            config=EFFECTIVE_CONFIG,
        output:
            f"{DATA}/{exp}/layout.json",
        log:
            f"{RESULTS}/{exp}/logs/make_{exp}_data.log",
        params:
            py=PY,
            exp=exp,
            data=lambda wildcards, output: os.path.dirname(output[0]),
        shell:
            "{params.py} -m corun.experiments data {params.exp}"
            " --config {input.config} --data-dir {params.data} > {log} 2>&1"

    rule:
        name:
            f"make_{exp}_specs"
        input:
            config=EFFECTIVE_CONFIG,
            layout=f"{DATA}/{exp}/layout.json",
        output:
            [
                f"{RESULTS}/{exp}/specs/{name}.yaml"
                for name in EXPERIMENTS[exp].run_names(config)
            ],
        log:
            f"{RESULTS}/{exp}/logs/make_{exp}_specs.log",
        params:
            py=PY,
            exp=exp,
            data=lambda wildcards, input: os.path.dirname(input.layout),
            out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        shell:
            "{params.py} -m corun.experiments specs {params.exp}"
            " --config {input.config} --data-dir {params.data} --out-dir {params.out_dir}"
            " > {log} 2>&1"

    rule:
        name:
            f"run_{exp}"
        input:
            f"{RESULTS}/{exp}/specs/{{run}}.yaml",
        output:
            directory(f"{RESULTS}/{exp}/runs/{{run}}"),
        log:
            f"{RESULTS}/{exp}/logs/run_{exp}_{{run}}.log",
        resources:
            testbed=1,
        params:
            py=PY,
        shell:
            "{params.py} -m corun run {input} --out {output} > {log} 2>&1"

    rule:
        name:
            f"collect_{exp}"
        input:
            st.run_dirs(config, exp, RESULTS),
        output:
            jobs=f"{RESULTS}/{exp}/jobs.csv",
            runs=f"{RESULTS}/{exp}/runs.csv",
        log:
            f"{RESULTS}/{exp}/logs/collect_{exp}.log",
        params:
            py=PY,
        shell:
            "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
            " {input} > {log} 2>&1"

    rule:
        name:
            f"analyze_{exp}"
        input:
            **st.analysis_inputs(config, exp, RESULTS),
        output:
            st.analysis_outputs(exp, RESULTS),
        log:
            f"{RESULTS}/{exp}/logs/analyze_{exp}.log",
        params:
            py=PY,
            module=EXPERIMENTS[exp].analysis,
            options=st.analysis_options(config, exp, RESULTS),
            out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        shell:
            "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
            " {params.options} --out-dir {params.out_dir} > {log} 2>&1"


rule analyze_io_latency_split:
    input:
        jobs=f"{RESULTS}/cmp_stacking/jobs.csv",
        runs=f"{RESULTS}/cmp_stacking/runs.csv",
    output:
        f"{RESULTS}/io_latency_split/analysis/section.json",
    log:
        f"{RESULTS}/io_latency_split/logs/analyze_io_latency_split.log",
    params:
        py=PY,
        module=EXPERIMENTS["io_latency_split"].analysis,
        workload=config["cmp_stacking"]["latency_workload"],
        out_dir=lambda wildcards, output: os.path.dirname(output[0]),
    shell:
        "{params.py} -m {params.module} --jobs {input.jobs} --runs {input.runs}"
        " --workload {params.workload} --out-dir {params.out_dir} > {log} 2>&1"

# Paper 003's premise, measured beside the runs: how PELT sees a task that stores to memory (to
# persistent memory on a DAX mount where there is one), a CPU-bound task and a psync I/O task
# (corun.monitors.pelt), once per layout and repetition.
NN_DIR = f"{RESULTS}/noisy_neighbour"
NN_PREMISE = config["noisy_neighbour"]["premise"]


rule measure_noisy_neighbour_premise:
    input:
        plan=f"{DATA}/noisy_neighbour/plan.json",  # the data folder holds the psync task's file
    output:
        directory(f"{NN_DIR}/premise/{{layout}}/r{{rep}}"),
    log:
        f"{NN_DIR}/logs/measure_noisy_neighbour_premise_{{layout}}_r{{rep}}.log",
    wildcard_constraints:
        layout="alone|together",
        rep=r"\d+",
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

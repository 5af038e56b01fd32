# corun's own C kernels, when a rule needs one that provisioning has not built (a clone that was
# never provisioned plans and dry-runs; a real run builds what it lacks with the kernels' Makefile).
# A kernel built by `make provision` has no Snakemake record and no input, so it is never rebuilt.


rule build_kernel:
    output:
        f"{KERNELS}/{{kernel}}",
    log:
        f"{RESULTS}/logs/build_kernel_{{kernel}}.log",
    wildcard_constraints:
        kernel="[a-z][a-z0-9_]*",
    shell:
        "make -C kernels build/{wildcards.kernel} > {log} 2>&1"

# Multi-host runs (config `hosts`, target all_hosts): every run of the configured experiments
# on every host of an inventory, in parallel, each host's results under
# {RESULTS}/hosts/<host>/<experiment>/; and MPI jobs across the hosts (config multi_host.mpi_jobs).
# The specs and data are made here once (the experiments' own rules) and copied to each host;
# corun must be checked out at the same path on every host (docs/howto/run-on-another-inventory.md).
# Each (host, run) is its own output: a host that drops out fails only its own runs, and the
# next invocation measures only what is missing. corun's machine lock keeps one run at a time
# on each host, so -j (number of hosts) runs the hosts side by side.
import os
import re
import shlex

from corun.testbed.inventory import resolve as resolve_hosts

try:
    HOSTS = (
        resolve_hosts(config["hosts"], " + ".join(CONFIG_SOURCES) or "config")
        if config.get("hosts")
        else []
    )
except CorunError as exc:
    sys.exit(f"corun: {exc}")
HOST_NAMES = [h.name for h in HOSTS]
MULTI_HOST = config["multi_host"]
if isinstance(config.get("hosts"), dict):
    HOST_ARGS = shlex.join(
        [
            "--inventory",
            config["hosts"]["from_inventory"],
            "--group",
            config["hosts"].get("group", "testbed"),
        ]
    )
else:
    HOST_ARGS = shlex.join(["--names", ",".join(config.get("hosts") or [])])

# The first look's runs of each experiment whose runs can run on any host as they are (the
# plan's needs.hosts "one"; not mpl_sweep, whose runs span hosts by themselves, nor sais, whose
# runs need the cluster and file system it brings up).
HOST_RUN_NAMES = {
    e: [r["name"] for r in P["runs"] if r["look"] == 1]
    for e, P in PLAN["runs"].items()
    if P["runs"] and P["runs"][0]["needs"]["hosts"] == "one"
}
HOST_EXPERIMENTS = [
    e
    for e in (MULTI_HOST["experiments"] or config["experiments"])
    if HOST_RUN_NAMES.get(e)
]


if HOSTS:

    wildcard_constraints:
        host="|".join(re.escape(h) for h in HOST_NAMES),
        exp="|".join(re.escape(e) for e in HOST_EXPERIMENTS) or "-",

    rule run_on_host:
        input:
            specs=LAYOUT.specs("{exp}"),
            layout=lambda wildcards: PLAN["runs"][wildcards.exp]["data"],
        output:
            directory(f"{RESULTS}/hosts/{{host}}/{{exp}}/runs/{{run}}"),
        log:
            f"{RESULTS}/hosts/{{host}}/{{exp}}/logs/run_{{run}}.log",
        params:
            py=PY,
            hosts=HOST_ARGS,
            data=lambda wildcards, input: os.path.dirname(input.layout),
            spec=lambda wildcards: LAYOUT.spec(wildcards.exp, wildcards.run),
        shell:
            "{params.py} -m corun.testbed.hosts {params.hosts} run --host {wildcards.host}"
            " --spec {params.spec} --out {output} --push {params.data} > {log} 2>&1"

    rule collect_host_runs:
        input:
            lambda wildcards: [
                f"{RESULTS}/hosts/{wildcards.host}/{wildcards.exp}/runs/{run}"
                for run in HOST_RUN_NAMES[wildcards.exp]
            ],
        output:
            jobs=f"{RESULTS}/hosts/{{host}}/{{exp}}/jobs.csv",
            runs=f"{RESULTS}/hosts/{{host}}/{{exp}}/runs.csv",
        log:
            f"{RESULTS}/hosts/{{host}}/{{exp}}/logs/collect_host_runs.log",
        params:
            py=PY,
        shell:
            "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
            " {input} > {log} 2>&1"

    rule run_mpi_job:
        output:
            f"{RESULTS}/hosts/mpi/{{job}}/stdout.txt",
        log:
            f"{RESULTS}/hosts/mpi/{{job}}/run_mpi_job.log",
        wildcard_constraints:
            job="|".join(re.escape(j) for j in MULTI_HOST["mpi_jobs"]) or "-",
        params:
            py=PY,
            hosts=HOST_ARGS,
            np=lambda wildcards: MULTI_HOST["mpi_jobs"][wildcards.job]["np"],
            slots=lambda wildcards: MULTI_HOST["mpi_jobs"][wildcards.job]["slots"],
            cmd=lambda wildcards: shlex.join(
                MULTI_HOST["mpi_jobs"][wildcards.job]["cmd"]
            ),
        shell:
            "{params.py} -m corun.testbed.hosts {params.hosts} mpirun --np {params.np} --slots {params.slots}"
            " --out {output} -- {params.cmd} > {log} 2>&1"

    rule all_hosts:
        input:
            [
                f"{RESULTS}/hosts/{h}/{e}/jobs.csv"
                for h in HOST_NAMES
                for e in HOST_EXPERIMENTS
            ],
            [f"{RESULTS}/hosts/mpi/{j}/stdout.txt" for j in MULTI_HOST["mpi_jobs"]],

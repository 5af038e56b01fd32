# Every experiment's chain, from the registry (experiments/<name>/; corun.plan.base.Experiment
# says what each has): make its data, calibrate, write its run specs, run them (one by one, or a
# group at a time around a cluster and file system: corun.testbed.pfs_runs), collect, analyse.
# An experiment with rules no other has keeps them in experiments/<name>/rules.smk, included last.
import os


def _plan(exp):
    """What the rules below need of one experiment, computed once."""
    E = EXPERIMENTS[exp]
    names = E.run_names(config)
    groups = E.group_runs(config)
    grouped = {n for runs in groups.values() for n in runs}
    return {
        "E": E,
        "D": f"{RESULTS}/{exp}",
        "data_dir": f"{DATA}/{exp}",
        "names": names,
        "groups": groups,
        "plain": [n for n in names if n not in grouped],
        "data_in": [f"{DATA}/{exp}/{E.data_file}"] if E.data_file else [],
    }


def _priority(plan):
    order = plan["E"].run_priority(config)
    return lambda wildcards: order.get(wildcards.run, 0)


def _group_specs(plan):
    return lambda wildcards: [
        f"{plan['D']}/specs/{n}.yaml" for n in plan["groups"][wildcards.group]
    ]


def _out_dir(wildcards, output):
    return os.path.dirname(output[0])


def _results_dir(wildcards, output):
    """RESULTS, from <RESULTS>/<experiment>/analysis/section.json (Snakemake's lint)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(output[0])))


def _data_dir(P):
    """The data folder, from the data step's output when there is one (Snakemake's lint)."""
    if P["data_in"]:
        return lambda wildcards, input: os.path.dirname(input.data[0])
    return P["data_dir"]


def _calibration_arg(wildcards, input):
    return f"--calibration {input.calibration}" if input.calibration else ""


PLANS = {exp: _plan(exp) for exp in RUN_EXPERIMENTS}


for exp, P in PLANS.items():
    if P["E"].data_file:

        rule:
            name:
                f"make_{exp}_data"
            input:
                config=EFFECTIVE_CONFIG,
                steps=list(P["E"].step_inputs),
            output:
                f"{P['data_dir']}/{P['E'].data_file}",
            log:
                f"{P['D']}/logs/make_{exp}_data.log",
            params:
                py=PY,
                exp=exp,
                data=_out_dir,
            shell:
                "{params.py} -m experiments data {params.exp}"
                " --config {input.config} --data-dir {params.data} > {log} 2>&1"

    if P["E"].calibrates:

        rule:
            name:
                f"calibrate_{exp}"
            input:
                config=EFFECTIVE_CONFIG,
                data=P["data_in"],
                steps=list(P["E"].step_inputs),
            output:
                f"{P['D']}/calibration.json",
            log:
                f"{P['D']}/logs/calibrate_{exp}.log",
            resources:
                testbed=1,
            params:
                py=PY,
                exp=exp,
                data=_data_dir(P),
            shell:
                "{params.py} -m experiments calibrate {params.exp} --config {input.config}"
                " --data-dir {params.data} --out {output} > {log} 2>&1"

    rule:
        name:
            f"make_{exp}_specs"
        input:
            config=EFFECTIVE_CONFIG,
            data=P["data_in"],
            calibration=[f"{P['D']}/calibration.json"] if P["E"].calibrates else [],
        output:
            [f"{P['D']}/specs/{n}.yaml" for n in P["names"]],
            [f"{P['D']}/specs/{f}" for f in P["E"].spec_files],
        log:
            f"{P['D']}/logs/make_{exp}_specs.log",
        params:
            py=PY,
            exp=exp,
            data=_data_dir(P),
            out_dir=_out_dir,
            calibration=_calibration_arg,
        shell:
            "{params.py} -m experiments specs {params.exp} --config {input.config}"
            " {params.calibration} --data-dir {params.data} --out-dir {params.out_dir}"
            " > {log} 2>&1"

    if P["plain"]:

        rule:
            name:
                f"run_{exp}"
            input:
                spec=f"{P['D']}/specs/{{run}}.yaml",
                programs=list(P["E"].run_inputs),
            output:
                directory(f"{P['D']}/runs/{{run}}"),
            log:
                f"{P['D']}/logs/run_{exp}_{{run}}.log",
            wildcard_constraints:
                run="|".join(P["plain"]),
            priority: _priority(P)
            resources:
                testbed=1,
            params:
                py=PY,
                runner=P["E"].run_command(config, f"{P['D']}/netns"),
            shell:
                "{params.py} {params.runner} {input.spec} --out {output} > {log} 2>&1"

    if P["groups"]:

        rule:
            name:
                f"run_{exp}_group"
            input:
                groups=f"{P['D']}/specs/groups.json",
                specs=_group_specs(P),
                programs=list(P["E"].run_inputs),
            output:
                f"{P['D']}/groups/{{group}}.json",
            log:
                f"{P['D']}/logs/run_{exp}_group_{{group}}.log",
            wildcard_constraints:
                group="|".join(P["groups"]),
            resources:
                testbed=1,
            params:
                py=PY,
                specs=lambda wildcards, input: os.path.dirname(input.groups),
                runs=f"{P['D']}/runs",
                work=f"{P['D']}/work",
            shell:
                "{params.py} -m corun.testbed.pfs_runs --groups {input.groups} --group {wildcards.group}"
                " --specs {params.specs} --runs {params.runs} --work {params.work} --done {output} > {log} 2>&1"

    rule:
        name:
            f"collect_{exp}"
        input:
            runs=[f"{P['D']}/runs/{n}" for n in P["plain"]],
            groups=[f"{P['D']}/groups/{g}.json" for g in P["groups"]],
        output:
            jobs=f"{P['D']}/jobs.csv",
            runs=f"{P['D']}/runs.csv",
        log:
            f"{P['D']}/logs/collect_{exp}.log",
        params:
            py=PY,
            dirs=[f"{P['D']}/runs/{n}" for n in P["names"]],
        shell:
            "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
            " {params.dirs} > {log} 2>&1"


for exp in config["experiments"]:

    rule:
        name:
            f"analyze_{exp}"
        input:
            **EXPERIMENTS[exp].analysis_inputs(config, RESULTS),
        output:
            EXPERIMENTS[exp].analysis_outputs(RESULTS),
        log:
            f"{RESULTS}/{exp}/logs/analyze_{exp}.log",
        params:
            py=PY,
            exp=exp,
            config=EFFECTIVE_CONFIG,
            results=_results_dir,
            out_dir=_out_dir,
        shell:
            "{params.py} -m experiments analyze {params.exp} --config {params.config}"
            " --results {params.results} --out-dir {params.out_dir} > {log} 2>&1"


for exp in config["experiments"]:
    if (EXPERIMENTS[exp].folder / "rules.smk").is_file():

        include: str(EXPERIMENTS[exp].folder / "rules.smk")

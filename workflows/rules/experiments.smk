# Every experiment's chain, from the campaign's plan (RESULTS/plan.json, experiments.campaign):
# make its data, calibrate, write its run specs, run them (one by one, or a group at a time
# around a cluster and file system: corun.testbed.pfs_runs), collect, analyse. Every step reads
# the plan, not the configuration again. With a sequential design (the section's max_reps,
# experiments/looks.py) the runs are measured look by look under RESULTS/<exp>/looks/<look>/ and
# a checkpoint decides after each look whether another can decide a claim still inconclusive;
# the last look reached is copied to RESULTS/<exp>/.
# An experiment with rules no other has keeps them in experiments/<name>/rules.smk, included last.
import os

from experiments import campaign

RUNS = PLAN["runs"]  # the experiments with runs of their own
ANALYSES = PLAN["analyses"]  # the selected experiments
RUN_OF = {e: {r["name"]: r for r in P["runs"]} for e, P in RUNS.items()}
SEQUENTIAL = [e for e, P in RUNS.items() if len(P["looks"]) > 1]
# the device section's calibration, when it runs: a run on a disk that failed it is failed
DEVICE_CALIBRATION = (
    [LAYOUT.device_calibration] if config["report"]["device"]["enabled"] else []
)


def _run_inputs(exp):
    return lambda wildcards: RUN_OF[exp][wildcards.run]["inputs"]


def _priority(exp):
    return lambda wildcards: RUN_OF[exp][wildcards.run]["priority"]


def _look(exp, part):
    """The files of the looks up to {look}: run folders, group stamps or every run folder."""
    return lambda wildcards: RUNS[exp]["looks"][int(wildcards.look) - 1][part]


def _given(value):
    """A parameter from the plan (a path the lint would take for one typed in the rule)."""
    return lambda wildcards: value


def _out_dir(wildcards, output):
    return os.path.dirname(output[0])


def _last_look(owner):
    """The last look of `owner`'s design the checkpoints reached."""
    decisions = []
    for look in range(1, len(RUNS[owner]["looks"])):
        decisions.append(checkpoints.decide_looks.get(exp=owner, look=look).output[0])
        if campaign.last_look(decisions) == look:
            return look
    return len(RUNS[owner]["looks"])


def _final(exp, files):
    """The chosen look's copies of `files` (paths under RESULTS/<exp>/)."""
    owner = ANALYSES[exp]["owner"]
    return lambda wildcards: [LAYOUT.in_look(f, exp, _last_look(owner)) for f in files]


for exp, P in RUNS.items():
    if P["data"]:

        rule:
            name:
                f"make_{exp}_data"
            input:
                campaign=PLAN_FILE,
                steps=P["step_inputs"],
            output:
                P["data"],
            log:
                LAYOUT.log(exp, f"make_{exp}_data"),
            params:
                py=PY,
                exp=exp,
                data=_out_dir,
            shell:
                "{params.py} -m experiments data {params.exp}"
                " --plan {input.campaign} --data-dir {params.data} > {log} 2>&1"

    if P["calibration"]:

        rule:
            name:
                f"calibrate_{exp}"
            input:
                campaign=PLAN_FILE,
                data=[P["data"]] if P["data"] else [],
                steps=P["step_inputs"],
            output:
                P["calibration"],
            log:
                LAYOUT.log(exp, f"calibrate_{exp}"),
            resources:
                testbed=1,
            params:
                py=PY,
                exp=exp,
                data=_given(P["data_dir"]),
            shell:
                "{params.py} -m experiments calibrate {params.exp} --plan {input.campaign}"
                " --data-dir {params.data} --out {output} > {log} 2>&1"

    rule:
        name:
            f"make_{exp}_specs"
        input:
            campaign=PLAN_FILE,
            data=[P["data"]] if P["data"] else [],
            calibration=[P["calibration"]] if P["calibration"] else [],
        output:
            P["specs"],
        log:
            LAYOUT.log(exp, f"make_{exp}_specs"),
        params:
            py=PY,
            exp=exp,
            data=_given(P["data_dir"]),
            out_dir=_out_dir,
            calibration=lambda wildcards, input: (
                f"--calibration {input.calibration}" if input.calibration else ""
            ),
        shell:
            "{params.py} -m experiments specs {params.exp} --plan {input.campaign}"
            " {params.calibration} --data-dir {params.data} --out-dir {params.out_dir}"
            " > {log} 2>&1"

    plain = [r["name"] for r in P["runs"] if r["group"] is None]
    if plain:

        rule:
            name:
                f"run_{exp}"
            input:
                spec=LAYOUT.spec(exp, "{run}"),
                inputs=_run_inputs(exp),
            output:
                directory(LAYOUT.run(exp, "{run}")),
            log:
                LAYOUT.log(exp, f"run_{exp}_{{run}}"),
            wildcard_constraints:
                run="|".join(plain),
            priority: _priority(exp)
            resources:
                testbed=1,
            params:
                py=PY,
                runner=P["run_command"],
            shell:
                "{params.py} {params.runner} {input.spec} --out {output} > {log} 2>&1"

    # one pfs_runs per look for all the look's groups: consecutive groups of one netns cluster
    # share it (corun.testbed.pfs_runs)
    for look in sorted({g["look"] for g in P["groups"]}):
        groups = [g for g in P["groups"] if g["look"] == look]
        step = f"run_{exp}_group" + ("" if look == 1 else f"_look{look}")

        rule:
            name:
                step
            input:
                groups=f"{LAYOUT.specs(exp)}/groups.json",
                specs=[RUN_OF[exp][n]["spec"] for g in groups for n in g["runs"]],
                inputs=sorted({f for g in groups for f in g["inputs"]}),
            output:
                [g["stamp"] for g in groups],
            log:
                LAYOUT.log(exp, step),
            resources:
                testbed=1,
            params:
                py=PY,
                names=" ".join(g["name"] for g in groups),
                specs=_given(LAYOUT.specs(exp)),
                runs=_given(LAYOUT.runs(exp)),
                work=_given(LAYOUT.work(exp)),
            shell:
                "{params.py} -m corun.testbed.pfs_runs --groups {input.groups} --group {params.names}"
                " --specs {params.specs} --runs {params.runs} --work {params.work} --done {output} > {log} 2>&1"

    if len(P["looks"]) == 1:

        rule:
            name:
                f"collect_{exp}"
            input:
                runs=P["looks"][0]["runs"],
                groups=P["looks"][0]["groups"],
            output:
                jobs=LAYOUT.table(exp, "jobs"),
                runs=LAYOUT.table(exp, "runs"),
            log:
                LAYOUT.log(exp, f"collect_{exp}"),
            params:
                py=PY,
                dirs=P["looks"][0]["dirs"],
            shell:
                "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
                " {params.dirs} > {log} 2>&1"

    else:

        rule:
            name:
                f"collect_{exp}"
            input:
                runs=_look(exp, "runs"),
                groups=_look(exp, "groups"),
            output:
                jobs=LAYOUT.table(exp, "jobs", "{look}"),
                runs=LAYOUT.table(exp, "runs", "{look}"),
            log:
                LAYOUT.log(exp, f"collect_{exp}_look{{look}}"),
            wildcard_constraints:
                look="[0-9]+",
            params:
                py=PY,
                dirs=_look(exp, "dirs"),
            shell:
                "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
                " {params.dirs} > {log} 2>&1"

        rule:
            name:
                f"finish_{exp}_tables"
            input:
                jobs=_final(exp, [LAYOUT.table(exp, "jobs")]),
                runs=_final(exp, [LAYOUT.table(exp, "runs")]),
            output:
                jobs=LAYOUT.table(exp, "jobs"),
                runs=LAYOUT.table(exp, "runs"),
            log:
                LAYOUT.log(exp, f"finish_{exp}_tables"),
            shell:
                "cp {input.jobs} {output.jobs} && cp {input.runs} {output.runs} > {log} 2>&1"


for exp, A in ANALYSES.items():
    owner = A["owner"]
    if A["looks"] == 1:

        rule:
            name:
                f"analyze_{exp}"
            input:
                **A["inputs"],
                campaign=PLAN_FILE,
                device=DEVICE_CALIBRATION,
            output:
                A["outputs"],
            log:
                LAYOUT.log(exp, f"analyze_{exp}"),
            params:
                py=PY,
                exp=exp,
                out_dir=_out_dir,
            shell:
                "{params.py} -m experiments analyze {params.exp} --plan {input.campaign}"
                " --out-dir {params.out_dir} > {log} 2>&1"

    else:

        rule:
            name:
                f"analyze_{exp}"
            input:
                # this look's tables in place of the final ones
                **{k: v for k, v in A["inputs"].items() if k not in ("jobs", "runs")},
                jobs=LAYOUT.table(owner, "jobs", "{look}"),
                runs=LAYOUT.table(owner, "runs", "{look}"),
                campaign=PLAN_FILE,
            output:
                [LAYOUT.in_look(o, exp, "{look}") for o in A["outputs"]],
            log:
                LAYOUT.log(exp, f"analyze_{exp}_look{{look}}"),
            wildcard_constraints:
                look="[0-9]+",
            params:
                py=PY,
                exp=exp,
                out_dir=_out_dir,
            shell:
                "{params.py} -m experiments analyze {params.exp} --plan {input.campaign}"
                " --look {wildcards.look} --out-dir {params.out_dir} > {log} 2>&1"

        rule:
            name:
                f"finish_{exp}"
            input:
                _final(exp, A["outputs"]),
            output:
                A["outputs"],
            log:
                LAYOUT.log(exp, f"finish_{exp}"),
            params:
                look_dir=lambda wildcards, input: os.path.dirname(input[0]),
                out_dir=_out_dir,
            shell:
                # the whole folder: the section's figures and tables beside it
                "cp -a {params.look_dir}/. {params.out_dir}/ > {log} 2>&1"


if SEQUENTIAL:

    checkpoint decide_looks:
        input:
            campaign=PLAN_FILE,
            sections=lambda wildcards: [
                LAYOUT.section(e, wildcards.look)
                for e in RUNS[wildcards.exp]["readers"]
            ],
        output:
            LAYOUT.decision("{exp}", "{look}"),
        log:
            LAYOUT.log("{exp}", "decide_looks_{look}"),
        wildcard_constraints:
            exp="|".join(SEQUENTIAL),
            look="[0-9]+",
        params:
            py=PY,
        shell:
            "{params.py} -m experiments decide {wildcards.exp} --plan {input.campaign}"
            " --look {wildcards.look} --sections {input.sections} --out {output} > {log} 2>&1"


for exp in config["experiments"]:
    if (EXPERIMENTS[exp].folder / "rules.smk").is_file():

        include: str(EXPERIMENTS[exp].folder / "rules.smk")

# Every experiment's chain, from the campaign's plan (RESULTS/plan.json, experiments.campaign):
# make its data, calibrate, write its run specs, run them (one by one, or a group at a time
# around a cluster and file system: corun.testbed.pfs_runs), collect, analyse. Every step reads
# the plan, not the configuration again. Each rule is declared once for every experiment: its
# {exp} wildcard takes the experiments the plan gives that step, and what a job needs comes from
# the plan (experiments.steps). With a sequential design (the section's max_reps, experiments/looks.py)
# the runs are measured look by look under RESULTS/<exp>/looks/<look>/ and a checkpoint decides
# after each look whether another can decide a claim still inconclusive; the last look reached is
# copied to RESULTS/<exp>/.
# An experiment with rules no other has keeps them in experiments/<name>/rules.smk, included last.
import os

from experiments.steps import Steps, one_of

STEPS = Steps(PLAN, LAYOUT)
# the device section's calibration, when it runs: a run on a disk that failed it is failed
DEVICE_CALIBRATION = (
    [LAYOUT.device_calibration] if config["report"]["device"]["enabled"] else []
)


if STEPS.with_data:

    rule make_data:
        input:
            campaign=PLAN_FILE,
            steps=STEPS.from_exp("step_inputs"),
        output:
            f"{DATA}/{{exp}}/{{data_file}}",
        log:
            LAYOUT.log("{exp}", "make_data_{data_file}"),
        wildcard_constraints:
            exp=one_of(STEPS.with_data),
            data_file=one_of(STEPS.data_files),
        params:
            py=PY,
            data=lambda wildcards, output: os.path.dirname(output[0]),
        shell:
            "{params.py} -m experiments data {wildcards.exp}"
            " --plan {input.campaign} --data-dir {params.data} > {log} 2>&1"


if STEPS.calibrated:

    rule calibrate:
        input:
            campaign=PLAN_FILE,
            data=STEPS.maybe("data"),
            steps=STEPS.from_exp("step_inputs"),
        output:
            LAYOUT.calibration("{exp}"),
        log:
            LAYOUT.log("{exp}", "calibrate"),
        wildcard_constraints:
            exp=one_of(STEPS.calibrated),
        resources:
            testbed=1,
        params:
            py=PY,
            data=STEPS.from_exp("data_dir"),
        shell:
            "{params.py} -m experiments calibrate {wildcards.exp} --plan {input.campaign}"
            " --data-dir {params.data} --out {output} > {log} 2>&1"


# the folder of the experiment's run specs and the files beside them (groups.json, plan.json):
# the step checks it wrote every file the plan names
rule make_specs:
    input:
        campaign=PLAN_FILE,
        data=STEPS.maybe("data"),
        calibration=STEPS.maybe("calibration"),
    output:
        directory(LAYOUT.specs("{exp}")),
    log:
        LAYOUT.log("{exp}", "make_specs"),
    wildcard_constraints:
        exp=one_of(STEPS.runs),
    params:
        py=PY,
        data=STEPS.from_exp("data_dir"),
        calibration=lambda wildcards, input: (
            f"--calibration {input.calibration}" if input.calibration else ""
        ),
    shell:
        "{params.py} -m experiments specs {wildcards.exp} --plan {input.campaign}"
        " {params.calibration} --data-dir {params.data} --out-dir {output} > {log} 2>&1"


if STEPS.plain:

    # one run on one host: on a Slurm cluster, an exclusive one-node job (slurm.smk)
    rule run:
        input:
            specs=LAYOUT.specs("{exp}"),
            inputs=STEPS.from_run("inputs"),
        output:
            directory(LAYOUT.run("{exp}", "{run}")),
        log:
            LAYOUT.log("{exp}", "run_{run}"),
        wildcard_constraints:
            exp=one_of(STEPS.on_one_host),
            run=one_of(r for names in STEPS.on_one_host.values() for r in names),
        priority: STEPS.from_run("priority")
        resources:
            testbed=1,
        params:
            py=PY,
            runner=STEPS.from_exp("run_command"),
            spec=STEPS.from_run("spec"),
        shell:
            "{params.py} {params.runner} {params.spec} --out {output} > {log} 2>&1"


if STEPS.across_hosts:

    # the same step for a run over the experiment's hosts, driven from here (a rule of its own
    # only so that a Slurm cluster keeps it on the controller: slurm.smk)
    use rule run as run_across_hosts with:
        wildcard_constraints:
            exp=one_of(STEPS.across_hosts),
            run=one_of(r for names in STEPS.across_hosts.values() for r in names),


if STEPS.grouped:

    # every group of one look in one job: consecutive groups of one netns cluster share it
    # (corun.testbed.pfs_runs); each group's stamp is written in the look's folder when it ends
    rule run_groups:
        input:
            specs=LAYOUT.specs("{exp}"),
            inputs=STEPS.group_inputs,
        output:
            directory(LAYOUT.group_stamps("{exp}", "{look}")),
        log:
            LAYOUT.log("{exp}", "run_groups_look{look}"),
        wildcard_constraints:
            exp=one_of(STEPS.grouped),
            look="[0-9]+",
        resources:
            testbed=1,
        params:
            py=PY,
            names=STEPS.group_names,
            done=STEPS.group_stamps,
            runs=lambda wildcards: LAYOUT.runs(wildcards.exp),
            work=lambda wildcards: LAYOUT.work(wildcards.exp),
        shell:
            "{params.py} -m corun.testbed.pfs_runs --groups {input.specs}/groups.json"
            " --group {params.names} --specs {input.specs} --runs {params.runs}"
            " --work {params.work} --done {params.done} > {log} 2>&1"


if STEPS.one_look:

    rule collect:
        input:
            runs=STEPS.first_look("runs"),
            groups=STEPS.first_look("groups"),
        output:
            jobs=LAYOUT.table("{exp}", "jobs"),
            runs=LAYOUT.table("{exp}", "runs"),
        log:
            LAYOUT.log("{exp}", "collect"),
        wildcard_constraints:
            exp=one_of(STEPS.one_look),
        params:
            py=PY,
            dirs=STEPS.first_look("dirs"),
        shell:
            "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
            " {params.dirs} > {log} 2>&1"


if STEPS.sequential:

    rule collect_look:
        input:
            runs=STEPS.look("runs"),
            groups=STEPS.look("groups"),
        output:
            jobs=LAYOUT.table("{exp}", "jobs", "{look}"),
            runs=LAYOUT.table("{exp}", "runs", "{look}"),
        log:
            LAYOUT.log("{exp}", "collect_look{look}"),
        wildcard_constraints:
            exp=one_of(STEPS.sequential),
            look="[0-9]+",
        params:
            py=PY,
            dirs=STEPS.look("dirs"),
        shell:
            "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
            " {params.dirs} > {log} 2>&1"

    # the tables of the last look the checkpoints reached
    rule finish_tables:
        input:
            jobs=STEPS.in_last_look(lambda exp: LAYOUT.table(exp, "jobs"), checkpoints),
            runs=STEPS.in_last_look(lambda exp: LAYOUT.table(exp, "runs"), checkpoints),
        output:
            jobs=LAYOUT.table("{exp}", "jobs"),
            runs=LAYOUT.table("{exp}", "runs"),
        log:
            LAYOUT.log("{exp}", "finish_tables"),
        wildcard_constraints:
            exp=one_of(STEPS.sequential),
        shell:
            "cp {input.jobs} {output.jobs} && cp {input.runs} {output.runs} > {log} 2>&1"


if STEPS.analysed_once:

    rule analyze:
        input:
            unpack(STEPS.analysis_inputs),
            campaign=PLAN_FILE,
            device=DEVICE_CALIBRATION,
        output:
            LAYOUT.section("{exp}"),
        log:
            LAYOUT.log("{exp}", "analyze"),
        wildcard_constraints:
            exp=one_of(STEPS.analysed_once),
        params:
            py=PY,
            out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        shell:
            "{params.py} -m experiments analyze {wildcards.exp} --plan {input.campaign}"
            " --out-dir {params.out_dir} > {log} 2>&1"


if STEPS.analysed_by_look:

    rule analyze_look:
        input:
            unpack(STEPS.look_inputs),
            campaign=PLAN_FILE,
        output:
            LAYOUT.section("{exp}", "{look}"),
        log:
            LAYOUT.log("{exp}", "analyze_look{look}"),
        wildcard_constraints:
            exp=one_of(STEPS.analysed_by_look),
            look="[0-9]+",
        params:
            py=PY,
            out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        shell:
            "{params.py} -m experiments analyze {wildcards.exp} --plan {input.campaign}"
            " --look {wildcards.look} --out-dir {params.out_dir} > {log} 2>&1"

    # the section of the last look the checkpoints reached
    rule finish_analysis:
        input:
            STEPS.in_last_look(lambda exp: LAYOUT.section(exp), checkpoints),
        output:
            LAYOUT.section("{exp}"),
        log:
            LAYOUT.log("{exp}", "finish_analysis"),
        wildcard_constraints:
            exp=one_of(STEPS.analysed_by_look),
        params:
            look_dir=lambda wildcards, input: os.path.dirname(input[0]),
            out_dir=lambda wildcards, output: os.path.dirname(output[0]),
        shell:
            # the whole folder: the section's figures and tables beside it
            "cp -a {params.look_dir}/. {params.out_dir}/ > {log} 2>&1"


if STEPS.sequential:

    checkpoint decide_looks:
        input:
            campaign=PLAN_FILE,
            sections=STEPS.deciding_sections,
        output:
            LAYOUT.decision("{exp}", "{look}"),
        log:
            LAYOUT.log("{exp}", "decide_look{look}"),
        wildcard_constraints:
            exp=one_of(STEPS.sequential),
            look="[0-9]+",
        params:
            py=PY,
        shell:
            "{params.py} -m experiments decide {wildcards.exp} --plan {input.campaign}"
            " --look {wildcards.look} --sections {input.sections} --out {output} > {log} 2>&1"


for exp in config["experiments"]:
    if (EXPERIMENTS[exp].folder / "rules.smk").is_file():

        include: str(EXPERIMENTS[exp].folder / "rules.smk")

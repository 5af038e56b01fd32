# Every experiment's chain, from the registry (experiments/<name>/; corun.plan.base.Experiment
# says what each has): make its data, calibrate, write its run specs, run them (one by one, or a
# group at a time around a cluster and file system: corun.testbed.pfs_runs), collect, analyse.
# With a sequential design (the section's max_reps, experiments/looks.py) the runs are measured
# look by look under RESULTS/<exp>/looks/<look>/ and a checkpoint decides after each look whether
# another can decide a claim still inconclusive; the last look reached is copied to RESULTS/<exp>/.
# An experiment with rules no other has keeps them in experiments/<name>/rules.smk, included last.
import json
import os

from experiments import looks as LOOKS


def _plan(exp):
    """What the rules below need of one experiment, computed once."""
    E = EXPERIMENTS[exp]
    reps = LOOKS.reps_per_look(config, exp)
    by_look = LOOKS.names_by_look(E, config)
    names = [n for look in by_look for n in look]
    groups = LOOKS.groups_by_look(E, config)
    grouped = {n for runs in groups.values() for n in runs}
    return {
        "E": E,
        "D": f"{RESULTS}/{exp}",
        "data_dir": f"{DATA}/{exp}",
        "looks": len(reps),
        "names": names,
        "by_look": by_look,
        "groups": groups,
        "plain": [n for n in names if n not in grouped],
        "data_in": [f"{DATA}/{exp}/{E.data_file}"] if E.data_file else [],
        # the selected experiments that analyse these runs (io_latency_split: cmp_stacking's)
        "readers": [
            e for e in config["experiments"] if (EXPERIMENTS[e].runs_of or e) == exp
        ],
    }


def _priority(plan):
    order = plan["E"].run_priority(config)
    return lambda wildcards: order.get(wildcards.run, 0)


def _upto(plan, look):
    """Run folders and group stamps of the looks up to `look` (all looks: None)."""
    names = [n for part in plan["by_look"][:look] for n in part]
    keep = set(names)
    runs = [f"{plan['D']}/runs/{n}" for n in names if n in set(plan["plain"])]
    groups = [
        f"{plan['D']}/groups/{g}.json"
        for g, members in plan["groups"].items()
        if set(members) <= keep
    ]
    return runs, groups, [f"{plan['D']}/runs/{n}" for n in names]


def _manifests(plan):
    """The manifests (own and extended) of the variants a run uses: an edited manifest is an
    input that changed, so its runs are measured again."""
    return LOOKS.run_manifests(plan["E"], config)


def _run_manifests(plan):
    f = _manifests(plan)
    return lambda wildcards: f(wildcards.run)


def _group_manifests(plan, names):
    f = _manifests(plan)
    return sorted({m for g in names for r in plan["groups"][g] for m in f(r)})


def _groups_of_looks(plan):
    """{look: its groups}, from the group names (experiments.looks.group_name)."""
    out = {}
    for g in plan["groups"]:
        look = int(g.rsplit("-look", 1)[1]) if "-look" in g else 1
        out.setdefault(look, []).append(g)
    return out


def _look_inputs(plan, part):
    return lambda wildcards: _upto(plan, int(wildcards.look))[part]


def _out_dir(wildcards, output):
    return os.path.dirname(output[0])


def _results_dir(wildcards, output):
    """RESULTS, from <RESULTS>/<experiment>/analysis/section.json (Snakemake's lint)."""
    return os.path.dirname(os.path.dirname(os.path.dirname(output[0])))


def _look_results_dir(wildcards, output):
    """RESULTS, from <RESULTS>/<experiment>/looks/<look>/analysis/section.json."""
    return os.path.dirname(output[0].rsplit("/looks/", 1)[0])


def _data_dir(P):
    """The data folder, from the data step's output when there is one (Snakemake's lint)."""
    if P["data_in"]:
        return lambda wildcards, input: os.path.dirname(input.data[0])
    return P["data_dir"]


def _calibration_arg(wildcards, input):
    return f"--calibration {input.calibration}" if input.calibration else ""


def _last_look(owner):
    """The last look of `owner`'s design the checkpoints reached."""
    look = 1
    while look < PLANS[owner]["looks"]:
        decision = checkpoints.decide_looks.get(exp=owner, look=look).output[0]
        with open(decision) as fh:
            if not json.load(fh)["more"]:
                break
        look += 1
    return look


def _final(exp, files):
    """The chosen look's copies of `files` (paths under RESULTS/<exp>/looks/<look>/)."""
    owner = EXPERIMENTS[exp].runs_of or exp
    return lambda wildcards: [
        f"{RESULTS}/{exp}/looks/{_last_look(owner)}/{f}" for f in files
    ]


PLANS = {exp: _plan(exp) for exp in RUN_EXPERIMENTS}
# the device section's calibration, when it runs: a run on a disk that failed it is failed
DEVICE_CALIBRATION = (
    [f"{RESULTS}/device/calibration.json"]
    if config["report"]["device"]["enabled"]
    else []
)
SEQUENTIAL = [exp for exp, P in PLANS.items() if P["looks"] > 1]


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
                manifests=_run_manifests(P),
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

    # one pfs_runs per look for all the look's groups: consecutive groups of one netns cluster
    # share it (corun.testbed.pfs_runs)
    for look, gnames in _groups_of_looks(P).items():

        rule:
            name:
                f"run_{exp}_group" + ("" if look == 1 else f"_look{look}")
            input:
                groups=f"{P['D']}/specs/groups.json",
                specs=[
                    f"{P['D']}/specs/{n}.yaml" for g in gnames for n in P["groups"][g]
                ],
                programs=list(P["E"].run_inputs),
                manifests=_group_manifests(P, gnames),
            output:
                [f"{P['D']}/groups/{g}.json" for g in gnames],
            log:
                f"{P['D']}/logs/run_{exp}_group"
                + ("" if look == 1 else f"_look{look}")
                + ".log",
            resources:
                testbed=1,
            params:
                py=PY,
                names=" ".join(gnames),
                specs=lambda wildcards, input: os.path.dirname(input.groups),
                runs=f"{P['D']}/runs",
                work=f"{P['D']}/work",
            shell:
                "{params.py} -m corun.testbed.pfs_runs --groups {input.groups} --group {params.names}"
                " --specs {params.specs} --runs {params.runs} --work {params.work} --done {output} > {log} 2>&1"

    if P["looks"] == 1:

        rule:
            name:
                f"collect_{exp}"
            input:
                runs=_upto(P, 1)[0],
                groups=_upto(P, 1)[1],
            output:
                jobs=f"{P['D']}/jobs.csv",
                runs=f"{P['D']}/runs.csv",
            log:
                f"{P['D']}/logs/collect_{exp}.log",
            params:
                py=PY,
                dirs=_upto(P, 1)[2],
            shell:
                "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
                " {params.dirs} > {log} 2>&1"

    else:

        rule:
            name:
                f"collect_{exp}"
            input:
                runs=_look_inputs(P, 0),
                groups=_look_inputs(P, 1),
            output:
                jobs=f"{P['D']}/looks/{{look}}/jobs.csv",
                runs=f"{P['D']}/looks/{{look}}/runs.csv",
            log:
                f"{P['D']}/logs/collect_{exp}_look{{look}}.log",
            wildcard_constraints:
                look="[0-9]+",
            params:
                py=PY,
                dirs=_look_inputs(P, 2),
            shell:
                "{params.py} -m analysis.collect --out-jobs {output.jobs} --out-runs {output.runs}"
                " {params.dirs} > {log} 2>&1"

        rule:
            name:
                f"finish_{exp}_tables"
            input:
                jobs=_final(exp, ["jobs.csv"]),
                runs=_final(exp, ["runs.csv"]),
            output:
                jobs=f"{P['D']}/jobs.csv",
                runs=f"{P['D']}/runs.csv",
            log:
                f"{P['D']}/logs/finish_{exp}_tables.log",
            shell:
                "cp {input.jobs} {output.jobs} && cp {input.runs} {output.runs} > {log} 2>&1"


for exp in config["experiments"]:
    E = EXPERIMENTS[exp]
    owner = E.runs_of or exp
    if PLANS.get(owner, {"looks": 1})["looks"] == 1:

        rule:
            name:
                f"analyze_{exp}"
            input:
                **E.analysis_inputs(config, RESULTS),
                device=DEVICE_CALIBRATION,
            output:
                E.analysis_outputs(RESULTS),
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

    else:
        # this look's tables in place of the final ones
        ins = {
            k: v
            for k, v in E.analysis_inputs(config, RESULTS).items()
            if k not in ("jobs", "runs")
        }
        outs = [
            o.replace(f"{RESULTS}/{exp}/", f"{RESULTS}/{exp}/looks/{{look}}/")
            for o in E.analysis_outputs(RESULTS)
        ]

        rule:
            name:
                f"analyze_{exp}"
            input:
                **ins,
                jobs=f"{RESULTS}/{owner}/looks/{{look}}/jobs.csv",
                runs=f"{RESULTS}/{owner}/looks/{{look}}/runs.csv",
            output:
                outs,
            log:
                f"{RESULTS}/{exp}/logs/analyze_{exp}_look{{look}}.log",
            wildcard_constraints:
                look="[0-9]+",
            params:
                py=PY,
                exp=exp,
                config=EFFECTIVE_CONFIG,
                results=_look_results_dir,
                out_dir=_out_dir,
            shell:
                "{params.py} -m experiments analyze {params.exp} --config {params.config}"
                " --results {params.results} --look {wildcards.look} --out-dir {params.out_dir}"
                " > {log} 2>&1"

        rule:
            name:
                f"finish_{exp}"
            input:
                _final(
                    exp,
                    [o.split(f"/{exp}/", 1)[1] for o in E.analysis_outputs(RESULTS)],
                ),
            output:
                E.analysis_outputs(RESULTS),
            log:
                f"{RESULTS}/{exp}/logs/finish_{exp}.log",
            params:
                look_dir=lambda wildcards, input: os.path.dirname(input[0]),
                out_dir=_out_dir,
            shell:
                # the whole folder: the section's figures and tables beside it
                "cp -a {params.look_dir}/. {params.out_dir}/ > {log} 2>&1"


if SEQUENTIAL:

    checkpoint decide_looks:
        input:
            lambda wildcards: [
                f"{RESULTS}/{e}/looks/{wildcards.look}/analysis/section.json"
                for e in PLANS[wildcards.exp]["readers"]
            ],
        output:
            f"{RESULTS}/{{exp}}/looks/{{look}}/decision.json",
        log:
            f"{RESULTS}/{{exp}}/logs/decide_looks_{{look}}.log",
        wildcard_constraints:
            exp="|".join(SEQUENTIAL),
            look="[0-9]+",
        params:
            py=PY,
            config=EFFECTIVE_CONFIG,
        shell:
            "{params.py} -m experiments decide {wildcards.exp} --config {params.config}"
            " --look {wildcards.look} --sections {input} --out {output} > {log} 2>&1"


for exp in config["experiments"]:
    if (EXPERIMENTS[exp].folder / "rules.smk").is_file():

        include: str(EXPERIMENTS[exp].folder / "rules.smk")

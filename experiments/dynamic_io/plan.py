"""The dynamic_io campaign's configuration: the cross-key checks, the Table 3 workloads at the
configured scale, the campaign's interleaved order, and the parameters each scheduler variant runs
with (experiment.py: the plan's steps; inputs.py: its input files and jobs).

A campaign runs every selected workload under every selected scheduler variant, `reps` times.
Repetitions are interleaved: rep 0 of every workload and variant, then rep 1, ...; within a rep
the variants of a workload run in a seeded random order (seed in the spec labels), so a drift
of the machine over time lands on every variant alike. T_alone (eq. 4) comes from runs of each
distinct job type alone on the machine, `alone_reps` of them, placed at the start of the first
reps. `campaign(cfg)` is that order; the workflow gives each run a priority from it. With
`figures` (the paper profile) it holds only the runs some figure shows (corun.plan.figures).

Overhead runs (Sec. 3.5, "the overheads would not exceed 1% when TIMESLICE varies from 1s to
20s"): in every rep, the overhead workload (`overhead.workload`, by default the first of
`workloads`) also runs under dynamic_io with IO_BOUND_INTERVAL at its manifest's maximum, once
per TIMESLICE of `overhead.timeslices_s`: the daemon samples every job's /proc/<pid>/io and runs
its decision module each quantum, but no job is ever over the bound, so it suspends none. Against
the rep's baseline run of the workload, the makespan measures what the daemon's machinery costs
the jobs. They are shuffled in among the workload's variants of the rep.

Variant parameters: the section's timeslice_s (timeslice_graph_s for workloads with graph jobs)
and io_bound_mbps go to the paper's own variants (DYNAMIC_FAMILY) and to every variant named under
variant_params, where their manifests declare them; any other variant runs with its manifest's
defaults. variant_params.<variant> goes over them.
"""

from __future__ import annotations

import math
import random

from corun.errors import ConfigError
from corun.plan import figures
from corun.plan.base import graph_s, machine_cmps, x264_s
from corun.run import schedulers

NAME = "dynamic_io"
# The paper's own variants: its scheduler and corun's three variants of it, which share its daemon
# and the paper's two parameters. They take the section's timeslice_s and io_bound_mbps and write
# sched/state/decisions.jsonl and summary.json (the analysis expects them there).
DYNAMIC_FAMILY = ("dynamic_io", "dynamic_io_psi", "dynamic_io_fair", "cgroup_io_throttle")
SECTION_PARAMS = ("timeslice_s", "io_bound_mbps")
# the variant of the overhead runs, run with IO_BOUND_INTERVAL at its manifest's maximum
OVERHEAD_VARIANT = "dynamic_io"


# ----------------------------------------------------------------------------- configuration


def check(cfg: dict, source: str = "config") -> None:
    """Cross-key checks the schema cannot express; one-line ConfigError."""
    e = cfg[NAME]
    for i, w in enumerate(e["workloads"]):
        if w not in e["table3"]:
            raise ConfigError(
                source,
                f"{NAME}.workloads[{i}]",
                w,
                "a workload defined under dynamic_io.table3: " + ", ".join(sorted(e["table3"])),
            )
    for w, wl in sorted(e["table3"].items()):
        for i, app in enumerate(wl["apps"]):
            if app not in e["apps"]:
                raise ConfigError(
                    source,
                    f"{NAME}.table3.{w}.apps[{i}]",
                    app,
                    "an application defined under dynamic_io.apps: " + ", ".join(sorted(e["apps"])),
                )
    if e["baseline"] not in e["variants"]:
        raise ConfigError(
            source, f"{NAME}.baseline", e["baseline"], "one of dynamic_io.variants: " + ", ".join(e["variants"])
        )
    others = [v for v in e["variants"] if v != e["baseline"]]
    given = e["paper_variant"]
    if given is not None and given not in others:
        raise ConfigError(
            source,
            f"{NAME}.paper_variant",
            given,
            "one of dynamic_io.variants besides the baseline: " + (", ".join(others) or "none"),
        )
    if given is None and "dynamic_io" not in others and len(others) > 1:
        raise ConfigError(
            source,
            f"{NAME}.paper_variant",
            None,
            "the variant that stands for the paper's scheduler, one of " + ", ".join(others),
        )
    ow = e["overhead"]["workload"]
    if ow is not None and ow not in e["workloads"]:
        raise ConfigError(
            source,
            f"{NAME}.overhead.workload",
            ow,
            "one of dynamic_io.workloads (its baseline runs are the overhead runs' base): " + ", ".join(e["workloads"]),
        )
    for name in e["variant_params"]:
        # a variant the campaign leaves out keeps its parameters unused (a profile merged over
        # local.yaml may drop dynamic_io); a name that is no variant at all is a mistake
        if name not in e["variants"] and name not in schedulers.available():
            raise ConfigError(
                source,
                f"{NAME}.variant_params.{name}",
                "unknown variant",
                "one of dynamic_io.variants: " + ", ".join(e["variants"]),
            )


def batch_scale(e: dict) -> float:
    return e["batch_scale"] if e["batch_scale"] is not None else e["scale"]


def full_load(cfg: dict, wid: str) -> int:
    """Jobs that fill the machine at once: one per core for single-threaded D-TYPE jobs, one per
    CMP otherwise (section 4.1)."""
    e = cfg[NAME]
    wl = e["table3"][wid]
    _, cmps = machine_cmps(cfg)
    one_per_core = wl["type"] == "D" and all(e["apps"][a]["threads"] == 1 for a in wl["apps"])
    return sum(len(g) for g in cmps) if one_per_core else len(cmps)


def batch_length(cfg: dict, wid: str) -> int:
    """Table 3's batch length times batch_scale, but at least one full load of the machine (every
    batch of the paper starts by filling it) and at most Table 3's length; the calibration's
    length where it sized the batch in time (sizing.py: `calibrated_batch`)."""
    e = cfg[NAME]
    paper = e["table3"][wid]["batch_length"]
    if wid in (e.get("calibrated_batch") or {}):
        return min(paper, max(1, int(e["calibrated_batch"][wid])))
    return min(paper, max(int(round(paper * batch_scale(e))), full_load(cfg, wid), 1))


def overlay_catalog(raw: dict, section_schema: dict) -> dict:
    """A config's dynamic_io.apps and .table3 entries merged over the schema's defaults, key by
    key, so a profile can change one application's size without restating the catalog."""
    sec = (raw or {}).get(NAME)
    if not isinstance(sec, dict):
        return raw
    sec = dict(sec)
    props = section_schema["properties"]
    for key in ("apps", "table3"):
        given = sec.get(key)
        if not isinstance(given, dict):
            continue
        merged = {k: dict(v) for k, v in props[key]["default"].items()}
        for name, entry in given.items():
            merged[name] = {**merged.get(name, {}), **entry} if isinstance(entry, dict) else entry
        sec[key] = merged
    return {**raw, NAME: sec}


def scaled_app(e: dict, name: str) -> dict:
    """The application's parameters at `scale`, with a note saying how they differ from Table 3's."""
    app = dict(e["apps"][name])
    f = e["scale"]
    diffs = []

    def set_(key: str, value, shown=None) -> None:
        if value != app[key]:
            diffs.append(f"{key} {shown if shown is not None else value} (paper {app[key]})")
        app[key] = value

    if app["kind"] == "x264":
        set_("frames", max(1, int(round(app["frames"] * f))))
    elif app["kind"] == "graph":
        set_("scale", max(1, int(round(app["scale"] + math.log2(f)))))
    elif app["kind"] == "paper_similar":
        set_("paper_bytes", max(4096, int(app["paper_bytes"] * f)))
    elif app["kind"] == "kmeans":
        set_("points", max(app["clusters"], int(app["points"] * f)))
    else:
        set_("input_bytes", int(app["input_bytes"] * f))
        set_("alone_s", app["alone_s"] * f, f"{app['alone_s'] * f:.3g} s")
    note = ("scaled down: " + ", ".join(diffs)) if diffs else ""
    if app.get("note"):
        note = f"{note}; {app['note']}" if note else app["note"]
    app["scale_note"] = note
    return app


def workload_apps(cfg: dict, wid: str) -> list[str]:
    """The batch in submit order: one application per job (seeded mix for M-TYPE)."""
    e = cfg[NAME]
    wl = e["table3"][wid]
    n = batch_length(cfg, wid)
    apps = list(wl["apps"])
    seq = [apps[i % len(apps)] for i in range(n)]
    if len(apps) > 1:
        random.Random(f"{e['seed']}-mix-{wid}").shuffle(seq)
    return seq


def job_types(cfg: dict) -> list[str]:
    """Distinct applications of the selected workloads (one T_alone each)."""
    e = cfg[NAME]
    return sorted({a for w in e["workloads"] for a in workload_apps(cfg, w)})


def has_graph(cfg: dict, wid: str) -> bool:
    e = cfg[NAME]
    return any(e["apps"][a]["kind"] == "graph" for a in workload_apps(cfg, wid))


def timeslice(cfg: dict, wid: str) -> float:
    e = cfg[NAME]
    return e["timeslice_graph_s"] if has_graph(cfg, wid) else e["timeslice_s"]


def overhead_workload(e: dict) -> str | None:
    """The workload of the overhead runs, None when there are none (no TIMESLICE, no workload)."""
    if not e["overhead"]["timeslices_s"] or not e["workloads"]:
        return None
    return e["overhead"]["workload"] or e["workloads"][0]


def overhead_params(cfg: dict, wid: str, timeslice_s: float) -> dict:
    """An overhead run's parameters: the overhead variant's, at this TIMESLICE, with
    IO_BOUND_INTERVAL at its manifest's maximum (no job is ever over it)."""
    man = schedulers.load_manifest(schedulers.find(OVERHEAD_VARIANT, "config", f"{NAME}.overhead"))
    bound = man["params"]["io_bound_mbps"]["maximum"]
    return {**variant_params(cfg, OVERHEAD_VARIANT, wid), "timeslice_s": timeslice_s, "io_bound_mbps": bound}


def overhead_name(wid: str, timeslice_s: float, rep: int) -> str:
    return f"{wid}-{OVERHEAD_VARIANT}-overhead-ts{f'{timeslice_s:g}'.replace('.', 'p')}-r{rep}"


def campaign(cfg: dict) -> list[dict]:
    """Every run in the order it must be measured (see the module doc)."""
    e = cfg[NAME]
    order: list[dict] = []
    types = job_types(cfg)
    ow = overhead_workload(e)

    def alone(rep: int) -> None:
        for app in types:
            order.append({"kind": "alone", "app": app, "rep": rep, "name": f"alone-{app}-r{rep}"})

    for rep in range(e["reps"]):
        if rep < e["alone_reps"]:
            alone(rep)
        for wid in e["workloads"]:
            vs: list = list(e["variants"])
            if wid == ow:
                vs += [("overhead", t) for t in e["overhead"]["timeslices_s"]]
            random.Random(f"{e['seed']}-order-{rep}-{wid}").shuffle(vs)
            for pos, v in enumerate(vs):
                entry = {"kind": "campaign", "workload": wid, "variant": v, "rep": rep, "rep_order": pos,
                         "name": f"{wid}-{v}-r{rep}"}  # fmt: skip
                if isinstance(v, tuple):
                    entry.update(kind="overhead", variant=OVERHEAD_VARIANT, timeslice_s=v[1],
                                 name=overhead_name(wid, v[1], rep))  # fmt: skip
                order.append(entry)
    for rep in range(e["reps"], e["alone_reps"]):
        alone(rep)
    order = figures.select(order, e["figures"])  # the points the paper's figures show (paper profile)
    for i, entry in enumerate(order):
        entry["order"] = i
    return order


def run_names(cfg: dict) -> list[str]:
    return [entry["name"] for entry in campaign(cfg)]


def run_dirs(cfg: dict, results: str) -> list[str]:
    return [f"{results}/{NAME}/runs/{n}" for n in run_names(cfg)]


def paper_variant(given: str | None, variants, baseline: str) -> str | None:
    """The variant whose runs stand for the paper's scheduler ("Dynamic") in the claims:
    dynamic_io.paper_variant when given; else dynamic_io when the campaign runs it; else the one
    variant besides the baseline (a campaign of a new variant against linux); else None."""
    if given is not None:
        return given
    others = [v for v in variants if v != baseline]
    if "dynamic_io" in others:
        return "dynamic_io"
    return others[0] if len(others) == 1 else None


def takes_section_params(e: dict, variant: str) -> bool:
    """Whether the section's timeslice_s, timeslice_graph_s and io_bound_mbps go to a variant:
    to the paper's own variants and to every variant named under variant_params. Any other
    variant runs with its manifest's defaults, even one that extends dynamic_io and so declares
    both parameters: the section's values are the paper's, not a new variant's."""
    return variant in DYNAMIC_FAMILY or variant in e["variant_params"]


def variant_params(cfg: dict, variant: str, wid: str | None, source: str = "config") -> dict:
    """TIMESLICE and IO_BOUND_INTERVAL where the variant's manifest declares them and the
    variant takes the section's values (takes_section_params), then
    dynamic_io.variant_params.<variant> over them."""
    e = cfg[NAME]
    man = schedulers.load_manifest(schedulers.find(variant, source, f"{NAME}.variants"))
    params = {}
    if takes_section_params(e, variant):
        if "timeslice_s" in man["params"]:
            params["timeslice_s"] = timeslice(cfg, wid) if wid else e["timeslice_s"]
        if "io_bound_mbps" in man["params"]:
            params["io_bound_mbps"] = e["io_bound_mbps"]
    params.update(e["variant_params"].get(variant, {}))
    return params


def effective_params(cfg: dict, variant: str, wid: str | None, source: str = "config") -> dict:
    """timeslice_s and io_bound_mbps as the variant will run them (None when it has no such
    parameter): the values it is given, else its manifest's defaults; for the run labels."""
    man = schedulers.load_manifest(schedulers.find(variant, source, f"{NAME}.variants"))
    given = variant_params(cfg, variant, wid, source)
    return {
        k: given.get(k, (man["params"].get(k) or {}).get("default")) if k in man["params"] else None
        for k in SECTION_PARAMS
    }


def app_s(app: dict) -> float:
    """Rough time of one job of a (scaled) application alone, for the plan."""
    kind = app["kind"]
    if kind == "x264":
        return x264_s(app)
    if kind == "graph":
        return graph_s(app["scale"], app["edgefactor"], app.get("roots", 8))
    if kind == "paper_similar":  # reading and hashing at about 100 MB/s
        return (app["others"] + 1) * app["paper_bytes"] / 100e6
    if kind == "kmeans":  # re-reads the file each iteration at about 200 MB/s, 2 ns per distance term
        size = app["points"] * app["dims"] * 4
        return app["iterations"] * (size / 200e6 + app["points"] * app["dims"] * app["clusters"] * 2e-9)
    return app["alone_s"]


def fill_from_manifest(cfg: dict, source: str) -> None:
    """timeslice_s and io_bound_mbps left null take the dynamic_io manifest's defaults."""
    e = cfg[NAME]
    if e["timeslice_s"] is None or e["io_bound_mbps"] is None:
        declared = schedulers.load_manifest(schedulers.find("dynamic_io", source, f"{NAME}.variants"))["params"]
        for key in ("timeslice_s", "io_bound_mbps"):
            if e[key] is None:
                e[key] = declared[key]["default"]


def params_to_check(cfg: dict) -> list[tuple[str, str, str, object]]:
    """(config key, variant, param, value) of every parameter a run of the campaign would pass."""
    e = cfg[NAME]
    out = []
    for v in e["variants"]:
        out.append((f"{NAME}.variants", v, None, None))
        for p, value in e["variant_params"].get(v, {}).items():
            out.append((f"{NAME}.variant_params.{v}.{p}", v, p, value))
        declared = schedulers.load_manifest(schedulers.find(v, "config", f"{NAME}.variants"))["params"]
        if not takes_section_params(e, v):
            continue
        if "timeslice_s" in declared and "timeslice_s" not in e["variant_params"].get(v, {}):
            for wid in e["workloads"]:
                key = "timeslice_graph_s" if has_graph(cfg, wid) else "timeslice_s"
                out.append((f"{NAME}.{key}", v, "timeslice_s", e[key]))
        if "io_bound_mbps" in declared and "io_bound_mbps" not in e["variant_params"].get(v, {}):
            out.append((f"{NAME}.io_bound_mbps", v, "io_bound_mbps", e["io_bound_mbps"]))
    if overhead_workload(e) is not None:
        out.append((f"{NAME}.overhead", OVERHEAD_VARIANT, None, None))
        for i, t in enumerate(e["overhead"]["timeslices_s"]):
            out.append((f"{NAME}.overhead.timeslices_s[{i}]", OVERHEAD_VARIANT, "timeslice_s", t))
    return out

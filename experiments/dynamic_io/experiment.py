"""The evaluation of paper 000 section 4: the dynamic I/O-aware scheduler against Linux on the
15 workloads of Table 3 (Figs. 16-24).

A campaign runs every selected workload under every selected scheduler variant, `reps` times,
in the interleaved order `campaign(cfg)` gives (experiments/dynamic_io/plan.py says how it is
drawn, and where the runs of T_alone, eq. 4, and the overhead runs of Sec. 3.5 stand in it); the
workflow gives each run a priority from that order.

Workloads (`dynamic_io.table3`, defaults in experiments/dynamic_io/config.schema.json) name their
applications (`dynamic_io.apps`). A D-TYPE workload duplicates one application; an M-TYPE one
is a seeded random mix of its applications, each about equally often, the same sequence for
every variant and rep. The runner's FCFS queue starts jobs in submit order as cores free up:
single-threaded D-TYPE jobs take one core each, multi-threaded jobs and every M-TYPE job take
a whole CMP (paper section 4.1). `scale` shrinks inputs, `batch_scale` batch lengths (both
recorded in the labels and in each job's scale_note).

Inputs are generated once under <data>/inputs/<app>/, one file (set) per job of the longest
batch that uses the application, so no job reads what another left in the page cache; their
cached pages are dropped before every run (device.evict), each job drops its own as it starts
and the kernels drop them again before reading. The calibrate step sizes each workload's batch
to last `min_intervals` monitor intervals and makes the inputs of the longer batches
(experiments/dynamic_io/sizing.py).

  python -m experiments data dynamic_io --config C --data-dir D
  python -m experiments calibrate dynamic_io --config C --data-dir D --out calibration.json
  python -m experiments specs dynamic_io --config C --calibration F --data-dir D --out-dir S
"""

from __future__ import annotations

from pathlib import Path

import yaml

from corun.plan import figures
from corun.plan.base import RUN_OVERHEAD_S, Experiment
from corun.plan.device_section import spec_device
from corun.util import atomic_write_json, atomic_write_text, lazy_module
from experiments.dynamic_io import sizing
from experiments.dynamic_io.inputs import (  # noqa: F401 - the plan's steps, importable from here
    cores_for,
    input_files,
    job_for,
    job_inputs,
    layout,
    make_data,
    read_bytes,
)
from experiments.dynamic_io.plan import (  # noqa: F401 - the plan's configuration, importable from here
    DYNAMIC_FAMILY,
    NAME,
    OVERHEAD_VARIANT,
    app_s,
    batch_length,
    batch_scale,
    campaign,
    check,
    effective_params,
    fill_from_manifest,
    full_load,
    job_types,
    overhead_params,
    overhead_workload,
    overlay_catalog,
    paper_variant,
    params_to_check,
    run_names,
    scaled_app,
    takes_section_params,
    variant_params,
    workload_apps,
)
from experiments.dynamic_io.sizing import calibrate  # noqa: F401 - the calibrate step, importable from here

# pandas and SciPy: loaded by the analyze step only (the data and specs steps need neither)

# ----------------------------------------------------------------------------- specs


def make_spec(cfg: dict, cal: dict, entry: dict, data_dir: Path) -> dict:
    e = cfg[NAME]
    lay = layout(cfg)
    labels = {
        "experiment": NAME,
        "run_kind": entry["kind"],
        "rep": entry["rep"],
        "order": entry["order"],
        "seed": e["seed"],
        "scale": e["scale"],
        "batch_scale": batch_scale(e),
    }
    jobs = []
    if entry["kind"] == "alone":
        app = entry["app"]
        wtype = "D"
        jobs.append(job_for(cfg, cal, app, "duplicated", 0, data_dir, cores_for(e, app, wtype, lay["cmp_cores"])))
        reads = job_inputs(e, app, "duplicated", 0, data_dir)
        jobs[0]["labels"]["job_index"] = 0
        variant, params = e["baseline"], variant_params(cfg, e["baseline"], None)
        labels.update(workload="alone", job_type=app, variant=variant, batch_length=1)
    else:
        wid, variant = entry["workload"], entry["variant"]
        wl = e["table3"][wid]
        ns = "different" if wl["inputs"] == "different" else "duplicated"
        seen: dict[str, int] = {}
        reads = []
        for j, app in enumerate(workload_apps(cfg, wid)):
            i = seen.get(app, 0)
            seen[app] = i + 1
            reads += job_inputs(e, app, ns, i, data_dir)
            job = job_for(cfg, cal, app, ns, i, data_dir, cores_for(e, app, wl["type"], lay["cmp_cores"]))
            job["name"] = f"j{j:03d}-{job['name']}"
            job["labels"]["job_index"] = j
            jobs.append(job)
        params = variant_params(cfg, variant, wid)
        shown = effective_params(cfg, variant, wid)
        if entry["kind"] == "overhead":  # the daemon samples and decides, no job over its bound
            params = overhead_params(cfg, wid, entry["timeslice_s"])
            shown = {k: params[k] for k in ("timeslice_s", "io_bound_mbps")}
        labels.update(
            workload=wid,
            workload_id=int(wid[1:]),
            wtype=wl["type"],
            variant=variant,
            rep_order=entry["rep_order"],
            batch_length=len(jobs),
            paper_batch_length=wl["batch_length"],
            input_set=wl["input_set"],
            timeslice_s=shown["timeslice_s"],
            io_bound_mbps=shown["io_bound_mbps"],
        )
        if entry["kind"] == "campaign":  # its latencies are means over iostat's intervals
            labels["min_measure_s"] = sizing.min_measure_s(cfg)
            labels["calibrated_batch_length"] = (e.get("calibrated_batch") or {}).get(wid)
    spec = {
        "name": f"{NAME}-{entry['name']}",
        "labels": labels,
        "placement": {"cmp": dict(cfg["cmp"])},
        "jobs": jobs,
        "device": spec_device(e, data_dir, list(dict.fromkeys(reads)), e["drop_caches"], [data_dir / "out"]),
        "memory": {"limit_bytes": e["memory_limit_bytes"]},
        "scheduler": {"name": variant, "params": params},
        "monitors": dict(cfg["monitors"]),
    }
    if entry["kind"] == "campaign":  # a short run measured again longer (sizing.py)
        spec["remeasure"] = {**cfg["remeasure"], "min_measure_s": sizing.min_measure_s(cfg)}
    return spec


def write_specs(cfg: dict, cal: dict, data_dir: Path, out_dir: Path) -> list[dict]:
    """Every run's spec, each workload's batch at the calibration's length (sizing.py)."""
    cfg = sizing.sized(cfg, cal)
    order = campaign(cfg)
    for entry in order:
        spec = make_spec(cfg, cal, entry, data_dir)
        atomic_write_text(out_dir / f"{entry['name']}.yaml", yaml.safe_dump(spec, sort_keys=False))
    atomic_write_json(out_dir / "campaign.json", {"seed": cfg[NAME]["seed"], "order": order})
    return order


class DynamicIo(Experiment):
    name = NAME
    calibrates = True
    step_inputs = ("kernels/build/sensitivity_ranking",)
    spec_files = ("campaign.json",)

    def run_priority(self, cfg: dict) -> dict[str, int]:
        """Runs are measured in the campaign's interleaved order: each run's priority is its
        distance from the end of the campaign, and measuring rules run one at a time, so of the
        runs still to measure the earliest always starts. Runs do not depend on each other: an
        interrupted campaign keeps its finished runs and measures only the missing ones, in order."""
        names = run_names(cfg)
        return {name: len(names) - i for i, name in enumerate(names)}

    def prepare_config(self, raw: dict, section_schema: dict) -> dict:
        return overlay_catalog(raw, section_schema)

    def check(self, cfg: dict, source: str) -> None:
        check(cfg, source)
        fill_from_manifest(cfg, source)
        figures.check(campaign({**cfg, NAME: {**cfg[NAME], "figures": None}}), cfg[NAME]["figures"], source, NAME)

    def variant_params(self, cfg: dict, source: str) -> list[tuple[str, str, str, object]]:
        return params_to_check(cfg)

    def data(self, cfg: dict, data_dir: Path) -> str:
        info = make_data(cfg, data_dir)
        return f"{len(info['made'])} input file(s) written in {data_dir}"

    def calibrate(self, cfg: dict, data_dir: Path) -> dict:
        return calibrate(cfg, data_dir)

    def specs(self, cfg: dict, calibration: dict, data_dir: Path, out_dir: Path) -> int:
        return len(write_specs(cfg, calibration, data_dir, out_dir))

    def run_names(self, cfg: dict) -> list[str]:
        return run_names(cfg)

    def run_figures(self, cfg: dict) -> dict[str, list[str]]:
        return {entry["name"]: figures.served(entry, cfg[NAME]["figures"]) for entry in campaign(cfg)}

    def estimate(self, cfg: dict) -> dict:
        """A workload's jobs, its batch sized in time by the plan's job times (spread over the cores
        it may use, or its reads at the run's read cap when longer: sizing.batch_s), plus each
        alone run."""
        e = cfg[NAME]
        planned = {a: app_s(scaled_app(e, a)) for a in job_types(cfg)}  # the calibration times them
        reads = {a: read_bytes(e, a) for a in job_types(cfg)}
        batches = {w: sizing.batch_for(cfg, w, planned, reads) for w in e["workloads"]}
        cfg = sizing.sized(cfg, {"batch_length": batches})
        e = cfg[NAME]
        runs = campaign(cfg)
        secs = 0.0
        for entry in runs:
            if entry["kind"] == "alone":
                secs += app_s(scaled_app(e, entry["app"])) + RUN_OVERHEAD_S
                continue
            apps = workload_apps(cfg, entry["workload"])
            secs += sizing.batch_s(cfg, entry["workload"], apps, planned, reads)["expected_s"] + RUN_OVERHEAD_S
        return {"runs": len(runs), "seconds": secs, "k_dropped": []}

    # ----------------------------------------------------------------- its analysis (analysis.py)
    # analyse(inputs), JOB_TEXT, RUN_TEXT: pandas and SciPy, loaded by the analyze step only
    analysis = lazy_module("experiments.dynamic_io.analysis")


EXPERIMENT = DynamicIo()

"""The evaluation of paper 000 section 4: the dynamic I/O-aware scheduler against Linux on the
15 workloads of Table 3 (Figs. 16-24).

A campaign runs every selected workload under every selected scheduler variant, `reps` times.
Repetitions are interleaved: rep 0 of every workload and variant, then rep 1, ...; within a rep
the variants of a workload run in a seeded random order (seed in the spec labels), so a drift
of the machine over time lands on every variant alike. T_alone (eq. 4) comes from runs of each
distinct job type alone on the machine, `alone_reps` of them, placed at the start of the first
reps. `campaign(cfg)` is that order; the workflow gives each run a priority from it.

Workloads (`dynamic_io.table3`, defaults in experiments/dynamic_io/config.schema.json) name their
applications (`dynamic_io.apps`). A D-TYPE workload duplicates one application; an M-TYPE one
is a seeded random mix of its applications, each about equally often, the same sequence for
every variant and rep. The runner's FCFS queue starts jobs in submit order as cores free up:
single-threaded D-TYPE jobs take one core each, multi-threaded jobs and every M-TYPE job take
a whole CMP (paper section 4.1). `scale` shrinks inputs, `batch_scale` batch lengths (both
recorded in the labels and in each job's scale_note).

Inputs are generated once under <data>/inputs/<app>/, one file (set) per job of the longest
batch that uses the application, so no job reads what another left in the page cache; their
cached pages are dropped before every run (device.evict) and the kernels drop them again
before reading.

  python -m experiments data dynamic_io --config C --data-dir D
  python -m experiments calibrate dynamic_io --config C --data-dir D --out calibration.json
  python -m experiments specs dynamic_io --config C --calibration F --data-dir D --out-dir S
"""

from __future__ import annotations

import math
import random
import shutil
from pathlib import Path

import numpy as np
import yaml

from corun.errors import ConfigError
from corun.plan.base import RUN_OVERHEAD_S, Experiment, graph_s, machine_cmps, x264_s
from corun.plan.calibration import calibrate_reader, nops_for, write_calibration_files
from corun.plan.device import run_device
from corun.run import schedulers, workloads
from corun.run.inputs import PRESETS, fits, make_y4m, unpack_tar, write_random, y4m_bytes
from corun.util import atomic_file, atomic_write_json, atomic_write_text

NAME = "dynamic_io"
CALIBRATION_BYTES = 32 << 20
CALIBRATION_NOPS = 20_000_000
# Variants of the dynamic family: they take timeslice_s and io_bound_mbps and write
# sched/state/decisions.jsonl and summary.json (the analysis expects them there).
DYNAMIC_FAMILY = ("dynamic_io", "dynamic_io_psi", "dynamic_io_fair", "cgroup_io_throttle")
WORDS = 4096  # vocabulary of the generated papers


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
    batch of the paper starts by filling it) and at most Table 3's length."""
    e = cfg[NAME]
    paper = e["table3"][wid]["batch_length"]
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


def campaign(cfg: dict) -> list[dict]:
    """Every run in the order it must be measured (see the module doc)."""
    e = cfg[NAME]
    order: list[dict] = []
    types = job_types(cfg)

    def alone(rep: int) -> None:
        for app in types:
            order.append({"kind": "alone", "app": app, "rep": rep, "name": f"alone-{app}-r{rep}"})

    for rep in range(e["reps"]):
        if rep < e["alone_reps"]:
            alone(rep)
        for wid in e["workloads"]:
            vs = list(e["variants"])
            random.Random(f"{e['seed']}-order-{rep}-{wid}").shuffle(vs)
            for pos, v in enumerate(vs):
                order.append(
                    {
                        "kind": "campaign",
                        "workload": wid,
                        "variant": v,
                        "rep": rep,
                        "rep_order": pos,
                        "name": f"{wid}-{v}-r{rep}",
                    }
                )
    for rep in range(e["reps"], e["alone_reps"]):
        alone(rep)
    for i, entry in enumerate(order):
        entry["order"] = i
    return order


def run_names(cfg: dict) -> list[str]:
    return [entry["name"] for entry in campaign(cfg)]


def run_dirs(cfg: dict, results: str) -> list[str]:
    return [f"{results}/{NAME}/runs/{n}" for n in run_names(cfg)]


def variant_params(cfg: dict, variant: str, wid: str | None, source: str = "config") -> dict:
    """TIMESLICE and IO_BOUND_INTERVAL where the variant's manifest declares them, then
    dynamic_io.variant_params.<variant> over them."""
    e = cfg[NAME]
    man = schedulers.load_manifest(schedulers.find(variant, source, f"{NAME}.variants"))
    params = {}
    if "timeslice_s" in man["params"]:
        params["timeslice_s"] = timeslice(cfg, wid) if wid else e["timeslice_s"]
    if "io_bound_mbps" in man["params"]:
        params["io_bound_mbps"] = e["io_bound_mbps"]
    params.update(e["variant_params"].get(variant, {}))
    return params


# ----------------------------------------------------------------------------- inputs


def layout(cfg: dict) -> dict:
    """CMPs, cores per job, and how many input file sets each application needs."""
    e = cfg[NAME]
    grouping, cmps = machine_cmps(cfg)
    need: dict[str, int] = {}
    for wid in e["workloads"]:
        ns = "different" if e["table3"][wid]["inputs"] == "different" else "duplicated"
        counts: dict[str, int] = {}
        for app in workload_apps(cfg, wid):
            counts[app] = counts.get(app, 0) + 1
        for app, c in counts.items():
            key = f"{app}/{ns}"
            need[key] = max(need.get(key, 0), c)
    for app in job_types(cfg):  # the alone runs read set 0 of the duplicated inputs
        need[f"{app}/duplicated"] = max(need.get(f"{app}/duplicated", 0), 1)
    return {
        "grouping": grouping,
        "cmps": cmps,
        "cmp_cores": min(len(g) for g in cmps),
        "slots": sum(len(g) for g in cmps),
        "inputs": dict(sorted(need.items())),
    }


def inputs_dir(data_dir: Path) -> Path:
    return data_dir / "inputs"


def input_files(e: dict, app_name: str, ns: str, i: int, data_dir: Path) -> list[Path]:
    """The input files of job set i of an application ([] when it reads none)."""
    app = e["apps"][app_name]
    d = inputs_dir(data_dir) / app_name
    if app["kind"] == "x264":
        return [d / f"clip_{i:04d}.y4m"]
    if app["kind"] == "paper_similar":
        return [d / f"{ns}_{i:04d}_{k}.txt" for k in range(app["others"] + 1)]
    if app["kind"] == "kmeans":
        return [d / f"{ns}_{i:04d}.f32"]
    if app["kind"] == "file_reader":
        return [d / f"in_{i:04d}.dat"]
    return []


def job_inputs(e: dict, app_name: str, ns: str, i: int, data_dir: Path) -> list[Path]:
    """What job set i of an application reads under the data folder: its input files, PARSEC's
    unpacked input set when the real program runs, the graph folder of a graph job. On an
    emulated disk a run's disk holds these only, not every workload's inputs."""
    app = e["apps"][app_name]
    out = input_files(e, app_name, ns, i, data_dir)
    if parsec_of(app) is not None:
        out.append(parsec_run_dir(app_name, app, i, data_dir))
    if app["kind"] == "graph":
        out.append(data_dir / "graph")
    return out


def parsec_of(app: dict, threads: int | None = None):
    """PARSEC's own program for a file_reader application naming a parsec_package, when the
    parsec role built it (corun.run.workloads.parsec_program), else None: the stand-in runs."""
    pkg = app.get("parsec_package")
    if app["kind"] != "file_reader" or not pkg:
        return None
    return workloads.parsec_program(pkg, app.get("input", "simlarge"), threads or app["threads"])


def parsec_run_dir(app_name: str, app: dict, i: int, data_dir: Path) -> Path:
    """Job set i's working folder: PARSEC's input set unpacked, as parsecmgmt runs it."""
    return inputs_dir(data_dir) / app_name / f"parsec_{app.get('input', 'simlarge')}_{i:04d}"


def _paper_text(path: Path, size: int, seed: int) -> None:
    """A document of about `size` bytes: words of a fixed vocabulary, Zipf-distributed."""
    rng = np.random.default_rng(seed)
    vocab_rng = np.random.default_rng(12345)
    syll = ["ka", "lo", "mi", "ne", "ru", "sa", "to", "vi", "ze", "po", "da", "qu"]
    vocab = [
        "".join(syll[j] for j in vocab_rng.integers(0, len(syll), int(vocab_rng.integers(2, 5)))) for _ in range(WORDS)
    ]
    vb = [w.encode() for w in vocab]
    written = 0
    with atomic_file(path, "wb") as fh:
        while written < size:
            idx = np.minimum(rng.zipf(1.2, 65536), WORDS) - 1
            chunk = b" ".join(vb[j] for j in idx) + b"\n"
            chunk = chunk[: size - written]
            fh.write(chunk)
            written += len(chunk)


def _points(path: Path, points: int, dims: int, clusters: int, seed: int) -> None:
    """float32 points around `clusters` random centers."""
    rng = np.random.default_rng(seed)
    centers = rng.normal(0.0, 20.0, (clusters, dims))
    with atomic_file(path, "wb") as fh:
        left = points
        while left:
            n = min(left, 1 << 18)
            x = centers[rng.integers(0, clusters, n)] + rng.normal(0.0, 1.0, (n, dims))
            fh.write(x.astype("<f4").tobytes())
            left -= n


def make_data(cfg: dict, data_dir: Path) -> dict:
    """Every input file set of the campaign; existing files of the right size are kept."""
    e = cfg[NAME]
    lay = layout(cfg)
    made: list[str] = []
    (data_dir / "graph").mkdir(parents=True, exist_ok=True)
    (data_dir / "out").mkdir(parents=True, exist_ok=True)
    for key, count in lay["inputs"].items():
        name, ns = key.split("/")
        app = scaled_app(e, name)
        d = inputs_dir(data_dir) / name
        d.mkdir(parents=True, exist_ok=True)
        if app["kind"] == "x264":
            if workloads.parsec_input(app["input"]):
                continue
            w, h = PRESETS[app["input"]]
            size = y4m_bytes(w, h, app["frames"])
            master = d / f"master_{app['frames']}f.y4m"
            if not fits(master, size):
                make_y4m(master, w, h, app["frames"])
            for i in range(count):
                p = input_files(e, name, ns, i, data_dir)[0]
                if not fits(p, size):
                    shutil.copyfile(master, p)
                    made.append(str(p))
        elif app["kind"] == "paper_similar":
            size = app["paper_bytes"]
            for i in range(count):
                for k, p in enumerate(input_files(e, name, ns, i, data_dir)):
                    if fits(p, size):
                        continue
                    seed = (k + 1) if ns == "duplicated" else 1000 + i * 100 + k
                    master = d / f"master_{k}_{size}.txt"
                    if ns == "duplicated":
                        if not fits(master, size):
                            _paper_text(master, size, seed)
                        shutil.copyfile(master, p)
                    else:
                        _paper_text(p, size, seed)
                    made.append(str(p))
        elif app["kind"] == "kmeans":
            size = app["points"] * app["dims"] * 4
            master = d / f"master_{app['points']}x{app['dims']}.f32"
            for i in range(count):
                p = input_files(e, name, ns, i, data_dir)[0]
                if fits(p, size):
                    continue
                if ns == "duplicated":
                    if not fits(master, size):
                        _points(master, app["points"], app["dims"], app["clusters"], 7)
                    shutil.copyfile(master, p)
                else:
                    _points(p, app["points"], app["dims"], app["clusters"], 100 + i)
                made.append(str(p))
        elif (prog := parsec_of(app)) is not None:
            for i in range(count):
                run_dir = parsec_run_dir(name, app, i, data_dir)
                mark = run_dir / ".corun-unpacked"
                if not mark.exists():
                    unpack_tar(prog.input_tar, run_dir)
                    mark.write_text(f"{prog.input_tar}\n")
                    made.append(str(run_dir))
        elif app["kind"] == "file_reader":
            size = _reader_bytes(e, app)
            master = d / f"master_{size}.dat"
            for i in range(count):
                p = input_files(e, name, ns, i, data_dir)[0]
                if fits(p, size):
                    continue
                if not fits(master, size):
                    write_random(master, size)
                shutil.copyfile(master, p)
                made.append(str(p))
    info = {**lay, "made": made, "job_types": job_types(cfg)}
    atomic_write_json(data_dir / "layout.json", info)
    return info


def _reader_bytes(e: dict, app: dict) -> int:
    """File size of a file_reader stand-in: whole blocks, at least one (0 bytes: one block read)."""
    bs = e["block_size"]
    return max(bs, (app["input_bytes"] // bs) * bs)


def calibrate(cfg: dict, data_dir: Path) -> dict:
    """t_read and t_nop of the sensitivity_ranking kernel, which sets the read rate of the
    file_reader stand-ins (only when the campaign has one)."""
    e = cfg[NAME]
    if not any(e["apps"][a]["kind"] == "file_reader" and not parsec_of(e["apps"][a]) for a in job_types(cfg)):
        return {"needed": False}
    cal_dir = data_dir / "calibration"
    write_calibration_files(cal_dir, CALIBRATION_BYTES, e["block_size"])
    return {"needed": True, **calibrate_reader(cal_dir, e["block_size"], "evict", CALIBRATION_NOPS)}


# ----------------------------------------------------------------------------- specs


def job_for(cfg: dict, cal: dict, app_name: str, ns: str, i: int, data_dir: Path, cores: int) -> dict:
    e = cfg[NAME]
    app = scaled_app(e, app_name)
    files = [str(p.resolve()) for p in input_files(e, app_name, ns, i, data_dir)]
    labels = {"app": app_name, "threads": app["threads"], "input_index": i}
    cwd = None
    if app["kind"] == "x264":
        clip = workloads.parsec_input(app["input"]) or Path(files[0])
        out = (data_dir / "out" / f"{app_name}_{ns}_{i:04d}.264").resolve()
        t = workloads.x264(app["input"], Path(clip), out, app["threads"])
    elif app["kind"] == "graph":
        t = workloads.graph(app["scale"], app["edgefactor"], (data_dir / "graph").resolve(), app.get("roots", 8))
    elif app["kind"] == "paper_similar":
        cmd = [workloads.kernel("paper_similar"), "--paper", files[0]]
        for f in files[1:]:
            cmd += ["--other", f]
        cmd += ["--threads", str(app["threads"]), "--block-size", str(e["block_size"])]
        t = workloads.JobTemplate(cmd, {"binary": "corun paper_similar"}, result="json")
    elif app["kind"] == "kmeans":
        cmd = [
            workloads.kernel("kmeans"),
            "--data",
            files[0],
            "--dims",
            str(app["dims"]),
            "--clusters",
            str(app["clusters"]),
            "--iterations",
            str(app["iterations"]),
            "--threads",
            str(app["threads"]),
            "--block-size",
            str(e["block_size"]),
            "--mode",
            "stream",
        ]
        t = workloads.JobTemplate(cmd, {"binary": "corun kmeans"}, result="json")
    elif (prog := parsec_of(app)) is not None:
        t = prog.template
        labels["parsec_input"] = app.get("input", "simlarge")
        cwd = str(parsec_run_dir(app_name, app, i, data_dir).resolve())
    else:
        size = _reader_bytes(e, app)
        rate = app["input_bytes"] / 1e6 / app["alone_s"]
        nops, ok = nops_for(rate, {**cal, "block_size": e["block_size"]}, app["alone_s"])
        cmd = [
            workloads.kernel("sensitivity_ranking"),
            "--file",
            files[0],
            "--block-size",
            str(e["block_size"]),
            "--nops",
            str(nops),
            "--cache-mode",
            "evict",
        ]
        t = workloads.JobTemplate(cmd, {"binary": "corun sensitivity_ranking (file reader)"}, result="json")
        labels.update(target_mb_s=round(rate, 6), target_attainable=ok, file_bytes=size)
    labels.update(t.labels)
    labels["stands_in_for"] = app["stands_in_for"]
    labels["scale_note"] = (
        app["scale_note"] if cwd is None else f"PARSEC's own {app.get('input', 'simlarge')} input set, not scaled"
    )
    job = {
        "name": f"{app_name}-{ns[:3]}{i}",
        "cmd": t.cmd,
        "env": t.env,
        "cores": cores,
        "result": t.result,
        "labels": labels,
    }
    if cwd:
        job["cwd"] = cwd
    return job


def cores_for(e: dict, app_name: str, wtype: str, cmp_cores: int) -> int:
    """One core for a single-threaded D-TYPE job; a whole CMP for the others (section 4.1)."""
    return 1 if wtype == "D" and e["apps"][app_name]["threads"] == 1 else cmp_cores


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
        labels.update(
            workload=wid,
            workload_id=int(wid[1:]),
            wtype=wl["type"],
            variant=variant,
            rep_order=entry["rep_order"],
            batch_length=len(jobs),
            paper_batch_length=wl["batch_length"],
            input_set=wl["input_set"],
            timeslice_s=params.get("timeslice_s"),
            io_bound_mbps=params.get("io_bound_mbps"),
        )
    return {
        "name": f"{NAME}-{entry['name']}",
        "labels": labels,
        "placement": {"cmp": dict(cfg["cmp"])},
        "jobs": jobs,
        "device": run_device(e, data_dir, list(dict.fromkeys(reads)), e["drop_caches"], [data_dir / "out"]),
        "memory": {"limit_bytes": e["memory_limit_bytes"]},
        "scheduler": {"name": variant, "params": params},
        "monitors": dict(cfg["monitors"]),
    }


def write_specs(cfg: dict, cal: dict, data_dir: Path, out_dir: Path) -> list[dict]:
    order = campaign(cfg)
    for entry in order:
        spec = make_spec(cfg, cal, entry, data_dir)
        atomic_write_text(out_dir / f"{entry['name']}.yaml", yaml.safe_dump(spec, sort_keys=False))
    atomic_write_json(out_dir / "campaign.json", {"seed": cfg[NAME]["seed"], "order": order})
    return order


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
        if "timeslice_s" in declared and "timeslice_s" not in e["variant_params"].get(v, {}):
            for wid in e["workloads"]:
                key = "timeslice_graph_s" if has_graph(cfg, wid) else "timeslice_s"
                out.append((f"{NAME}.{key}", v, "timeslice_s", e[key]))
        if "io_bound_mbps" in declared and "io_bound_mbps" not in e["variant_params"].get(v, {}):
            out.append((f"{NAME}.io_bound_mbps", v, "io_bound_mbps", e["io_bound_mbps"]))
    return out


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

    def analysis_args(self, cfg: dict, results: str) -> list[str]:
        e = cfg[NAME]
        return ["--baseline", e["baseline"], "--paper-variant", e["paper_variant"], "--tol-pct", str(e["tol_pct"])]

    def prepare_config(self, raw: dict, section_schema: dict) -> dict:
        return overlay_catalog(raw, section_schema)

    def check(self, cfg: dict, source: str) -> None:
        check(cfg, source)
        fill_from_manifest(cfg, source)

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

    def estimate(self, cfg: dict) -> dict:
        """A workload's jobs spread over the cores it may use, plus each alone run."""
        e = cfg[NAME]
        runs = campaign(cfg)
        secs = 0.0
        for entry in runs:
            if entry["kind"] == "alone":
                secs += app_s(scaled_app(e, entry["app"])) + RUN_OVERHEAD_S
                continue
            apps = workload_apps(cfg, entry["workload"])
            work = sum(app_s(scaled_app(e, a)) for a in apps)
            secs += work / max(1, min(len(apps), full_load(cfg, entry["workload"]))) + RUN_OVERHEAD_S
        return {"runs": len(runs), "seconds": secs, "k_dropped": []}


EXPERIMENT = DynamicIo()

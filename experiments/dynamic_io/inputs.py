"""The dynamic_io campaign's input files, its calibration and the jobs of its runs.

Inputs are generated once under <data>/inputs/<app>/, one file (set) per job of the longest
batch that uses the application (the calibrate step's batches included: sizing.py), so no job
reads what another left in the page cache; their cached pages are dropped before every run
(device.evict), each job drops its own as it starts (its `evict`: a copy repeated in a run
measured again longer reads from the disk again) and the kernels drop them again before
reading. A job set of an application whose PARSEC package the parsec role built runs PARSEC's
own program on its unpacked input set; the others run corun's kernels or stand-ins.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np

from corun.plan.base import machine_cmps
from corun.plan.calibration import nops_for
from corun.run import parsec as parsec_runs
from corun.run import workloads
from corun.run.inputs import PRESETS, fits, make_y4m, unpack_tar, write_random, y4m_bytes
from corun.util import atomic_file, atomic_write_json, cli_options
from experiments.dynamic_io.plan import NAME, job_types, scaled_app, workload_apps

CALIBRATION_BYTES = 32 << 20
CALIBRATION_NOPS = 20_000_000
WORDS = 4096  # vocabulary of the generated papers


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


def parsec_generated(prog, data_dir: Path) -> Path:
    """The cached generated input of a PARSEC program (corun.run.parsec.generate), made once."""
    file_name, kind = prog.generated
    path = inputs_dir(data_dir) / "parsec" / kind / file_name
    size = parsec_runs.generated_bytes(kind)
    if not (fits(path, size) if size else path.exists()):
        parsec_runs.generate(kind, path)
    return path


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


def make_data(cfg: dict, data_dir: Path, record: bool = True) -> dict:
    """Every input file set of the campaign; existing files of the right size are kept. The data
    step records the layout (layout.json, its output); the calibrate step, making the sets of
    the batches it lengthened, does not (record=False)."""
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
                    run_dir.mkdir(parents=True, exist_ok=True)
                    if prog.input_tar is not None:
                        unpack_tar(prog.input_tar, run_dir)
                    if prog.generated is not None:  # seeded, made once, a copy per job set
                        shutil.copyfile(parsec_generated(prog, data_dir), run_dir / prog.generated[0])
                    mark.write_text(f"{prog.input_tar or prog.generated}\n")
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
    if record:
        atomic_write_json(data_dir / "layout.json", info)
    return info


def read_bytes(e: dict, app_name: str, data_dir: Path | None = None) -> int:
    """Bytes one job of the application reads from the run's device, its input's cached pages
    dropped as it starts: its input file (set) as make_data sizes it, KM's once per iteration
    (stream mode), PARSEC's unpacked input set in job set 0's folder under data_dir (Table 1's
    input_bytes, not scaled, until the data step made it). A graph job counts none, nor an x264
    job on PARSEC's own clip: the graph folder and that clip are the batch's, read in place once
    and shared in the page cache (no job drops them)."""
    app = scaled_app(e, app_name)
    kind = app["kind"]
    if kind == "x264":
        if workloads.parsec_input(app["input"]) is not None:
            return 0
        w, h = PRESETS[app["input"]]
        return y4m_bytes(w, h, app["frames"])
    if kind == "paper_similar":
        return (app["others"] + 1) * app["paper_bytes"]
    if kind == "kmeans":
        return app["points"] * app["dims"] * 4 * app["iterations"]
    if kind == "file_reader":
        if parsec_of(app) is None:
            return _reader_bytes(e, app)
        run_dir = parsec_run_dir(app_name, app, 0, data_dir) if data_dir is not None else None
        if run_dir is None or not run_dir.is_dir():
            return e["apps"][app_name]["input_bytes"]
        return sum(p.stat().st_size for p in run_dir.rglob("*") if p.is_file())
    return 0


def _reader_bytes(e: dict, app: dict) -> int:
    """File size of a file_reader stand-in: whole blocks, at least one (0 bytes: one block read)."""
    bs = e["block_size"]
    return max(bs, (app["input_bytes"] // bs) * bs)


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
        options = {
            "--data": files[0],
            "--dims": app["dims"],
            "--clusters": app["clusters"],
            "--iterations": app["iterations"],
            "--threads": app["threads"],
            "--block-size": e["block_size"],
            "--mode": "stream",
        }
        cmd = [workloads.kernel("kmeans"), *cli_options(options)]
        t = workloads.JobTemplate(cmd, {"binary": "corun kmeans"}, result="json")
    elif (prog := parsec_of(app)) is not None:
        t = prog.template
        labels["parsec_input"] = app.get("input", "simlarge")
        cwd = str(parsec_run_dir(app_name, app, i, data_dir).resolve())
    else:
        size = _reader_bytes(e, app)
        rate = app["input_bytes"] / 1e6 / app["alone_s"]
        nops, ok = nops_for(rate, {**cal, "block_size": e["block_size"]}, app["alone_s"])
        options = {"--file": files[0], "--block-size": e["block_size"], "--nops": nops, "--cache-mode": "evict"}
        cmd = [workloads.kernel("sensitivity_ranking"), *cli_options(options)]
        t = workloads.JobTemplate(cmd, {"binary": "corun sensitivity_ranking (file reader)"}, result="json")
        labels.update(target_mb_s=round(rate, 6), target_attainable=ok, file_bytes=size)
    labels.update(t.labels)
    labels["stands_in_for"] = app["stands_in_for"]
    # PARSEC's and x264's jobs say which input they read (corun.run.parsec); the kernels' are corun's own
    labels.setdefault("input_provenance", f"generated: corun's {app['kind']} input")
    if app.get("parsec_package") and cwd is None:  # the kernel stands in for PARSEC's program
        labels.setdefault("stand_in_reason", workloads.parsec_stand_in_reason(app["parsec_package"]))
    labels["scale_note"] = (
        app["scale_note"]
        if cwd is None
        else f"PARSEC's {labels.get('input_set', app.get('input', 'simlarge'))} command line and input, not scaled"
    )
    job = {
        "name": f"{app_name}-{ns[:3]}{i}",
        "cmd": t.cmd,
        "env": t.env,
        "cores": cores,
        "result": t.result,
        "labels": labels,
    }
    # its own input files' cached pages dropped as it starts (the run's device.evict dropped them
    # before the run), so a copy of it repeated in a run measured again longer reads them from
    # the disk again; the graph folder, which every graph job reads, is left as the batch shares it
    # (drop_caches false: none, as the run's device drops none). PARSEC's program reads its run
    # folder, not the stand-in's files, which the data step then never writes.
    own = ([cwd] if cwd else files) if e["drop_caches"] else []
    if own:
        job["evict"] = own
    if cwd:
        job["cwd"] = cwd
    return job


def cores_for(e: dict, app_name: str, wtype: str, cmp_cores: int) -> int:
    """One core for a single-threaded D-TYPE job; a whole CMP for the others (section 4.1)."""
    return 1 if wtype == "D" and e["apps"][app_name]["threads"] == 1 else cmp_cores

"""<experiment>.device: the runs of dynamic_io, cmp_stacking, sensitivity_ranking and implicit_io
(io_latency_split analyses cmp_stacking's runs) read their inputs from the disk holding the data
folder (throttle, the default) or from an emulated rotating disk built for each run and mounted
over the data folder (rotating_disk); the run specs say so, and a bad device setting is one line
naming the key."""

from pathlib import Path

import pytest

from corun import config
from corun.errors import ConfigError
from experiments import registry
from experiments.config import validate_config
from experiments.dynamic_io import experiment as dio
from experiments.sensitivity_ranking import experiment as sr

CAL = {"needed": True, "block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
DISK = {"kind": "rotating_disk", "rotating_disk": {"preset": "sas_15k_2010", "queue_window": 4}}


def dio_cfg(**section):
    base = {"workloads": ["w06"], "variants": ["linux", "dynamic_io"], "reps": 2, "scale": 0.05}
    base.update(section)
    return validate_config({"plan_for": "2x1", "experiments": ["dynamic_io"], "dynamic_io": base}, "test.yaml")


def campaign_spec(c, data):
    entry = next(e for e in dio.campaign(c) if e["kind"] == "campaign")
    spec = dio.make_spec(c, CAL, entry, data)
    config.validate(spec, "run_spec", "generated")
    return spec


def w06_inputs(data: Path) -> list[Path]:
    """The two KM files w06's first run reads, made, and another workload's input beside them."""
    files = [data / "inputs" / "km" / f"duplicated_{i:04d}.f32" for i in (0, 1)]
    for f in [*files, data / "inputs" / "x264" / "clip_0000.y4m"]:
        f.parent.mkdir(parents=True, exist_ok=True)
        f.write_bytes(b"x")
    return files


def test_throttle_is_the_default_and_evicts_the_inputs(kernels_built, tmp_path):
    files = w06_inputs(tmp_path)
    c = dio_cfg(throttle={"read_bps": 8000000})
    assert c["dynamic_io"]["device"]["kind"] == "throttle"
    dev = campaign_spec(c, tmp_path)["device"]
    assert "kind" not in dev and dev["throttle"] == {"read_bps": 8000000}
    assert dev["evict"] == [str(f.resolve()) for f in files] and "populate" not in dev


def test_rotating_disk_is_mounted_over_the_data_folder_with_the_run_s_inputs_only(kernels_built, tmp_path):
    files = w06_inputs(tmp_path)
    (tmp_path / "out").mkdir()  # where x264 writes: it must exist on the disk too
    c = dio_cfg(device=DISK)
    spec = campaign_spec(c, tmp_path)
    dev = spec["device"]
    assert dev["kind"] == "rotating_disk" and dev["path"] == str(tmp_path.resolve())
    assert dev["rotating_disk"] == {"preset": "sas_15k_2010", "queue_window": 4, "overlay": True}
    # the files this run's jobs read (not the x264 clip of another workload) and the output folder
    assert dev["populate"] == [{"src": str(p.resolve())} for p in [*files, tmp_path / "out"]]
    assert "evict" not in dev and dev["throttle"] is None
    # the jobs' input paths stay under the data folder, where the disk is mounted
    assert any(str(tmp_path.resolve()) in arg for job in spec["jobs"] for arg in job["cmd"])


@pytest.mark.parametrize("program", ["graph_bfs", "graph500"])
def test_cmp_stacking_runs_take_the_same_device(kernels_built, tmp_path, upstream_manifest, program):
    if program == "graph500":  # the role's program, an executable file
        exe = tmp_path / "seq-csr"
        exe.write_text("#!/bin/sh\n")
        exe.chmod(0o755)
        upstream_manifest({"graph500": {"status": "built", "version": "2.1.4", "programs": {"seq-csr": str(exe)}}})
    (tmp_path / "inputs").mkdir()
    c = validate_config(
        {"plan_for": "2x1", "experiments": ["cmp_stacking"], "cmp_stacking": {"device": DISK}}, "test.yaml"
    )
    dev = registry()["cmp_stacking"].make_spec(c, 0, 1, 0, tmp_path)["device"]
    assert dev["kind"] == "rotating_disk" and dev["rotating_disk"]["overlay"] is True
    assert dev["populate"] == [{"src": str((tmp_path / "inputs").resolve())}]
    # graph jobs build their CSR in graph/ under the data folder: it goes onto the disk too
    (tmp_path / "graph").mkdir()
    graph = next(i for i, g in enumerate(registry()["cmp_stacking"].stack_groups(c)) if "graph" in g["workload"])
    spec = registry()["cmp_stacking"].make_spec(c, graph, 1, 0, tmp_path)
    assert {"src": str((tmp_path / "graph").resolve())} in spec["device"]["populate"]
    # graph_bfs is told where; Graph500 2.1.4 maps its CSR arrays in TMPDIR
    where = [*spec["jobs"][0]["cmd"], *(spec["jobs"][0].get("env") or {}).values()]
    assert any(str((tmp_path / "graph").resolve()) in arg for arg in where)
    assert spec["jobs"][0]["cmd"][0].endswith({"graph_bfs": "/graph_bfs", "graph500": "/seq-csr"}[program])


def sr_spec(tmp_path, **section):
    c = validate_config(
        {"plan_for": "2x1", "experiments": ["sensitivity_ranking"], "sensitivity_ranking": section}, "test.yaml"
    )
    sr.make_data(c, tmp_path)
    return sr.make_spec(c, CAL, 1, 2, 0, tmp_path)


def test_sensitivity_ranking_keeps_the_throttle_by_default(kernels_built, tmp_path):
    dev = sr_spec(tmp_path, demands_mb_s=[0, 4], runtime_target_s=0.2, throttle={"read_bps": 16000000})["device"]
    assert "kind" not in dev and dev["throttle"] == {"read_bps": 16000000}
    # the kernel bypasses the page cache itself: nothing to evict
    assert dev["evict"] == [] and "populate" not in dev


def test_sensitivity_ranking_copies_only_its_runs_files_onto_the_disk(kernels_built, tmp_path):
    spec = sr_spec(tmp_path, demands_mb_s=[0, 4], runtime_target_s=0.2, device=DISK)
    dev = spec["device"]
    assert dev["kind"] == "rotating_disk" and dev["path"] == str(tmp_path.resolve())
    assert dev["rotating_disk"] == {"preset": "sas_15k_2010", "queue_window": 4, "overlay": True}
    # group 1 at k = 2: its two jobs' files, not the other group's nor the calibration files
    files = [sr.data_file(tmp_path, 1, s).resolve() for s in range(2)]
    assert dev["populate"] == [{"src": str(f)} for f in files]
    assert [job["cmd"][2] for job in spec["jobs"]] == [str(f) for f in files]
    config.validate(spec, "run_spec", "generated")


def test_io_latency_split_has_no_device_of_its_own():
    """It analyses cmp_stacking's runs: their device is cmp_stacking's."""
    with pytest.raises(ConfigError) as ei:
        validate_config({"experiments": ["io_latency_split"], "io_latency_split": {"device": DISK}}, "c.yaml")
    assert str(ei.value).startswith("c.yaml: io_latency_split")


@pytest.mark.parametrize(
    "device, key, expected",
    [
        ({"kind": "ssd"}, "dynamic_io.device.kind", "one of throttle, rotating_disk"),
        ({"kind": "rotating_disk", "rotating_disk": {"preset": "floppy"}}, "preset", "a preset name"),
        ({"kind": "rotating_disk", "rotating_disk": {"stroke": 2}}, "stroke", "a number in (0, 1]"),
        ({"kind": "rotating_disk", "rotating_disk": {"queue_window": 64}}, "queue_window", "an integer from 1"),
        ({"kind": "rotating_disk", "rotating_disk": {"overlay": False}}, "overlay", "left out"),
        ({"kind": "rotating_disk", "rotating_disk": {"sise_bytes": 1}}, "sise_bytes", "one of preset, size_bytes"),
        ({"kind": "rotating_disk", "rotating_disk": {"host": {"elevator": "cfq"}}}, "host.elevator", "none, mq"),
        ({"knd": "throttle"}, "dynamic_io.device.knd", "unknown key"),
    ],
)
def test_bad_device_is_one_line(device, key, expected):
    if not key.startswith("dynamic_io."):
        key = f"dynamic_io.device.rotating_disk.{key}"
    with pytest.raises(ConfigError) as ei:
        validate_config({"experiments": ["dynamic_io"], "dynamic_io": {"device": device}}, "c.yaml")
    msg = str(ei.value)
    assert msg.startswith(f"c.yaml: {key}: ") and expected in msg and "\n" not in msg, msg


@pytest.mark.root
def test_a_dynamic_io_run_reads_its_inputs_from_the_emulated_disk(kernels_built, tmp_path):
    """An x264 job (reads its clip, writes into out/) and the KM pair, end to end on the disk."""
    import json
    import subprocess
    import sys

    import yaml

    from corun.machine import rotating_disk as rd

    data = tmp_path / "data"
    c = dio_cfg(
        workloads=["w01", "w06"],
        scale=0.02,
        batch_scale=0.03125,
        device={"kind": "rotating_disk", "rotating_disk": {"size_bytes": 256 << 20}},
    )
    dio.make_data(c, data)
    before = sorted(p.relative_to(data) for p in data.rglob("*"))
    for entry in (e for e in dio.campaign(c) if e["kind"] == "campaign" and e["variant"] == "linux" and e["rep"] == 0):
        spec = tmp_path / f"{entry['name']}.yaml"
        spec.write_text(yaml.safe_dump(dio.make_spec(c, CAL, entry, data)))
        out = tmp_path / entry["name"]
        res = subprocess.run(
            [sys.executable, "-m", "corun", "run", str(spec), "--out", str(out)],
            capture_output=True,
            text=True,
            timeout=600,
        )
        assert res.returncode == 0, res.stderr
        meta = json.loads((out / "metadata.json").read_text())
        assert meta["device_kind"] == "rotating_disk" and meta["jobs_failed"] == []
        populated = [Path(p["src"]) for p in meta["device_setup"]["populated"]]
        assert populated[-1].name == "out" and all(p.parent.parent.name == "inputs" for p in populated[:-1])
        assert {p.parent.name for p in populated[:-1]} == ({"x264"} if entry["workload"] == "w01" else {"km"})
        # every input byte the jobs read came from the disk: it read at least half the inputs
        inputs = sum(p.stat().st_size for p in populated[:-1])
        assert meta["device_setup"]["counters"]["bytes_read"] > 0.5 * inputs
        assert rd._mount_entry(str(data.resolve())) is None
    # the overlay is gone and the data folder is as it was
    assert sorted(p.relative_to(data) for p in data.rglob("*")) == before


@pytest.mark.parametrize(
    "overlay, kind",
    [
        (None, "rotating_disk"),
        ("local_throttle.yaml", "throttle"),
        ("smoke.yaml", "throttle"),
        ("paper.yaml", "throttle"),
    ],
)
def test_profiles_choose_their_device(repo_root, overlay, kind):
    """local.yaml puts paper 000's disk experiments on the emulated disk; the profiles merged over
    it (as Snakemake merges a profile's configfile over the Snakefile's) take them back to the
    throttle or the testbed's disk, with none of local's disk sizes left over."""
    import copy

    import yaml
    from snakemake.utils import update_config

    conf = repo_root / "workflows" / "config"
    raw = yaml.safe_load((conf / "local.yaml").read_text())  # a profile section each experiment folder holds
    if overlay:
        update_config(raw, yaml.safe_load((conf / overlay).read_text()))
    c = validate_config(copy.deepcopy(raw), overlay or "local.yaml")
    for exp in ("sensitivity_ranking", "cmp_stacking", "dynamic_io"):
        assert c[exp]["device"]["kind"] == kind, exp
        assert (c[exp]["throttle"] is None) == (kind == "rotating_disk" or overlay == "paper.yaml"), exp
    # x264 clips sized for the device: several iostat intervals on the disk, short under a 4 MB/s cap
    frames = {"rotating_disk": 128, "throttle": 4 if overlay == "smoke.yaml" else 16}[kind]
    assert c["workloads"]["x264_simlarge"]["frames"] == (128 if overlay == "paper.yaml" else frames)
    if kind == "rotating_disk":
        assert c["dynamic_io"]["device"]["rotating_disk"]["preset"] == "sata_7200_2010"
        assert c["dynamic_io"]["baseline"] == "linux" and "dynamic_io" in c["dynamic_io"]["variants"]
    else:
        km = c["dynamic_io"]["apps"]["km"]
        assert (km["points"], km["threads"]) == (2000000, 8) and c["dynamic_io"]["apps"]["x264"]["frames"] == 128
        assert c["dynamic_io"]["variant_params"].get("dynamic_io", {}).get("keep_io_running", 0) == 0


def test_parameters_of_a_variant_the_campaign_leaves_out_stay_unused():
    """A profile merged over local.yaml may drop dynamic_io from the variants while local.yaml's
    variant_params.dynamic_io stays; a name that is no variant is still a one-line error."""
    c = dio_cfg(variants=["linux", "elevator_bfq"], variant_params={"dynamic_io": {"keep_io_running": 1}})
    assert c["dynamic_io"]["variants"] == ["linux", "elevator_bfq"]
    with pytest.raises(ConfigError) as ei:
        dio_cfg(variant_params={"dynamic_ioo": {"keep_io_running": 1}})
    assert "dynamic_io.variant_params.dynamic_ioo: 'unknown variant'" in str(ei.value)

"""Which input a PARSEC job reads here (corun.run.parsec.program): the real set when an input
archive holds it, swaptions' exact command line, a generated file of simlarge's format for x264,
vips and raytrace, simdev for bodytrack and freqmine; each job says which."""

import json
import tarfile
from pathlib import Path

import pytest

from corun.errors import ConfigError
from corun.run import parsec as parsec_runs
from corun.run.workloads import JobTemplate

RUNCONFS = {
    "swaptions": {"simlarge": ("bin/swaptions", "-ns 64 -sm 40000 -nt ${NTHREADS}")},
    "vips": {"simlarge": ("bin/vips", "im_benchmark bigben_2662x5500.v output.v")},
    "freqmine": {
        "simlarge": ("bin/freqmine", "kosarak_990k.dat 790"),
        "simdev": ("bin/freqmine", "T10I4D100K_1k.dat 3"),
    },
    "bodytrack": {"simlarge": ("bin/bodytrack", "sequenceB_4 4 4 4000 5 0 ${NTHREADS}")},
}


def tree(tmp_path, with_tars=()):
    """A PARSEC-shaped tree: the programs, their run configurations and the input tars named."""
    programs, inputs = {}, {}
    for pkg, sets in RUNCONFS.items():
        pkg_dir = tmp_path / "pkgs" / "apps" / pkg
        binary = pkg_dir / "inst" / "amd64-linux.corun" / "bin" / pkg
        binary.parent.mkdir(parents=True)
        binary.write_text("#!/bin/sh\n")
        binary.chmod(0o755)
        programs[pkg] = str(binary)
        (pkg_dir / "parsec").mkdir()
        for name, (exe, args) in sets.items():
            (pkg_dir / "parsec" / f"{name}.runconf").write_text(f'run_exec="{exe}"\nrun_args="{args}"\n')
    for pkg, name in with_tars:
        tar = tmp_path / "inputs" / pkg / f"input_{name}.tar"
        tar.parent.mkdir(parents=True, exist_ok=True)
        with tarfile.open(tar, "w"):
            pass
        inputs.setdefault(pkg, {})[name] = str(tar)
    return {"status": "built", "version": "3.0", "programs": programs, "inputs": inputs}


def prog(entry, pkg, threads=2):
    return parsec_runs.program(entry, pkg, "simlarge", threads, JobTemplate)


def test_swaptions_simlarge_is_exact(tmp_path):
    p = prog(tree(tmp_path), "swaptions")
    assert p.template.cmd[1:] == ["-ns", "64", "-sm", "40000", "-nt", "2"] and p.input_tar is None
    assert p.template.labels["input_provenance"] == "exact" and p.template.labels["input_set"] == "simlarge"


def test_vips_gets_a_generated_image_of_simlarge_format(tmp_path):
    p = prog(tree(tmp_path), "vips")
    assert p.generated == ("bigben_2662x5500.v", "vips") and p.input_tar is None
    assert p.template.cmd[1:] == ["im_benchmark", "bigben_2662x5500.v", "output.v"]
    assert p.template.labels["input_provenance"].startswith("generated: a seeded LabQ VIPS image of 2662x5500")
    assert p.template.labels["input_stands_in_for"] == "bigben_2662x5500.v"


def test_freqmine_runs_simdev_unless_simlarge_is_supplied(tmp_path):
    entry = tree(tmp_path, [("freqmine", "simdev")])
    p = prog(entry, "freqmine")
    assert p.template.cmd[1:] == ["T10I4D100K_1k.dat", "3"] and p.input_tar.name == "input_simdev.tar"
    assert p.template.labels["input_provenance"] == "real simdev"
    assert p.template.labels["input_stands_in_for"] == "PARSEC freqmine simlarge"
    entry = tree(tmp_path / "b", [("freqmine", "simdev"), ("freqmine", "simlarge")])
    p = prog(entry, "freqmine")
    assert p.template.cmd[1:] == ["kosarak_990k.dat", "790"] and p.template.labels["input_provenance"] == "real"


def test_a_package_without_any_input_is_one_line(tmp_path):
    with pytest.raises(ConfigError) as exc:
        prog(tree(tmp_path), "bodytrack")
    assert "parsec_inputs" in str(exc.value) and "\n" not in str(exc.value)


def test_a_package_not_built_is_none(tmp_path):
    entry = tree(tmp_path)
    assert parsec_runs.program(entry, "x264", "simlarge", 1, JobTemplate) is None


def test_dynamic_io_gives_a_parsec_job_its_generated_input(tmp_path, monkeypatch, kernels_built):
    """vips built without a simlarge input: each job set's folder gets a copy of the one seeded
    LabQ image, and the job records what it read and what that stands in for."""
    from corun.run import workloads
    from experiments.config import validate_config
    from experiments.dynamic_io import experiment as dio

    entry = tree(tmp_path / "parsec")
    manifest = tmp_path / "upstream.json"
    manifest.write_text(json.dumps({"parsec": {**entry, "programs": {"vips": entry["programs"]["vips"]}}}))
    monkeypatch.setattr(workloads, "UPSTREAM_MANIFEST", manifest)
    monkeypatch.setattr(workloads, "UPSTREAM_DIR", tmp_path / "upstream.d")
    monkeypatch.setattr(parsec_runs, "VIPS_SIZE", (300, 220))  # the format, at a test's size
    workloads.upstream.cache_clear()
    try:
        section = {"workloads": ["w13"], "variants": ["linux"], "reps": 1, "alone_reps": 1, "scale": 0.05}
        c = validate_config({"plan_for": "2x1", "experiments": ["dynamic_io"], "dynamic_io": section}, "test.yaml")
        data = tmp_path / "data"
        dio.make_data(c, data)
        run = next(e for e in dio.campaign(c) if e["kind"] == "campaign")
        cal = {"needed": True, "block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
        spec = dio.make_spec(c, cal, run, data)
    finally:
        workloads.upstream.cache_clear()
    vips = next(j for j in spec["jobs"] if j["labels"]["app"] == "vips")
    assert vips["cmd"] == [entry["programs"]["vips"], "im_benchmark", "bigben_2662x5500.v", "output.v"]
    image = Path(vips["cwd"]) / "bigben_2662x5500.v"
    assert image.stat().st_size == 64 + 300 * 220 * 4
    assert image.read_bytes() == (data / "inputs" / "parsec" / "vips" / "bigben_2662x5500.v").read_bytes()
    assert vips["labels"]["input_provenance"].startswith("generated: a seeded LabQ VIPS image")
    assert (
        vips["labels"]["binary"] == "PARSEC 3.0 vips" and vips["labels"]["input_stands_in_for"] == "bigben_2662x5500.v"
    )
    freqmine = next(j for j in spec["jobs"] if j["labels"]["app"] == "freqmine")  # not built: the kernel
    assert freqmine["labels"]["stand_in_reason"] == "parsec 3.0 built no freqmine (parsec_packages)"
    # each job drops the pages of what it reads as it starts: PARSEC's run folder, not the
    # stand-in's file the data step never wrote for a program that was built
    assert vips["evict"] == [vips["cwd"]]
    assert all(Path(f).exists() for j in spec["jobs"] for f in j.get("evict", [])), spec["jobs"]

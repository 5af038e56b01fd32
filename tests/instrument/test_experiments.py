"""Experiment planning: run specs from the workflow config (no measurement here)."""

import json
import subprocess
from pathlib import Path

import pytest

from corun import config
from corun.errors import ConfigError
from experiments import estimate as plan
from experiments import registry
from experiments.config import validate_config
from experiments.sensitivity_ranking import experiment as sr


@pytest.fixture(autouse=True)
def _no_machine_manifest(upstream_manifest):
    """Specs are planned against the manifest a test writes, never this machine's."""
    return upstream_manifest


def cfg(**kw):
    base = {"plan_for": "2x1", "experiments": ["sensitivity_ranking", "cmp_stacking", "llc_miss", "implicit_io"]}
    base.update(kw)
    return validate_config(base, "test.yaml")


def test_stacking_matrix_caps_k_at_the_machine_and_reports_it():
    c = cfg(cmp_stacking={"k_values": [1, 2, 4, 8], "reps": 2})
    lay = registry()["cmp_stacking"].layout(c)
    assert lay["k_values"] == [1, 2] and lay["k_dropped"] == [4, 8] and lay["jobs_per_cmp"] == 1
    m = registry()["cmp_stacking"].matrix(c)
    assert len(m) == 4 * 2 * 2  # workloads x k x reps
    assert m[0] == (0, 1, 0) and m[-1] == (3, 2, 1)  # reps outermost
    assert "k = 4, 8 dropped" in plan.describe(c)


def test_plan_for_another_machine():
    c = cfg(plan_for="8x8", cmp_stacking={"k_values": [1, 2, 4, 8]})
    lay = registry()["cmp_stacking"].layout(c)
    assert lay["K"] == 8 and lay["jobs_per_cmp"] == 8 and lay["k_values"] == [1, 2, 4, 8]


def test_llc_spec_loads_k_cmps_fully(kernels_built, tmp_path):
    c = cfg(plan_for="2x2", llc_miss={"nops": [0, 50], "k_values": [2]})
    spec = registry()["llc_miss"].make_spec(c, 1, 2, 0, tmp_path)
    assert len(spec["jobs"]) == 4 and [j["cmp"] for j in spec["jobs"]] == [0, 0, 1, 1]
    assert spec["placement"]["use_cmps"] == [0, 1]
    assert spec["labels"]["nops"] == 50 and spec["labels"]["k"] == 2
    assert "--nops" in spec["jobs"][0]["cmd"] and spec["jobs"][0]["result"] == "json"
    config.validate(spec, "run_spec", "generated")  # a valid run spec


def test_implicit_io_spec_caps_memory_and_adds_the_memory_monitor(kernels_built, tmp_path):
    c = cfg(implicit_io={"graphs": [{"scale": 10, "edgefactor": 16}], "memory_limit_bytes": 64 << 20})
    spec = registry()["implicit_io"].make_spec(c, 0, 2, 0, tmp_path)
    assert spec["memory"]["limit_bytes"] == 64 << 20
    assert "memory" in spec["monitors"]["enabled"]
    assert spec["labels"]["scale"] == 10 and spec["jobs"][0]["labels"]["binary"] == "corun graph_bfs"
    config.validate(spec, "run_spec", "generated")


def test_cmp_stacking_labels_say_what_stood_in(kernels_built, tmp_path):
    c = cfg(
        workloads={"graph_s22_e16": {"kind": "graph", "scale": 12, "edgefactor": 16}},
        cmp_stacking={"workloads": ["graph_s22_e16"], "k_values": [1]},
    )
    spec = registry()["cmp_stacking"].make_spec(c, 0, 1, 0, tmp_path)
    labels = spec["jobs"][0]["labels"]
    assert labels["stands_in_for"] == "Graph500 2.1.4 seq-csr -s 12 -e 16"
    assert labels["scale_note"] == "scaled down: scale 12 (paper 22)" and labels["workload_id"] == 3


def test_graph_rows_run_graph500_when_provisioned(upstream_manifest, tmp_path):
    seq = tmp_path / "seq-csr"
    seq.write_text("#!/bin/sh\n")
    seq.chmod(0o755)
    pin = {"name": "upstream", "file": "graph500-graph500-2.1.4.tar.gz", "sha256": "f9abad5a"}
    upstream_manifest({"graph500": {"status": "built", "version": "2.1.4", "source": pin,
                                    "programs": {"seq-csr": str(seq)}}})  # fmt: skip
    c = cfg(
        workloads={"graph_s22_e16": {"kind": "graph", "scale": 12, "edgefactor": 16}},
        cmp_stacking={"workloads": ["graph_s22_e16"], "k_values": [1]},
        implicit_io={"graphs": [{"scale": 10, "edgefactor": 16}], "memory_limit_bytes": 64 << 20},
    )
    for name, scale in (("cmp_stacking", "12"), ("implicit_io", "10")):
        spec = registry()[name].make_spec(c, 0, 1, 0, tmp_path)
        job = spec["jobs"][0]
        assert job["cmd"] == [str(seq), "-s", scale, "-e", "16"] and job["result"] == "graph500"
        assert job["env"]["TMPDIR"] == str((tmp_path / "graph").resolve())  # the CSR's mmap'd file
        assert job["labels"]["source_sha256"] == "f9abad5a" and job["labels"]["stands_in_for"] == ""
        config.validate(spec, "run_spec", "generated")


def test_unknown_workload_is_a_config_error():
    c = cfg(cmp_stacking={"workloads": ["x264_tiny"]})
    with pytest.raises(
        ConfigError, match="cmp_stacking.workloads: 'x264_tiny' .expected a name defined under workloads"
    ):
        registry()["cmp_stacking"].stack_groups(c)


@pytest.mark.parametrize(
    "doc, key, expected",
    [
        ({"implicit_io": {"criterion": "psi>=x"}}, "implicit_io.criterion", "metric>=threshold"),
        ({"workloads": {"w": {"kind": "graph", "scale": 40, "edgefactor": 16}}}, "workloads.w.scale", "<= 30"),
        ({"workloads": {"w": {"kind": "x264", "input": "simlarge"}}}, "workloads.w.frames", "required"),
        ({"llc_miss": {"nops": [-1]}}, "llc_miss.nops[0]", ">= 0"),
        ({"plan_for": "8by8"}, "plan_for", "NxC"),
    ],
)
def test_section2_config_errors(doc, key, expected):
    with pytest.raises(ConfigError) as ei:
        validate_config(doc, "c.yaml")
    assert str(ei.value).startswith(f"c.yaml: {key}: ") and expected in str(ei.value), str(ei.value)


def test_sensitivity_nops_for_control_and_targets():
    cal = {"block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
    n, ok = sr.nops_for(0, cal, 2.0)
    assert ok and n == 10_000_000_000  # compute only, for the whole target runtime
    n, ok = sr.nops_for(1.0, cal, 2.0)  # 64 KiB per 65.5 ms
    assert ok and abs(n - (0.065536 - 1e-4) / 2e-10) < 2
    assert sr.nops_for(1e6, cal, 2.0) == (0, False)  # faster than the device: unattainable


# ----------------------------------------------------------------------------- dynamic_io (section 4)

from experiments.dynamic_io import experiment as dio  # noqa: E402


def dio_cfg(**section):
    base = {
        "workloads": ["w01", "w13"],
        "variants": ["linux", "elevator_bfq"],
        "reps": 3,
        "alone_reps": 2,
        "scale": 0.05,
        "batch_scale": 0.03125,
    }
    base.update(section)
    return validate_config({"plan_for": "2x1", "experiments": ["dynamic_io"], "dynamic_io": base}, "test.yaml")


def test_dynamic_io_campaign_interleaves_reps_with_a_seeded_order():
    c = dio_cfg()
    order = dio.campaign(c)
    camp = [e for e in order if e["kind"] == "campaign"]
    assert [e["rep"] for e in camp] == [0] * 4 + [1] * 4 + [2] * 4  # rep 0 of everything, then rep 1 ...
    for rep in range(3):
        for w in ("w01", "w13"):
            assert sorted(e["variant"] for e in camp if e["rep"] == rep and e["workload"] == w) == [
                "elevator_bfq",
                "linux",
            ]
    assert dio.campaign(c) == order  # the same seed gives the same order
    orders = {tuple(e["name"] for e in dio.campaign(dio_cfg(seed=s))) for s in range(8)}
    assert len(orders) > 1  # the seed changes the order within a rep
    alone = [e for e in order if e["kind"] == "alone"]
    assert {e["rep"] for e in alone} == {0, 1} and order[0]["kind"] == "alone"
    assert [e["order"] for e in order] == list(range(len(order)))
    assert dio.run_names(c) == [e["name"] for e in order]


def test_dynamic_io_scale_batches_and_mixes():
    c = dio_cfg()
    e = c["dynamic_io"]
    # 128 x 1/32 = 4 jobs; at least one full load of the machine (2 cores / 2 CMPs here)
    assert dio.batch_length(c, "w01") == 4
    c6 = dio_cfg(workloads=["w06"])
    assert dio.batch_length(c6, "w06") == 2  # 8 x 1/32 rounds to 0: one full load, one KM per CMP
    mix = dio.workload_apps(c, "w13")
    assert sorted(mix) == ["freqmine", "ps", "vips", "x264"]  # every application about equally often
    assert dio.workload_apps(c, "w13") == mix  # the same mix for every variant and rep
    app = dio.scaled_app(e, "x264")
    assert app["frames"] == 6 and app["scale_note"].startswith("scaled down: frames 6 (paper 128)")
    g = dio.scaled_app(validate_config({"dynamic_io": {"scale": 1 / 32}}, "t")["dynamic_io"], "graph_s22_e16")
    assert g["scale"] == 17
    assert dio.job_types(c) == ["freqmine", "ps", "vips", "x264"]


def test_dynamic_io_specs_are_valid_and_labelled(kernels_built, tmp_path):
    c = dio_cfg()
    entry = next(e for e in dio.campaign(c) if e["kind"] == "campaign" and e["workload"] == "w13")
    cal = {"needed": True, "block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
    spec = dio.make_spec(c, cal, entry, tmp_path)
    config.validate(spec, "run_spec", "generated")
    lab = spec["labels"]
    assert (lab["seed"], lab["rep"], lab["workload"], lab["wtype"], lab["scale"]) == (1, 0, "w13", "M", 0.05)
    assert lab["batch_length"] == 4 and lab["paper_batch_length"] == 128
    assert all(j["cores"] == 1 for j in spec["jobs"])  # M-TYPE: one job per CMP (1 core each here)
    ps = next(j for j in spec["jobs"] if j["labels"]["app"] == "ps")
    assert ps["labels"]["stands_in_for"].startswith("paper 000 Paper Similar")
    assert ps["cmd"].count("--other") == 2 and "--threads" in ps["cmd"]
    fm = next(j for j in spec["jobs"] if j["labels"]["app"] == "freqmine")
    assert "sensitivity_ranking" in fm["cmd"][0] and fm["labels"]["target_mb_s"] == pytest.approx(1.55)
    assert spec["scheduler"] == {"name": entry["variant"], "params": {}}
    alone = dio.make_spec(c, cal, dio.campaign(c)[0], tmp_path)
    assert len(alone["jobs"]) == 1 and alone["labels"]["run_kind"] == "alone"


def test_dynamic_io_dynamic_variants_get_timeslice_and_bound():
    c = dio_cfg(
        variants=["linux", "dynamic_io"],
        workloads=["w01", "w07"],
        timeslice_s=0.5,
        timeslice_graph_s=2.0,
        io_bound_mbps=6.0,
        variant_params={"dynamic_io": {"counter": "read_bytes"}},
    )
    assert dio.variant_params(c, "dynamic_io", "w01") == {
        "timeslice_s": 0.5,
        "io_bound_mbps": 6.0,
        "counter": "read_bytes",
    }
    assert dio.variant_params(c, "dynamic_io", "w07")["timeslice_s"] == 2.0  # graph jobs: the long TIMESLICE
    assert dio.variant_params(c, "linux", "w01") == {}


@pytest.mark.parametrize(
    "section, key, expected",
    [
        ({"reps": 0}, "dynamic_io.reps", "an integer >= 1"),
        ({"workloads": ["w16"]}, "dynamic_io.workloads[0]", "a workload defined under dynamic_io.table3"),
        ({"workloads": ["x1"]}, "dynamic_io.workloads[0]", "a workload name wNN"),
        ({"varaints": ["linux"]}, "dynamic_io.varaints", "unknown key"),
        ({"baseline": "cfs"}, "dynamic_io.baseline", "one of dynamic_io.variants"),
        ({"scale": 0}, "dynamic_io.scale", "> 0"),
        ({"apps": {"km": {"iteratons": 3}}}, "dynamic_io.apps.km.iteratons", "unknown key"),
        ({"table3": {"w01": {"apps": ["x265"]}}}, "dynamic_io.table3.w01.apps[0]", "an application defined under"),
    ],
)
def test_dynamic_io_config_errors_are_one_line(section, key, expected):
    with pytest.raises(ConfigError) as ei:
        validate_config({"experiments": ["dynamic_io"], "dynamic_io": section}, "c.yaml")
    msg = str(ei.value)
    assert msg.startswith(f"c.yaml: {key}: ") and expected in msg and "\n" not in msg, msg


def test_dynamic_io_catalog_entries_merge_over_the_defaults():
    c = validate_config({"dynamic_io": {"apps": {"km": {"iterations": 3}}}}, "c.yaml")["dynamic_io"]
    assert c["apps"]["km"]["iterations"] == 3 and c["apps"]["km"]["points"] == 2000000
    assert len(c["apps"]) == 10 and len(c["table3"]) == 15


def test_dynamic_io_plan_estimates_the_campaign():
    c = dio_cfg()
    rows = {r["experiment"]: r for r in plan.estimate(c)}
    assert rows["dynamic_io"]["runs"] == len(dio.campaign(c)) and rows["dynamic_io"]["seconds"] > 0


def test_dynamic_io_data_one_input_set_per_job(tmp_path):
    c = dio_cfg(workloads=["w04", "w05", "w06"], scale=0.001, batch_scale=0.125)
    info = dio.make_data(c, tmp_path)
    assert info["inputs"] == {"km/duplicated": 2, "ps/different": 3, "ps/duplicated": 2}
    e = c["dynamic_io"]
    dup = [dio.input_files(e, "ps", "duplicated", i, tmp_path) for i in range(2)]
    diff = [dio.input_files(e, "ps", "different", i, tmp_path) for i in range(3)]
    assert all(len(d) == 3 and all(p.stat().st_size == 64000 for p in d) for d in dup + diff)
    assert dup[0][0].read_bytes() == dup[1][0].read_bytes() and dup[0][0] != dup[1][0]  # copies, own files
    assert diff[0][0].read_bytes() != diff[1][0].read_bytes()  # different papers per job
    km = dio.input_files(e, "km", "duplicated", 1, tmp_path)[0]
    assert km.stat().st_size == 2000 * 16 * 4
    again = dio.make_data(c, tmp_path)
    assert again["made"] == []  # kept while their size matches


@pytest.fixture
def fake_parsec(tmp_path, monkeypatch):
    """A PARSEC tree as the parsec role leaves it, with freqmine built: its binary, its
    simlarge.runconf and input tarball, and the upstream manifest naming it."""
    import tarfile

    from corun.run import workloads

    pkg = tmp_path / "parsec-3.0" / "pkgs" / "apps" / "freqmine"
    binary = pkg / "inst" / "amd64-linux.gcc" / "bin" / "freqmine"
    binary.parent.mkdir(parents=True)
    binary.write_text('#!/bin/sh\nexec cat "$1" >/dev/null\n')
    binary.chmod(0o755)
    (pkg / "parsec").mkdir()
    (pkg / "parsec" / "simlarge.runconf").write_text(
        '#!/bin/bash\n# simlarge.runconf\nrun_exec="bin/freqmine"\nrun_args="kosarak_990k.dat 790"\n'
    )
    (pkg / "inputs").mkdir()
    src = tmp_path / "kosarak_990k.dat"
    src.write_text("1 2 3\n4 5 6\n")
    with tarfile.open(pkg / "inputs" / "input_simlarge.tar", "w") as tf:
        tf.add(src, arcname="kosarak_990k.dat")
    manifest = tmp_path / "upstream.json"
    manifest.write_text(json.dumps({"parsec": {"version": "3.0", "binaries": {"freqmine": str(binary)}}}))
    monkeypatch.setattr(workloads, "UPSTREAM_MANIFEST", manifest)
    monkeypatch.setattr(workloads, "UPSTREAM_DIR", tmp_path / "upstream.d")
    workloads.upstream.cache_clear()
    yield binary
    workloads.upstream.cache_clear()


def test_dynamic_io_runs_parsec_programs_when_provisioned(fake_parsec, kernels_built, tmp_path):
    """freqmine runs as PARSEC's own run configuration says, in its unpacked simlarge input set;
    vips, not built, stays the documented stand-in."""
    c = dio_cfg(workloads=["w13"])
    data = tmp_path / "data"
    dio.make_data(c, data)
    entry = next(e for e in dio.campaign(c) if e["kind"] == "campaign")
    cal = {"needed": True, "block_size": 65536, "t_read_s": 1e-4, "t_nop_s": 2e-10}
    spec = dio.make_spec(c, cal, entry, data)
    config.validate(spec, "run_spec", "generated")
    fm = next(j for j in spec["jobs"] if j["labels"]["app"] == "freqmine")
    assert fm["cmd"] == [str(fake_parsec), "kosarak_990k.dat", "790"]
    assert fm["labels"]["binary"] == "PARSEC 3.0 freqmine" and "not scaled" in fm["labels"]["scale_note"]
    assert (Path(fm["cwd"]) / "kosarak_990k.dat").read_text() == "1 2 3\n4 5 6\n"
    assert Path(fm["cwd"]).is_relative_to(data.resolve() / "inputs")  # evicted before each run
    vips = next(j for j in spec["jobs"] if j["labels"]["app"] == "vips")
    assert "sensitivity_ranking" in vips["cmd"][0]
    assert subprocess.run(fm["cmd"], cwd=fm["cwd"]).returncode == 0


def test_parsec_program_with_a_broken_tree_is_one_line(fake_parsec):
    from corun.run import workloads

    (fake_parsec.parents[3] / "parsec" / "simlarge.runconf").write_text("nothing here\n")
    with pytest.raises(ConfigError) as exc:
        workloads.parsec_program("freqmine", "simlarge")
    assert "run_exec/run_args" in str(exc.value) and "\n" not in str(exc.value)
    assert workloads.parsec_program("vips", "simlarge") is None

"""The noisy_neighbour configuration, its workloads on this machine, and its plan."""

import json

import pytest
import yaml

from corun.errors import ConfigError
from corun.machine.placement_domains import read_domains
from experiments.noisy_neighbour import workloads as nw
from tests.instrument.synthetic_sysfs import make_sysfs


def test_shipped_config_is_valid_with_defaults():
    s = nw.load()
    assert s["domains"]["numa"] == {
        "policies": ["cfs", "numa_concentrate", "numa_spread"],
        "cpu_tasks": 8,
        "io_tasks": 8,
    }
    assert [w["cache_sensitivity"] for w in s["cpu_workloads"]].count("high") == 3
    assert [w["name"] for w in s["cpu_workloads"] if w["paper_named"]] == ["povray_r"]
    assert s["io_workload"]["engine"] == "auto" and s["io_workload"]["mem_dir"] == "/dev/shm"
    assert "paper_values" not in s  # the paper's values live in claims.yaml only
    assert nw.SCHEMA.exists() and json.loads(nw.SCHEMA.read_text())["additionalProperties"] is False


@pytest.mark.parametrize(
    "patch, msg",
    [
        ({"reps": 0}, "noisy_neighbour.reps: 0 (expected an integer >= 1)"),
        ({"domain": {}}, "noisy_neighbour"),
        ({"domains": {"smt": {"policies": ["numa_sprawl"]}}}, "noisy_neighbour.domains.smt.policies[0]: 'numa_sprawl'"),
        ({"io_workload": {"engine": "dax"}}, "noisy_neighbour.io_workload.engine: 'dax'"),
        (
            {
                "cpu_workloads": [
                    {"name": "x", "cache_sensitivity": "extreme", "stand_in": {"kind": "llc_miss", "llc_fraction": 1}}
                ]
            },
            "cache_sensitivity: 'extreme'",
        ),
    ],
)
def test_bad_config_is_one_line(tmp_path, patch, msg):
    doc = yaml.safe_load(nw.CONFIG.read_text())
    doc["noisy_neighbour"].update(patch)
    path = tmp_path / "nn.yaml"
    path.write_text(yaml.safe_dump(doc))
    with pytest.raises(ConfigError) as exc:
        nw.load(path)
    text = str(exc.value)
    assert text.startswith(f"{path}: ") and msg in text and "\n" not in text


def test_llc_size(tmp_path):
    root = make_sysfs(tmp_path, sockets=1, cores=2, threads=1)
    for i, size in enumerate(["32K", "32K", "512K", "16384K"]):
        (root / f"sys/devices/system/cpu/cpu0/cache/index{i}/size").write_text(size + "\n")
    assert nw.llc_size_bytes(root) == 16 << 20
    assert nw.llc_size_bytes(tmp_path / "none") is None


def by_name(section, name):
    return next(w for w in section["cpu_workloads"] if w["name"] == name)


def test_cpu_stand_ins_are_graded_by_the_llc(kernels_built, monkeypatch):
    # where the parsec role built none of the PARSEC stand-ins (with one built, its program runs)
    monkeypatch.setattr(nw.workloads, "parsec_program", lambda *a, **k: None)
    s = nw.load()
    llc = 16 << 20
    sizes = {}
    for w in s["cpu_workloads"]:
        job = nw.cpu_job(w, llc, upstream={})
        assert job["labels"]["task_type"] == "cpu" and job["labels"]["stands_in_for"] == w["name"]
        assert "SPEC CPU is not installed" in job["labels"]["scale_note"]
        assert job["labels"]["binary"] == "corun llc_miss"
        sizes[w["name"]] = int(job["cmd"][job["cmd"].index("--mem-size") + 1])
    assert sizes["povray_r"] == llc // 8 and sizes["xalancbmk_r"] == llc and sizes["lbm_r"] == 16 * llc
    assert sizes["exchange2_r"] < sizes["xalancbmk_r"] < sizes["omnetpp_r"] < sizes["mcf_r"]
    # the same number of row copies whatever the working set: comparable run times
    job = nw.cpu_job(by_name(s, "mcf_r"), llc, upstream={})
    passes = int(job["cmd"][job["cmd"].index("--iterations") + 1])
    assert abs(passes * sizes["mcf_r"] / 64 - 2e9) / 2e9 < 0.01


def test_spec_cpu_when_installed():
    w = by_name(nw.load(), "povray_r")
    up = {
        "spec_cpu": {
            "version": "1.1.9",
            "runcpu": "/opt/spec/bin/runcpu",
            "config": "corun.cfg",
            "install_dir": "/opt/spec",
        }
    }
    job = nw.cpu_job(w, 1 << 20, upstream=up)
    assert job["cmd"][0] == "/opt/spec/bin/runcpu" and job["cmd"][-1] == "511.povray_r"
    assert "--size=ref" in job["cmd"] and job["labels"]["binary"] == "SPEC CPU 1.1.9 511.povray_r"


def test_io_job_chooses_pmem_or_memory(tmp_path):
    io = nw.load()["io_workload"]
    mem = nw.io_job(io, tmp_path, 0, mounts_text="tmpfs /dev/shm tmpfs rw 0 0\n")
    assert "--ioengine=mmap" in mem["cmd"] and mem["file"].startswith("/dev/shm/")
    assert "no persistent memory here" in mem["labels"]["scale_note"]
    pm = nw.io_job(io, tmp_path, 1, mounts_text="/dev/pmem0 /mnt/pmem0 ext4 rw,dax=always 0 0\n")
    assert "--ioengine=libpmem" in pm["cmd"] and pm["file"] == "/mnt/pmem0/corun-fio_randwrite-1"
    assert pm["labels"]["scale_note"] == "" and "--direct=0" in pm["cmd"]
    two = "/dev/pmem0 /mnt/pmem/pmem0 ext4 rw,dax 0 0\n/dev/pmem1 /mnt/pmem/pmem1 ext4 rw,dax 0 0\n"
    files = [nw.io_job(io, tmp_path, i, mounts_text=two)["file"] for i in range(4)]
    assert [f.split("/")[3] for f in files] == ["pmem0", "pmem1", "pmem0", "pmem1"]
    with pytest.raises(ConfigError, match="io_workload.engine: 'libpmem' \\(expected a DAX mount"):
        nw.io_job({**io, "engine": "libpmem"}, tmp_path, mounts_text="")
    ps = nw.io_job({**io, "engine": "psync"}, tmp_path, mounts_text="")
    assert "--direct=1" in ps["cmd"] and ps["file"].startswith(str(tmp_path))


def test_plan_on_this_kind_of_vm(tmp_path):
    s = nw.load()
    d = read_domains(make_sysfs(tmp_path, sockets=1, cores=2, threads=1))
    rows = nw.plan(s, d)
    assert len(rows) == 3 * 3 * 6
    for r in rows:
        if r["variant"] == "cfs":
            assert r["not_measurable"] is None and set(r["cpus"].values()) == {None}
        else:
            reason = {"smt": "no SMT", "llc": "one LLC group", "numa": "one NUMA node"}[r["domain"]]
            assert r["not_measurable"].startswith(reason), r
    assert any(r["note"] for r in rows)


def test_plan_on_a_two_socket_smt_machine(tmp_path):
    """2 sockets x 8 cores x 2 SMT: every row measurable, the paper's 8 + 8 tasks included."""
    s = nw.load()
    d = read_domains(make_sysfs(tmp_path, sockets=2, cores=8, threads=2))
    rows = nw.plan(s, d)
    assert all(r["not_measurable"] is None for r in rows), [r for r in rows if r["not_measurable"]][:1]
    spread = next(r for r in rows if r["variant"] == "numa_spread")
    assert spread["tasks"].count("cpu:") == 8 and len(set(spread["cpus"].values())) == 16

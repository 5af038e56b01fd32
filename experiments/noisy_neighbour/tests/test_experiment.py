"""The noisy_neighbour experiment plugin: its points, specs and config checks."""

import copy

import pytest
import yaml

from corun.errors import ConfigError
from corun.machine.placement_domains import read_domains
from corun.util import repo_root
from experiments.config import load_workflow_config, profile_config, validate_config
from experiments.noisy_neighbour import experiment as nn
from tests.instrument.synthetic_sysfs import make_sysfs

SMOKE = repo_root() / "workflows" / "config" / "smoke.yaml"


def cfg_with(section: dict) -> dict:
    raw = profile_config(SMOKE)
    raw["noisy_neighbour"] = section
    return validate_config(raw, "test.yaml")


def test_the_catalog_fills_cpu_workloads_when_the_section_has_none():
    cfg = cfg_with({"use_workloads": ["mcf_r"]})
    names = [w["name"] for w in cfg["noisy_neighbour"]["cpu_workloads"]]
    assert names == ["povray_r", "exchange2_r", "xalancbmk_r", "omnetpp_r", "mcf_r", "lbm_r"]
    assert [w["name"] for w in nn.workloads_used(cfg["noisy_neighbour"])] == ["mcf_r"]


def test_an_unknown_workload_is_one_line_naming_the_key():
    with pytest.raises(ConfigError) as e:
        cfg_with({"use_workloads": ["mfc_r"]})
    assert "noisy_neighbour.use_workloads[0]: 'mfc_r' (expected one of povray_r" in str(e.value)


def test_points_on_this_kind_of_vm_run_only_what_it_can_express(tmp_path):
    cfg = cfg_with(
        {
            "reps": 2,
            "alone_reps": 1,
            "use_workloads": ["exchange2_r"],
            "domains": {"smt": {"policies": ["cfs", "smt_same_type", "smt_mixed"], "cpu_tasks": 2, "io_tasks": 2}},
        }
    )
    vm = read_domains(make_sysfs(tmp_path, sockets=1, cores=2, threads=1))
    pts = nn.all_points(cfg, vm)
    kinds = [p["kind"] for p in pts]
    assert kinds.count("alone_cpu") == 1 and kinds.count("alone_io") == 1
    pairs = [p for p in pts if p["kind"] == "pair"]
    assert {p["variant"] for p in pairs} == {"cfs"} and len(pairs) == 2
    assert [nn.run_name(p) for p in pairs] == ["smt_cfs_exchange2_r_r0", "smt_cfs_exchange2_r_r1"]


def test_points_on_an_smt_machine_include_both_pairings(tmp_path):
    cfg = cfg_with(
        {
            "reps": 1,
            "use_workloads": ["exchange2_r"],
            "domains": {"smt": {"policies": ["smt_same_type", "smt_mixed"], "cpu_tasks": 2, "io_tasks": 2}},
        }
    )
    smt = read_domains(make_sysfs(tmp_path, sockets=1, cores=2, threads=2))
    pairs = [p for p in nn.all_points(cfg, smt) if p["kind"] == "pair"]
    assert sorted(p["variant"] for p in pairs) == ["smt_mixed", "smt_same_type"]
    spec = nn.make_spec(cfg, pairs[0], tmp_path, len(smt.cpus))
    assert spec["scheduler"]["name"] == pairs[0]["variant"]
    assert spec["scheduler"]["params"]["tasks"] == pairs[0]["tasks"]
    names = sorted(j["name"] for j in spec["jobs"])
    assert names == ["exchange2_r-0", "exchange2_r-1", "fio_randwrite-0", "fio_randwrite-1"]
    assert spec["placement"]["slots_per_core"] == 1  # 4 tasks on 4 hardware threads


def test_specs_write_one_file_per_run_name_and_the_plan(tmp_path):
    cfg = load_workflow_config(SMOKE)
    out = tmp_path / "specs"
    n = nn.EXPERIMENT.specs(cfg, {"needed": False}, tmp_path / "data", out)
    names = nn.EXPERIMENT.run_names(cfg)
    assert n == len(names) and sorted(p.stem for p in out.glob("*.yaml")) == sorted(names)
    plan = yaml.safe_load((out / "plan.json").read_text())
    measured = [r for r in plan["rows"] if r["not_measurable"] is None]
    assert all(r["runs"] for r in measured)
    assert all(not r["runs"] for r in plan["rows"] if r["not_measurable"])
    pair = yaml.safe_load((out / f"{measured[0]['runs'][0]}.yaml").read_text())
    assert pair["labels"]["kind"] == "pair" and pair["labels"]["variant"] == measured[0]["variant"]


def test_stand_in_accesses_shortens_every_llc_miss_stand_in(tmp_path):
    cfg = cfg_with({"use_workloads": ["exchange2_r"], "stand_in_accesses": 1e7})
    sec = copy.deepcopy(cfg["noisy_neighbour"])
    w = nn.workloads_used(sec)[0]
    job = nn.cpu_template(sec, w, tmp_path)
    assert "stands_in_for" in job["labels"] and job["labels"]["stands_in_for"] == "exchange2_r"
    iters = int(job["cmd"][job["cmd"].index("--iterations") + 1])
    mem = int(job["cmd"][job["cmd"].index("--mem-size") + 1])
    assert iters == max(1, round(1e7 / (mem // 64)))

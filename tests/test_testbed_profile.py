"""The testbed profile (workflows/config/testbed.yaml) and the paper profile plan against an
inventory of the emulated bare testbed, as scripts/bare-testbed up 5 writes it (no root: the
inventory is written by the script's own function; the nodes need not exist to plan). The runs
themselves: tests/test_bare_testbed.py (root, bare)."""

import importlib.machinery
import importlib.util
import os
import re
import subprocess
from pathlib import Path

import pytest
import yaml

REPO = Path(__file__).resolve().parent.parent
BIN = REPO / ".venv" / "bin"
CLUSTER_EXPERIMENTS = ("mpl_sweep", "sais", "aioli")


def bare_testbed():
    path = str(REPO / "scripts" / "bare-testbed")
    loader = importlib.machinery.SourceFileLoader("bare_testbed", path)
    module = importlib.util.module_from_spec(importlib.util.spec_from_loader("bare_testbed", loader))
    loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def bare_inventory(tmp_path_factory) -> Path:
    """The inventory of 5 bare nodes (a client and 4 servers; mpl_sweep's 4 nodes)."""
    tmp = tmp_path_factory.mktemp("bare-plan")
    bt = bare_testbed()
    path = tmp / "bare.yml"
    path.write_text(bt.inventory_text(bt.plan(5, "10.79.9.0/24", "plan", tmp), tmp))
    return path


def plan(profile: str, *configfiles: Path, extra: dict | None = None) -> subprocess.CompletedProcess:
    env = dict(os.environ, PATH=f"{BIN}{os.pathsep}{os.environ['PATH']}")
    args = [str(BIN / "snakemake"), "--profile", f"workflows/profiles/{profile}", "-n", "all", "--configfile"]
    args += [f"workflows/config/{profile}.yaml", *map(str, configfiles)]
    return subprocess.run(args, cwd=REPO, capture_output=True, text=True, env=env, timeout=600)


def measures(res: subprocess.CompletedProcess, rules: tuple[str, ...], exp: str) -> bool:
    """Whether the dry run plans a job of one of RULES (experiments.smk's) for experiment EXP."""
    jobs = re.split(r"\n(?=rule |checkpoint )", res.stdout)
    return any(j.split(":", 1)[0].split()[-1] in rules and re.search(rf"exp={exp}(,|\n|$)", j) for j in jobs)


MEASURING = ("run", "run_across_hosts", "run_groups")


def inventory_override(tmp: Path, inventory: Path, **mpl_cluster) -> Path:
    """Only the inventory differs (and what the paper's 16-rank jobs need of 5 nodes)."""
    cfg = {e: {"cluster": {"inventory": str(inventory)}} for e in CLUSTER_EXPERIMENTS}
    cfg["mpl_sweep"]["cluster"].update(mpl_cluster)
    path = tmp / f"inventory-{len(mpl_cluster)}.yaml"
    path.write_text(yaml.safe_dump(cfg))
    return path


def test_the_testbed_profile_keeps_the_paper_profiles_keys():
    testbed = yaml.safe_load((REPO / "workflows" / "config" / "testbed.yaml").read_text())
    paper = yaml.safe_load((REPO / "workflows" / "config" / "paper.yaml").read_text())
    assert testbed["profile"] == "paper" and testbed["experiments"] == paper["experiments"]
    assert testbed["cmp"] == paper["cmp"]
    for name in CLUSTER_EXPERIMENTS:
        own = yaml.safe_load((REPO / "experiments" / name / "profiles" / "paper.yaml").read_text())
        assert set(testbed[name]) <= set(own) | {"perf_events", "pm", "compute_passes", "model"}, name
        assert testbed[name]["cluster"]["inventory"] == "inventory/bare.yml"
        assert {k: v for k, v in own["cluster"].items() if k != "inventory"}.items() <= (
            testbed[name]["cluster"].items()
        ), name


def test_the_testbed_profile_plans_every_experiment_against_a_bare_inventory(bare_inventory, tmp_path):
    res = plan("testbed", inventory_override(tmp_path, bare_inventory))
    assert res.returncode == 0, res.stderr
    assert measures(res, MEASURING, "mpl_sweep") and measures(res, ("run",), "noisy_neighbour")
    assert measures(res, ("run_groups",), "sais") and measures(res, ("run_groups",), "aioli")
    assert "rule make_report:" in res.stdout


def test_the_testbed_profile_names_a_testbed_too_small_for_its_jobs(tmp_path):
    bt = bare_testbed()
    small = tmp_path / "bare.yml"
    small.write_text(bt.inventory_text(bt.plan(3, "10.79.9.0/24", "plan", tmp_path), tmp_path))
    res = plan("testbed", inventory_override(tmp_path, small))
    assert res.returncode != 0
    assert "mpl_sweep.workloads.wl6.ranks: [2, 4] (expected counts <= 3 (3 hosts x 1 ranks per node))" in res.stderr


def test_the_paper_profile_plans_against_the_same_inventory(bare_inventory, tmp_path):
    res = plan("paper", inventory_override(tmp_path, bare_inventory, ranks_per_node=4))
    assert res.returncode == 0, res.stderr
    assert measures(res, MEASURING, "mpl_sweep")
    assert measures(res, ("run_groups",), "sais") and measures(res, ("run_groups",), "aioli")
    assert "rule make_report:" in res.stdout


def cluster_inventories(node, where: str):
    """Every cluster.inventory a profile names, at any depth (an experiment's own profile holds it at
    the top, a configuration file under the experiment's section)."""
    if isinstance(node, dict):
        cluster = node.get("cluster")
        if isinstance(cluster, dict) and isinstance(cluster.get("inventory"), str):
            yield where, cluster["inventory"]
        for key, value in node.items():
            yield from cluster_inventories(value, f"{where}.{key}")


def test_every_profile_names_an_inventory_file_not_the_script_that_writes_it():
    """A cluster's inventory is the YAML file a reservation's script writes (inventory/grid5000.yml
    from inventory/grid5000/reserve.py), never the script: Ansible and corun read a file."""
    profiles = sorted((REPO / "experiments").glob("*/profiles/*.yaml"))
    profiles += sorted((REPO / "workflows" / "config").glob("*.yaml"))
    named = [n for p in profiles for n in cluster_inventories(yaml.safe_load(p.read_text()), str(p.relative_to(REPO)))]
    assert {w for w, _ in named} >= {"experiments/sais/profiles/paper.yaml", "experiments/aioli/profiles/paper.yaml"}
    for where, inventory in named:
        assert Path(inventory).suffix in (".yml", ".yaml"), f"{where}: {inventory}"
        file = REPO / inventory
        assert not (file.is_file() and os.access(file, os.X_OK)), f"{where}: {inventory}"

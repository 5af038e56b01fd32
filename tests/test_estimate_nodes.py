"""The plan's wall-clock estimate spread over nodes (experiments/estimate.py): multi-node
experiments hold their hosts, the single-node experiments' runs fill the other nodes."""

from pathlib import Path

import pytest
import yaml

from corun.errors import ConfigError
from experiments import estimate as est
from experiments.config import validate_config

REPO = Path(__file__).resolve().parent.parent


def row(name, runs, seconds):
    return {"experiment": name, "runs": runs, "seconds": seconds, "k_dropped": []}


def test_single_node_runs_fill_the_nodes():
    rows = [row("a", 8, 800.0), row("b", 4, 200.0)]  # eight runs of 100 s, four of 50 s
    held = {"a": 1, "b": 1}
    assert est.spread(rows, held, 1) == (1000.0, {})
    assert est.spread(rows, held, 4) == (250.0, {})  # 2 x 100 + 1 x 50 on each node
    assert est.spread(rows, held, 16) == (100.0, {})  # never shorter than the longest run


def test_a_multi_node_experiment_holds_its_hosts_while_the_rest_fill_the_others():
    rows = [row("cluster", 10, 1000.0), row("a", 6, 600.0)]
    held = {"cluster": 3, "a": 1}
    # 4 nodes: the cluster holds 3 for 1000 s, the fourth measures a's six runs (600 s)
    assert est.spread(rows, held, 4) == (1000.0, {})
    # 3 nodes: the cluster holds all of them, a's runs follow: 1000 + 2 x 100
    assert est.spread(rows, held, 3) == (1200.0, {})
    # 2 nodes: the cluster cannot fit, named, and holds both
    assert est.spread(rows, held, 2) == (1300.0, {"cluster": 3})


def test_two_multi_node_experiments_run_side_by_side_when_they_fit():
    rows = [row("x", 1, 500.0), row("y", 1, 300.0)]
    assert est.spread(rows, {"x": 2, "y": 2}, 4)[0] == 500.0
    assert est.spread(rows, {"x": 2, "y": 2}, 3)[0] == 800.0


def test_the_widest_goes_first_so_the_narrower_shares_the_nodes_with_single_runs():
    rows = [row("wide", 1, 100.0), row("narrow", 1, 200.0), row("a", 4, 400.0)]
    # wide holds all 4 nodes for 100 s; then narrow on 2 while a's 4 runs share the other 2
    assert est.spread(rows, {"wide": 4, "narrow": 2, "a": 1}, 4)[0] == 300.0


def paper(**extra):
    raw = yaml.safe_load((REPO / "workflows" / "config" / "paper.yaml").read_text())
    return validate_config({**raw, **extra}, "paper")


def test_the_paper_profile_names_its_nodes_and_the_hosts_each_cluster_experiment_holds():
    cfg = paper(nodes=16)
    assert est.node_count(cfg) == 16
    assert est.node_count(paper()) == 1
    assert est.hosts_held(cfg, "mpl_sweep") == 16  # 16-rank jobs, one rank per node
    assert est.hosts_held(cfg, "sais") == 49  # 48 data servers and the client
    assert est.hosts_held(cfg, "aioli") == 5
    assert est.hosts_held(cfg, "cmp_stacking") == 1
    line = est.describe(cfg)
    assert "on one machine, at least " in line and " on 16 nodes; sais needs 49 hosts, held 16 (" in line


def test_the_node_count_from_the_hosts_inventory(tmp_path):
    inv = tmp_path / "inv.yml"
    inv.write_text(yaml.safe_dump({"testbed": {"hosts": {f"n{i}": {} for i in range(6)}}}))
    cfg = paper(hosts={"from_inventory": str(inv)})
    assert est.node_count(cfg) == 6
    assert est.node_count({**cfg, "nodes": 2}) == 2


def test_a_node_count_below_one_is_one_line():
    raw = yaml.safe_load((REPO / "workflows" / "config" / "paper.yaml").read_text())
    with pytest.raises(ConfigError) as exc:
        validate_config({**raw, "nodes": 0}, "paper")
    assert "nodes" in str(exc.value) and "\n" not in str(exc.value)


def test_the_node_count_from_a_cluster_experiments_own_inventory(tmp_path):
    """The testbed profile names no `hosts`: mpl_sweep's cluster inventory is the nodes it holds."""
    inv = tmp_path / "inv.yml"
    inv.write_text(yaml.safe_dump({"testbed": {"hosts": {f"n{i}": {} for i in range(2)}}}))
    cfg = paper(experiments=["mpl_sweep"])
    cfg["mpl_sweep"]["cluster"].update(inventory=str(inv), netns={**cfg["mpl_sweep"]["cluster"]["netns"], "hosts": 0})
    assert est.node_count(cfg) == 2
    cfg["mpl_sweep"]["cluster"]["inventory"] = str(tmp_path / "not-written-yet.yml")
    assert est.node_count(cfg) == 1
    cfg["mpl_sweep"]["cluster"]["netns"]["hosts"] = 2  # a cluster of namespaces on this machine
    cfg["mpl_sweep"]["cluster"]["inventory"] = str(inv)
    assert est.node_count(cfg) == 1

"""analysis.nodes: a node whose runs differ from the other nodes' in the same configurations is
flagged, not pooled; nodes alike are not; one node compares nothing."""

import pandas as pd
import pytest

from analysis.common import AnalysisInputError
from analysis.nodes import compare, main


def table(slow: float = 1.0) -> pd.DataFrame:
    rows = []
    for rep in range(6):
        node = f"n{rep % 3 + 1}"
        for variant, base in (("linux", 10.0), ("bfq", 20.0)):
            factor = slow if node == "n3" else 1.0
            rows.append({"run_id": f"{variant}-r{rep}", "variant": variant, "workload": "w01", "rep": rep,
                         "host": node, "status": "ok", "duration_s": base * factor * (1 + 0.001 * rep)})  # fmt: skip
    return pd.DataFrame(rows)


def test_a_slower_node_is_flagged_and_only_it():
    rows = {r["node"]: r for r in compare(table(slow=1.3))}
    assert rows["n3"]["flagged"] and rows["n3"]["median_ratio"] > 1.2
    assert not rows["n1"]["flagged"] and not rows["n2"]["flagged"]


def test_nodes_alike_are_not_flagged():
    assert not any(r["flagged"] for r in compare(table()))


def test_one_node_compares_nothing():
    assert compare(table().assign(host="n1")) == []


def test_a_table_without_hosts_is_named(tmp_path):
    with pytest.raises(AnalysisInputError, match="no column 'host'"):
        compare(table().drop(columns="host"))
    f = tmp_path / "runs.csv"
    table(slow=1.3).to_csv(f, index=False)
    assert main([str(f)]) == 2

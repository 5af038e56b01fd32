"""Where a measuring run goes on a Slurm cluster (workflows/rules/slurm.smk).

Each run is its own exclusive one-node job. The runs a claim pairs (a point's head and base at
one repetition) are measured on one node: repetition r runs on the r-th node of the partition
(modulo their count, in sorted order), pinned with --nodelist, so a node's difference never
enters an effect, and every node measures some repetitions (analysis.nodes compares them).
A job whose node fails is never requeued by Slurm (--no-requeue, against JobRequeue's default):
the executor reports it (NODE_FAIL) and the next call measures it again, where a requeued job
would measure the run again with no Snakemake watching, perhaps beside the next call's own.
"""

from __future__ import annotations

import re
import shutil
import subprocess

REP = re.compile(r"[-_]r(\d+)$")  # a run's repetition, the end of its name
_NODES: list[str | None] = []


def partition_nodes() -> list[str]:
    """The cluster's nodes, sorted, read once with sinfo; [] without a Slurm cluster."""
    if not _NODES and shutil.which("sinfo"):
        try:
            out = subprocess.run(
                ["sinfo", "--noheader", "--Node", "--format=%N"], capture_output=True, text=True, timeout=10
            ).stdout
        except (OSError, subprocess.TimeoutExpired):
            out = ""
        _NODES.extend(sorted(set(out.split())))
        _NODES.append(None)  # read, whatever it found
    return [n for n in _NODES if n]


def node_of(run_name: str, nodes: list[str]) -> str | None:
    """The node RUN_NAME's repetition is pinned to; None without nodes or a repetition."""
    m = REP.search(run_name)
    if not nodes or not m:
        return None
    return nodes[int(m.group(1)) % len(nodes)]


def slurm_extra(run_name: str, nodes: list[str]) -> str:
    """sbatch's options for RUN_NAME: its node alone, the node of its repetition, never requeued."""
    node = node_of(run_name, nodes)
    return "--exclusive --no-requeue" + ("" if node is None else f" --nodelist={node}")

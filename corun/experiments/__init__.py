"""Experiment helpers called by the workflow rules: data files, calibration, run specs."""

from __future__ import annotations

from corun.machine import topology


def machine_cmps(cfg: dict, source: str = "config") -> tuple[str, list[list[int]]]:
    """(grouping, CMPs) of this machine, or of the machine `plan_for` describes (for planning)."""
    pc = cfg["cmp"]
    if cfg.get("plan_for"):
        n, c = (int(x) for x in cfg["plan_for"].split("x"))
        return "assumed", [list(range(i * c, (i + 1) * c)) for i in range(n)]
    return topology.cmp_groups(topology.discover(), pc["grouping"], pc.get("cores_per_cmp"), pc.get("groups"), source)

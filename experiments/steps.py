"""What each rule of workflows/rules/experiments.smk takes from the campaign's plan
(experiments.campaign): which experiments a step has (the rule's {exp} wildcard constraint) and,
per job, its inputs and parameters from the job's wildcards. The rules are declared once for
every experiment; nothing here parses a path or a rule's name.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable

from corun.layout import Layout
from experiments import campaign


def one_of(names: Iterable[str]) -> str:
    """A wildcard constraint: exactly one of NAMES (none: a pattern that matches nothing)."""
    names = sorted(set(names))
    return "|".join(re.escape(n) for n in names) if names else "(?!)"


class Steps:
    """The plan's experiments per step, and the functions of wildcards the rules take."""

    def __init__(self, plan: dict, layout: Layout):
        self.layout = layout
        self.runs = plan["runs"]  # the experiments with runs of their own
        self.analyses = plan["analyses"]  # the selected experiments
        self.run_of = {e: {r["name"]: r for r in P["runs"]} for e, P in self.runs.items()}
        R = self.runs
        self.with_data = [e for e, P in R.items() if P["data"]]
        self.data_files = [P["data"].rsplit("/", 1)[-1] for e, P in R.items() if P["data"]]
        self.calibrated = [e for e, P in R.items() if P["calibration"]]
        self.on_one_host = self._plain("one")  # exp -> its runs on one host each
        self.across_hosts = self._plain("the experiment's")  # exp -> its runs over its hosts
        self.plain = bool(self.on_one_host or self.across_hosts)  # runs not in a group
        self.grouped = [e for e, P in R.items() if P["groups"]]
        self.one_look = [e for e, P in R.items() if len(P["looks"]) == 1]
        self.sequential = [e for e, P in R.items() if len(P["looks"]) > 1]
        self.analysed_once = [e for e, A in self.analyses.items() if A["looks"] == 1]
        self.analysed_by_look = [e for e, A in self.analyses.items() if A["looks"] > 1]

    def _plain(self, hosts: str) -> dict[str, list[str]]:
        out = {}
        for e, P in self.runs.items():
            names = [r["name"] for r in P["runs"] if r["group"] is None and r["needs"]["hosts"] == hosts]
            if names:
                out[e] = names
        return out

    # ------------------------------------------------------------ functions of a job's wildcards
    def from_run(self, field: str) -> Callable:
        return lambda wildcards: self.run_of[wildcards.exp][wildcards.run][field]

    def from_exp(self, field: str) -> Callable:
        return lambda wildcards: self.runs[wildcards.exp][field]

    def maybe(self, field: str) -> Callable:
        """The experiment's FIELD as a list: empty when the plan gives it none."""
        return lambda wildcards: [self.runs[wildcards.exp][field]] if self.runs[wildcards.exp][field] else []

    def look(self, part: str) -> Callable:
        """The files of the looks up to {look}: run folders, group stamps or every run folder."""
        return lambda wildcards: self.runs[wildcards.exp]["looks"][int(wildcards.look) - 1][part]

    def first_look(self, part: str) -> Callable:
        return lambda wildcards: self.runs[wildcards.exp]["looks"][0][part]

    def groups_of_look(self, wildcards) -> list[dict]:
        look = int(wildcards.look)
        return [g for g in self.runs[wildcards.exp]["groups"] if g["look"] == look]

    def group_inputs(self, wildcards) -> list[str]:
        return sorted({f for g in self.groups_of_look(wildcards) for f in g["inputs"]})

    def group_names(self, wildcards) -> str:
        return " ".join(g["name"] for g in self.groups_of_look(wildcards))

    def group_stamps(self, wildcards) -> str:
        return " ".join(g["stamp"] for g in self.groups_of_look(wildcards))

    def analysis_inputs(self, wildcards) -> dict:
        return self.analyses[wildcards.exp]["inputs"]

    def look_inputs(self, wildcards) -> dict:
        """The analysis's inputs with this look's tables in place of the final ones."""
        A = self.analyses[wildcards.exp]
        return {
            **{k: v for k, v in A["inputs"].items() if k not in ("jobs", "runs")},
            "jobs": self.layout.table(A["owner"], "jobs", wildcards.look),
            "runs": self.layout.table(A["owner"], "runs", wildcards.look),
        }

    def last_look(self, owner: str, checkpoints) -> int:
        """The last look of `owner`'s design the checkpoints (decide_looks) reached."""
        decisions = []
        n = len(self.runs[owner]["looks"])
        for look in range(1, n):
            decisions.append(checkpoints.decide_looks.get(exp=owner, look=look).output[0])
            if campaign.last_look(decisions) == look:
                return look
        return n

    def in_last_look(self, path: Callable, checkpoints) -> Callable:
        """The chosen look's copy of the experiment's file PATH(exp) (a path under RESULTS/<exp>/)."""

        def files(wildcards):
            exp = wildcards.exp
            look = self.last_look(self.analyses[exp]["owner"], checkpoints)
            return [self.layout.in_look(path(exp), exp, look)]

        return files

    def deciding_sections(self, wildcards) -> list[str]:
        """The sections of one look of the experiments that read the design's runs."""
        return [self.layout.section(e, wildcards.look) for e in self.runs[wildcards.exp]["readers"]]

"""The results layout: every path of a campaign under its results and data folders, named once.

RESULTS/config.yaml             the configuration as validated (the workflow writes it)
RESULTS/plan.json               the campaign's plan (experiments.campaign; schema
                                corun/schemas/campaign_plan.schema.json)
RESULTS/<exp>/specs/<run>.yaml  a run's spec; specs/groups.json the file-system groups
RESULTS/<exp>/runs/<run>/       a run's folder (corun run)
RESULTS/<exp>/groups/<look>/<g>.json  the stamp of a group measured together (corun.testbed.pfs_runs)
RESULTS/<exp>/jobs.csv, runs.csv  the collected tables; looks/<l>/ the same per look
RESULTS/<exp>/analysis/         the report section (section.json) and its tables and figures
RESULTS/<exp>/logs/<step>.log   each step's log
DATA/<exp>/                     the experiment's input files
"""

from __future__ import annotations


class Layout:
    """The paths of one campaign (strings, as the workflow's rules take them)."""

    def __init__(self, results: str, data: str = "data"):
        self.results, self.data = str(results), str(data)

    # the campaign
    @property
    def config(self) -> str:
        return f"{self.results}/config.yaml"

    @property
    def plan(self) -> str:
        return f"{self.results}/plan.json"

    @property
    def report(self) -> str:
        return f"{self.results}/report.html"

    @property
    def device_calibration(self) -> str:
        return f"{self.results}/device/calibration.json"

    # one experiment
    def exp(self, exp: str) -> str:
        return f"{self.results}/{exp}"

    def data_dir(self, exp: str) -> str:
        return f"{self.data}/{exp}"

    def specs(self, exp: str) -> str:
        return f"{self.results}/{exp}/specs"

    def spec(self, exp: str, run: str) -> str:
        return f"{self.results}/{exp}/specs/{run}.yaml"

    def runs(self, exp: str) -> str:
        return f"{self.results}/{exp}/runs"

    def run(self, exp: str, run: str) -> str:
        return f"{self.results}/{exp}/runs/{run}"

    def group_stamps(self, exp: str, look: int | str) -> str:
        """The folder of the stamps of one look's groups (the workflow's step writes it whole)."""
        return f"{self.results}/{exp}/groups/{look}"

    def group_stamp(self, exp: str, group: str, look: int | str) -> str:
        return f"{self.group_stamps(exp, look)}/{group}.json"

    def calibration(self, exp: str) -> str:
        return f"{self.results}/{exp}/calibration.json"

    def netns(self, exp: str) -> str:
        return f"{self.results}/{exp}/netns"

    def work(self, exp: str) -> str:
        return f"{self.results}/{exp}/work"

    def cache(self, exp: str) -> str:
        return f"{self.results}/{exp}/cache"

    def log(self, exp: str, step: str) -> str:
        return f"{self.results}/{exp}/logs/{step}.log"

    def look_dir(self, exp: str, look: int | str) -> str:
        return f"{self.results}/{exp}/looks/{look}"

    def decision(self, exp: str, look: int | str) -> str:
        return f"{self.look_dir(exp, look)}/decision.json"

    def base(self, exp: str, look: int | str | None = None) -> str:
        """The folder of the experiment's tables and section: its own, or a look's."""
        return self.exp(exp) if look is None else self.look_dir(exp, look)

    def table(self, exp: str, which: str, look: int | str | None = None) -> str:
        """jobs.csv or runs.csv (WHICH: jobs, runs) of the experiment, or of one look."""
        return f"{self.base(exp, look)}/{which}.csv"

    def analysis(self, exp: str, look: int | str | None = None) -> str:
        return f"{self.base(exp, look)}/analysis"

    def section(self, exp: str, look: int | str | None = None) -> str:
        return f"{self.analysis(exp, look)}/section.json"

    def in_look(self, path: str, exp: str, look: int | str) -> str:
        """PATH under the experiment's folder, moved to the same place under a look's."""
        return path.replace(f"{self.exp(exp)}/", f"{self.look_dir(exp, look)}/", 1)

    def describe(self, exps: list[str]) -> dict:
        """The layout as plan.json records it: the campaign's files and each experiment's."""
        return {
            "results": self.results,
            "data": self.data,
            "config": self.config,
            "plan": self.plan,
            "report": self.report,
            "device_calibration": self.device_calibration,
            "experiments": {
                e: {
                    "dir": self.exp(e),
                    "data_dir": self.data_dir(e),
                    "specs": self.specs(e),
                    "runs": self.runs(e),
                    "calibration": self.calibration(e),
                    "jobs": self.table(e, "jobs"),
                    "runs_table": self.table(e, "runs"),
                    "section": self.section(e),
                    "looks": f"{self.exp(e)}/looks",
                    "netns": self.netns(e),
                    "work": self.work(e),
                    "cache": self.cache(e),
                    "logs": f"{self.exp(e)}/logs",
                }
                for e in exps
            },
        }

"""What a campaign has done and has left, per experiment, from Snakemake's log events.

Pure state and text: the log handler (this package's __init__) feeds it records and prints what
`lines` returns. The plan comes from one record the workflow logs at start-up (`corun_plan`: the
estimate of experiments/estimate.py per experiment and the run steps' names); the times from the
records' own timestamps, so a recorded sequence of events renders the same every time.

The time left of an experiment is its runs still to measure times the plan's estimate per run,
corrected by the runs measured so far (their measured time over their estimated time): the plan's
estimate assumes no contention, so it is a lower bound the measured runs put right.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Experiment:
    name: str
    planned: int  # runs the plan makes (the first look's)
    cap: int  # runs the sequential design may reach while a claim is undecided
    est_per_run_s: float
    done: int = 0  # runs measured, this invocation or an earlier one
    done_now: int = 0  # runs measured by this invocation
    measured_s: float = 0.0  # their time
    to_run: int | None = None  # runs left to measure, from Snakemake's job counts

    def left_s(self, running_s: float = 0.0, running_runs: int = 0, factor: float = 1.0) -> float:
        """The runs still to measure at the measured time per run (until one is measured, the
        plan's times `factor`, how much slower the other experiments' runs were than planned);
        a job measuring now is counted as its estimate less the time it has run, never below
        nothing, so a slow job does not take time off the runs after it."""
        runs_left = max(self.target() - self.done, 0)
        est = self.measured_s / self.done_now if self.done_now else self.est_per_run_s * factor
        running_runs = min(running_runs, runs_left)
        return (runs_left - running_runs) * est + max(running_runs * est - running_s, 0.0)

    def target(self) -> int:
        """Runs planned: the plan's, or more once later looks were scheduled."""
        if self.to_run is not None:
            return max(self.planned, self.done + self.to_run)
        return max(self.planned, self.done)


@dataclass
class Job:
    jobid: int
    rule: str
    experiment: str | None
    runs: int
    label: str
    started: float


@dataclass
class Progress:
    experiments: dict[str, Experiment] = field(default_factory=dict)
    # the rules that measure runs: rule -> {"runs": {"<exp>/<look>": runs of one job}} (a job's
    # experiment is its {exp} wildcard)
    steps: dict[str, dict] = field(default_factory=dict)
    # exp -> [[a measuring job's output, its runs, its rule, its look]]
    outputs: dict[str, list] = field(default_factory=dict)
    jobs: dict[int, Job] = field(default_factory=dict)  # running
    counted: set = field(default_factory=set)  # the outputs Snakemake's count (run_info) gave
    exists: Callable[[str], bool] = os.path.exists
    started: float | None = None
    now: float = 0.0
    steps_done: int = 0
    steps_total: int = 0
    finished: bool = False
    active: bool = False  # Snakemake had jobs to run (not "Nothing to be done")
    failed: list[str] = field(default_factory=list)

    # -- feeding ---------------------------------------------------------------------------------
    def plan(self, plan: dict) -> None:
        for row in plan.get("experiments", []):
            runs = int(row["runs"])
            self.experiments[row["name"]] = Experiment(
                row["name"], runs, int(row.get("cap_runs") or runs), float(row["seconds"]) / max(runs, 1)
            )
        self.steps = dict(plan.get("steps", {}))
        self.outputs = {e: [list(o) for o in outs] for e, outs in plan.get("outputs", {}).items()}

    def experiment_of(self, rule: str, wildcards: dict) -> str | None:
        if rule in self.steps:
            return wildcards.get("exp")
        return None

    def run_info(self, stats: dict, exists=os.path.exists) -> None:
        """Snakemake's count of jobs per rule still to run: the runs left per experiment. A rule
        serves every experiment, so its count is given out over the plan's outputs of that rule
        (each [path, runs, rule, look]), look by look and in the plan's order within a look (a
        sequential design's later looks join only once a checkpoint asks for them): first to the
        outputs missing, then to those there that Snakemake runs again (outdated)."""
        self.active = True
        self.exists, self.counted = exists, set()
        left: dict[str, int] = {}
        earlier: dict[str, int] = {}
        order = {name: i for i, name in enumerate(self.experiments)}
        for rule in self.steps:
            jobs = int(stats.get(rule, 0))
            outs = sorted(
                (int(look), order[name], name, path, int(runs))
                for name in self.experiments
                for path, runs, r, look in self.outputs.get(name, [])
                if r == rule
            )
            missing = [o for o in outs if not exists(o[3])]
            there = [o for o in outs if o not in missing]
            for *_, name, path, runs in (missing + there)[:jobs]:
                left[name] = left.get(name, 0) + runs
                self.counted.add(path)
            # an output there that Snakemake does not run again was measured earlier
            for *_, name, _path, runs in there[max(jobs - len(missing), 0) :]:
                earlier[name] = earlier.get(name, 0) + runs
        for name, e in self.experiments.items():
            e.to_run = left.get(name, 0)
            e.done = earlier.get(name, 0) if e.done_now == 0 else e.done

    def job_info(self, jobid: int, rule: str, wildcards: dict, output: list, t: float) -> None:
        self.active = True
        if self.started is None:
            self.started = t
        exp = self.experiment_of(rule, wildcards)
        runs = 1
        label = rule
        if exp in self.experiments:
            self.join_look(exp, output)
        if exp is not None:
            per_look = self.steps[rule].get("runs") or {}
            if "look" in wildcards and per_look:
                runs = int(per_look.get(f"{exp}/{wildcards['look']}", 1))
                label = f"{exp}: {runs} runs on a cluster"
            else:
                label = f"{exp} {wildcards.get('run', '')}".strip()
        self.jobs[jobid] = Job(jobid, rule, exp, runs, label, t)
        self.tick(t)

    def join_look(self, exp: str, output: list) -> None:
        """A measuring job whose output no count gave is of a look a checkpoint asked for after
        Snakemake counted its jobs (it logs no count again): that look's outputs of EXP not
        there join the runs left, so "run n of N" grows by the look, not by each run."""
        outs = self.outputs.get(exp, [])
        mine = [o for o in outs if o[0] in output and o[0] not in self.counted]
        if not mine or self.experiments[exp].to_run is None:
            return
        look = mine[0][3]
        for path, runs, _rule, lk in outs:
            if lk == look and path not in self.counted and (path in output or not self.exists(path)):
                self.experiments[exp].to_run += int(runs)
                self.counted.add(path)

    def job_finished(self, jobid: int, t: float) -> None:
        job = self.jobs.pop(jobid, None)
        self.tick(t)
        if job is None or job.experiment not in self.experiments:
            return
        e = self.experiments[job.experiment]
        e.done += job.runs
        e.done_now += job.runs
        e.measured_s += t - job.started
        if e.to_run is not None:
            e.to_run = max(e.to_run - job.runs, 0)

    def job_error(self, jobid: int, rule: str, t: float) -> None:
        job = self.jobs.pop(jobid, None)
        self.failed.append(job.label if job else rule)
        self.tick(t)

    def progress(self, done: int, total: int, t: float) -> None:
        self.steps_done, self.steps_total = done, total
        self.tick(t)

    def tick(self, t: float) -> None:
        if self.started is None:
            self.started = t
        self.now = max(self.now, t)

    # -- reading ---------------------------------------------------------------------------------
    def measuring(self) -> list[Job]:
        return [j for j in self.jobs.values() if j.experiment is not None]

    def running_of(self, exp: str) -> tuple[float, int]:
        jobs = [j for j in self.jobs.values() if j.experiment == exp]
        return sum(self.now - j.started for j in jobs), sum(j.runs for j in jobs)

    def factor(self) -> float:
        """Measured over planned time of the runs measured so far (1 before any)."""
        planned = sum(e.done_now * e.est_per_run_s for e in self.experiments.values())
        measured = sum(e.measured_s for e in self.experiments.values() if e.done_now)
        return measured / planned if planned > 0 and measured > 0 else 1.0

    def left_of(self, name: str) -> float:
        return self.experiments[name].left_s(*self.running_of(name), self.factor())

    def totals(self) -> tuple[int, int, float]:
        done = sum(e.done for e in self.experiments.values())
        target = sum(e.target() for e in self.experiments.values())
        left = sum(self.left_of(n) for n in self.experiments)
        return done, target, left

    def lines(self) -> list[str]:
        elapsed = self.now - self.started if self.started is not None else 0.0
        done, target, left = self.totals()
        state = "done" if self.finished and not self.failed else ("stopped" if self.finished else "running")
        head = f"corun: {done} of {target} runs, {clock(elapsed)} so far"
        if not self.finished:
            head += f", ~{clock(left)} left"
        if self.steps_total:
            head += f" ({self.steps_done} of {self.steps_total} steps, {state})"
        out = [head, f"  {'experiment':<20} {'runs':>9} {'time':>8} {'left':>8}"]
        for name, e in self.experiments.items():
            run_s, _ = self.running_of(name)
            spent = e.measured_s + run_s
            e_left = self.left_of(name)
            left_txt = "-" if e.done >= e.target() else f"~{clock(e_left)}"
            more = f" (up to {e.cap})" if e.cap > e.target() and e.done < e.target() else ""
            out.append(f"  {name:<20} {e.done:>4} of {e.target():<3} {clock(spent):>8} {left_txt:>8}{more}")
        for j in self.measuring():
            out.append(f"  measuring now: {j.label} ({clock(self.now - j.started)})")
        for f in self.failed:
            out.append(f"  failed: {f}")
        return out

    def line(self, job: Job) -> str:
        """One line when a run starts (for a log that is not a terminal)."""
        e = self.experiments.get(job.experiment)
        done, target, left = self.totals()
        mine = ""
        if e:
            left_s = self.left_of(job.experiment)
            mine = f"run {e.done + 1} of {e.target()}, {clock(e.measured_s)} so far, ~{clock(left_s)} left"
        return f"corun: measuring {job.label} ({mine}; all: {done} of {target} runs, ~{clock(left)} left)"


def clock(seconds: float) -> str:
    s = int(round(max(seconds, 0.0)))
    h, rest = divmod(s, 3600)
    m, s = divmod(rest, 60)
    return f"{h}:{m:02d}:{s:02d}" if h else f"{m}:{s:02d}"

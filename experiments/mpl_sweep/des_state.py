"""The discrete-event model's parameters and state (experiments.mpl_sweep.des): the schemes, their
waiting actions, a benchmark's shape, and the ranks, jobs, CPUs and nodes the model moves."""

from __future__ import annotations

import math
from collections import deque
from dataclasses import dataclass, field

SCHEMES = ("batch", "local", "dcs", "pb", "ib", "sb", "hybrid", "cc_s", "cc_b", "gang")
# receiver's waiting action of each scheme (Table 1 of the paper)
WAIT = {
    "batch": "spin",
    "local": "spin",
    "dcs": "spin",
    "pb": "spin",
    "cc_s": "spin",
    "gang": "spin",
    "ib": "block",
    "hybrid": "block",
    "cc_b": "block",
    "sb": "spinblock",
}
EPS = 1e-12
MAX_SAME_TIME = 1_000_000  # events at one instant: a livelock of the model, not a result


@dataclass(frozen=True)
class Params:
    """The model's parameters; times in seconds."""

    cores: int = 1
    quantum_s: float = 0.004
    ctx_switch_s: float = 6e-6
    wake_gran_s: float = 0.001
    spin_s: float = 150e-6
    pb_period_s: float = 0.010
    boost_max_s: float = 0.010
    gang_slice_s: float = 0.100
    startup_s: float = 0.0
    startup_cpu_frac: float = 0.0
    bcr_min_pending: int = 2
    cost_switch_s: float = 6e-6
    erl_unit_s: float = 0.041


@dataclass(frozen=True)
class Bench:
    """One benchmark's shape: per rank and iteration, compute then exchange steps."""

    iters: int
    compute_s: float
    lat_s: float
    halo: bool = True
    allreduce_every: int = 0
    alltoall_every: int = 0

    def steps(self, it: int) -> list[str]:
        out = ["nn"] if self.halo else []
        if self.allreduce_every and (it + 1) % self.allreduce_every == 0:
            out.append("allreduce")
        if self.alltoall_every and (it + 1) % self.alltoall_every == 0:
            out.append("alltoall")
        return out

    def alone_s(self, ranks: int) -> float:
        """Length of one job alone (no contention), startup excluded."""
        total = 0.0
        for it in range(self.iters):
            total += self.compute_s
            for s in self.steps(it):
                total += step_latency(self, s, ranks)
        return total


@dataclass(frozen=True)
class JobIn:
    name: str
    bench: str
    ranks: int
    submit_s: float


def step_latency(b: Bench, kind: str, ranks: int) -> float:
    if kind == "nn" or ranks <= 1:
        return b.lat_s
    if kind == "allreduce":
        return b.lat_s * math.ceil(math.log2(ranks))
    return b.lat_s * (ranks - 1)


# ----------------------------------------------------------------------------- state


@dataclass(eq=False)
class Rank:
    job: Job
    idx: int
    node: Node
    state: str = "delay"  # delay | work | wait | done
    remaining: float = 0.0
    it: int = 0
    step_i: int = 0  # index into the current iteration's steps; -1: computing
    seq: int = 0  # global step counter (message matching)
    got: dict = field(default_factory=dict)  # seq -> messages arrived
    pending: list = field(default_factory=list)  # (erl_s, t_arrival) of unconsumed messages
    blocked: bool = False
    satisfied: bool = False  # its wait's messages are all there; it completes once it runs
    spin_left: float = 0.0
    wait_since: float = 0.0
    boosted: bool = False
    boost_since: float = 0.0
    boost_order: float = 0.0
    cpu: Cpu | None = None
    queued: bool = False


@dataclass(eq=False)
class Job:
    spec: JobIn
    bench: Bench
    jid: int
    start_s: float = math.nan
    end_s: float = math.nan
    ranks: list = field(default_factory=list)
    done: int = 0
    posted: dict = field(default_factory=dict)  # seq -> ranks that entered a collective
    steps: list = field(default_factory=list)  # the step kinds of each iteration


@dataclass(eq=False)
class Cpu:
    node: Node
    idx: int
    cur: Rank | None = None
    token: int = 0
    seg_start: float = 0.0
    run_start: float = 0.0
    q_end: float = math.inf


@dataclass(eq=False)
class Node:
    idx: int
    cpus: list = field(default_factory=list)
    ranks: list = field(default_factory=list)
    runq: deque = field(default_factory=deque)
    slots: int = 0
    rr: int = 0
    ed_s: float = 0.001  # mean run length per scheduling (eq. 1's ED)
    switches: int = 0
    conflict_switches: int = 0

    def n_pending(self) -> int:
        return sum(1 for r in self.ranks if r.pending)

"""A discrete-event model of paper 001's coscheduling schemes on a multi-programmed cluster.

What is modelled (one event heap, seeded, deterministic; no wall clock):

- **Nodes** with `cores` CPUs each and a local scheduler: boosted ranks first, then a round
  robin run queue; a rank keeps a CPU for at most `quantum_s` when others are runnable; every
  switch to another rank costs `ctx_switch_s` of the CPU. A rank woken from a block goes to the
  head of the run queue and preempts an unboosted rank that has run `wake_gran_s` (the kernel's
  wake-up preemption).
- **MPI jobs** of P ranks, one rank per node (`ranks_per_node`), allocated first in, first out
  into `mpl` job slots per node (least loaded nodes first, no backfilling). Each rank first
  starts up (`startup_s`: a part `startup_cpu_frac` of it is CPU work on its node, the rest a
  delay), then runs `iters` iterations of the benchmark's shape (`Bench`): compute
  `compute_s`, then its exchange steps: a nearest-neighbour halo (messages from the ring
  neighbours, `lat_s` after they were sent), an all-reduce every `allreduce_every` iterations
  and an all-to-all every `alltoall_every` (collectives: complete `lat_s x ceil(log2 P)`,
  resp. `lat_s x (P - 1)`, after the last rank entered them).
- **Waiting actions**: spin (the waiting rank keeps its CPU), block (gives it up until its
  messages are there), spin-then-block (`spin_s`).
- **Handling actions**: boost on arrival (DCS, IB, SB), periodic boost of one rank with pending
  messages (PB round robin, CC-S by weight, every `pb_period_s`), boost inside collectives
  (HYBRID), CC-B's order of the ranks with pending messages when `bcr_min_pending` or more
  have some (eqs. 1-4: lowest expected rescheduling latency of the correspondents first),
  gang time slices (`gang_slice_s`, the node's own jobs in job order). A boost ends when the
  rank's wait completes, its collective ends (HYBRID) or after `boost_max_s`.
- **Metrics** as measured: response (end - submit), execution (end - start), waiting time per
  job; BCR = context switches taken while `bcr_min_pending` or more ranks of the node had pending
  messages / all context switches; MD = mean over received messages of wait completion - wait
  entry (0 when the message was there first).

Left out: sends (asynchronous, no CPU), the CPU cost of the network stack apart from what
`lat_s` holds, futile wake-ups of a rank whose wait is still incomplete, the daemon's own CPU
use, memory, and the heterogeneity of the paper's nodes (every node has the same speed).
"""

from __future__ import annotations

import heapq
import math
from collections import deque

from experiments.mpl_sweep.des_handling import Handling
from experiments.mpl_sweep.des_state import (
    EPS,
    MAX_SAME_TIME,
    SCHEMES,
    WAIT,
    Bench,
    Cpu,
    Job,
    JobIn,
    Node,
    Params,
    Rank,
    step_latency,
)

__all__ = [
    "Params",
    "Bench",
    "JobIn",
    "step_latency",
    "Rank",
    "Job",
    "Cpu",
    "Node",
    "SCHEMES",
    "WAIT",
    "EPS",
    "MAX_SAME_TIME",
    "Model",
    "simulate",
]


class Model(Handling):
    """One simulated run: `run()` returns per-job times and the BCR and MD of the run."""

    def __init__(self, scheme: str, mpl: int, nodes: int, params: Params, benches: dict[str, Bench],
                 jobs: list[JobIn], ranks_per_node: int = 1) -> None:  # fmt: skip
        if scheme not in SCHEMES:
            raise ValueError(f"scheme {scheme!r} (expected one of {', '.join(SCHEMES)})")
        self.scheme, self.mpl, self.p = scheme, (1 if scheme == "batch" else mpl), params
        self.wait = WAIT[scheme]
        self.rpn = ranks_per_node
        self.nodes = [Node(i) for i in range(nodes)]
        for n in self.nodes:
            n.cpus = [Cpu(n, c) for c in range(params.cores)]
        self.jobs = [Job(j, benches[j.bench], i) for i, j in enumerate(jobs)]
        for j in self.jobs:
            if j.spec.ranks > nodes * ranks_per_node:
                raise ValueError(f"job {j.spec.name}: {j.spec.ranks} ranks on {nodes} nodes")
        self.heap: list = []
        self.n_ev = 0
        self.now = 0.0
        self.queue: deque = deque()
        self.md_sum = 0.0
        self.md_n = 0
        self.boost_seq = 0

    # ------------------------------------------------------------------ events
    def at(self, t: float, kind: str, *args) -> None:
        self.n_ev += 1
        heapq.heappush(self.heap, (t, self.n_ev, kind, args))

    def run(self) -> dict:
        for j in self.jobs:
            self.at(j.spec.submit_s, "submit", j)
        if self.scheme in ("pb", "cc_s"):
            for n in self.nodes:
                self.at(self.p.pb_period_s, "period", n)
        if self.scheme == "gang":
            self.at(self.p.gang_slice_s, "slice")
        left = len(self.jobs)
        same = 0
        while self.heap and left:
            t, _, kind, args = heapq.heappop(self.heap)
            same = same + 1 if t == self.now else 0
            if same > MAX_SAME_TIME:
                raise RuntimeError(f"model: {same} events at t = {t} s without progress ({self.scheme})")
            self.now = t
            if kind == "submit":
                self.queue.append(args[0])
                self.allocate()
            elif kind == "cpu":
                cpu, token = args
                if token == cpu.token:
                    self.on_cpu(cpu)
            elif kind == "msg":
                self.on_msg(*args)
            elif kind == "ready":
                self.on_ready(args[0])
            elif kind == "period":
                self.on_period(args[0])
            elif kind == "slice":
                self.on_slice()
            elif kind == "jobend":
                left -= 1
        return self.result()

    # ------------------------------------------------------------------ queue
    def allocate(self) -> None:
        while self.queue:
            j = self.queue[0]
            need = math.ceil(j.spec.ranks / self.rpn)
            free = [n for n in self.nodes if n.slots < self.mpl]
            if len(free) < need:
                return
            self.queue.popleft()
            hosts = sorted(free, key=lambda n: (n.slots, n.idx))[:need]
            j.start_s = self.now
            j.steps = [j.bench.steps(it) for it in range(j.bench.iters)]
            for n in hosts:
                n.slots += 1
            for i in range(j.spec.ranks):
                n = hosts[i % need]
                r = Rank(j, i, n)
                j.ranks.append(r)
                n.ranks.append(r)
                delay = self.p.startup_s * (1 - self.p.startup_cpu_frac)
                self.at(self.now + delay, "ready", r)

    def on_ready(self, r: Rank) -> None:
        r.state = "work"
        r.step_i = -1
        r.remaining = self.p.startup_s * self.p.startup_cpu_frac
        r.it = -1  # the startup work; iteration 0 follows
        self.make_runnable(r)

    def finish(self, r: Rank) -> None:
        r.state = "done"
        n = r.node
        n.ranks.remove(r)
        if r.queued:
            n.runq.remove(r)
            r.queued = False
        j = r.job
        j.done += 1
        if j.done == len(j.ranks):
            j.end_s = self.now
            for h in sorted({x.node.idx: x.node for x in j.ranks}.values(), key=lambda n: n.idx):
                h.slots -= 1
            self.at(self.now, "jobend", j)
            self.allocate()

    # ------------------------------------------------------------------ rank progress
    def runnable(self, r: Rank) -> bool:
        if r.state == "work":
            return True
        if r.state == "wait":
            return not r.blocked
        return False

    def make_runnable(self, r: Rank, woken: bool = False) -> None:
        """r has become runnable: queue it and let an idle or preemptible CPU take it."""
        if r.cpu is not None or r.queued:
            return
        n = r.node
        if woken:
            n.runq.appendleft(r)
        else:
            n.runq.append(r)
        r.queued = True
        self.kick(n, woken_rank=r if woken else None)

    def kick(self, n: Node, woken_rank: Rank | None = None) -> None:
        """Give idle CPUs work; preempt for a better candidate (boost, CC order, wake-up)."""
        for cpu in n.cpus:
            if cpu.cur is None:
                self.pick(cpu)
        best = self.best_candidate(n)
        if best is None:
            return
        for cpu in n.cpus:
            c = cpu.cur
            if c is None:
                continue
            if self.prio(best) < self.prio(c):
                self.preempt(cpu)
                return
        if woken_rank is not None and self.eligible(woken_rank):
            for cpu in n.cpus:
                c = cpu.cur
                if c is not None and not self.is_boosted(c):
                    t = max(self.now, cpu.seg_start + self.p.wake_gran_s)
                    if t < cpu.q_end:
                        cpu.q_end = t
                        self.plan(cpu)
                    return

    def is_boosted(self, r: Rank) -> bool:
        if self.scheme == "cc_b":
            return bool(r.pending) and r.node.n_pending() >= self.p.bcr_min_pending
        return r.boosted

    def prio(self, r: Rank) -> tuple:
        """Lower runs first: boosted ranks (by their order), then the rest (equal)."""
        if self.scheme == "cc_b" and self.is_boosted(r):
            return (0, self.cc_key(r))
        if r.boosted:
            return (0, r.boost_order)
        return (1, 0.0)

    def eligible(self, r: Rank) -> bool:
        if self.scheme != "gang":
            return True
        return r.job is self.gang_job(r.node)

    def best_candidate(self, n: Node) -> Rank | None:
        best, bp = None, None
        for r in n.runq:
            if not self.eligible(r):
                continue
            p = self.prio(r)
            if best is None or p < bp:
                best, bp = r, p
        return best

    # ------------------------------------------------------------------ CPUs
    def advance(self, cpu: Cpu) -> None:
        """Account the CPU time the current rank used since its segment started."""
        r = cpu.cur
        dt = self.now - cpu.seg_start
        if r is None or dt <= 0:
            return
        if r.state == "work":
            r.remaining -= dt
        elif r.state == "wait" and self.wait == "spinblock":
            r.spin_left -= dt
        cpu.seg_start = self.now

    def plan(self, cpu: Cpu) -> None:
        """Schedule the CPU's next event: the end of the current rank's work, spin or slice."""
        r = cpu.cur
        cpu.token += 1
        if r is None:
            return
        start = max(self.now, cpu.seg_start)
        t = cpu.q_end
        if r.state == "wait" and r.satisfied:
            t = start
        elif r.state == "work":
            t = min(t, start + max(0.0, r.remaining))
        elif r.state == "wait" and self.wait == "spinblock" and not r.blocked:
            t = min(t, start + max(0.0, r.spin_left))
        if r.boosted:
            if r.boost_since + self.p.boost_max_s <= self.now + EPS:
                r.boosted = False  # its boost ran out while it waited for the CPU
            else:
                t = min(t, r.boost_since + self.p.boost_max_s)
        if t < math.inf:
            self.at(max(t, self.now), "cpu", cpu, cpu.token)

    def pick(self, cpu: Cpu) -> None:
        """Idle CPU: run the best eligible queued rank, switching costs ctx_switch_s."""
        n = cpu.node
        r = self.best_candidate(n)
        if r is None:
            cpu.cur = None
            cpu.token += 1
            return
        n.runq.remove(r)
        r.queued = False
        r.cpu = cpu
        cpu.cur = r
        n.switches += 1
        if n.n_pending() >= self.p.bcr_min_pending:
            n.conflict_switches += 1
        cpu.seg_start = self.now + self.p.ctx_switch_s
        cpu.run_start = cpu.seg_start
        cpu.q_end = cpu.seg_start + self.p.quantum_s
        self.plan(cpu)

    def release(self, cpu: Cpu, requeue: bool) -> None:
        r = cpu.cur
        run = self.now - cpu.run_start
        n = cpu.node
        n.ed_s = 0.9 * n.ed_s + 0.1 * max(run, 0.0)
        cpu.cur = None
        r.cpu = None
        if requeue and self.runnable(r):
            n.runq.append(r)
            r.queued = True

    def preempt(self, cpu: Cpu) -> None:
        self.advance(cpu)
        self.release(cpu, requeue=True)
        self.pick(cpu)

    def on_cpu(self, cpu: Cpu) -> None:
        r = cpu.cur
        if r is None:
            return
        self.advance(cpu)
        if self.now < cpu.seg_start - EPS:  # still switching to r
            self.plan(cpu)
            return
        if r.boosted and self.now >= r.boost_since + self.p.boost_max_s - EPS:
            r.boosted = False
        if r.state == "wait" and r.satisfied:
            self.complete_wait(r)
        elif r.state == "work" and r.remaining <= EPS:
            self.end_work(r)
        if r.state == "done":
            cpu.cur = None
            r.cpu = None
            self.pick(cpu)
            return
        if r.state == "wait" and self.wait == "spinblock" and not r.blocked and r.spin_left <= EPS:
            r.blocked = True
        if not self.runnable(r):
            self.release(cpu, requeue=False)
            self.pick(cpu)
            return
        if self.now >= cpu.q_end - EPS:
            other = self.best_candidate(cpu.node)
            if other is not None and self.prio(other) <= self.prio(r):
                self.release(cpu, requeue=True)
                self.pick(cpu)
                return
            cpu.q_end = self.now + self.p.quantum_s
        self.plan(cpu)

    # ------------------------------------------------------------------ steps and messages
    def end_work(self, r: Rank) -> None:
        """r finished its computation (or its startup): enter the next exchange step."""
        if r.it == -1:  # startup done
            r.it = 0
            self.start_iteration(r)
            return
        r.step_i = 0
        self.enter_step(r)

    def start_iteration(self, r: Rank) -> None:
        j = r.job
        if r.it >= j.bench.iters:
            self.finish(r)
            return
        r.state = "work"
        r.step_i = -1
        r.remaining = j.bench.compute_s

    def enter_step(self, r: Rank) -> None:
        j = r.job
        steps = j.steps[r.it]
        while r.step_i < len(steps):
            kind = steps[r.step_i]
            r.seq += 1
            self.post(r, kind)
            if r.got.get(r.seq, 0) >= self.need(r, kind):
                self.consume(r, r.seq, waited=0.0)
                r.step_i += 1
                continue
            r.state = "wait"
            r.wait_since = self.now
            r.blocked = self.wait == "block"
            r.spin_left = self.p.spin_s
            if kind != "nn" and self.scheme == "hybrid":
                self.boost(r)
            return
        r.it += 1
        self.start_iteration(r)

    def result(self) -> dict:
        jobs = []
        for j in self.jobs:
            jobs.append(
                {
                    "name": j.spec.name,
                    "bench": j.spec.bench,
                    "ranks": j.spec.ranks,
                    "submit_s": j.spec.submit_s,
                    "start_s": j.start_s,
                    "end_s": j.end_s,
                    "response_s": j.end_s - j.spec.submit_s,
                    "exec_s": j.end_s - j.start_s,
                    "wait_s": j.start_s - j.spec.submit_s,
                }
            )
        cs = sum(n.switches for n in self.nodes)
        ccs = sum(n.conflict_switches for n in self.nodes)
        return {
            "jobs": jobs,
            "context_switches": cs,
            "conflict_context_switches": ccs,
            "bcr": ccs / cs if cs else math.nan,
            "md_us": 1e6 * self.md_sum / self.md_n if self.md_n else math.nan,
            "events": self.n_ev,
        }


def simulate(scheme: str, mpl: int, nodes: int, params: Params, benches: dict[str, Bench], jobs: list[JobIn],
             ranks_per_node: int = 1) -> dict:  # fmt: skip
    """One run of the model (see the module's docstring)."""
    return Model(scheme, mpl, nodes, params, benches, jobs, ranks_per_node).run()

"""The discrete-event model's messages and handling actions (experiments.mpl_sweep.des.Model):
posting and receiving, the expected rescheduling latency, boosts, CC's order, periodic boosts and
gang slices."""

from __future__ import annotations

import math

from experiments.mpl_sweep.des_state import Job, Node, Rank, step_latency


class Handling:
    """Messages and handling actions; mixed into Model, whose state they use."""

    def need(self, r: Rank, kind: str) -> int:
        p = len(r.job.ranks)
        if p <= 1:
            return 0
        if kind == "nn":
            return 1 if p == 2 else 2
        return 1

    def erl(self, n: Node) -> float:
        """Eq. 1: ERL = ED x ENP + (ceil(ENP) + 1) x Cost_switch."""
        enp = n.n_pending()
        return n.ed_s * enp + (math.ceil(enp) + 1) * self.p.cost_switch_s

    def post(self, r: Rank, kind: str) -> None:
        """r entered step r.seq: send its halo, or enter the collective."""
        j = r.job
        p = len(j.ranks)
        if p <= 1:
            return
        lat = step_latency(j.bench, kind, p)
        erl = self.erl(r.node)
        if kind == "nn":
            left, right = j.ranks[(r.idx - 1) % p], j.ranks[(r.idx + 1) % p]
            for q in [left] if left is right else [left, right]:  # a list: the same order every run
                self.at(self.now + lat, "msg", q, r.seq, erl)
            return
        done = j.posted.get(r.seq, 0) + 1
        j.posted[r.seq] = done
        if done == p:
            del j.posted[r.seq]
            for q in j.ranks:
                self.at(self.now + lat, "msg", q, r.seq, erl)

    def consume(self, r: Rank, seq: int, waited: float) -> None:
        n = r.got.pop(seq, 0)
        self.md_sum += n * waited
        self.md_n += n
        if n:
            r.pending = r.pending[n:]
        if r.boosted and self.scheme != "gang":
            r.boosted = False

    def on_msg(self, r: Rank, seq: int, erl: float) -> None:
        if r.state == "done":
            return
        r.got[seq] = r.got.get(seq, 0) + 1
        r.pending.append((erl, self.now))
        n = r.node
        if r.state == "wait" and seq == r.seq:
            kind = r.job.steps[r.it][r.step_i]
            if r.got[seq] >= self.need(r, kind):
                cpu = r.cpu
                if cpu is not None:  # spinning on a CPU: continue at once
                    self.advance(cpu)
                    self.complete_wait(r)
                    if r.state == "done":
                        cpu.cur = None
                        r.cpu = None
                        self.pick(cpu)
                    else:
                        self.plan(cpu)
                else:
                    woken = r.blocked
                    r.blocked = False
                    r.satisfied = True
                    self.arrival_action(r)
                    self.make_runnable(r, woken=woken)
                    self.kick(n)
                return
        self.arrival_action(r)
        self.kick(n)

    def complete_wait(self, r: Rank) -> None:
        self.consume(r, r.seq, waited=self.now - r.wait_since)
        r.step_i += 1
        r.blocked = False
        r.satisfied = False
        self.enter_step(r)

    def arrival_action(self, r: Rank) -> None:
        if self.scheme in ("dcs", "ib", "sb") and r.cpu is None:
            self.boost(r)

    def boost(self, r: Rank) -> None:
        if r.boosted:
            return
        self.boost_seq += 1
        r.boosted = True
        r.boost_since = self.now
        r.boost_order = self.boost_seq
        if r.cpu is None and self.runnable(r) and not r.queued:
            self.make_runnable(r)

    def cc_key(self, r: Rank) -> float:
        """Eqs. 3-4: the rank's largest aged ERL' (min of W_r); lower runs first."""
        erl_max = self.mpl * self.p.erl_unit_s
        worst = 0.0
        for erl, t in r.pending:
            worst = max(worst, min(max(erl - (self.now - t), 0.0), erl_max))
        return worst

    def on_period(self, n: Node) -> None:
        self.at(self.now + self.p.pb_period_s, "period", n)
        cands = [r for r in n.ranks if r.pending and r.cpu is None and not r.boosted]
        if not cands:
            return
        if self.scheme == "cc_s":
            r = min(cands, key=lambda x: (self.cc_key(x), x.job.jid, x.idx))
        else:
            order = sorted(cands, key=lambda x: (x.job.jid, x.idx))
            r = order[n.rr % len(order)]
            n.rr += 1
        self.boost(r)
        self.kick(n)

    def gang_job(self, n: Node) -> Job | None:
        jobs = sorted({r.job.jid: r.job for r in n.ranks}.items())
        if not jobs:
            return None
        slot = int(self.now / self.p.gang_slice_s + 1e-9) % len(jobs)
        return jobs[slot][1]

    def on_slice(self) -> None:
        self.at(self.now + self.p.gang_slice_s, "slice")
        for n in self.nodes:
            g = self.gang_job(n)
            for cpu in n.cpus:
                if cpu.cur is not None and cpu.cur.job is not g:
                    self.preempt(cpu)
                elif cpu.cur is None:
                    self.pick(cpu)

    # ------------------------------------------------------------------ result

"""Placement of batch jobs on CMPs: a first-come-first-served queue, no preemption.

Each CPU of a CMP has `slots_per_core` slots (1 = at most one job per core, as in the
papers). A job asking for c cores gets c distinct CPUs of one CMP (confinement,
paper 000 section 2). The queue head blocks the queue: jobs start in submit order.

Policies are pluggable (POLICIES): later experiments add SMT- and NUMA-aware ones.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field


@dataclass
class Slot:
    cmp: int
    cpus: list[int]


@dataclass
class Placer:
    cmps: list[list[int]]
    slots_per_core: int = 1
    policy: str = "pack"
    used: dict[int, int] = field(default_factory=dict)  # cpu -> jobs on it

    def __post_init__(self):
        for g in self.cmps:
            for c in g:
                self.used.setdefault(c, 0)
        if self.policy not in POLICIES:
            raise ValueError(f"unknown placement policy {self.policy}")

    def free_cpus(self, cmp: int) -> list[int]:
        return [c for c in self.cmps[cmp] if self.used[c] < self.slots_per_core]

    def capacity(self) -> int:
        return sum(len(g) for g in self.cmps) * self.slots_per_core

    def fits_anywhere(self, cores: int, cmp: int | None = None) -> bool:
        """Could a job of `cores` cores ever run (on an empty machine)?"""
        cands = [cmp] if cmp is not None else range(len(self.cmps))
        return any(0 <= i < len(self.cmps) and cores <= len(self.cmps[i]) for i in cands)

    def place(self, cores: int, cmp: int | None = None) -> Slot | None:
        """Reserve CPUs for a job now, or None if it must wait."""
        slot = POLICIES[self.policy](self, cores, cmp)
        if slot is not None:
            for c in slot.cpus:
                self.used[c] += 1
        return slot

    def release(self, slot: Slot) -> None:
        for c in slot.cpus:
            self.used[c] -= 1


def _least_loaded(placer: Placer, cmp: int, cores: int) -> list[int] | None:
    free = placer.free_cpus(cmp)
    if len(free) < cores:
        return None
    return sorted(sorted(free, key=lambda c: (placer.used[c], c))[:cores])


def pack(placer: Placer, cores: int, cmp: int | None) -> Slot | None:
    """Lowest-numbered CMP with room: fills CMP 0, then CMP 1, ... (CMP stacking)."""
    cands = [cmp] if cmp is not None else range(len(placer.cmps))
    for i in cands:
        cpus = _least_loaded(placer, i, cores)
        if cpus is not None:
            return Slot(i, cpus)
    return None


def spread(placer: Placer, cores: int, cmp: int | None) -> Slot | None:
    """The CMP with the most free CPUs first (balances jobs across CMPs)."""
    cands = [cmp] if cmp is not None else range(len(placer.cmps))
    order = sorted(cands, key=lambda i: (-len(placer.free_cpus(i)), i))
    for i in order:
        cpus = _least_loaded(placer, i, cores)
        if cpus is not None:
            return Slot(i, cpus)
    return None


POLICIES: dict[str, Callable[[Placer, int, int | None], Slot | None]] = {
    "pack": pack,
    "spread": spread,
}

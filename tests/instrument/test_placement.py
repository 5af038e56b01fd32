"""FCFS placement on CMPs: one job per core unless allowed, confinement, pinning."""

from corun.run.placement import Placer


def test_pack_fills_cmps_in_order():
    p = Placer([[0, 1], [2, 3]])
    slots = [p.place(1) for _ in range(4)]
    assert [(s.cmp, s.cpus) for s in slots] == [(0, [0]), (0, [1]), (1, [2]), (1, [3])]
    assert p.place(1) is None  # one job per core
    p.release(slots[2])
    assert p.place(1).cpus == [2]


def test_multi_core_job_is_confined_to_one_cmp():
    p = Placer([[0, 1], [2, 3]])
    a = p.place(1)
    b = p.place(2)  # cannot use CPU 1 + 2 across CMPs
    assert a.cmp == 0 and b.cmp == 1 and b.cpus == [2, 3]
    assert p.place(2) is None
    assert not p.fits_anywhere(3)


def test_pinned_job_waits_for_its_cmp():
    p = Placer([[0], [1]])
    assert p.place(1, cmp=1).cpus == [1]
    assert p.place(1, cmp=1) is None
    assert p.place(1).cpus == [0]


def test_slots_per_core_allows_oversubscription():
    p = Placer([[0]], slots_per_core=2)
    assert p.place(1) and p.place(1)
    assert p.place(1) is None
    assert p.capacity() == 2


def test_spread_balances():
    p = Placer([[0, 1], [2, 3]], policy="spread")
    assert [p.place(1).cmp for _ in range(4)] == [0, 1, 0, 1]

"""The aIOLi scheduling core (schedulers/aioli/src/policy.c) on hand-made request streams,
replayed in virtual time by build/aioli_sim (each dispatch keeps the child busy 100 us unless
said otherwise): orders, aggregations, quantum growth, both waits, the starvation bound, fifo
pass-through, time_order_agg, app_aware with a trace; the ASan/UBSan build on every stream."""

import json
import subprocess
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent.parent
BUILD = REPO / "schedulers" / "aioli" / "build"
K = 65536


@pytest.fixture(scope="module", autouse=True)
def built():
    subprocess.run(["make", "-s", "-C", str(REPO / "schedulers" / "aioli"), "build/aioli_sim", "build/aioli_sim_asan"],
                   check=True)  # fmt: skip


def sim(stream, *args, asan=True):
    """(dispatches, counters) of the stream under aioli_sim; the ASan build must agree."""
    outs = []
    for exe in ["aioli_sim", "aioli_sim_asan"] if asan else ["aioli_sim"]:
        res = subprocess.run([str(BUILD / exe), *args], input=stream, capture_output=True, text=True, timeout=60)
        assert res.returncode == 0, res.stderr
        outs.append(res.stdout)
    assert len(set(outs)) == 1
    lines = [json.loads(x) for x in outs[0].splitlines()]
    summary = lines[-1]["summary"]
    return lines[:-1], dict(summary["counters"], trace_entries=summary["trace_entries"], policy=summary["policy"])


def stream(*reqs):
    """(t_us, file, op, offset in 64 KiB units, size in 64 KiB units) -> the sim's text."""
    return "".join(f"{t} {f} {op} {o * K} {s * K}\n" for t, f, op, o, s in reqs)


def order(ds):
    return [(d["file"], d["offset"] // K, d["n"]) for d in ds]


def test_fifo_passes_every_request_through_at_arrival():
    s = stream((0, "A", "r", 3, 1), (0, "A", "r", 1, 1), (5, "B", "w", 0, 1), (7, "A", "r", 2, 1))
    ds, c = sim(s, "--policy", "fifo")
    assert order(ds) == [("A", 3, 1), ("A", 1, 1), ("B", 0, 1), ("A", 2, 1)]
    assert [d["t_us"] for d in ds] == [0, 0, 5, 7] and all(d["wait"] is None for d in ds)
    assert c["passed_through"] == 4 and c["dispatches"] == 0
    assert c["requests"] == {"read": 3, "write": 1} and c["bytes"]["write"] == K


def test_contiguous_requests_are_aggregated_in_offset_order():
    s = stream((0, "A", "r", 3, 1), (0, "A", "r", 1, 1), (0, "A", "r", 0, 1), (0, "A", "r", 2, 1))
    ds, c = sim(s, "--policy", "aioli")
    assert len(ds) == 1 and ds[0]["n"] == 4 and ds[0]["offset"] == 0 and ds[0]["size"] == 4 * K
    assert [r["offset"] // K for r in ds[0]["requests"]] == [0, 1, 2, 3]
    assert c["aggregations"] == 1 and c["agg_performed"][3] == 1 and c["agg_possible"][3] == 1
    assert c["queue"]["max"] == 4


def test_max_agg_bounds_an_aggregation_and_possible_counts_the_rest():
    s = stream(*[(0, "A", "r", i, 1) for i in range(4)])
    ds, c = sim(s, "--policy", "aioli", "--set", "max_agg_kib=128", "--set", "wait_us=0")
    assert order(ds) == [("A", 0, 2), ("A", 2, 2)]
    assert c["agg_performed"][1] == 2 and c["agg_possible"][3] == 1 and c["agg_possible"][1] == 1


def test_possible_aggregations_come_from_the_arrivals_whatever_the_policy():
    """agg_possible counts what was queued around each dispatch, so it is never below what was
    performed; agg_possible_arrivals counts the contiguous arrivals themselves: under fifo, which
    aggregates nothing, four contiguous requests 100 us apart are one possible aggregation of 4."""
    s = stream(*[(100 * i, "A", "r", i, 1) for i in range(4)])
    for policy in ("fifo", "aioli", "aioli_no_agg"):
        _, c = sim(s, "--policy", policy)
        assert c["agg_possible_arrivals"][3] == 1 and sum(c["agg_possible_arrivals"]) == 1, policy
    _, c = sim(s, "--policy", "fifo")
    assert c["dispatches"] == 0 and sum(c["agg_possible"]) == 0


def test_arrivals_further_apart_than_app_wait_max_are_not_one_possible_aggregation():
    s = stream((0, "A", "w", 0, 1), (3000, "A", "w", 1, 1))
    _, c = sim(s, "--policy", "fifo")
    assert c["agg_possible_arrivals"][0] == 2
    _, c = sim(s, "--policy", "fifo", "--set", "app_wait_max_us=5000")
    assert c["agg_possible_arrivals"][1] == 1 and sum(c["agg_possible_arrivals"]) == 1


def test_possible_aggregations_are_bounded_by_max_agg_and_join_across_a_gap_filled():
    bounded = stream(*[(0, "A", "r", i, 1) for i in range(4)])
    _, c = sim(bounded, "--policy", "fifo", "--set", "max_agg_kib=128")
    assert c["agg_possible_arrivals"][1] == 2 and sum(c["agg_possible_arrivals"]) == 2
    # 0 and 2 arrive first, 1 fills the gap: one run of 3; 7 on its own
    _, c = sim(stream((0, "A", "r", 0, 1), (10, "A", "r", 2, 1), (20, "A", "r", 7, 1), (30, "A", "r", 1, 1)),
               "--policy", "fifo")  # fmt: skip
    assert c["agg_possible_arrivals"][2] == 1 and c["agg_possible_arrivals"][0] == 1


def test_an_aggregation_performed_can_exceed_what_the_arrivals_allowed():
    """The child busy 10 ms with the first request, three more arrive 3 ms apart and wait in the
    queue: aioli sends them as one (performed: 1 and 3, mean 2), while the arrivals, more than
    app_wait_max_us (2 ms) apart, allowed 0+1 together and 2 and 3 alone (mean 4/3)."""
    s = stream((0, "A", "r", 0, 1), (1000, "A", "r", 1, 1), (4000, "A", "r", 2, 1), (7000, "A", "r", 3, 1))
    ds, c = sim(s, "--policy", "aioli", "--service-us", "10000")
    assert order(ds) == [("A", 0, 1), ("A", 1, 3)]
    assert c["agg_performed"][0] == 1 and c["agg_performed"][2] == 1
    assert c["agg_possible_arrivals"][0] == 2 and c["agg_possible_arrivals"][1] == 1


def test_no_agg_reorders_by_offset_without_aggregating():
    s = stream((0, "A", "r", 3, 1), (0, "A", "r", 1, 1), (0, "A", "r", 0, 1), (0, "A", "r", 2, 1))
    ds, c = sim(s, "--policy", "aioli_no_agg")
    assert order(ds) == [("A", 0, 1), ("A", 1, 1), ("A", 2, 1), ("A", 3, 1)]
    assert [d["t_us"] for d in ds] == [0, 100, 200, 300]
    assert c["aggregations"] == 0 and c["agg_possible"][3] == 1 and c["waits"]["taken"] == 0


def test_reads_and_writes_are_separate_queues():
    ds, c = sim(stream((0, "A", "r", 0, 1), (0, "A", "w", 1, 1)), "--policy", "aioli")
    assert sorted(order(ds)) == [("A", 0, 1), ("A", 1, 1)] and c["aggregations"] == 0


def test_quantum_grows_each_step_small_requests_first():
    # A 1 MiB request needs 32 steps of 32 KiB, a 64 KiB one 2: the small one goes first
    # although it came later (multilevel feedback); time_order_agg keeps arrival order.
    s = stream((0, "A", "r", 0, 16), (0, "B", "r", 0, 1))
    ds, _ = sim(s, "--policy", "aioli")
    assert order(ds) == [("B", 0, 1), ("A", 0, 1)]
    assert ds[0]["step"] == 2 and ds[1]["step"] == 32
    ds, _ = sim(s, "--policy", "aioli", "--set", "quantum_step_kib=1024")
    assert order(ds) == [("A", 0, 1), ("B", 0, 1)]  # one step covers both: FIFO across files
    ds, _ = sim(s, "--policy", "time_order_agg")
    assert order(ds) == [("A", 0, 1), ("B", 0, 1)]


def test_fifo_across_files_when_quanta_tie():
    s = stream((0, "A", "r", 0, 1), (0, "B", "r", 0, 1), (0, "C", "r", 0, 1))
    ds, _ = sim(s, "--policy", "aioli_no_wait")
    assert [d["file"] for d in ds] == ["A", "B", "C"]


def test_wait_when_the_last_aggregation_was_larger():
    first = [(0, "A", "r", i, 1) for i in range(4)]
    # The queue's last aggregation had 4 requests; the next request (offset 4) waits for the
    # three that follow it.
    later = [(50, "A", "r", 4, 1), (150, "A", "r", 5, 1), (200, "A", "r", 6, 1), (250, "A", "r", 7, 1)]
    ds, c = sim(stream(*first, *later), "--policy", "aioli")
    assert order(ds) == [("A", 0, 4), ("A", 4, 4)]
    assert ds[1]["wait"] == "aggregated" and ds[1]["t_us"] == 250 and ds[1]["waited_us"] == 150
    assert c["waits"] == {"taken": 1, "aggregated": 1, "timed_out": 0}
    # Nothing more comes: the wait times out after wait_us and the request goes alone.
    ds, c = sim(stream(*first, (50, "A", "r", 4, 1)), "--policy", "aioli", "--set", "wait_us=300")
    assert order(ds) == [("A", 0, 4), ("A", 4, 1)]
    assert ds[1]["wait"] == "timed_out" and ds[1]["t_us"] == 400
    assert c["waits"] == {"taken": 1, "aggregated": 0, "timed_out": 1}
    # aioli_no_wait does not wait.
    ds, c = sim(stream(*first, *later), "--policy", "aioli_no_wait")
    assert order(ds)[1] == ("A", 4, 1) and ds[1]["t_us"] == 100 and c["waits"]["taken"] == 0


def test_wait_on_a_shift():
    # Offset 0 went; offset 2 is queued before offset 1 (a shift): aioli waits for offset 1 and
    # sends both as one request.
    s = stream((0, "A", "r", 0, 1), (10, "A", "r", 2, 1), (300, "A", "r", 1, 1))
    ds, c = sim(s, "--policy", "aioli")
    assert order(ds) == [("A", 0, 1), ("A", 1, 2)]
    assert ds[1]["wait"] == "aggregated" and ds[1]["t_us"] == 300
    assert c["waits"]["aggregated"] == 1
    ds, _ = sim(s, "--policy", "aioli_no_wait")
    assert order(ds) == [("A", 0, 1), ("A", 2, 1), ("A", 1, 1)]
    # A gap wider than shift_window is no shift.
    ds, c = sim(s, "--policy", "aioli", "--set", "shift_window_kib=32")
    assert order(ds) == [("A", 0, 1), ("A", 2, 1), ("A", 1, 1)] and c["waits"]["taken"] == 0


def test_starvation_bound():
    # B's 1 MiB request needs 1024 steps of 1 KiB while A's small scattered requests keep
    # coming; the bound sends B within starvation_ms.
    a = [(i * 100, "A", "r", 2 * i, 1) for i in range(60)]
    s = "0 B r 0 1048576\n" + "".join(f"{t} {f} {op} {o * K} 4096\n" for t, f, op, o, _ in a)
    s = "".join(sorted(s.splitlines(keepends=True), key=lambda x: float(x.split()[0])))
    args = ["--policy", "aioli_no_wait", "--set", "quantum_step_kib=1"]
    ds, c = sim(s, *args, "--set", "starvation_ms=1")
    (b,) = [d for d in ds if d["file"] == "B"]
    assert 1000 <= b["requests"][0]["wait_us"] <= 1100 and c["starved"] >= 1
    ds, c = sim(s, *args, "--set", "starvation_ms=600000")
    (b,) = [d for d in ds if d["file"] == "B"]
    assert b["requests"][0]["wait_us"] > 3000 and c["starved"] == 0


def test_time_order_agg_takes_contiguous_queued_requests_with_the_oldest():
    s = stream((0, "A", "r", 2, 1), (0, "B", "r", 0, 1), (0, "A", "r", 0, 1), (0, "A", "r", 1, 1))
    ds, c = sim(s, "--policy", "time_order_agg")
    assert order(ds) == [("A", 0, 3), ("B", 0, 1)] and c["waits"]["taken"] == 0


def test_app_aware_waits_for_what_the_trace_predicts(tmp_path):
    # The earlier run: one request every 200 us along the file.
    pattern = stream(*[(200 * i, "A", "r", i, 1) for i in range(4)])
    trace = tmp_path / "a.trace"
    trace.write_text("# t_us file r|w offset size\n" + pattern)
    ds, c = sim(pattern, "--policy", "app_aware", "--trace", str(trace))
    assert order(ds) == [("A", 0, 4)] and ds[0]["t_us"] == 600 and ds[0]["wait"] == "aggregated"
    assert c["trace_entries"] == 4 and c["waits"]["aggregated"] == 1
    # The heuristics of aioli see no reason to wait here; neither does app_aware without a
    # trace, or when one more request costs less than the time to wait for it.
    for args in (["--policy", "aioli"], ["--policy", "app_aware"]):
        ds, _ = sim(pattern, *args)
        assert order(ds) == [("A", i, 1) for i in range(4)]
    ds, _ = sim(pattern, "--policy", "app_aware", "--trace", str(trace), "--set", "app_req_cost_us=100")
    assert order(ds) == [("A", i, 1) for i in range(4)]
    # The wait is bounded by app_wait_max_us: only the first two followers are within 450 us.
    ds, _ = sim(pattern, "--policy", "app_aware", "--trace", str(trace), "--set", "app_wait_max_us=450")
    assert order(ds)[0] == ("A", 0, 3)


def test_request_waiting_time_counters():
    ds, c = sim(stream(*[(0, "A", "r", 2 * i, 1) for i in range(3)]), "--policy", "aioli_no_wait")
    w = c["request_wait"]
    assert w["count"] == 3 and w["sum_us"] == 0 + 100 + 200 and w["max_us"] == 200
    assert sum(w["hist_log2_us"]) == 3 and w["p99_us_le"] == 256


@pytest.mark.parametrize(
    "args, stdin, code, message",
    [
        (["--set", "quantum=3"], "", 2, "quantum=3 (unknown key)"),
        (["--set", "wait_us=-1"], "", 2, "wait_us=-1 (value out of range)"),
        (["--policy", "cfq"], "", 2, "--policy: cfq (expected one of"),
        ([], "0 A x 0 1\n", 1, "stdin:1: expected"),
        ([], "5 A r 0 1\n1 A r 0 1\n", 1, "stdin:2: expected"),
        (["--trace", "/nonexistent/t"], "", 1, "--trace: /nonexistent/t: No such file"),
    ],
)
def test_errors_are_one_line(args, stdin, code, message):
    res = subprocess.run([str(BUILD / "aioli_sim"), *args], input=stdin, capture_output=True, text=True)
    assert res.returncode == code and message in res.stderr and len(res.stderr.strip().splitlines()) == 1

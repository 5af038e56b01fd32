"""experiments/sais/model.py: eqs. 1-9 of paper 004 against values computed by hand."""

import pytest

from corun.errors import ConfigError
from experiments.sais import model as sm


def test_eq1_total_time_with_overlap():
    # T_R 10, T_P 2, T_M 5, T_O = min(2, 5) = 2 -> 10 + 2 + 5 - 2 = 15
    assert sm.total_time(10, 2, 5) == pytest.approx(15)
    # half overlap: 10 + 2 + 5 - 1 = 16
    assert sm.total_time(10, 2, 5, overlap_k=0.5) == pytest.approx(16)


def test_eq2_migration_time():
    assert sm.migration_time(3e-6, 12) == pytest.approx(36e-6)


def test_eq3_and_eq6_balance_lower_bound():
    # N_S 8, N_C 4: alpha 2; migrations alpha (N_C - 1) = 6; M 10 us -> 60 us + T_R 1 ms
    assert sm.balanced_migrations(8, 4) == 6
    assert sm.balance_lower(1e-3, 10e-6, 8, 4) == pytest.approx(1.06e-3)
    # N_R 5: 1 ms + 5 x 60 us = 1.3 ms
    assert sm.balance_lower(1e-3, 10e-6, 8, 4, 5) == pytest.approx(1.3e-3)


def test_eq4_and_eq5_source_aware():
    # P 1 us, N_S 8: 8 us + T_R 1 ms; with N_R 5: 40 us
    assert sm.source_aware(1e-3, 1e-6, 8) == pytest.approx(1.008e-3)
    assert sm.source_aware(1e-3, 1e-6, 8, 5) == pytest.approx(1.04e-3)


def test_eq7_max_requests():
    # 3 Gbit/s = 375e6 B/s over 48 servers x 1 MiB requests: 375e6 / (48 x 1048576) = 7.4506
    assert sm.max_requests(48, 1048576, 375e6) == pytest.approx(7.450580596923828)


def test_eq8_bounds_both_cases():
    # N_C 4 >= N_P 2: [T_R + P N_S N_R / 2, T_R + P N_S N_R] = [0 + 1*8*5/2, 40] = [20, 40]
    assert sm.source_aware_bounds(0, 1, 8, 5, 2, 4) == (pytest.approx(20), pytest.approx(40))
    # N_C 4 < N_P 8: lower bound divides by N_C: 40 / 4 = 10
    assert sm.source_aware_bounds(0, 1, 8, 5, 8, 4) == (pytest.approx(10), pytest.approx(40))


def test_eq9_difference():
    # (N_C - 1) N_R alpha (M - P) = 3 x 5 x 2 x (10 - 1) = 270
    assert sm.difference_lower(1, 10, 8, 4, 5) == pytest.approx(270)


def test_evaluate_with_measured_inputs_and_missing():
    out = sm.evaluate(
        p_s=1e-6,
        m_s=10e-6,
        n_s=8,
        n_c=4,
        n_r=5,
        n_p=2,
        t_r_s=0.0,
        size_req_bytes=1048576,
        bandwidth_client_bytes_s=125e6,
    )
    assert out["alpha"] == 2
    assert out["eq6_balance_lower_s"] == pytest.approx(300e-6)
    assert out["eq5_source_aware_s"] == pytest.approx(40e-6)
    assert out["eq9_difference_lower_s"] == pytest.approx(270e-6)
    assert out["m_over_p"] == pytest.approx(10)
    assert out["missing"] == {}
    gone = sm.evaluate(p_s=1e-6, m_s=None, n_s=8, n_c=4, missing_reason="no PMU")
    assert gone["eq9_difference_lower_s"] is None
    assert "no PMU" in gone["missing"]["eq9_difference_lower_s"]
    assert gone["eq4_source_aware_s"] == pytest.approx(8e-6)


def test_p_m_from_inmem():
    thread = {"strips": 1000, "measured_s": 1.0, "apps": 1}  # 1 ms per strip
    proc = {"strips": 500, "measured_s": 1.0, "apps": 1}  # 2 ms per strip
    p, m = sm.p_m_from_inmem(thread, proc)
    assert p == pytest.approx(1e-3) and m == pytest.approx(2e-3)


@pytest.mark.parametrize(
    "call, text",
    [
        (lambda: sm.alpha(6, 4), "n_s: 6 (expected a multiple of n_c = 4"),
        (lambda: sm.alpha(0, 4), "n_s: 0 (expected a positive integer)"),
        (lambda: sm.balance_lower(0, -1, 8, 4), "m: -1 (expected a finite number >= 0)"),
        (lambda: sm.overlap(1, 1, 2), "overlap_k: 2 (expected a number in [0, 1])"),
    ],
)
def test_bad_inputs_one_line(call, text):
    with pytest.raises(ConfigError) as exc:
        call()
    assert text in str(exc.value) and "\n" not in str(exc.value)

"""The analytic model of paper 004 (SAIs), section 3, eqs. 1-9, evaluated with measured inputs.

Symbols as the paper defines them:

  N_C  client cores                     N_S  I/O servers (one strip of a block each)
  alpha = N_S / N_C (a positive integer in the paper's analysis)
  P    processing time of one strip     M    migration time of one strip between two cores
  T_R  network and server time (the same under every steering policy)
  N_R  I/O requests of the client       N_P  programs on the client
  T_P, T_M, T_O  processing, migration and overlapped time of one request

eq. 1  T = T_R + T_P + T_M - T_O, with T_O proportional to min(T_P, T_M)
eq. 2  T_M = M x #migrations
eq. 3  T_balance >= T_R + M x alpha x (N_C - 1)                (one request)
eq. 4  T_source_aware = T_R + P x N_S                           (one request)
eq. 5  T_source_aware = T_R + P x N_S x N_R                     (N_R requests)
eq. 6  T_balance >= T_R + M x alpha x (N_C - 1) x N_R          (N_R requests)
eq. 7  N_R x N_S x Size_req <= Bandwidth_client                (per unit time)
eq. 8  N_C >= N_P: T_R + P N_S N_R >= T_source_aware >= T_R + P N_S N_R / N_P
eq. 9  T_balance - T_source_aware >= (N_C - 1) x N_R x alpha x (M - P)

The paper's inequalities are bounds; each function returns the bound it states (`*_lower` or
`*_upper` in the name) or the equality. `evaluate` takes measured P and M (seconds per strip)
and the configuration, and returns every equation's value in one dict for the report.

Inputs the machine cannot measure are passed as None; the equations that need them are then
None with the reason under `missing`, never filled in.
"""

from __future__ import annotations

import math

from corun.errors import ConfigError

SOURCE = "experiments/sais/model.py"


def _positive(name: str, value, integer: bool = False) -> None:
    ok = (
        isinstance(value, (int, float))
        and not isinstance(value, bool)
        and math.isfinite(value)
        and value > 0
        and (not integer or float(value).is_integer())
    )
    if not ok:
        raise ConfigError(SOURCE, name, value, "a positive integer" if integer else "a positive finite number")


def _non_negative(name: str, value) -> None:
    if not (isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value) and value >= 0):
        raise ConfigError(SOURCE, name, value, "a finite number >= 0")


def alpha(n_s: int, n_c: int) -> int:
    """alpha = N_S / N_C; the paper assumes N_C divides N_S."""
    _positive("n_s", n_s, True)
    _positive("n_c", n_c, True)
    if n_s % n_c:
        raise ConfigError(SOURCE, "n_s", n_s, f"a multiple of n_c = {n_c} (the paper's alpha = N_S / N_C)")
    return n_s // n_c


def overlap(t_p: float, t_m: float, k: float = 1.0) -> float:
    """T_O = k x min(T_P, T_M) (eq. 1's assumption; the paper takes k = 1 for balanced)."""
    _non_negative("t_p", t_p)
    _non_negative("t_m", t_m)
    if not (0 <= k <= 1):
        raise ConfigError(SOURCE, "overlap_k", k, "a number in [0, 1]")
    return k * min(t_p, t_m)


def total_time(t_r: float, t_p: float, t_m: float, overlap_k: float = 1.0) -> float:
    """Eq. 1: T = T_R + T_P + T_M - T_O."""
    _non_negative("t_r", t_r)
    return t_r + t_p + t_m - overlap(t_p, t_m, overlap_k)


def migration_time(m: float, migrations: float) -> float:
    """Eq. 2: T_M = M x #migrations."""
    _non_negative("m", m)
    _non_negative("migrations", migrations)
    return m * migrations


def balanced_migrations(n_s: int, n_c: int) -> float:
    """Strips moved for one request under balanced steering: N_S x (N_C - 1) / N_C."""
    return alpha(n_s, n_c) * (n_c - 1)


def balance_lower(t_r: float, m: float, n_s: int, n_c: int, n_r: int = 1) -> float:
    """Eqs. 3 (n_r = 1) and 6: T_balance >= T_R + M x alpha x (N_C - 1) x N_R."""
    _non_negative("t_r", t_r)
    _positive("n_r", n_r, True)
    return t_r + migration_time(m, balanced_migrations(n_s, n_c)) * n_r


def source_aware(t_r: float, p: float, n_s: int, n_r: int = 1) -> float:
    """Eqs. 4 (n_r = 1) and 5: T_source_aware = T_R + P x N_S x N_R."""
    _non_negative("t_r", t_r)
    _non_negative("p", p)
    _positive("n_s", n_s, True)
    _positive("n_r", n_r, True)
    return t_r + p * n_s * n_r


def max_requests(n_s: int, size_req_bytes: float, bandwidth_client_bytes_s: float) -> float:
    """Eq. 7 solved for N_R: the requests per second the client link allows,
    Bandwidth_client / (N_S x Size_req)."""
    _positive("n_s", n_s, True)
    _positive("size_req_bytes", size_req_bytes)
    _positive("bandwidth_client_bytes_s", bandwidth_client_bytes_s)
    return bandwidth_client_bytes_s / (n_s * size_req_bytes)


def source_aware_bounds(t_r: float, p: float, n_s: int, n_r: int, n_p: int, n_c: int) -> tuple[float, float]:
    """(lower, upper) of T_source_aware with N_P programs. Eq. 8 for N_C >= N_P:
    [T_R + P N_S N_R / N_P, T_R + P N_S N_R]; for N_C < N_P (section 3.4.2) the lower bound is
    T_R + P N_S N_R / N_C and the worst case T_R + P N_S N_R."""
    _positive("n_p", n_p, True)
    _positive("n_c", n_c, True)
    upper = source_aware(t_r, p, n_s, n_r)
    lower = t_r + p * n_s * n_r / min(n_p, n_c)
    return lower, upper


def difference_lower(p: float, m: float, n_s: int, n_c: int, n_r: int = 1) -> float:
    """Eq. 9: T_balance - T_source_aware >= (N_C - 1) x N_R x alpha x (M - P)."""
    _non_negative("p", p)
    _non_negative("m", m)
    _positive("n_r", n_r, True)
    return (n_c - 1) * n_r * alpha(n_s, n_c) * (m - p)


def evaluate(
    *,
    p_s: float | None,
    m_s: float | None,
    n_s: int,
    n_c: int,
    n_r: int = 1,
    n_p: int = 1,
    t_r_s: float = 0.0,
    size_req_bytes: float | None = None,
    bandwidth_client_bytes_s: float | None = None,
    missing_reason: str = "",
) -> dict:
    """Every equation with measured P and M (seconds per strip). A None input makes the
    equations that need it None, with `missing_reason` recorded under `missing`."""
    out: dict = {
        "inputs": {
            "p_s": p_s,
            "m_s": m_s,
            "n_s": n_s,
            "n_c": n_c,
            "n_r": n_r,
            "n_p": n_p,
            "t_r_s": t_r_s,
            "size_req_bytes": size_req_bytes,
            "bandwidth_client_bytes_s": bandwidth_client_bytes_s,
        },
        "alpha": alpha(n_s, n_c),
        "missing": {},
    }
    why = missing_reason or "not measured"
    if m_s is None:
        for k in ("eq3_balance_lower_s", "eq6_balance_lower_s", "eq9_difference_lower_s", "m_over_p"):
            out[k] = None
            out["missing"][k] = f"M: {why}"
    else:
        out["eq3_balance_lower_s"] = balance_lower(t_r_s, m_s, n_s, n_c)
        out["eq6_balance_lower_s"] = balance_lower(t_r_s, m_s, n_s, n_c, n_r)
    if p_s is None:
        for k in (
            "eq4_source_aware_s",
            "eq5_source_aware_s",
            "eq8_source_aware_lower_s",
            "eq8_source_aware_upper_s",
            "eq9_difference_lower_s",
            "m_over_p",
        ):
            out[k] = None
            out["missing"][k] = f"P: {why}"
    else:
        out["eq4_source_aware_s"] = source_aware(t_r_s, p_s, n_s)
        out["eq5_source_aware_s"] = source_aware(t_r_s, p_s, n_s, n_r)
        lo, hi = source_aware_bounds(t_r_s, p_s, n_s, n_r, n_p, n_c)
        out["eq8_source_aware_lower_s"], out["eq8_source_aware_upper_s"] = lo, hi
    if p_s is not None and m_s is not None:
        out["eq9_difference_lower_s"] = difference_lower(p_s, m_s, n_s, n_c, n_r)
        out["m_over_p"] = m_s / p_s if p_s > 0 else None
    if size_req_bytes is not None and bandwidth_client_bytes_s is not None:
        out["eq7_max_requests_per_s"] = max_requests(n_s, size_req_bytes, bandwidth_client_bytes_s)
    else:
        out["eq7_max_requests_per_s"] = None
        out["missing"]["eq7_max_requests_per_s"] = "request size or client bandwidth not given"
    return out


def p_m_from_inmem(thread_pair: dict, process_pair: dict) -> tuple[float, float]:
    """P and M (seconds per strip) from two sais_inmem results at one application.

    P: wall time per strip of the thread pair, whose reader and assembler share one core
    (the strip is processed where it is consumed). M: the process pair's wall time per strip
    minus the thread pair's plus P, i.e. a strip processed on one core and consumed on
    another costs P + (its extra time); this takes the whole extra cost as migration."""

    def per_strip(r: dict) -> float:
        strips = r.get("strips")
        wall = r.get("measured_s")
        if not strips or not wall:
            raise ConfigError(SOURCE, "strips", strips, "a sais_inmem result with strips > 0 and measured_s > 0")
        return wall * r.get("apps", 1) / strips

    p = per_strip(thread_pair)
    extra = per_strip(process_pair) - p
    return p, p + max(extra, 0.0)

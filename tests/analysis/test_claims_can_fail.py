"""No claim that cannot fail (analysis.claim_reach): for every judged claim of every experiment,
evidence built from its declaration, inside its metric's declared range, makes the real engine
contradict it (a "no change" claim: a change beyond its margin)."""

import math

import pytest

from analysis import claim_reach as cr
from analysis.claims import complete_claim, load_claims
from analysis.common import AnalysisInputError
from analysis.verdicts import CONTRADICTED, Looks, judge
from experiments import EXPERIMENTS_DIR, PAPERS_DIR

FILES = sorted(EXPERIMENTS_DIR.glob("*/claims.yaml"))


def claim(**kw):
    c = {"says": "s", "source": "Sec. 1", "quote": "q", "paper_as": "same", "table": "runs"}
    c.update(kw)
    c.setdefault("pair_by", ["rep"])
    c.setdefault("aggregate", "mean")
    c.setdefault("min_reps", 2)
    return complete_claim("claims.yaml", "c", c, {})


def test_a_count_of_one_or_more_against_one_cannot_fail():
    # requests per dispatch are 1 or more by definition: "more than 1" is true of any data
    c = claim(effect="value", metric="avg_aggregation", scale="log", null=1, expect="greater")
    r = cr.reach("c", c, {"avg_aggregation": (1, math.inf)})
    assert r.judged and not r.can_fail
    assert "avg_aggregation in [1, inf]" in r.how


def test_the_same_claim_on_an_unbounded_metric_can_fail():
    c = claim(effect="value", metric="avg_aggregation", scale="log", null=1, expect="greater")
    r = cr.reach("c", c, {})
    assert r.can_fail and "contradicted" in r.how


def test_a_share_above_one_cannot_fail_a_claim_of_at_most_one():
    c = claim(effect="value", metric="share", scale="linear", null=1, expect="less")
    assert not cr.reach("c", c, {"share": (0, 1)}).can_fail
    c = claim(effect="value", metric="share", scale="linear", null=0.5, expect="less")
    assert cr.reach("c", c, {"share": (0, 1)}).can_fail


def test_a_difference_of_shares_beyond_their_range_cannot_fail():
    head, base = {"v": "a"}, {"v": "b"}
    c = claim(effect="difference", metric="share", head=head, base=base, null=-1.5, expect="greater")
    assert not cr.reach("c", c, {"share": (0, 1)}).can_fail
    c = claim(effect="difference", metric="share", head=head, base=base, null=0, expect="greater")
    assert cr.reach("c", c, {"share": (0, 1)}).can_fail


@pytest.mark.parametrize(
    "kw",
    [
        {"effect": "ratio", "head": {"policy": "a"}, "base": {"policy": "b"}, "expect": "less"},
        {"effect": "ratio", "head": {"policy": "a", "op": "w"}, "base": {"policy": "b"}, "expect": "greater"},
        {"effect": "ratio", "head": {"k": 8}, "base": {"k": 1}, "expect": "greater", "test": "wilcoxon"},
        {"effect": "ratio", "head": {"p": "a"}, "base": {"p": "b"}, "expect": "equivalent", "margin": 0.05},
        {
            "effect": "ratio",
            "head": {"p": "a"},
            "base": {"p": "b"},
            "where": {"w": ["x", "y"]},
            "over": ["w"],
            "at": {"mpl": "max"},
            "expect": "less",
        },  # fmt: skip
        {"effect": "ratio", "head": {"p": "a"}, "base": {"p": "b"}, "pair_by": [], "expect": "less"},
        {
            "effect": "ratio",
            "head": {"p": "a"},
            "base": {"p": "b"},
            "expect": "less",
            "min_events": {"column": "events", "at_least": 20},
        },  # fmt: skip
        {
            "effect": "ratio_of_ratios",
            "head": {"p": "a"},
            "base": {"p": "b"},
            "across": {"mpl": ["min", "max"]},
            "expect": "less",
        },  # fmt: skip
        {"effect": "difference", "head": {"p": "a"}, "base": {"p": "b"}, "expect": "greater"},
        {"effect": "value", "scale": "linear", "null": 0, "expect": "greater", "at": {"k": "max"}},
        {"effect": "trend", "x": "k", "expect": "increasing"},
        {"effect": "trend", "x": "k", "expect": "decreasing", "over": ["w"]},
        {"effect": "ratio", "head": {"p": "a"}, "base": {"p": "b"}, "expect": "less", "needs": {"smt": True}},
    ],
)
def test_every_shape_of_claim_can_be_contradicted(kw):
    c = claim(metric="m", **kw)
    r = cr.reach("c", c, {})
    assert r.can_fail, r.how
    assert r.tried <= 2  # the most contrary evidence is tried first


def test_a_magnitude_band_the_metrics_range_cannot_leave_is_found():
    band = {"at_least": 1.0, "from": "more than one"}
    c = claim(effect="value", metric="per_dispatch", scale="log", null=2, expect="equivalent", margin=0.25)
    c["magnitude"] = band
    r = cr.reach("c", c, {"per_dispatch": (1, math.inf)})
    assert r.can_fail and r.band_can_fail is False and "outside the band" in r.band_how
    c["magnitude"] = {"at_least": 1.5, "at_most": 3.0, "from": "2.4 within a quarter"}
    assert cr.reach("c", c, {"per_dispatch": (1, math.inf)}).band_can_fail is True


def test_a_claim_without_a_band_has_no_band_to_miss():
    c = claim(effect="ratio", metric="m", head={"p": "a"}, base={"p": "b"}, expect="less")
    assert cr.reach("c", c, {}).band_can_fail is None


def test_the_evidence_is_judged_by_the_engine():
    c = claim(effect="ratio", metric="m", head={"p": "a"}, base={"p": "b"}, expect="less")
    table = cr.build(c, (2.0, 1.0), 0.0, math.inf, 10)
    assert set(table["p"]) == {"a", "b"} and len(table) == 20
    assert judge("c", c, {"runs": table}, cr.machine_for(c), Looks())["outcome"] == CONTRADICTED


def test_a_machine_specific_value_is_not_judged():
    r = cr.reach("c", claim(effect="machine", metric="m"), {})
    assert not r.judged and not r.can_fail


@pytest.mark.parametrize("path", FILES, ids=[p.parent.name for p in FILES])
def test_no_claim_cannot_fail(path):
    name = path.parent.name
    cs = load_claims(path, name, PAPERS_DIR, shown=f"experiments/{name}/claims.yaml")
    stuck = [r for r in cr.reach_all(cs) if r.judged and not r.can_fail]
    assert not stuck, f"experiments/{name}/claims.yaml: {len(stuck)} claim(s) cannot fail:\n" + "\n".join(
        f"  claims.{r.claim}: {r.how}" for r in stuck
    )


def bounds_file(tmp_path, bounds: str):
    path = tmp_path / "claims.yaml"
    path.write_text(f"paper: '999'\ncitation: A paper.\ntitle: t\nfigure: Fig. 1\nmetric_bounds:\n{bounds}")
    return load_claims(path, "x")


def test_declared_bounds_are_read_with_null_unbounded(tmp_path):
    cs = bounds_file(tmp_path, "  share: [0, 1]\n  per_dispatch: [1, null]\n  delta: [null, null]\n")
    assert cs.metric_bounds == {"share": (0.0, 1.0), "per_dispatch": (1.0, math.inf), "delta": (-math.inf, math.inf)}


@pytest.mark.parametrize(
    "bounds, line",
    [
        ("  share: [1, 0]\n", "metric_bounds.share: [1, 0] (expected [low, high] with low < high"),
        ("  share: [0]\n", "metric_bounds.share"),
        ("  share: [0, 'one']\n", "metric_bounds.share"),
        ("  Share: [0, 1]\n", "metric_bounds"),
    ],
)
def test_bad_bounds_are_one_line(tmp_path, bounds, line):
    with pytest.raises(AnalysisInputError) as e:
        bounds_file(tmp_path, bounds)
    assert "\n" not in str(e.value) and line in str(e.value), str(e.value)

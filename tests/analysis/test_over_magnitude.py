"""A magnitude band on a claim over every point (`over:`), on hand-made data: the paper's
"ranging from 6.7% to 67.9%" over workloads #1-#6 is in magnitude when every workload's interval
lies inside the band, not in magnitude when one workload's interval at the Bonferroni level lies
wholly outside it (that workload named), and undecided otherwise; the row names the point that
decided it (row key magnitude_at)."""

import pandas as pd

from analysis.verdicts import IN_MAGNITUDE, MAGNITUDE_UNDECIDED, NOT_IN_MAGNITUDE, Machine, judge
from tests.analysis.test_engine_holes import RATIO, claim, paired  # the engine tests' claim and pairs

MACHINE = Machine({}, {})
TIGHT = [11.0, 11.1, 10.9, 11.05, 10.95, 11.02, 10.98, 11.03]  # 8 pairs about 1.1 x 10
BAND = {"at_least": 1.05, "at_most": 1.15, "from": "improved by 5 % to 15 % on every workload"}
OVER = {**RATIO, "where": {"workload": ["a", "b", "c"]}, "over": ["workload"], "magnitude": BAND}
SPREAD = [0.6, -0.4, 0.2, -0.7, 0.5, -0.1, 0.3, -0.4]


def workloads(**heads) -> pd.DataFrame:
    """8 pairs per workload against a base of 10; each workload's head values given (TIGHT by default)."""
    tables = []
    for w in ("a", "b", "c"):
        t = paired(heads.get(w, TIGHT), [10.0] * 8, workload=w)
        t["run_id"] = t["run_id"] + w
        tables.append(t)
    return pd.concat(tables, ignore_index=True)


def test_every_workload_inside_the_band_is_in_magnitude():
    row = judge("c", claim(**OVER), {"runs": workloads()}, MACHINE)
    assert row["outcome"] == "reproduced" and row["magnitude"] == IN_MAGNITUDE and row["in_magnitude"] is True
    assert row["magnitude_at"] in ({"workload": "a"}, {"workload": "b"}, {"workload": "c"})
    assert "every one of the 3 workload points" in row["why"] and "1.05 to 1.15" in row["why"]


def test_one_workload_wholly_outside_is_not_in_magnitude_and_named():
    row = judge("c", claim(**OVER), {"runs": workloads(b=[2 * v for v in TIGHT])}, MACHINE)
    assert row["outcome"] == "reproduced"  # the direction holds: twice as fast is still faster
    assert row["magnitude"] == NOT_IN_MAGNITUDE and row["in_magnitude"] is False
    assert row["magnitude_at"] == {"workload": "b"}
    assert "Not in magnitude at workload b" in row["why"] and "ratio 2.2" in row["why"]


def test_a_workload_straddling_an_edge_is_undecided_and_named():
    wide = [11.0, 14.0, 10.5, 12.5, 11.5, 13.0, 10.8, 12.0]  # ratio about 1.2, interval over 1.15
    row = judge("c", claim(**OVER), {"runs": workloads(c=wide)}, MACHINE)
    assert row["magnitude"] == MAGNITUDE_UNDECIDED and row["in_magnitude"] is None
    assert row["magnitude_at"] == {"workload": "c"}
    assert "Magnitude undecided" in row["why"] and "workload c" in row["why"]


def test_outside_at_the_looks_level_only_is_undecided():
    """Wholly outside at 95 % ([1.16, 1.23]) but not at the Bonferroni level for 3 points
    ([1.14, 1.25]): one of three points outside by chance is no evidence the claim's range is wrong."""
    near = [11.95 + s for s in SPREAD]
    alone = judge("c", claim(**RATIO, magnitude=BAND), {"runs": paired(near, [10.0] * 8)}, MACHINE)
    assert alone["magnitude"] == NOT_IN_MAGNITUDE
    row = judge("c", claim(**OVER), {"runs": workloads(a=near)}, MACHINE)
    assert row["magnitude"] == MAGNITUDE_UNDECIDED and row["magnitude_at"] == {"workload": "a"}
    assert "Bonferroni" in row["why"]


def test_a_contradicted_point_is_judged_in_magnitude_too():
    slower = [v - 2.0 for v in TIGHT]  # ratio 0.9 at workload a: the other direction, outside the band
    row = judge("c", claim(**OVER), {"runs": workloads(a=slower)}, MACHINE)
    assert row["outcome"] == "contradicted" and row["magnitude"] == NOT_IN_MAGNITUDE
    assert row["magnitude_at"] == {"workload": "a"}


def test_no_band_or_a_failed_point_has_no_magnitude():
    plain = judge("c", claim(**{k: v for k, v in OVER.items() if k != "magnitude"}), {"runs": workloads()}, MACHINE)
    assert plain["magnitude"] is None and plain["magnitude_at"] is None
    df = workloads(b=[2 * v for v in TIGHT])
    df.loc[df["workload"] == "c", "failed"] = True
    df["failed"] = df["failed"].fillna(False).astype(bool)
    row = judge("c", claim(**OVER), {"runs": df}, MACHINE)
    assert row["outcome"] == "failed" and row["magnitude"] is None and row["magnitude_at"] is None


def test_a_single_point_row_has_no_magnitude_at():
    row = judge("c", claim(**RATIO, magnitude=BAND), {"runs": paired(TIGHT, [10.0] * 8)}, MACHINE)
    assert row["magnitude"] == IN_MAGNITUDE and row["magnitude_at"] is None

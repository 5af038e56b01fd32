"""experiments.mpl_sweep.analysis on hand-made runs: response time, BCR and MD from the daemons, verdicts."""

import csv
import json
from pathlib import Path

import pandas as pd
import pytest

from analysis import collect
from analysis.claims import load_claims
from analysis.experiment import write
from analysis.verdicts import INCONCLUSIVE, Machine, judge
from experiments import PAPERS_DIR
from experiments.mpl_sweep import analysis as ms
from tests.experiment_helpers import read_tables

FOLDER = Path(__file__).resolve().parents[1]
TWO_HOSTS = Machine({"hosts": 2}, {"hosts": "2 hosts in a run's cluster"})
# a declared point this configuration did not run: the engine's own outcome for it, or inconclusive
UNDECIDED = {INCONCLUSIVE, "not run in this profile"}

# (scheme, rep): the jobs' (submit, start, end) and each node's daemon summary
RUNS = {
    ("sb", 0): ([(0, 0, 10), (2, 4, 16)], 20, 175.0),  # responses 10, 14: mean 12
    ("sb", 1): ([(0, 1, 12), (1, 2, 13)], 20, 175.0),  # 12, 12
    ("cc_b", 0): ([(0, 0, 8), (2, 3, 12)], 10, 100.0),  # 8, 10: mean 9
    ("cc_b", 1): ([(0, 0, 9), (1, 2, 10)], 10, 100.0),  # 9, 9
}


def daemons(conflict_switches: int, md_scale: float) -> list[dict]:
    """Two nodes of 100 context switches each; BCR = conflict_switches / 200. Ranks: msgs 10 at
    md_scale * 4/7 and msgs 30 at md_scale * 8/7 -> weighted MD = md_scale."""
    a, b = md_scale * 4 / 7, md_scale * 8 / 7
    return [
        {
            "host": "n1",
            "node": 0,
            "bcr_min_pending": 2,
            "context_switches": 100,
            "conflict_context_switches": conflict_switches,
            "boosts": 5,
            "conflicts": 3,
            "reordered": 1,
            "arrivals": 50,
            "ranks": [{"job": "j0", "msgs": 10, "md_mean_us": a}],
        },
        {
            "host": "n2",
            "node": 1,
            "bcr_min_pending": 2,
            "context_switches": 100,
            "conflict_context_switches": 0,
            "boosts": 7,
            "conflicts": 0,
            "reordered": 0,
            "arrivals": 40,
            "ranks": [{"job": "j0", "msgs": 30, "md_mean_us": b}, {"job": "j1", "msgs": 0, "md_mean_us": None}],
        },
    ]


def make_run(root, scheme, rep, jobs, conflict, md, with_daemons=True, exit_codes=None, mpl=5):
    d = root / f"wl6_heavy_{scheme}_mpl{mpl}_r{rep}"
    d.mkdir(parents=True)
    rows = []
    for i, (sub, start, end) in enumerate(jobs):
        rows.append(
            {
                "job_id": f"000{i}-cg2-00{i}",
                "name": f"cg2-00{i}",
                "exit_code": (exit_codes or {}).get(i, 0),
                "submit_s": sub,
                "start_s": start,
                "end_s": end,
                "runtime_s": end - start,
                "wait_s": start - sub,
                "response_s": end - sub,
                "ranks": 2,
                "label_bench": "cg",
                "label_binary": "corun mpi_stencil",
            }
        )
    with open(d / "jobs.csv", "w", newline="") as fh:
        w = csv.DictWriter(fh, fieldnames=list(rows[0]))
        w.writeheader()
        w.writerows(rows)
    labels = {"experiment": "mpl_sweep", "workload": "wl6", "load": "heavy", "scheme": scheme, "mpl": mpl, "rep": rep}
    cluster = {"hosts": [{"name": "n1"}, {"name": "n2"}]}
    meta = {
        "labels": labels,
        "scheduler": {"name": scheme, "params": {"mpl": mpl}},
        "status": "ok",
        "missing": [],
        "cluster": {**cluster, "daemons": daemons(conflict, md)} if with_daemons else cluster,
    }
    (d / "metadata.json").write_text(json.dumps(meta))
    return d


def analyse_dirs(tmp_path, dirs):
    jobs, runs = collect.collect(dirs)
    jobs.to_csv(tmp_path / "jobs.csv", index=False)
    runs.to_csv(tmp_path / "runs.csv", index=False)
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"npb": False, "bcr_min_pending": 2}))
    inputs = read_tables("mpl_sweep", tmp_path, files={"specs": str(tmp_path)})
    out = tmp_path / "out"
    result = ms.analyse(inputs)
    section = write(out, inputs, result)
    return result, section, out


@pytest.fixture
def analysed(tmp_path):
    dirs = [make_run(tmp_path / "runs", s, r, *v) for (s, r), v in RUNS.items()]
    dirs.append(make_run(tmp_path / "runs", "local", 0, [(0, 0, 20)], 0, 0, with_daemons=False))
    return analyse_dirs(tmp_path, dirs)


def test_per_run_response_bcr_and_md(analysed):
    res, _, _ = analysed
    r = res.evidence["runs"].set_index(["scheme", "rep"])
    assert r.loc[("sb", 0), "response_s"] == pytest.approx(12.0)
    assert r.loc[("cc_b", 0), "response_s"] == pytest.approx(9.0)
    assert r.loc[("sb", 0), "exec_s"] == pytest.approx((10 + 12) / 2)
    assert r.loc[("sb", 0), "wait_s"] == pytest.approx((0 + 2) / 2)
    assert r.loc[("sb", 0), "bcr"] == pytest.approx(0.1)
    assert r.loc[("cc_b", 1), "bcr"] == pytest.approx(0.05)
    assert r.loc[("sb", 1), "md_us"] == pytest.approx(175.0)
    assert r.loc[("cc_b", 1), "md_us"] == pytest.approx(100.0)
    assert r.loc[("sb", 0), "boosts"] == 12 and r.loc[("sb", 0), "context_switches"] == 200
    assert r.loc[("local", 0), "scheme_kind"] == "spinning" and r.loc[("cc_b", 0), "scheme_kind"] == "blocking"
    assert not r["failed"].any()


def test_every_claim_is_judged_by_the_engine(analysed):
    _, section, out = analysed
    rows = {c["claim"]: c for c in section["claims"]}
    assert len(rows) == 15 and all(c["paper"] == "001" for c in rows.values())
    resp = rows["cc_b_over_sb_response"]
    # two reps, both below 1: the estimate, but too few pairs to decide
    assert resp["outcome"] == "inconclusive" and resp["estimate"] == pytest.approx(0.75)
    assert "at mpl 5" in resp["why"]
    assert resp["paper_value"] == "-36.6 % average job response time, WL6 heavy load, MPL 5 (up to)"
    assert rows["cc_b_over_sb_md"]["estimate"] == pytest.approx(100 / 175)
    assert rows["cc_b_over_hybrid_response"]["outcome"] == "inconclusive"
    assert "measured no scheme hybrid" in rows["cc_b_over_hybrid_response"]["why"]
    # every pair: local ran rep 0 only, hybrid, dcs, pb, cc_s not at all: never decided
    for cid in ("blocking_beats_spinning", "cc_b_best"):
        assert rows[cid]["outcome"] in UNDECIDED, rows[cid]
    # one MPL measured: neither "grows with the MPL" nor "at every MPL" is decided
    for cid in ("cc_gain_grows_with_mpl", "cc_beats_alternatives_every_mpl"):
        assert rows[cid]["outcome"] in UNDECIDED and rows[cid]["n"] == 0, rows[cid]
    # WL1-WL5 and the light load not run
    for cid in ("cc_b_over_sb_exec_wl5", "cc_gain_grows_with_comm_intensity", "blocking_beats_spinning_light"):
        assert rows[cid]["outcome"] in UNDECIDED and rows[cid]["n"] == 0, rows[cid]
    # BCR: sb counted 20 conflict context switches per rep, 40 over the pair: enough
    assert rows["cc_b_over_sb_bcr"]["estimate"] == pytest.approx(0.05 - 0.1)  # a difference of shares
    assert "two or more" in section["summary"]
    assert any("cluster.daemons" in m["source"] for m in section["missing"])
    assert section["checks"][0]["passed"] is None  # the model: no stand-in result fields here
    for f in ("response_time.png", "execution_time.png", "bcr.png", "md.png", "points.csv"):
        assert (out / f).exists()


def test_the_claims_at_the_papers_mpl_are_not_judged_at_another():
    """The cc_* claims were judged at `mpl: max`, the local profile's 3, beside the paper's MPL-5
    value: at MPL 3 alone they have nothing to compare now."""
    runs = _scheme_runs({"sb": [2.0, 2.1, 2.05], "cc_b": [1.0, 1.1, 1.05]}, mpl=3)
    row = judge("cc_b_over_sb_response", CLAIMS["cc_b_over_sb_response"], {"runs": runs}, TWO_HOSTS)
    assert row["outcome"] in UNDECIDED and row["n"] == 0
    assert CLAIMS["cc_b_over_sb_response"]["at"] == {"mpl": 5}


def test_a_run_with_a_failed_job_is_failed_not_faster(tmp_path):
    """The old rule averaged the jobs that exited 0: a scheme whose slow job failed looked faster."""
    dirs = [make_run(tmp_path / "runs", s, r, *v) for (s, r), v in RUNS.items() if s == "sb"]
    dirs += [
        make_run(tmp_path / "runs", "cc_b", 0, [(0, 0, 8), (2, 3, 40)], 10, 100.0, exit_codes={1: 1}),
        make_run(tmp_path / "runs", "cc_b", 1, [(0, 0, 9), (1, 2, 10)], 10, 100.0),
    ]
    _, section, _ = analyse_dirs(tmp_path, dirs)
    row = next(c for c in section["claims"] if c["claim"] == "cc_b_over_sb_response")
    assert row["outcome"] == "failed" and row["runs"] == ["wl6_heavy_cc_b_mpl5_r0"]
    assert "1 of 2 jobs failed" in row["why"]


CLAIMS = load_claims(FOLDER / "claims.yaml", "mpl_sweep", PAPERS_DIR).claims


def bcr_runs(sb_conflicts: list[int], cc_b_conflicts: list[int]) -> pd.DataFrame:
    """wl6 heavy at MPL 5: per rep, 1000 context switches of each scheme, so many of them conflicts."""
    rows = []
    for scheme, conflicts in (("sb", sb_conflicts), ("cc_b", cc_b_conflicts)):
        for rep, c in enumerate(conflicts):
            rows.append(
                {
                    "run_id": f"{scheme}{rep}",
                    "workload": "wl6",
                    "load": "heavy",
                    "mpl": 5,
                    "scheme": scheme,
                    "rep": rep,
                    "conflict_context_switches": c,
                    "context_switches": 1000,
                    "bcr": c / 1000,
                }
            )
    return pd.DataFrame(rows)


SB = [30, 25, 40, 35, 28, 33, 38, 26, 31, 36]  # conflict context switches per rep, of 1000


@pytest.mark.parametrize(
    "sb, cc_b, outcome, says",
    [
        # a few conflicts in one rep of sb would decide a share: inconclusive, and why
        ([0, 3] + [0] * 8, [0] * 10, "inconclusive", "the base counted 3 conflict_context_switches over 10 reps"),
        ([0] * 10, [0] * 10, "inconclusive", "fewer than the 20"),
        # enough events, cc_b without any: a share of 0 is a value, the difference decides
        (SB, [0] * 10, "reproduced", "lies below 0"),
        (SB, [0, 30, 0, 45, 0, 40, 0, 35, 0, 30], "inconclusive", "contains 0"),
        (SB, [c // 2 for c in SB], "reproduced", "lies below 0"),
        # more conflicts under cc_b in every rep: the other side
        (SB, [c * 2 for c in SB], "contradicted", "lies above 0"),
    ],
)
def test_bcr_needs_enough_conflicts_to_compare(sb, cc_b, outcome, says):
    row = judge("cc_b_over_sb_bcr", CLAIMS["cc_b_over_sb_bcr"], {"runs": bcr_runs(sb, cc_b)}, TWO_HOSTS)
    assert row["outcome"] == outcome and says in row["why"], row["why"]


def _scheme_runs(per_rep: dict[str, list[float]], mpl: int = 3) -> pd.DataFrame:
    rows = []
    for scheme, values in per_rep.items():
        for rep, v in enumerate(values):
            rows.append(
                {
                    "run_id": f"{scheme}{mpl}{rep}",
                    "workload": "wl6",
                    "load": "heavy",
                    "mpl": mpl,
                    "scheme": scheme,
                    "scheme_kind": ms.scheme_kind(scheme),
                    "rep": rep,
                    "response_s": v,
                }
            )
    return pd.DataFrame(rows)

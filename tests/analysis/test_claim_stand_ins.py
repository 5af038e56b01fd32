"""A claim's stand_ins: words of analysis/schemas/stand_ins.yaml, refused in one line when unknown,
and named on the claim's row with their text."""

import pytest

from analysis.claims import complete_claim, load_claims, stand_in_words
from analysis.common import AnalysisInputError
from analysis.verdicts import Looks, Machine, judge
from experiments import EXPERIMENTS_DIR, PAPERS_DIR
from tests.analysis.claims_text import claims_header

BASE = claims_header("m", "less")


def load(tmp_path, extra):
    p = tmp_path / "claims.yaml"
    p.write_text(BASE + extra)
    return load_claims(p, "e", PAPERS_DIR, shown="experiments/e/claims.yaml")


def test_an_unknown_stand_in_is_one_line(tmp_path):
    with pytest.raises(AnalysisInputError) as err:
        load(tmp_path, "    stand_ins: [emulated_disk, tmpfs_for_pmem]\n")
    msg = str(err.value)
    assert "\n" not in msg
    assert msg.startswith("experiments/e/claims.yaml: claims.c.stand_ins: 'tmpfs_for_pmem' (expected one of ")
    assert "tmpfs_pmem" in msg and "emulated_disk" in msg


def test_the_row_names_the_stand_ins_with_their_text(tmp_path):
    cs = load(tmp_path, "    stand_ins: [netns_links, emulated_disk]\n")
    row = judge("c", cs.claims["c"], {}, Machine(), Looks())
    words = stand_in_words()
    assert row["stand_ins"] == [words["netns_links"], words["emulated_disk"]]
    assert row["stand_ins"][0].startswith("network namespaces joined by veth links")


def test_a_claim_without_stand_ins_has_none_on_its_row(tmp_path):
    cs = load(tmp_path, "")
    assert judge("c", cs.claims["c"], {}, Machine(), Looks())["stand_ins"] == []


def test_every_claims_stand_ins_are_known():
    words = stand_in_words()
    for path in sorted(EXPERIMENTS_DIR.glob("*/claims.yaml")):
        cs = load_claims(path, path.parent.name, PAPERS_DIR)
        for cid, c in cs.claims.items():
            assert set(c.get("stand_ins") or []) <= set(words), (path.parent.name, cid)


def test_complete_claim_checks_without_a_file():
    c = {"says": "s", "source": "S", "quote": "q", "paper_as": "same", "effect": "value", "metric": "m"}
    c.update(expect="greater", stand_ins=["no_such_word"])
    with pytest.raises(AnalysisInputError, match=r"claims.c.stand_ins: 'no_such_word'"):
        complete_claim("claims.yaml", "c", c, {})


def test_a_claim_without_a_kind_is_one_line(tmp_path):
    p = tmp_path / "claims.yaml"
    p.write_text(BASE.replace("    kind: finding\n", ""))
    with pytest.raises(AnalysisInputError) as err:
        load_claims(p, "e", PAPERS_DIR, shown="experiments/e/claims.yaml")
    msg = str(err.value)
    assert "\n" not in msg and msg.startswith("experiments/e/claims.yaml: claims.c") and "kind" in msg

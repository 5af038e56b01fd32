"""Every quote of every claims.yaml is the paper's own words (analysis.claim_quotes): found
verbatim in the paper's text (../shared/papers/<id>_*.txt beside the repository; skipped where
there is none), white space, line-break hyphens, typographic marks and " ... " gaps aside."""

import pytest

from analysis import claim_quotes as cq

PAPERS = cq.PAPERS_TEXT
needs_papers = pytest.mark.skipif(not PAPERS.is_dir(), reason=f"no papers' texts at {PAPERS}")

TEXT = """The dynamic scheduler reduces I/O conten-
tion among the CMPs. Jobs are “confined” to their CMP—each of them
runs the ﬁrst phase alone, then the inter-
socket traffic *grows* with $k$ -CMP stacking, $k = 1 \\sim 8$ .
Sensitivity\\_RANKING ranks the kernels."""


def miss(quote):
    return cq.check_quote(quote, cq.paper_forms(TEXT))


@pytest.mark.parametrize(
    "quote",
    [
        "reduces I/O contention among the CMPs",  # a word broken at the line's end, joined
        "then the inter-socket traffic grows",  # a compound broken at its own hyphen; emphasis dropped
        'Jobs are "confined" to their CMP-each of them runs the first phase alone',  # quotes, dash, ligature
        "The dynamic   scheduler\nreduces",  # white space collapsed
        "The dynamic scheduler ... the first phase alone",  # fragments in order
        "The dynamic scheduler … then the inter",  # an ellipsis character
        "with k-CMP stacking, k = 1 ~ 8.",  # inline TeX of the converted text
        "Sensitivity_RANKING ranks",  # a Markdown escape
    ],
)
def test_the_papers_words_are_found(quote):
    assert miss(quote) is None


def test_a_quote_not_in_the_paper_names_the_fragment_and_the_nearest_passage():
    frag, near = miss("The dynamic scheduler ... reduces the I/O contention among CMPs")
    assert frag == "reduces the I/O contention among CMPs"
    assert near.startswith("reduces I/O contention among")


def test_fragments_out_of_order_are_not_found():
    assert miss("the first phase alone ... The dynamic scheduler") is not None


def test_a_quote_is_case_sensitive():
    assert miss("the dynamic scheduler reduces") is not None


def test_quotes_of_reads_values_and_claims_with_their_own_quote():
    doc = {
        "values": {"v": {"quote": "a"}},
        "claims": {"c": {"quote": "b"}, "d": {"value": "v"}},
    }
    assert cq.quotes_of(doc) == [("values.v", "a"), ("claims.c", "b")]


@needs_papers
def test_every_claims_quote_is_the_papers_text():
    misses, untexted = cq.check_all(papers_dir=PAPERS)
    assert untexted == ["_template (paper 999)"], untexted
    assert not misses, f"{len(misses)} quote(s) not found verbatim:\n" + "\n".join(m.line() for m in misses)

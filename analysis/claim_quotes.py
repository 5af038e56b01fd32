"""The claims' quotes held against the papers' own text: a quote in claims.yaml (a claim's
`quote`, or its value's) is the paper's words, verbatim.

The papers' texts are not in the repository: `../shared/papers/<id>_*.txt` beside it (PAPERS_TEXT).
Both the quote and the text are read the same way before the quote is looked up: Unicode
compatibility forms (the ligatures fi and fl, the ellipsis), typographic quotes and dashes as
their plain ASCII, Markdown emphasis (`*`, `**`) dropped, every run of white space one space, and
a word broken at a line's end by a hyphen joined again ("conten-" + "tion" is "contention"; the
hyphen kept as well, for a compound broken at its own hyphen). A quote may leave words out: its
fragments joined by " ... " (or an ellipsis) must each be found, in order.
"""

from __future__ import annotations

import difflib
import re
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path

from corun import config as corun_config

REPO = Path(__file__).resolve().parents[1]
PAPERS_TEXT = REPO.parent / "shared" / "papers"

_PLAIN = str.maketrans(
    {
        "\u2018": "'",
        "\u2019": "'",
        "\u201a": "'",
        "\u201b": "'",
        "\u2032": "'",
        "\u00b4": "'",
        "`": "'",
        "\u201c": '"',
        "\u201d": '"',
        "\u201e": '"',
        "\u201f": '"',
        "\u2033": '"',
        "\u2010": "-",
        "\u2011": "-",
        "\u2012": "-",
        "\u2013": "-",
        "\u2014": "-",
        "\u2015": "-",
        "\u2212": "-",
        "\u00ad": None,  # a soft hyphen
        "*": None,  # Markdown emphasis of the converted papers
    }
)
_BROKEN = re.compile(r"(\w)-[ \t]*\r?\n\s*(\w)")
# what the papers' conversion to text added: inline TeX ($k$ -CMP for k-CMP, \sim for ~) and
# Markdown's escapes (Sensitivity\_RANKING)
_TEX = {"sim": " ~ ", "times": "x", "approx": " ~ ", "leq": "<=", "geq": ">=", "le": "<=", "ge": ">="}
_TEX_WORD = re.compile(r"\\(" + "|".join(_TEX) + r")(?![A-Za-z]) ?")
_MATH = re.compile(r"\$([^$\n]{1,80})\$(?: (?=[-.,;:)]))?")
_ESCAPE = re.compile(r"\\([_*%&#$\[\]()])")
_GAP = re.compile(r"\s*(?:\[\s*\.\.\.\s*\]|\.\.\.)\s*")


def plain(text: str) -> str:
    """TEXT as the quote check reads it (line-break hyphens left as they are)."""
    text = _MATH.sub(lambda m: m.group(1), text)
    text = _TEX_WORD.sub(lambda m: _TEX[m.group(1)], text)
    text = _ESCAPE.sub(r"\1", text)
    text = unicodedata.normalize("NFKC", text).translate(_PLAIN)
    return " ".join(text.split())


def paper_forms(text: str) -> list[str]:
    """The paper's text read twice: line-broken words joined, and joined keeping the hyphen."""
    return [plain(_BROKEN.sub(r"\1\2", text)), plain(_BROKEN.sub(r"\1-\2", text))]


def fragments(quote: str) -> list[str]:
    """The parts of a quote between its " ... " gaps, each read by `plain`."""
    return [f for f in (plain(p) for p in _GAP.split(plain(quote))) if f]


def _in_order(frags: list[str], text: str) -> int | None:
    """None when every fragment is found in order in TEXT, else the index of the first that is not."""
    at = 0
    for i, frag in enumerate(frags):
        hit = text.find(frag, at)
        if hit < 0:
            return i
        at = hit + len(frag)
    return None


def nearest(fragment: str, text: str) -> str:
    """The passage of TEXT most like FRAGMENT (as many words, difflib's ratio), for a fix."""
    words = text.split(" ")
    k = max(1, len(fragment.split(" ")))
    if len(words) <= k:
        return text

    def window(i: int) -> str:
        return " ".join(words[i : i + k])

    def score(i: int) -> float:
        return difflib.SequenceMatcher(None, fragment, window(i), autojunk=False).ratio()

    step = max(1, k // 3)
    starts = range(0, len(words) - k + 1, step)
    quick = sorted(starts, key=lambda i: difflib.SequenceMatcher(None, fragment, window(i)).quick_ratio())[-8:]
    best = max(quick, key=score)
    near = range(max(0, best - step), min(len(words) - k, best + step) + 1)
    return window(max(near, key=score))


@dataclass
class QuoteMiss:
    experiment: str
    key: str  # values.<name> or claims.<id>
    quote: str
    fragment: str  # the first part not found (in order)
    nearest: str

    def line(self) -> str:
        return (
            f"experiments/{self.experiment}/claims.yaml: {self.key}.quote: not found verbatim in the paper's text"
            f"\n  quote:    {plain(self.quote)}\n  missing:  {self.fragment}\n  nearest:  {self.nearest}"
        )


def paper_text(paper: str, papers_dir: Path = PAPERS_TEXT) -> str | None:
    hits = sorted(Path(papers_dir).glob(f"{paper}_*.txt"))
    return hits[0].read_text(encoding="utf-8") if hits else None


def quotes_of(doc: dict) -> list[tuple[str, str]]:
    """(key, quote) of every value and of every claim with a quote of its own."""
    out = [(f"values.{k}", v["quote"]) for k, v in (doc.get("values") or {}).items() if isinstance(v.get("quote"), str)]
    for cid, c in (doc.get("claims") or {}).items():
        if isinstance(c.get("quote"), str):
            out.append((f"claims.{cid}", c["quote"]))
    return out


def check_quote(quote: str, forms: list[str]) -> tuple[str, str] | None:
    """None when the quote is the paper's, else (the first fragment not found, its nearest passage)."""
    frags = fragments(quote)
    misses = [_in_order(frags, form) for form in forms]
    if any(m is None for m in misses):
        return None
    frag = frags[min(misses)]
    return frag, nearest(frag, forms[0])


def check_experiment(experiment: str, doc: dict, text: str) -> list[QuoteMiss]:
    forms = paper_forms(text)
    out = []
    for key, quote in quotes_of(doc):
        miss = check_quote(quote, forms)
        if miss is not None:
            out.append(QuoteMiss(experiment, key, quote, *miss))
    return out


def claims_files(experiments_dir: Path = REPO / "experiments") -> list[Path]:
    """Every experiment's claims.yaml (the template's too), by folder name."""
    return sorted(p for p in Path(experiments_dir).glob("*/claims.yaml") if p.parent.name != "_papers")


def check_all(experiments_dir: Path = REPO / "experiments", papers_dir: Path = PAPERS_TEXT) -> tuple[list, list]:
    """(misses, experiments whose paper has no text in papers_dir)."""
    misses, untexted = [], []
    for path in claims_files(experiments_dir):
        doc = corun_config.read_document(path) or {}
        text = paper_text(str(doc.get("paper")), papers_dir)
        if text is None:
            untexted.append(f"{path.parent.name} (paper {doc.get('paper')})")
            continue
        misses += check_experiment(path.parent.name, doc, text)
    return misses, untexted


def main(argv: list[str] | None = None) -> int:
    """python -m analysis.claim_quotes [PAPERS_DIR]: every quote not found, with its nearest passage."""
    args = sys.argv[1:] if argv is None else argv
    papers = Path(args[0]) if args else PAPERS_TEXT
    if not papers.is_dir():
        print(f"analysis.claim_quotes: {papers}: no such folder (expected the papers' .txt files)", file=sys.stderr)
        return 2
    misses, untexted = check_all(papers_dir=papers)
    for m in misses:
        print(m.line())
    for u in untexted:
        print(f"no paper text for {u}")
    print(f"{len(misses)} quote(s) not found verbatim")
    return 1 if misses else 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Claims as data: an experiment's paper values and the claims its report judges, declared once in
its `claims.yaml` (analysis/schemas/claims.schema.json) and checked before anything is judged.

A claim names the metric, the comparison (which variants or points, paired by repetition), the
paper's direction or value, the null, the evidence it needs (test, least repetitions, a margin for a
"no change" claim, rare events) and the machine it needs. `check_claims` holds the declarations
against what the experiment's analysis declares it measures (its evidence tables' columns and the
levels of its factors): a claim that names an unknown metric, column or variant is one line naming
the file, the claim and the key.
"""

from __future__ import annotations

import copy
import difflib
import functools
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from analysis.common import AnalysisInputError
from corun import config as corun_config
from corun.errors import ConfigError

SCHEMA = Path(__file__).resolve().parent / "schemas" / "claims.schema.json"
STAND_INS = Path(__file__).resolve().parent / "schemas" / "stand_ins.yaml"
POINT_KEYWORDS = ("max", "min")
RATIO_EFFECTS = ("ratio", "ratio_of_ratios")


@dataclass
class ClaimSet:
    """One experiment's claims.yaml, defaults filled in."""

    experiment: str
    source: str  # the file, as error messages name it
    paper: str
    citation: str
    title: str
    figure: str
    notes: list[str] = field(default_factory=list)
    values: dict = field(default_factory=dict)
    claims: dict = field(default_factory=dict)
    # {metric: (low, high)}: the range its definition gives it (-inf/inf where unbounded)
    metric_bounds: dict = field(default_factory=dict)


def _fail(source: str, key: str, value: object, expected: str) -> None:
    raise AnalysisInputError(str(ConfigError(source, key, value, expected)))


def load_paper(papers_dir: Path, paper_id: str, source: str) -> dict:
    """experiments/_papers/<id>.yaml: {id, citation, notes}."""
    path = Path(papers_dir) / f"{paper_id}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in Path(papers_dir).glob("*.yaml"))
        _fail(source, "paper", paper_id, f"a paper of {papers_dir.name}/ ({', '.join(known)}) or a `citation:`")
    try:
        doc = corun_config.read_document(path)
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    if not isinstance(doc, dict) or not isinstance(doc.get("citation"), str) or doc.get("id") != paper_id:
        _fail(
            str(path),
            "citation",
            doc if not isinstance(doc, dict) else doc.get("citation"),
            f"id: {paper_id!r} and a citation string",
        )
    notes = doc.get("notes") or []
    return {"id": paper_id, "citation": doc["citation"].strip(), "notes": [str(n).strip() for n in notes]}


def load_claims(
    path: str | Path, experiment: str, papers_dir: str | Path | None = None, shown: str | None = None
) -> ClaimSet:
    """Read, validate (defaults filled) and cross-check one claims.yaml; one-line errors."""
    path = Path(path)
    shown = shown or str(path)
    try:
        raw = corun_config.read_document(path)
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    for c in ((raw or {}).get("claims") or {}).values() if isinstance(raw, dict) else []:
        if isinstance(c, dict) and None in c:  # YAML reads an unquoted `null:` key as None
            c["null"] = c.pop(None)
    try:
        doc = corun_config.validate(raw, corun_config.load_schema(SCHEMA), shown)
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    if "citation" in doc:
        paper = {"id": doc["paper"], "citation": doc["citation"].strip(), "notes": []}
    else:
        if papers_dir is None:
            _fail(shown, "citation", None, "a citation (no papers folder given)")
        paper = load_paper(Path(papers_dir), doc["paper"], shown)
    values = doc.get("values") or {}
    claims = {}
    for cid, claim in (doc.get("claims") or {}).items():
        claims[cid] = complete_claim(shown, cid, copy.deepcopy(claim), values)
    return ClaimSet(
        experiment=experiment,
        source=shown,
        paper=doc["paper"],
        citation=paper["citation"],
        title=doc["title"],
        figure=doc["figure"],
        notes=[*paper["notes"], *(n.strip() for n in doc.get("notes") or [])],
        values=values,
        claims=claims,
        metric_bounds=metric_bounds(shown, doc.get("metric_bounds") or {}),
    )


def metric_bounds(source: str, declared: dict) -> dict[str, tuple[float, float]]:
    """A claims file's `metric_bounds:` ({metric: [low, high]}, null unbounded) as
    {metric: (low, high)}, -inf/inf for null; low below high."""
    out = {}
    for metric, (lo, hi) in declared.items():
        low = -math.inf if lo is None else float(lo)
        high = math.inf if hi is None else float(hi)
        if not low < high:
            _fail(source, f"metric_bounds.{metric}", [lo, hi], "[low, high] with low < high (null: unbounded)")
        out[metric] = (low, high)
    return out


@functools.cache
def stand_in_words() -> dict[str, str]:
    """analysis/schemas/stand_ins.yaml: {word: the text a row names it by}."""
    try:
        doc = corun_config.read_document(STAND_INS)
    except ConfigError as exc:
        raise AnalysisInputError(str(exc)) from None
    return {str(k): " ".join(str(v).split()) for k, v in (doc or {}).items()}


def stand_in_texts(words) -> list[str]:
    """The texts of a claim's stand-in words (a word not listed shown as itself)."""
    known = stand_in_words()
    return [known.get(w, w) for w in words or []]


def complete_claim(source: str, cid: str, c: dict, values: dict) -> dict:
    """Cross-key checks the schema cannot say, and the defaults that depend on the effect."""
    key = f"claims.{cid}"
    effect = c["effect"]
    known = stand_in_words()
    for w in c.get("stand_ins") or []:
        if w not in known:
            _fail(source, f"{key}.stand_ins", w, f"one of {', '.join(known)} (analysis/schemas/stand_ins.yaml)")
    if "value" in c:
        if c["value"] not in values:
            _fail(source, f"{key}.value", c["value"], "a key of values: " + (", ".join(sorted(values)) or "none"))
        item = values[c["value"]]
        c.setdefault("source", item["source"])
        c.setdefault("quote", item["quote"])
        c["paper_value"] = item["value"]
        c["paper_unit"] = item["unit"]
    else:
        c["paper_value"] = None
        c["paper_unit"] = ""
    for k in ("source", "quote"):
        if k not in c:
            _fail(source, f"{key}.{k}", None, f"a {k} of the paper (or a `value:` that has one)")
    if effect == "machine":
        if c.setdefault("expect", "none") != "none":
            _fail(source, f"{key}.expect", c["expect"], "none (a machine-specific value is compared, not judged)")
    elif c.get("expect") in (None, "none"):
        _fail(source, f"{key}.expect", c.get("expect"), "less, greater, equivalent, increasing or decreasing")
    trend = effect == "trend"
    if trend != (c["expect"] in ("increasing", "decreasing")):
        _fail(
            source,
            f"{key}.expect",
            c["expect"],
            "increasing or decreasing for a trend" if trend else "less, greater or equivalent",
        )
    if trend and "x" not in c:
        _fail(source, f"{key}.x", None, "the column a trend ranks the metric against")
    if effect in ("ratio", "difference", "ratio_of_ratios"):
        for side in ("head", "base"):
            if not c.get(side):
                _fail(source, f"{key}.{side}", c.get(side), f"a selector of the {side} side (column: value)")
    elif "head" in c or "base" in c:
        _fail(source, f"{key}.head", c.get("head"), f"no head/base for a {effect} claim (use where:)")
    if effect == "ratio_of_ratios" and "across" not in c:
        _fail(source, f"{key}.across", None, "column: [first, second] for a ratio of ratios")
    if c["expect"] == "equivalent" and "margin" not in c:
        _fail(source, f"{key}.margin", None, "the largest change that counts as none (e.g. 0.05)")
    if c["expect"] != "equivalent" and "margin" in c:
        _fail(source, f"{key}.margin", c["margin"], "no margin unless expect: equivalent")
    test = c.setdefault("test", "spearman" if trend else "t")
    if (test == "spearman") != trend:
        _fail(source, f"{key}.test", test, "spearman for a trend" if trend else "t or wilcoxon")
    if "scale" not in c:
        c["scale"] = "log" if effect in RATIO_EFFECTS else "linear"
    elif effect in RATIO_EFFECTS and c["scale"] != "log":
        _fail(source, f"{key}.scale", c["scale"], "log for a ratio")
    if "null" not in c:
        c["null"] = 1.0 if c["scale"] == "log" else 0.0
    if c["scale"] == "log" and not c["null"] > 0:
        _fail(source, f"{key}.null", c["null"], "a number > 0 on a log scale")
    if c["paper_as"] != "same" and c["paper_value"] is None:
        _fail(source, f"{key}.paper_as", c["paper_as"], "same, unless the claim has a `value:`")
    return c


def selector_columns(c: dict) -> list[tuple[str, str]]:
    """(key, column) of every column a claim reads besides its metric."""
    out = []
    for part in ("where", "at", "head", "base", "across"):
        for col in c.get(part) or {}:
            out.append((f"{part}.{col}", col))
    for col in c.get("over") or []:
        out.append(("over", col))
    for col in c.get("pair_by") or []:
        out.append(("pair_by", col))
    if "x" in c:
        out.append(("x", c["x"]))
    if "min_events" in c:
        out.append(("min_events.column", c["min_events"]["column"]))
    return out


def _nearest(value: str, known) -> str:
    close = difflib.get_close_matches(str(value), [str(k) for k in known], n=3)
    return f" (nearest: {', '.join(close)})" if close else ""


def check_claims(cs: ClaimSet, tables: dict[str, set[str]], levels: dict[str, set] | None = None) -> None:
    """Every claim against what the analysis declares: its table, metric and columns exist, and the
    values it selects (variants, schemes, points) are known levels. One line on the first error."""
    levels = levels or {}
    for cid, c in cs.claims.items():
        key = f"claims.{cid}"
        if c["table"] not in tables:
            _fail(cs.source, f"{key}.table", c["table"], "one of " + ", ".join(sorted(tables)))
        columns = tables[c["table"]]
        if c["metric"] not in columns:
            _fail(
                cs.source,
                f"{key}.metric",
                c["metric"],
                f"a metric of table {c['table']}{_nearest(c['metric'], columns)}",
            )
        for k, col in selector_columns(c):
            if col not in columns:
                _fail(cs.source, f"{key}.{k}", col, f"a column of table {c['table']}{_nearest(col, columns)}")
        for part in ("where", "head", "base", "at", "across"):
            for col, want in (c.get(part) or {}).items():
                known = levels.get(col)
                if known is None:
                    continue
                wanted = want if isinstance(want, list) else [want]
                for w in wanted:
                    if part in ("at", "across") and w in POINT_KEYWORDS:
                        continue
                    if w not in known and str(w) not in {str(k) for k in known}:
                        _fail(
                            cs.source,
                            f"{key}.{part}.{col}",
                            w,
                            f"one of {', '.join(sorted(map(str, known)))}{_nearest(w, known)}",
                        )


# ----------------------------------------------------------------------------- paper values


_RANGE = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:%|x)?\s*(?:to|~|-)\s*([-+]?\d+(?:\.\d+)?)\s*(?:%|x)?\s*$")
_ONE = re.compile(r"^\s*([-+]?\d+(?:\.\d+)?)\s*(?:%|x)?\s*$")


def paper_numbers(value: object) -> tuple[float, float] | None:
    """(low, high) of a paper value: a number (low = high), or a range written "6.7% to 67.9%",
    "2x ~ 16x" or "10.8%-97.7%"; None for anything else (text, lists of values)."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, (int, float)):
        return (float(value), float(value)) if math.isfinite(value) else None
    m = _RANGE.match(str(value))
    if m:
        a, b = float(m.group(1)), float(m.group(2))
        return min(a, b), max(a, b)
    m = _ONE.match(str(value))
    return (float(m.group(1)), float(m.group(1))) if m else None


def paper_on_effect_scale(c: dict) -> tuple[float, float] | None:
    """The paper's value (or range) on the claim's effect scale, or None."""
    nums = paper_numbers(c.get("paper_value"))
    if nums is None:
        return None
    how = c["paper_as"]
    conv = {
        "same": lambda v: v,
        "pct_change": lambda v: 1 + v / 100.0,
        "pct_reduction": lambda v: 1 - v / 100.0,
        "factor": lambda v: v,
    }[how]
    a, b = conv(nums[0]), conv(nums[1])
    return min(a, b), max(a, b)

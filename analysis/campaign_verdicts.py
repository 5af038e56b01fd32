"""`corun verdicts`: the claims' outcomes of one or more campaigns, side by side.

A campaign is a results folder (results/local), an extracted archive, or an archive file
(.tar.gz, .zip: corun archive); its claims are those of every `<experiment>/analysis/section.json`
in it (the report's sections; a look's section under looks/ is not the campaign's).

  corun verdicts show CAMPAIGN [...]   claims per outcome per paper, per campaign (headline
                                       results first, then each kind, magnitude apart)
  corun verdicts diff CAMPAIGN ...     every claim whose outcome differs between the campaigns,
                                       then how stable they were: claims that flipped between
                                       reproduced and contradicted, and claims that moved between
                                       a decided outcome and inconclusive (share of all claims),
                                       and how many moves sampling alone would give at the
                                       measured effects (analysis.campaign_chance)
"""

from __future__ import annotations

import json
from pathlib import Path

from analysis.campaign_chance import chance_text
from analysis.common import fmt_num
from analysis.report_verdicts import KINDS, NO_KIND, kind_of, tally
from analysis.verdicts import DECIDED, OUTCOMES
from corun.errors import ConfigError
from corun.results.archive import SUFFIXES, read_archive


def _is_section(rel: str) -> bool:
    parts = rel.split("/")
    return len(parts) >= 3 and parts[-2:] == ["analysis", "section.json"] and "looks" not in parts


def load(source: str | Path) -> dict[tuple[str, str], dict]:
    """{(experiment, claim): row} of one campaign; one-line errors for what is not a campaign."""
    path = Path(source)
    if path.is_file() and path.name.endswith(SUFFIXES):
        files = {k: v for k, v in read_archive(path).items() if _is_section(k)}
        texts = {k: v.decode("utf-8", "replace") for k, v in files.items()}
    elif path.is_dir():
        texts = {p.relative_to(path).as_posix(): p.read_text() for p in sorted(path.rglob("section.json"))}
        texts = {k: v for k, v in texts.items() if _is_section(k)}
    else:
        raise ConfigError(
            "command line", "CAMPAIGN", str(source), "a results folder, an extracted archive or an archive"
        )
    out = {}
    for rel, text in sorted(texts.items()):
        try:
            sec = json.loads(text)
        except ValueError as exc:
            raise ConfigError(str(source), rel, "not JSON", f"a section.json ({exc})") from None
        for row in sec.get("claims") or []:
            out[(sec["experiment"], row["claim"])] = {**row, "paper": row.get("paper") or sec.get("paper_id", "")}
    if not out:
        raise ConfigError("command line", "CAMPAIGN", str(source), "a campaign whose sections judge claims")
    return out


def counts(claims: dict[tuple[str, str], dict]) -> dict[str, dict[str, int]]:
    """{paper: {outcome: n}} with every outcome listed."""
    out: dict[str, dict[str, int]] = {}
    for row in claims.values():
        out.setdefault(row["paper"], dict.fromkeys(OUTCOMES, 0))[row["outcome"]] += 1
    return dict(sorted(out.items()))


def _shown(row: dict | None) -> str:
    if row is None:
        return "absent"
    text = row["outcome"]
    if row.get("estimate") is not None:
        ci = (
            f" [{fmt_num(row['ci_low'])}, {fmt_num(row['ci_high'])}]"
            if row.get("ci_low") is not None and row.get("ci_high") is not None
            else ""
        )
        text += f" ({fmt_num(row['estimate'])}{ci}, n {row['n']})"
    return text


def diff(campaigns: list[dict[tuple[str, str], dict]]) -> dict:
    """The claims whose outcome differs, and the stability figures."""
    keys = sorted(set().union(*[set(c) for c in campaigns]))
    changed, flips, moves = [], [], []
    for key in keys:
        rows = [c.get(key) for c in campaigns]
        outcomes = [r["outcome"] if r else None for r in rows]
        if len(set(outcomes)) == 1:
            continue
        changed.append((key, rows))
        present = {o for o in outcomes if o}
        if {"reproduced", "contradicted"} <= present:
            flips.append(key)
        if present & set(DECIDED) and "inconclusive" in present:
            moves.append(key)
    return {"claims": len(keys), "changed": changed, "flips": flips, "moves": moves}


def _kind_text(rows: list[dict]) -> str:
    """Outcomes of ROWS, reproduced in direction with its magnitudes apart."""
    n = tally(rows)
    parts = []
    for col, k in n.items():
        if k and col != "claims":
            parts.append(f"{col} {k}")
    return ", ".join(parts)


def show_text(names: list[str], campaigns: list[dict]) -> str:
    """Claims per outcome per paper; where the claims have kinds, the headline results first, then
    the other kinds, each with reproduced in direction and its magnitudes apart."""
    lines = []
    for name, c in zip(names, campaigns):
        lines.append(f"{name}: {len(c)} claims")
        for paper, n in counts(c).items():
            parts = ", ".join(f"{o} {k}" for o, k in n.items() if k)
            lines.append(f"  paper {paper}: {parts}")
            rows = [r for r in c.values() if r["paper"] == paper]
            if any(r.get("kind") for r in rows):
                for kind in [*KINDS, NO_KIND]:
                    mine = [r for r in rows if kind_of(r) == kind]
                    if mine:
                        lines.append(f"    {kind} ({len(mine)}): {_kind_text(mine)}")
    return "\n".join(lines) + "\n"


def diff_text(names: list[str], campaigns: list[dict]) -> str:
    d = diff(campaigns)
    lines = [f"{d['claims']} claims over {len(campaigns)} campaigns: {', '.join(names)}"]
    if not d["changed"]:
        lines.append("every claim has the same outcome in every campaign")
    for (exp, claim), rows in d["changed"]:
        lines.append(f"{exp}.{claim}:")
        lines += [f"  {name}: {_shown(r)}" for name, r in zip(names, rows)]
    n = max(1, d["claims"])
    lines.append(
        f"flipped between reproduced and contradicted: {len(d['flips'])}"
        + (f" ({', '.join('.'.join(k) for k in d['flips'])})" if d["flips"] else "")
    )
    lines.append(
        f"moved between a decided outcome and inconclusive: {len(d['moves'])} of {d['claims']} "
        f"({100 * len(d['moves']) / n:.1f} %)"
    )
    return "\n".join(lines) + "\n" + chance_text(campaigns, d["moves"])

"""The claims file the analysis tests write: paper 000's one claim `c`, a ratio of METRIC between
its head (p: a) and its base (p: b) expected in DIRECTION (greater, less); a test appends its
claim's further keys (four spaces in)."""


def claims_header(metric: str, direction: str) -> str:
    return f"""paper: "000"
title: T
figure: F
claims:
  c:
    kind: finding
    says: s
    source: Sec. 1
    quote: q
    effect: ratio
    metric: {metric}
    head: {{p: a}}
    base: {{p: b}}
    expect: {direction}
"""

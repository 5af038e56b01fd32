"""Paired contests of two schemes, for the claims paper 001 makes on every pair of schemes.

"The blocking-based schemes ... outperform the spinning-based schemes ... in all cases" and
"CC-B performs the best among all considered schemes" hold only when every (head, base) pair
does: a pooled mean of each group can put a slow blocking scheme behind a fast one and still
read as a gain. The `pairs` table holds, per contest `<head>_vs_<base>`, the runs of the head
scheme (side head) and of the base scheme (side base), so that a claim judges each contest on
its own (`over: [contest]`) with the engine's paired rule. BATCH runs at MPL 1 only; as a base
its runs stand at every MPL its head ran (`run_mpl` keeps 1), as in the paper's Fig. 7.

The `gains` table holds one row per (contest, workload, load, mpl, rep): the head's mean
execution and response time and message delay over the base's (`exec_ratio`, `response_ratio`,
`md_ratio`; below 1, the head is faster) and the workload's communication intensity in Table 3's
order (`comm_rank`, WL1 1 to WL5 5): for Fig. 9's "the performance benefit ... becomes more
pronounced" as intensity grows (a rank trend) and Figs. 10-11's gain growing with the MPL (the
ratio at MPL 5 over the ratio at MPL 3, paired by rep). A gain row is failed when either of its
runs failed, named by both runs.
"""

from __future__ import annotations

import pandas as pd

BLOCKING = ("sb", "hybrid", "cc_b")
SPINNING = ("local", "dcs", "pb", "cc_s")
# the schemes paper 001 evaluates besides CC-B (Sec. 5: LOCAL, BATCH, DCS, PB, SB, HYBRID; and CC-S)
CC_B_RIVALS = ("batch", "local", "dcs", "pb", "cc_s", "sb", "hybrid")
# each CC scheme against the other schemes of its kind (Sec. 5.3, Figs. 9 and 10)
CC_ALTERNATIVES = (("cc_b", "sb"), ("cc_b", "hybrid"), ("cc_s", "local"), ("cc_s", "dcs"), ("cc_s", "pb"))
# Table 3: the communication intensity of WL1-WL5 in the paper's order (WL1 < WL2 < ... < WL5)
COMM_RANK = {"wl1": 1, "wl2": 2, "wl3": 3, "wl4": 4, "wl5": 5}
PAIR_COLUMNS = ["contest", "side", "workload", "load", "mpl", "run_mpl", "rep", "scheme", "run_id"]
GAIN_KEYS = ["contest", "workload", "load", "mpl", "rep"]


def contest(head: str, base: str) -> str:
    return f"{head}_vs_{base}"


def _all_contests() -> dict[str, tuple[str, str]]:
    pairs = [(b, s) for b in BLOCKING for s in SPINNING]
    pairs += [("cc_b", r) for r in CC_B_RIVALS] + list(CC_ALTERNATIVES)
    return {contest(h, b): (h, b) for h, b in dict.fromkeys(pairs)}


CONTESTS = _all_contests()


def pairs(runs: pd.DataFrame) -> pd.DataFrame:
    """Every contest's runs: the head scheme's (side head) and the base scheme's (side base), with
    the run's columns; a base run at MPL 1 (BATCH) stands at each MPL of the head's runs."""
    if runs.empty or "scheme" not in runs:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    runs = runs.assign(run_mpl=runs["mpl"])
    parts = []
    for name, (head, base) in CONTESTS.items():
        h = runs[runs["scheme"] == head]
        b = runs[runs["scheme"] == base]
        if h.empty or b.empty:
            continue
        if base == "batch":  # space sharing only: one MPL, compared at each MPL of the head
            stream = ["workload", "load"]
            b = b.drop(columns="mpl").merge(h[stream + ["mpl"]].drop_duplicates(), on=stream)
        parts.append(h.assign(contest=name, side="head"))
        parts.append(b.assign(contest=name, side="base"))
    if not parts:
        return pd.DataFrame(columns=PAIR_COLUMNS)
    out = pd.concat(parts, ignore_index=True)
    first = [c for c in PAIR_COLUMNS if c in out.columns]
    return out[first + [c for c in out.columns if c not in first]]


def gains(pair_rows: pd.DataFrame) -> pd.DataFrame:
    """Per (contest, workload, load, mpl, rep): head over base of the mean execution and response
    time, the workload's comm_rank, failed when a run of either side failed."""
    cols = [*GAIN_KEYS, "comm_rank", "exec_ratio", "response_ratio", "md_ratio", "run_id", "failed", "failed_reason"]
    if pair_rows.empty or not {"head", "base"} <= set(pair_rows["side"]):
        return pd.DataFrame(columns=cols)
    df = pair_rows.assign(
        failed=pair_rows["failed"].fillna(False).astype(bool) if "failed" in pair_rows else False,
        failed_reason=pair_rows["failed_reason"].fillna("").astype(str) if "failed_reason" in pair_rows else "",
        run_id=pair_rows["run_id"].astype(str),
    )
    g = df.groupby([*GAIN_KEYS, "side"], sort=True)
    side = pd.DataFrame(
        {
            "exec_s": g["exec_s"].mean(),
            "response_s": g["response_s"].mean(),
            "md_us": g["md_us"].mean() if "md_us" in df else float("nan"),
            "failed": g["failed"].any(),
            "run_id": g["run_id"].agg(lambda r: "+".join(sorted(set(r)))),
            "failed_reason": g["failed_reason"].agg(lambda r: "; ".join(sorted({x for x in r if x}))),
        }
    )
    head, base = side.xs("head", level="side").align(side.xs("base", level="side"), join="inner", axis=0)
    out = pd.DataFrame(index=head.index)
    for metric, col in (("exec", "exec_s"), ("response", "response_s"), ("md", "md_us")):
        h, b = head[col].astype(float), base[col].astype(float)
        out[f"{metric}_ratio"] = (h / b).where(b > 0)
    out["run_id"] = head["run_id"] + "+" + base["run_id"]
    out["failed"] = head["failed"] | base["failed"]
    out["failed_reason"] = (head["failed_reason"] + "; " + base["failed_reason"]).str.strip("; ")
    out = out.reset_index()
    out["comm_rank"] = out["workload"].astype(str).map(COMM_RANK).astype(float)
    return out[cols]

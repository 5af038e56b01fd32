"""corun's commands that analyse runs: `corun compare`, `corun index`, `corun campaign`,
`corun verdicts`.

analysis depends on corun, never the reverse: these commands plug into the `corun` command line
through the `corun.commands` entry point group (pyproject.toml), which corun.cli.main reads.
Exit codes: 0 ok; 1 a comparison's gate failed; 2 bad input (one line naming key, value and
expectation); 5 a comparison's gate cannot decide with the runs given.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from analysis import campaign_verdicts, compare_runs, runindex
from analysis.campaign_decision import decide_from_runs, decider
from corun.errors import ConfigError
from corun.results import campaign


def _csv(text: str | None) -> list[str]:
    return [t.strip() for t in text.split(",") if t.strip()] if text else []


def _cmd_compare(a) -> int:
    threshold = compare_runs.parse_percent(a.fail_if_worse) if a.fail_if_worse is not None else None
    margin = compare_runs.parse_percent(a.margin, key="--margin") if a.margin is not None else None
    result, _, md = compare_runs.run(
        [Path(s) for s in a.sources],
        sets=a.set or [],
        by=a.by,
        baseline=a.baseline,
        where=a.where,
        metric_names=_csv(a.metrics),
        test=a.test,
        alpha=a.alpha,
        pair_by=a.pair_by,
        margin=margin,
        fail_if_worse=threshold,
        include_alone=a.include_alone,
        out=a.out,
        plots=not a.no_plots,
    )
    sys.stdout.write(md)
    if a.out:
        print(
            f"\nwritten: {a.out}/comparison.md, comparison.html, comparison.json, comparison.csv, runs.csv"
            + ("" if a.no_plots else ", figures/"),
            file=sys.stderr,
        )
    if a.summary:
        with open(a.summary, "a", encoding="utf-8") as fh:
            fh.write(md)
    status = result["gate"]["status"]
    return 1 if status == "failed" else compare_runs.GATE_UNDECIDED_EXIT if status == "undecided" else 0


def _cmd_index(a) -> int:
    if a.action == "build":
        if not a.results:
            raise ConfigError("command line", "RESULTS_DIR", "none", "at least one results folder")
        counts = runindex.build_index([Path(r) for r in a.results], Path(a.db))
        print(
            f"{a.db}: {counts['total']} runs indexed ({counts['added']} added, {counts['updated']} updated, "
            f"{counts['unchanged']} unchanged, {counts['removed']} removed)"
        )
        return 0
    recs = runindex.load_index(Path(a.db)) if runindex.is_index(Path(a.db)) else None
    if recs is None:
        raise ConfigError("command line", "--db", a.db, "a corun run index file (corun index build)")
    if a.where:
        recs = runindex.select(recs, runindex.parse_selector(a.where, what="--where"), what="--where")
    keys = _csv(a.keys) or ["run", "variant", "host", "campaign"]
    print("\t".join(keys + (["metrics"] if a.metrics else [])))
    for r in recs:
        cells = [runindex.as_text(r.get(k)) if r.has(k) else "" for k in keys]
        if a.metrics:
            cells.append(json.dumps(r.metrics, sort_keys=True))
        print("\t".join(cells))
    return 0


def _cmd_campaign(a) -> int:
    if a.action == "order":
        campaign.check_names(_csv(a.variants))  # a plan of a variant that does not exist is no plan
        plan = campaign.order(_csv(a.variants), a.reps, a.seed, a.warmup)
        print(
            json.dumps(plan, indent=None if a.lines else 2) if not a.lines else "\n".join(json.dumps(e) for e in plan)
        )
        return 0
    target = compare_runs.parse_percent(a.target, key="--target")
    if a.action == "decide":
        sources = ([a.spec] if a.spec else []) + a.sources
        if not sources:
            raise ConfigError("command line", "SOURCE", "none", "run folders, campaign folders or an index")
        out = decide_from_runs([Path(s) for s in sources], a.by, a.metric, target, a.max_reps, a.min_reps, a.where)
        print(out["decision"] if a.quiet else json.dumps(out, indent=2))
        return 0
    if not a.spec or not a.out:
        raise ConfigError("command line", "campaign run", "SPEC/--out missing", "a spec template and --out DIR")
    state = campaign.run_campaign(
        Path(a.spec),
        _csv(a.variants),
        Path(a.out),
        reps=a.reps,
        warmup=a.warmup,
        seed=a.seed,
        name=a.name,
        target=target if a.adaptive else None,
        max_reps=a.max_reps,
        metric=a.metric,
        decide=decider(a.metric) if a.adaptive else None,
        log=lambda line: print(line, file=sys.stderr),
    )
    print(f"{a.out}: {len(state['runs'])} runs, seed {state['seed']}")
    return 0


def _cmd_verdicts(a) -> int:
    names = [str(s) for s in a.campaigns]
    campaigns = [campaign_verdicts.load(s) for s in a.campaigns]
    if a.action == "diff":
        if len(campaigns) < 2:
            raise ConfigError("command line", "CAMPAIGN", names[0], "two campaigns or more to diff")
        sys.stdout.write(campaign_verdicts.diff_text(names, campaigns))
    else:
        sys.stdout.write(campaign_verdicts.show_text(names, campaigns))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    c = sub.add_parser(
        "compare",
        help="compare sets of runs: ratios with CIs, significance, verdicts",
        description="Compare two or more sets of runs (see analysis/compare_runs.py).",
    )
    c.add_argument(
        "sources", nargs="+", help="run folders, campaign or results folders, extracted archives, index files"
    )
    c.add_argument(
        "--set",
        action="append",
        metavar="[NAME:]SELECTOR",
        help="a set of runs, e.g. 'base:variant=linux' (repeat; the first is the baseline)",
    )
    c.add_argument("--by", metavar="KEY", help="one set per value of KEY (variant, host, labels.k ...)")
    c.add_argument("--baseline", metavar="VALUE", help="with --by: the baseline value (default: the first, sorted)")
    c.add_argument("--where", metavar="SELECTOR", help="only runs matching SELECTOR, e.g. 'campaign=ci host=node-1'")
    c.add_argument("--metrics", help="comma-separated metric names (default: all registered)")
    c.add_argument(
        "--test",
        default="t",
        choices=["t", "wilcoxon"],
        help="interval of the paired log ratios: t (default) or the signed-rank interval (unpaired: Welch)",
    )
    c.add_argument(
        "--alpha", type=float, default=0.05, help="error rate of the whole table (Bonferroni over its rows; 0.05)"
    )
    c.add_argument(
        "--pair-by", metavar="KEY", help="pair runs across sets by KEY (e.g. labels.rep or labels.block); paired test"
    )
    c.add_argument("--margin", metavar="PCT", help="call 'no change' when the interval lies within 1 +- PCT (e.g. 2%%)")
    c.add_argument("--include-alone", action="store_true", help="count T_alone runs (labels.kind alone) too")
    c.add_argument(
        "--fail-if-worse",
        metavar="PCT",
        help="exit 1 when a metric is surely worse by PCT or more (e.g. 5%%); exit 5 when the runs cannot tell",
    )
    c.add_argument("--out", type=Path, help="folder for comparison.md/.html/.json/.csv, runs.csv and figures/")
    c.add_argument("--summary", metavar="FILE", help="append the Markdown summary to FILE (e.g. $GITHUB_STEP_SUMMARY)")
    c.add_argument("--no-plots", action="store_true", help="skip the PNG figures")
    c.set_defaults(fn=_cmd_compare)

    i = sub.add_parser("index", help="the run index: build RESULTS_DIR... --db FILE, or list --db FILE")
    i.add_argument("action", choices=["build", "list"])
    i.add_argument("results", nargs="*", help="results folders to index (build)")
    i.add_argument("--db", required=True, help="SQLite index file (created if absent)")
    i.add_argument("--where", metavar="SELECTOR", help="list: only runs matching SELECTOR")
    i.add_argument("--keys", help="list: comma-separated keys to show (default run,variant,host,campaign)")
    i.add_argument("--metrics", action="store_true", help="list: add the per-run metrics")
    i.set_defaults(fn=_cmd_index)

    g = sub.add_parser("campaign", help="controlled campaigns: order, decide (adaptive repetition), run")
    g.add_argument("action", choices=["order", "decide", "run"])
    g.add_argument("spec", nargs="?", help="run: the run spec template (its scheduler is set per variant)")
    g.add_argument("sources", nargs="*", help="decide: run folders, campaign folders or an index")
    g.add_argument("--variants", default="", help="comma-separated scheduler variants (order, run)")
    g.add_argument("--reps", type=int, default=5, help="measured runs per variant (default 5; adaptive: the minimum)")
    g.add_argument("--warmup", type=int, default=1, help="warm-up runs per variant, marked and discarded (default 1)")
    g.add_argument("--seed", type=int, default=None, help="order seed (default: drawn and recorded)")
    g.add_argument("--lines", action="store_true", help="order: one JSON object per line")
    g.add_argument("--out", help="run: campaign folder (runs/, specs/, campaign.json)")
    g.add_argument("--name", help="run: campaign name (default: the --out folder name)")
    g.add_argument("--adaptive", action="store_true", help="run: add blocks until --target or --max-reps")
    g.add_argument("--by", default="variant", help="decide: group runs by KEY (default variant)")
    g.add_argument("--where", metavar="SELECTOR", help="decide: only runs matching SELECTOR")
    g.add_argument("--metric", default="runtime_s", help="metric whose CI decides (default runtime_s)")
    g.add_argument("--target", default="2%", help="relative 95%% CI half-width to reach (default 2%%)")
    g.add_argument("--min-reps", type=int, default=3, help="decide: runs before stopping is allowed (default 3)")
    g.add_argument("--max-reps", type=int, default=20, help="cap on measured runs per variant (default 20)")
    g.add_argument("--quiet", action="store_true", help="decide: print only 'more' or 'stop'")
    g.set_defaults(fn=_cmd_campaign)

    v = sub.add_parser(
        "verdicts",
        help="the claims' outcomes of campaigns: show per paper, diff between campaigns",
        description="show: claims per outcome per paper; diff: every claim whose outcome differs between "
        "campaigns (results folders or archives), and how many flipped or moved.",
    )
    v.add_argument("action", choices=["show", "diff"])
    v.add_argument("campaigns", nargs="+", type=Path, help="results folders, extracted archives or archive files")
    v.set_defaults(fn=_cmd_verdicts)

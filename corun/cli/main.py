"""corun command line: `corun run SPEC --out DIR`, `corun topology`, `corun sched ...`.

The archive commands and the plugin commands load their code only when asked for, so
`corun run` pays only for the run path.
Commands of other packages (analysis: compare, index, campaign) plug in through the
`corun.commands` entry point group: a function that adds subparsers; corun imports no analysis
module itself.
"""

from __future__ import annotations

import argparse
import json
import sys

from corun import __version__, config
from corun.cli.doctor import add_parser as add_doctor_parser
from corun.cli.results import add_commands as add_result_commands
from corun.errors import ConfigError, CorunError, one_line_errors
from corun.machine import topology
from corun.machine.recovery import recover_stale
from corun.run import metadata, schedulers
from corun.run.checked_spec import CheckedSpec, load_spec
from corun.run.runner import run_spec_file
from corun.util import lazy_module

importlib_metadata = lazy_module("importlib.metadata")  # about 0.1 s: loaded when a plugin command may be asked for

BUILTIN = ("run", "validate", "topology", "sched", "recover", "metadata", "doctor", "archive", "verify", "publish")


def _cmd_run(a) -> int:
    out = run_spec_file(
        a.spec,
        a.out,
        max_steal_pct=a.max_steal_pct,
        attempts=a.attempts,
        max_foreign_pct=a.max_foreign_pct,
        progress=not a.quiet,
        allow_job_failures=a.allow_job_failures,
    )
    print(out)
    return 0


def _device_text(r: CheckedSpec) -> str:
    """The device under test as validate can tell it: a device built or formatted for the run
    (kind rotating_disk or block) exists only once the run sets it up."""
    if r.device is not None:
        return r.device.name
    if r.run_device.kind == "rotating_disk":
        return f"an emulated rotating disk built for the run on {r.spec['device']['path']}"
    return f"{r.spec['device']['block']['path']} formatted for the run"


def _cmd_validate(a) -> int:
    spec = load_spec(a.spec)
    r = CheckedSpec.build(spec, a.out or "/nonexistent/corun-validate", source=a.spec)
    print(
        f"{a.spec}: ok ({len(r.jobs)} jobs on CMPs {r.cmp_ids}, device {_device_text(r)}, scheduler {r.variant.name})"
    )
    return 0


def _cmd_topology(a) -> int:
    topo = topology.discover()
    grouping, cmps = topology.cmp_groups(topo, a.grouping, a.cores_per_cmp, source="command line")
    info = {**topo.as_dict(), "cmp_grouping": grouping, "cmps": [topology.format_cpulist(g) for g in cmps]}
    print(json.dumps(info, indent=2))
    return 0


def _cmd_sched(a) -> int:
    if a.action == "list":
        if a.name:
            raise CorunError(
                f"corun sched list: {a.name!r} (expected no name: list takes --kind, --strict)", exit_code=2
            )
        kinds = config.load_schema("scheduler_manifest")["properties"]["kind"]["enum"]
        if a.kind is not None and a.kind not in kinds:
            raise ConfigError("command line", "--kind", a.kind, "one of " + ", ".join(kinds))
        good, broken = schedulers.listing()
        for man in good:
            if a.kind is None or man["kind"] == a.kind:
                print(f"{man['name']:24s} {man['kind']:12s} {_sched_summary(man)}")
        for err in broken:  # one line each; the other variants are listed and usable
            print(f"corun: {err}", file=sys.stderr)
        return 2 if broken and a.strict else 0
    if not a.name:
        raise CorunError(f"corun sched {a.action}: a variant name is needed", exit_code=2)
    # show describes a variant before it is built (a clone not yet provisioned); run and build check
    v = schedulers.Variant.load(a.name, {}, source="command line", need_built=False, need_tools=a.action == "build")
    if a.action == "show":
        print(json.dumps({**v.describe(), "missing_here": v.missing(), "manifest": v.manifest}, indent=2, default=str))
    elif a.action == "build":
        sys.stdout.write(v.build())
    return 0


def _sched_summary(man: dict, width: int = 80) -> str:
    """One line of `corun sched list`: a family member's own setting first (elevator_bfq:
    elevator=bfq), then the description's first line, cut at a word."""
    own = ""
    if man.get("family"):
        own = " ".join(f"{k}={p['default']}" for k, p in sorted(man["params"].items()) if len(p.get("enum") or []) == 1)
    text = man["description"].strip().splitlines()[0]
    line = f"[{own}] {text}" if own else text
    if len(line) > width:
        line = line[: width - 3].rsplit(" ", 1)[0] + " ..."
    return line


def _cmd_recover(a) -> int:
    lines = recover_stale()
    for line in lines:
        print(line)
    if not lines:
        print("nothing to recover")
    return 0


def _cmd_metadata(a) -> int:
    print(json.dumps(metadata.collect(), indent=2, default=str))
    return 0


def build_parser(plugins: bool = True) -> argparse.ArgumentParser:
    """The parser; `plugins`: with the commands of the `corun.commands` entry points."""
    ap = argparse.ArgumentParser(prog="corun", description="Contention-aware scheduling experiments on real testbeds.")
    ap.add_argument("--version", action="version", version=f"corun {__version__}")
    sub = ap.add_subparsers(dest="command", required=True)
    r = sub.add_parser("run", help="run a batch workload spec and write a run folder")
    r.add_argument("spec", help="run spec (YAML or JSON, see corun/schemas/run_spec.schema.json)")
    r.add_argument("--out", required=True, help="run folder to create (built as OUT.incomplete, renamed when done)")
    r.add_argument("--quiet", action="store_true", help="no progress lines")
    r.add_argument("--allow-job-failures", action="store_true", help="exit 0 even if a job exits non-zero")
    r.add_argument(
        "--max-steal-pct",
        type=float,
        default=None,
        help="measure the run again when more than this %% of the CPUs' time went to steal while its jobs ran "
        "(default: the spec's remeasure.max_steal_pct, else never)",
    )
    r.add_argument(
        "--attempts",
        type=int,
        default=None,
        help="measurements at most with a steal or foreign CPU limit (default: the spec's remeasure.attempts, else 3)",
    )
    r.add_argument(
        "--max-foreign-pct",
        type=float,
        default=None,
        help="measure the run again when processes that are neither its own nor corun's runner and monitors "
        "(the orchestrator, other users) took more than this %% of the CPUs' time while its jobs ran "
        "(default: the spec's remeasure.max_foreign_pct, else never)",
    )
    r.set_defaults(fn=_cmd_run)
    v = sub.add_parser("validate", help="check a run spec against this machine without running anything")
    v.add_argument("spec")
    v.add_argument("--out", help="the run folder that would be written")
    v.set_defaults(fn=_cmd_validate)
    t = sub.add_parser("topology", help="show the CPUs and how they group into CMPs")
    t.add_argument("--grouping", default="auto", choices=["auto", "socket", "numa", "cores"])
    t.add_argument("--cores-per-cmp", type=int, default=None)
    t.set_defaults(fn=_cmd_topology)
    s = sub.add_parser(
        "sched",
        help="scheduler variants: list, show NAME, build NAME",
        description="list: every variant (a broken manifest is one line on stderr, and the others are "
        "listed: exit 0, or 2 with --strict); show NAME: its resolved manifest; build NAME: its build command",
    )
    s.add_argument("action", choices=["list", "show", "build"])
    s.add_argument("name", nargs="?")
    s.add_argument("--kind", help="list: only the variants of this kind (daemon, elevator, placement ...)")
    s.add_argument("--strict", action="store_true", help="list: exit 2 when a manifest cannot be read")
    s.set_defaults(fn=_cmd_sched)
    rc = sub.add_parser("recover", help="undo what an interrupted run left (caps, elevator, stopped jobs)")
    rc.set_defaults(fn=_cmd_recover)
    m = sub.add_parser("metadata", help="print this host's state as recorded in every run")
    m.set_defaults(fn=_cmd_metadata)
    add_doctor_parser(sub)
    add_result_commands(sub)  # archive, verify, publish
    if plugins:
        for ep in importlib_metadata.entry_points(group="corun.commands"):
            try:
                add = ep.load()  # analysis.cli: compare, index, campaign
            except ImportError:
                continue  # another checkout on the path without that package
            add(sub)
    return ap


@one_line_errors
def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    # a built-in command needs no plugin (their imports cost every `corun run`)
    builtin = bool(args) and args[0] in BUILTIN
    a = build_parser(plugins=not builtin).parse_args(args)
    return a.fn(a)


if __name__ == "__main__":
    sys.exit(main())

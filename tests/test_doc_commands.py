"""Every snakemake command line the docs and READMEs give parses the way a reader means it.

Snakemake's --config takes every word after it up to the next option, so a target written after
it (`--config 'experiments=[x]' all`) becomes a config item and Snakemake stops with a traceback.
Each command found in docs/, README.md, bench/README.md and experiments/*/README.md is parsed
with Snakemake's own argument parser: every --config item must be KEY=VALUE with a key of the
workflow's configuration schema, every --profile must exist, and every --configfile that names
a file of the repository must exist.
"""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
DOCS = sorted(
    [
        ROOT / "README.md",
        ROOT / "bench" / "README.md",
        *ROOT.glob("docs/**/*.md"),
        *ROOT.glob("experiments/*/README.md"),
    ]
)
CONFIG_KEYS = set(json.loads((ROOT / "workflows/schemas/config.schema.json").read_text())["properties"])
_FENCE = re.compile(r"^```")
_INLINE = re.compile(r"`([^`]*\bsnakemake\b[^`]*)`")


def _lines(path: Path):
    """(line number, command) of each snakemake command: fenced blocks with their continuation
    lines joined, and inline code spans that start with snakemake."""
    text = path.read_text().splitlines()
    fenced = False
    buf, start = "", 0
    for i, line in enumerate(text, 1):
        if _FENCE.match(line.strip()):
            fenced = not fenced
            continue
        if fenced:
            if buf:
                buf += " " + line.strip()
            elif re.match(r"^\s*(\.venv/bin/|\S*/)?snakemake\s", line):
                buf, start = line.strip(), i
            else:
                continue
            if buf.endswith("\\"):
                buf = buf[:-1]
                continue
            yield start, buf
            buf = ""
        else:
            for m in _INLINE.finditer(line):
                cmd = m.group(1).strip()
                if re.match(r"^(\.venv/bin/)?snakemake\s", cmd) and "<" not in cmd and "..." not in cmd:
                    yield i, cmd


def _commands():
    out = []
    for path in DOCS:
        for n, cmd in _lines(path):
            out.append(pytest.param(cmd, id=f"{path.relative_to(ROOT)}:{n}"))
    return out


def _argv(cmd: str) -> list[str]:
    cmd = re.sub(r"\s#\s.*$", "", cmd)  # a trailing comment
    words = shlex.split(cmd, comments=False)
    return words[1:]


def problems(cmd: str) -> list[str]:
    """What is wrong with one command line, as a reader would run it."""
    from snakemake.cli import get_argument_parser

    args = get_argument_parser().parse_args(_argv(cmd))
    out = []
    for item in args.config or []:
        key, eq, _ = item.partition("=")
        if not eq:
            out.append(f"--config item {item!r} is not KEY=VALUE (a target after --config?)")
        elif key not in CONFIG_KEYS:
            out.append(f"--config key {key!r} is not in the workflow's schema")
    profiles = args.profile if isinstance(args.profile, list) else [args.profile] if args.profile else []
    out += [f"no profile {p}" for p in profiles if not (ROOT / str(p)).is_dir()]
    configfiles = [str(cf) for cf in args.configfile or []]
    out += [f"no config file {cf}" for cf in configfiles if cf.startswith("workflows/") and not (ROOT / cf).is_file()]
    return out


@pytest.mark.parametrize("cmd", _commands())
def test_snakemake_command_parses_as_meant(cmd):
    assert problems(cmd) == [], cmd


@pytest.mark.parametrize(
    "cmd, why",
    [
        (".venv/bin/snakemake --profile workflows/profiles/smoke --config 'experiments=[\"x\"]' all", "a target after"),
        (".venv/bin/snakemake all --config 'experiment=[x]'", "not in the workflow's schema"),
        (".venv/bin/snakemake all --profile workflows/profiles/nosuch", "no profile"),
    ],
)
def test_a_wrong_command_is_found(cmd, why):
    assert any(why in p for p in problems(cmd)), problems(cmd)


def test_commands_found():
    """The scan sees the commands the front page and the how-tos give."""
    assert len(_commands()) >= 10


def _clone_files(repo_root: Path, dest: Path) -> Path:
    """The tracked files of the repository, copied as a clean clone has them (no build, no results)."""
    import shutil
    import subprocess

    files = subprocess.run(["git", "ls-files", "-z"], cwd=repo_root, capture_output=True, check=True).stdout
    for name in files.decode().split("\0"):
        if name and (repo_root / name).is_file():
            (dest / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(repo_root / name, dest / name)
    return dest


def _needs_the_readers_own(cmd: str, clone: Path) -> str | None:
    """Why a documented command cannot run on a clean clone as it stands (it names a file or an
    experiment the reader makes first), or None."""
    from snakemake.cli import get_argument_parser

    args = get_argument_parser().parse_args(_argv(cmd))
    for cf in args.configfile or []:
        if not (clone / str(cf)).is_file():
            return f"the reader's own config file {cf}"
    for item in args.config or []:
        for path in re.findall(r"inventory/[\w./-]+", item):
            if not (clone / path).exists():
                return f"the reader's own inventory {path}"
        if "my_study" in item:
            return "the experiment the how-to makes first"
    if "all_hosts" in args.targets and not any(item.startswith("hosts=") for item in args.config or []):
        return "the hosts the how-to adds to the reader's own configuration first (all_hosts)"
    return None


def _distinct_commands():
    """One documented command per distinct (profile, config files, config) with its targets."""
    from snakemake.cli import get_argument_parser

    out = {}
    for p in _commands():
        cmd = p.values[0]
        a = get_argument_parser().parse_args(_argv(cmd))
        key = (str(a.profile), tuple(map(str, a.configfile or [])), tuple(a.config or []), tuple(sorted(a.targets)))
        out.setdefault(key, p)
    return list(out.values())


@pytest.fixture(scope="module")
def clean_clone(repo_root, tmp_path_factory):
    return _clone_files(repo_root, tmp_path_factory.mktemp("docs-clone") / "corun")


@pytest.fixture(scope="module")
def dry_runs(request, repo_root, clean_clone, tmp_path_factory):
    """The dry run of every command this session selects, one per CPU at a time, each worker on a
    clean clone of its own (a dry run writes the plan in its results folder): command -> result."""
    import os
    import queue
    import subprocess
    import sys
    from concurrent.futures import ThreadPoolExecutor

    wanted = [
        item.callspec.params["cmd"]
        for item in request.session.items
        if item.originalname == "test_documented_command_dry_runs_on_a_clean_clone"
    ]
    todo = [cmd for cmd in dict.fromkeys(wanted) if not _needs_the_readers_own(cmd, clean_clone)]
    workers = max(1, min(len(todo), os.cpu_count() or 1))
    clones: queue.Queue = queue.Queue()
    clones.put(clean_clone)
    for i in range(1, workers):
        clones.put(_clone_files(repo_root, tmp_path_factory.mktemp(f"docs-clone-{i}") / "corun"))
    smk = str(Path(sys.executable).parent / "snakemake")

    def dry_run(cmd):
        clone = clones.get()
        try:
            return subprocess.run([smk, "-n", *_argv(cmd)], cwd=clone, capture_output=True, text=True, timeout=600)
        finally:
            clones.put(clone)

    with ThreadPoolExecutor(workers) as pool:
        return dict(zip(todo, pool.map(dry_run, todo)))


@pytest.mark.parametrize("cmd", _distinct_commands())
def test_documented_command_dry_runs_on_a_clean_clone(cmd, clean_clone, dry_runs):
    """Each documented snakemake command, as a reader types it, plans on a clean clone (-n)."""
    why = _needs_the_readers_own(cmd, clean_clone)
    if why:
        pytest.skip(f"names {why}")
    res = dry_runs[cmd]
    assert res.returncode == 0, f"{cmd}\n{res.stderr[-1500:]}"
    assert "Traceback" not in res.stderr, res.stderr[-1500:]

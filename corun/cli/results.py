"""Subcommands about results: archive, verify, publish (compare, index and campaign are
analysis's commands, analysis/cli.py, registered through the `corun.commands` entry points).

Registered by corun.cli.main (`add_commands`). Exit codes: 0 ok; 1 an archive does not verify
or a publication failed; 2 bad input (one line naming key, value and expectation).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from corun.util import lazy_module

archive = lazy_module("corun.results.archive")  # packing and hashing: loaded when one of these commands runs


def _cmd_archive(a) -> int:
    res = archive.archive(
        Path(a.campaign_dir),
        Path(a.out),
        exclude=a.exclude or [],
        title=a.title,
        description=a.description,
        creators=a.creator or [],
        license=a.license,
        version=a.version,
    )
    print(
        f"{res['archive']}: {res['files']} files, {res['runs']} runs, "
        f"{len(res['redactions'])} redactions, {len(res['left_out'])} left out"
    )
    for item in res["redactions"]:
        print(f"  redacted {item['what']} in {item['file']}", file=sys.stderr)
    for item in res["left_out"]:
        print(f"  left out {item}", file=sys.stderr)
    return 0


def _cmd_verify(a) -> int:
    problems, n = archive.verify(Path(a.archive))
    for p in problems:
        print(f"corun: {a.archive}: {p}", file=sys.stderr)
    if problems:
        return 1
    print(f"{a.archive}: ok ({n} files match SHA256SUMS)")
    return 0


def _cmd_publish(a) -> int:
    res = archive.publish(
        Path(a.archive),
        sandbox=a.sandbox,
        base_url=a.base_url,
        do_publish=a.publish,
        creators=a.creator or [],
        title=a.title,
        description=a.description,
    )
    print(json.dumps(res, indent=2))
    return 0


def add_commands(sub: argparse._SubParsersAction) -> None:
    ar = sub.add_parser("archive", help="write a citable archive (RO-Crate, SHA256SUMS, secrets scrubbed)")
    ar.add_argument("campaign_dir")
    ar.add_argument("--out", required=True, help="archive file: NAME.tar.gz, NAME.tgz or NAME.zip")
    ar.add_argument("--exclude", action="append", metavar="GLOB", help="leave out matching paths (repeat)")
    ar.add_argument("--title")
    ar.add_argument("--description")
    ar.add_argument("--creator", action="append", metavar="NAME", help="'Family, Given' (repeat)")
    ar.add_argument("--license", default="CC-BY-4.0", help="licence identifier or URL (default CC-BY-4.0)")
    ar.add_argument("--version", default="1", help="version of this archive (default 1)")
    ar.set_defaults(fn=_cmd_archive)

    vf = sub.add_parser("verify", help="check an archive against its SHA256SUMS (altered, missing, extra files)")
    vf.add_argument("archive", help="archive file or extracted folder")
    vf.set_defaults(fn=_cmd_verify)

    pb = sub.add_parser("publish", help="upload an archive to Zenodo (token in ZENODO_TOKEN)")
    pb.add_argument("archive")
    pb.add_argument("--sandbox", action="store_true", help="use sandbox.zenodo.org")
    pb.add_argument("--base-url", help="another Zenodo-compatible server")
    pb.add_argument("--publish", action="store_true", help="publish the deposition (default: leave it as a draft)")
    pb.add_argument("--creator", action="append", metavar="NAME", help="'Family, Given' (default: the archive's)")
    pb.add_argument("--title")
    pb.add_argument("--description")
    pb.set_defaults(fn=_cmd_publish)

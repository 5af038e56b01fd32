"""Every tracked C file (kernels/, schedulers/, test fixtures) is formatted as .clang-format says.

clang-format comes from the common role. To reformat after a change:
`clang-format -i $(git ls-files '*.c' '*.h')`.
"""

import re
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STYLE = ROOT / ".clang-format"
CLANG_FORMAT = shutil.which("clang-format")

needs_clang_format = pytest.mark.skipif(
    CLANG_FORMAT is None, reason="clang-format is not installed (the common role installs it)"
)


def tracked_c_files():
    out = subprocess.run(
        ["git", "ls-files", "-z", "--", "*.c", "*.h"], cwd=ROOT, check=True, capture_output=True, text=True
    ).stdout
    return [ROOT / name for name in out.split("\0") if name]


def unformatted(paths):
    """The files among PATHS whose formatting differs from .clang-format's."""
    res = subprocess.run(
        [CLANG_FORMAT, f"--style=file:{STYLE}", "--dry-run", "--Werror", *map(str, paths)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    named = {Path(m.group(1)) for m in re.finditer(r"^(.+?):\d+:\d+: error:", res.stderr, re.MULTILINE)}
    assert res.returncode == 0 or named, res.stderr  # a failure that names no file is not a style finding
    return sorted(str(p.resolve().relative_to(ROOT)) if p.resolve().is_relative_to(ROOT) else str(p) for p in named)


def test_there_is_c_code_to_check():
    names = {p.relative_to(ROOT).parts[0] for p in tracked_c_files()}
    assert {"kernels", "schedulers"} <= names


@needs_clang_format
def test_c_code_follows_clang_format():
    bad = unformatted(tracked_c_files())
    assert not bad, "not formatted as .clang-format says (run clang-format -i on them): " + ", ".join(bad)


@needs_clang_format
def test_check_finds_a_misformatted_file(tmp_path):
    good = tmp_path / "good.c"
    good.write_text((ROOT / "kernels" / "common" / "corun_kernel.c").read_text())
    bad = tmp_path / "bad.c"
    bad.write_text("int  main( void ){return 0;}\n")
    assert unformatted([good, bad]) == [str(bad)]

"""`corun run` started in the background, for the tests that interrupt or kill it mid-run."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def start_run(spec: Path, out: Path) -> subprocess.Popen:
    """`corun run SPEC --out OUT` started from the repository root, its stdout and stderr piped as
    text."""
    return subprocess.Popen(
        [sys.executable, "-m", "corun", "run", str(spec), "--out", str(out)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )

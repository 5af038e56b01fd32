"""The Python tree is formatted by `ruff format` and clean under `ruff check` (pyproject.toml)."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_python_tree_is_formatted_by_ruff():
    res = ruff("format", "--check", ".")
    assert res.returncode == 0, f"run `.venv/bin/ruff format .`:\n{res.stdout}{res.stderr}"


def test_python_tree_passes_ruff_check():
    res = ruff("check", "--output-format", "concise", ".")
    assert res.returncode == 0, f"ruff check (pyproject.toml [tool.ruff]):\n{res.stdout}{res.stderr}"

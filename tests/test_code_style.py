"""The Python tree is formatted by `ruff format` and clean under `ruff check` (pyproject.toml);
corun and analysis import at the top of their modules only (docs/architecture.md)."""

import ast
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


def test_corun_analysis_and_experiments_import_at_module_level_only():
    """No import inside a function: a cycle is fixed by the layering, and a costly module is
    loaded on first use with corun.util.lazy_module, not hidden in a function."""
    found = []
    tops = ("corun", "analysis", "experiments")
    for path in sorted(p for top in tops for p in ROOT.glob(f"{top}/**/*.py") if "tests" not in p.parts):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                found += [
                    f"{path.relative_to(ROOT)}:{sub.lineno}: {ast.unparse(sub)}"
                    for sub in ast.walk(node)
                    if isinstance(sub, (ast.Import, ast.ImportFrom))
                ]
    assert not found, "imports inside functions:\n" + "\n".join(found)

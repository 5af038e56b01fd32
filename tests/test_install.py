"""`pip install .` (not editable) gives every package with its data: the project's packaging
files are copied to a temporary folder (the build leaves nothing in the working tree), installed
with --target and no dependencies (offline: the environment's setuptools builds it), and every
package is imported from there."""

from __future__ import annotations

import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("corun", "analysis", "experiments")
SKIP = shutil.ignore_patterns("__pycache__", "*.pyc", "tests", "fixtures")


def _packages(root: Path) -> list[str]:
    """Every package (folder with __init__.py) under PACKAGES, tests left out."""
    out = []
    for top in PACKAGES:
        for init in sorted((root / top).rglob("__init__.py")):
            parts = init.parent.relative_to(root).parts
            if "tests" not in parts:
                out.append(".".join(parts))
    return out


def test_pip_install_not_editable_has_every_package_and_its_data(tmp_path):
    src = tmp_path / "src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, src / name)
    for top in PACKAGES:
        shutil.copytree(ROOT / top, src / top, ignore=SKIP)
    target = tmp_path / "site"
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index"]
    res = subprocess.run([*pip, "--target", str(target), str(src)], capture_output=True, text=True, timeout=300)
    assert res.returncode == 0, res.stderr[-2000:]
    wanted = _packages(ROOT)
    missing = [p for p in wanted if not (target / p.replace(".", "/") / "__init__.py").is_file()]
    assert not missing, f"packages not installed: {missing}"
    # the data read at run time
    for rel in ("corun/schemas", "analysis/schemas", "experiments/_papers"):
        assert any((target / rel).iterdir()), rel
    for exp in (ROOT / "experiments").iterdir():
        for f in ("claims.yaml", "config.schema.json"):
            if (exp / f).is_file():
                assert (target / "experiments" / exp.name / f).is_file(), f"experiments/{exp.name}/{f}"
        for prof in (exp / "profiles").glob("*.yaml"):
            assert (target / "experiments" / exp.name / "profiles" / prof.name).is_file(), str(prof)
    code = (
        "import importlib, sys\n"
        "for m in sys.argv[2:]:\n"
        "    assert importlib.import_module(m).__file__.startswith(sys.argv[1]), m"
    )
    res = subprocess.run(
        [sys.executable, "-c", code, str(target), *wanted],
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tmp_path,
        env={"PYTHONPATH": str(target), "PATH": "/usr/bin:/bin", "HOME": str(tmp_path)},
    )
    assert res.returncode == 0, res.stderr[-2000:]

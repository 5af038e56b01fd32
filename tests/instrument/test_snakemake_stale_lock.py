"""scripts/snakemake_stale_lock.py: a lock whose Snakemake is gone is removed, one held by a live
Snakemake in the directory is not."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "snakemake_stale_lock.py"
spec = importlib.util.spec_from_file_location("snakemake_stale_lock", SCRIPT)
ssl = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ssl)


def _locked(tmp_path: Path) -> Path:
    locks = tmp_path / ".snakemake" / "locks"
    locks.mkdir(parents=True)
    (locks / "0.input.lock").write_text(str(tmp_path / "a") + "\n")
    (locks / "0.output.lock").write_text(str(tmp_path / "b") + "\n")
    return locks


def _run(tmp_path: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), str(tmp_path)], capture_output=True, text=True, timeout=30)


@pytest.fixture
def fake_snakemake(tmp_path):
    """A live process whose program is `snakemake`, working in tmp_path."""
    prog = tmp_path / "bin" / "snakemake"
    prog.parent.mkdir()
    prog.write_text("import time\ntime.sleep(60)\n")
    p = subprocess.Popen([sys.executable, str(prog), "--cores", "1"], cwd=tmp_path)
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and p.pid not in ssl.holders(tmp_path):
        time.sleep(0.05)
    yield p
    p.kill()
    p.wait()


def test_stale_lock_removed_in_one_line(tmp_path):
    locks = _locked(tmp_path)
    res = _run(tmp_path)
    assert res.returncode == 0, res.stderr
    assert list(locks.glob("*.lock")) == []
    assert len(res.stdout.strip().splitlines()) == 1
    assert "removed a stale snakemake lock" in res.stdout


def test_lock_of_a_live_snakemake_kept(tmp_path, fake_snakemake):
    locks = _locked(tmp_path)
    res = _run(tmp_path)
    assert res.returncode == 0, res.stderr
    assert len(list(locks.glob("*.lock"))) == 2
    assert f"held by Snakemake process {fake_snakemake.pid}" in res.stdout
    fake_snakemake.kill()
    fake_snakemake.wait()
    res = _run(tmp_path)  # its owner gone: now stale
    assert list(locks.glob("*.lock")) == []


def test_snakemake_elsewhere_does_not_hold(tmp_path, fake_snakemake):
    other = tmp_path / "other"
    other.mkdir()
    locks = _locked(other)
    assert _run(other).returncode == 0
    assert list(locks.glob("*.lock")) == []


def test_no_lock_prints_nothing(tmp_path):
    res = _run(tmp_path)
    assert (res.returncode, res.stdout) == (0, "")


@pytest.mark.parametrize(
    "argv, expected",
    [
        (["snakemake", "--cores", "1"], "."),
        (["/x/.venv/bin/python", "/x/.venv/bin/snakemake", "-d", "sub"], "sub"),
        (["python3", "-m", "snakemake", "--directory=sub"], "sub"),
        (["python3", "-m", "pytest"], None),
        (["bash", "-c", "snakemake"], None),
    ],
)
def test_snakemake_dir(tmp_path, argv, expected):
    got = ssl.snakemake_dir(argv, tmp_path)
    assert got == (None if expected is None else (tmp_path / expected).resolve())


def test_usage_error():
    res = subprocess.run([sys.executable, str(SCRIPT), "--x"], capture_output=True, text=True)
    assert res.returncode == 2 and res.stderr.count("\n") == 1

import getpass
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent
sys.path.insert(0, str(ROOT))
sys.path.append(str(ROOT / "scripts"))  # cluster_owner
import cluster_owner  # noqa: E402

# The tests' runs keep their undo journals and machine lock apart from the machine's real runs
# (/run/corun): a run of the user's that is going on is neither disturbed nor recovered by a test,
# and a journal left by one test is never reported by another. Set before corun is imported.
os.environ["CORUN_STATE_DIR"] = tempfile.mkdtemp(prefix="corun-test-state-")


def pytest_sessionstart(session):
    if os.geteuid() == 0:
        for line in take_down_killed_sessions_clusters():
            print(line, file=sys.stderr)


def take_down_killed_sessions_clusters(root: Path | None = None) -> list[str]:
    """Take down the netns clusters and bare testbeds a test session killed half-way left: their state
    folder is in pytest's temporary root and the alias up gave their bridge names it (cluster_owner). Left up, one
    stops the next session's `up` of the same prefix ("already exists"). One a session that is still
    running made (pytest's .lock in its folder names a live process: two sessions at once, say a
    unit test run beside the bare testbed's) is left alone: taking it down would fail that session's runs."""
    root = root or Path(tempfile.gettempdir()) / f"pytest-of-{getpass.getuser()}"
    done = []
    for bridge, tool, folder in cluster_owner.owners():
        state = Path(folder)
        if state.is_relative_to(root) and (state / "state.json").exists() and not _session_alive(state, root):
            down = subprocess.run(
                [sys.executable, str(ROOT / "scripts" / tool), "--state-dir", folder, "down"],
                capture_output=True, text=True, timeout=600,
            )  # fmt: skip
            said = (down.stdout + down.stderr).strip().splitlines() or ["done"]
            done.append(f"conftest: {bridge} was left by a killed session in {folder}: {said[-1]}")
    return done


def _session_alive(state: Path, root: Path) -> bool:
    """Whether the session whose temporary folder (root/pytest-N) holds STATE still runs: pytest
    keeps its pid in that folder's .lock while it runs; a killed session's stays, naming no process."""
    try:
        pid = int((root / state.relative_to(root).parts[0] / ".lock").read_text())
    except (OSError, ValueError, IndexError):
        return False
    return Path(f"/proc/{pid}").exists()


def pytest_unconfigure(config):
    shutil.rmtree(os.environ["CORUN_STATE_DIR"], ignore_errors=True)


def pytest_collection_modifyitems(config, items):
    if os.geteuid() != 0:
        skip = pytest.mark.skip(reason="needs root (cgroups, elevator)")
        for item in items:
            if "root" in item.keywords:
                item.add_marker(skip)


@pytest.fixture(scope="session")
def repo_root() -> Path:
    return ROOT


@pytest.fixture(scope="session")
def kernels_built(repo_root):
    import subprocess

    subprocess.run(["make", "-s", "-C", str(repo_root / "kernels")], check=True)
    return repo_root / "kernels" / "build"


@pytest.fixture
def disk_tmp(repo_root):
    """A scratch folder on a real block device (tmp_path may be tmpfs elsewhere)."""
    base = repo_root / "results" / "test-scratch"
    base.mkdir(parents=True, exist_ok=True)
    import tempfile

    d = Path(tempfile.mkdtemp(dir=base))
    yield d
    shutil.rmtree(d, ignore_errors=True)


@pytest.fixture
def upstream_manifest(tmp_path, monkeypatch):
    """The upstream manifest the test writes (corun.upstream; {} until it calls the fixture's
    function with the roles' entries), in place of the machine's: plans that pick the upstream
    program or its stand-in then do not depend on what this machine provisioned."""
    import json

    from corun.run import workloads

    path = tmp_path / "upstream-manifest" / "upstream.json"
    path.parent.mkdir()
    monkeypatch.setattr(workloads, "UPSTREAM_MANIFEST", path)
    monkeypatch.setattr(workloads, "UPSTREAM_DIR", path.parent / "upstream.d")
    workloads.upstream.cache_clear()

    def write(entries: dict) -> Path:
        path.write_text(json.dumps(entries))
        workloads.upstream.cache_clear()
        return path

    write({})
    yield write
    workloads.upstream.cache_clear()

"""Fixtures of the scheduler tests: the MPI coscheduling daemon's ASan build, the MPI stand-in
kernel, a fresh shared-memory name."""

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
MC = ROOT / "schedulers" / "mpi_cosched"
STENCIL = ROOT / "kernels" / "build" / "mpi_stencil"


@pytest.fixture(scope="session")
def daemon():
    """corun-cosched's ASan/UBSan build (any memory error fails the test); the library and the
    ping-pong too where mpicc is. (test_dynamic_io.py has a `daemon` of its own.)"""
    targets = ["asan"] + (["all"] if shutil.which("mpicc") else [])
    subprocess.run(["make", "-s", "-C", str(MC), *targets], check=True)
    return MC / "build" / "asan" / "corun-cosched"


@pytest.fixture(scope="session")
def stencil(kernels_built):
    if not STENCIL.exists():
        pytest.skip("mpi_stencil not built (no mpicc)")
    return STENCIL


_n = [0]


@pytest.fixture
def shm():
    """A fresh shared-memory name, removed afterwards."""
    _n[0] += 1
    name = f"/corun-test-{os.getpid()}-{_n[0]}"
    yield name
    Path("/dev/shm", name[1:]).unlink(missing_ok=True)

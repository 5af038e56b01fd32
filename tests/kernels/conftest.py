"""Fixtures shared by the kernel tests.  Each test module names its kernel in
KERNEL; a test that takes `binary` runs once against the kernel's ASan/UBSan
build and once against its normal build."""

import pytest
from kernel_helpers import builds, make_builds


@pytest.fixture(scope="session")
def built():
    make_builds()


@pytest.fixture(params=["asan", "normal"])
def build(request, built):
    return request.param


@pytest.fixture
def binary(request, build):
    return builds(request.module.KERNEL)[build]

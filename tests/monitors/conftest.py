"""Fixtures shared by the monitor tests."""

from __future__ import annotations

from pathlib import Path

import pytest
from monitor_helpers import FIXTURES


@pytest.fixture
def fixtures() -> Path:
    return FIXTURES

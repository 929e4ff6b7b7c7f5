"""Shared test configuration."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def venv_bin() -> Path:
    """The bin directory of the environment the tests run in (for its console scripts)."""
    return Path(sys.executable).parent

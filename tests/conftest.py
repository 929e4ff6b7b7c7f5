"""Shared test configuration."""

from __future__ import annotations

import signal
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]


def pytest_configure(config: pytest.Config) -> None:
    """Ctrl-C is handled as in a terminal, however the suite was launched.

    A script's background job starts with SIGINT ignored, and the commands the
    tests start would inherit that: the tests of Ctrl-C handling would then test
    nothing. Python's own handler is reset to the default in every child.
    """
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def venv_bin() -> Path:
    """The bin directory of the environment the tests run in (for its console scripts)."""
    return Path(sys.executable).parent

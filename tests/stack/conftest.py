"""Fixtures for the stack tests: a scripted upstream, a marker and the commands' environment."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from stack_support import MARK_ENV
from support.openai_server import ScriptedOpenAIServer


@pytest.fixture
def upstream() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer(
        lambda body: "<guidance>try a greedy fill</guidance>", model="guide"
    ) as server:
        yield server


@pytest.fixture
def mark() -> str:
    return uuid.uuid4().hex


@pytest.fixture
def stack_env(mark: str, venv_bin: Path) -> dict[str, str]:
    """The environment of an `atoll` command: this venv's tools, git-lfs, a token, the marker."""
    env = {
        k: v for k, v in os.environ.items() if k not in ("REEF_TOKEN", "RAY_ADDRESS", "REEF_HOME")
    }
    env.update(
        PATH=f"{venv_bin}:/usr/bin:/bin",
        REEF_TOKEN="test-" + uuid.uuid4().hex,
        TERM="dumb",
        **{MARK_ENV: mark},
    )
    return env

"""Pytest fixtures for a session-wide scripted LLM upstream and the real Reef server in front of it.

Import them into a directory's conftest.py (`from support.fixtures import *`)
so that all tests below it share one Reef process, started on a free port and
stopped at the end of the session.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.openai_server import ScriptedOpenAIServer, echo_script
from support.reef_server import ReefServer

__all__ = ["judge_url", "reef_server", "reef_upstream", "reset_reef_upstream", "scripted_llm"]


@pytest.fixture(scope="session")
def reef_upstream() -> Iterator[ScriptedOpenAIServer]:
    """The scripted model Reef proxies to; tests set `.script` and read `.requests`."""
    with ScriptedOpenAIServer() as server:
        yield server


@pytest.fixture(scope="session")
def reef_server(
    reef_upstream: ScriptedOpenAIServer, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[ReefServer]:
    """The real `reef serve` (record-only upstream mode) for the whole session."""
    run_dir: Path = tmp_path_factory.mktemp("reef-run")
    server = ReefServer(reef_upstream, run_dir).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def scripted_llm() -> Iterator[ScriptedOpenAIServer]:
    """A fresh scripted OpenAI-compatible server for one test."""
    with ScriptedOpenAIServer(echo_script) as server:
        yield server


@pytest.fixture(autouse=False)
def reset_reef_upstream(reef_upstream: ScriptedOpenAIServer) -> Iterator[ScriptedOpenAIServer]:
    """The session upstream with the default script restored after the test."""
    yield reef_upstream
    reef_upstream.script = echo_script


@pytest.fixture(scope="session")
def judge_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The real embedded judge on a two-case copy of problem 0, for the whole session."""
    from support.judge import small_judge

    with small_judge(tmp_path_factory.mktemp("judge")) as url:
        yield url

"""Fixtures for the tests that need the private Docker engine.

The engine is started once, outside the tests (`atoll docker up`, as CI does);
these tests use it and never stop it. Without an engine they skip on a
developer machine and fail under CI=true.
"""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from support import ci
from support.engine import CI_HINT, docker_engine

from atoll.core.docker_engine import BASE_IMAGE, EnginePaths

TASKS = Path(__file__).parent / "tasks"


@pytest.fixture(scope="session")
def docker_host() -> str:
    """The DOCKER_HOST of a running engine that has the base image."""
    return docker_engine()


@pytest.fixture(scope="session")
def session_engine(docker_host: str) -> EnginePaths:
    """The default private engine, which these tests may query but never stop."""
    paths = EnginePaths.from_options()
    ci.need(
        docker_host == paths.docker_host,
        f"DOCKER_HOST is {docker_host}, not the private engine's {paths.docker_host}",
        CI_HINT,
    )
    return paths


@pytest.fixture(scope="session")
def atoll_cmd() -> list[str]:
    return [str(Path(sys.executable).parent / "atoll")]


@pytest.fixture(scope="session")
def base_image() -> str:
    return BASE_IMAGE

"""Fixtures of the sandbox tests: each backend in turn, and an unprivileged uid of this session."""

from __future__ import annotations

import pytest
from session_backend import PoisonedSessions
from support.engine import docker_engine

from atoll.core.sandbox import SandboxBackend, get_backend
from atoll.core.sandbox.conformance import default_uid


@pytest.fixture(scope="session")
def test_uid() -> int:
    """A uid no host account uses, distinct per test process, so no audit sees another's runs."""
    return default_uid()


@pytest.fixture(
    scope="session",
    params=["bwrap", "bwrap-session", pytest.param("docker", marks=pytest.mark.docker)],
)
def backend(request: pytest.FixtureRequest) -> SandboxBackend:
    """Each backend, ready to run (no Docker engine: skipped here, a failure in CI).

    `bwrap-session` runs every check's program in a bwrap session, after a
    hostile run in the same box (see `session_backend`).
    """
    if request.param == "docker":
        docker_engine()
    chosen = PoisonedSessions() if request.param == "bwrap-session" else get_backend(request.param)
    chosen.check()
    return chosen

"""Fixtures of the Pi agent tests: the real Pi, the rollout image, a scripted provider.

Pi is installed once (`atoll pi install`, as CI does before the tests) and the
rollout image built once (`atoll pi image build`); without Node.js or an
engine the tests that need them skip on a developer machine and fail in CI.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterator

import pytest
from pi_support import KEY_ENV
from support import ci
from support.openai_server import ScriptedOpenAIServer

from atoll.pi import container, image, install


def need(ok: bool, why: str) -> None:
    """Skip here, fail in CI: the Pi tests must really run there."""
    ci.need(ok, why, "CI installs Pi and builds the rollout image before the tests")


@pytest.fixture(scope="session")
def pi() -> install.PiInstall:
    try:
        return install.ensure()
    except install.PiUnavailable as exc:
        need(False, f"Pi is not available: {exc}")
        raise


@pytest.fixture(scope="session")
def docker_client() -> Iterator[object]:
    try:
        client = container.connect()
    except container.ContainerError as exc:
        need(False, str(exc))
        raise
    yield client
    client.close()


@pytest.fixture(scope="session")
def rollout_image(docker_client: object) -> image.RolloutImage:
    try:
        return image.ensure(docker_client)
    except container.ContainerError as exc:
        need(False, f"no rollout image: {exc}")
        raise


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    """A fresh secret in the key variable, so a test can look for it on disk."""
    key = f"sk-atoll-test-{secrets.token_hex(16)}"
    monkeypatch.setenv(KEY_ENV, key)
    return key


@pytest.fixture
def provider() -> Iterator[ScriptedOpenAIServer]:
    with ScriptedOpenAIServer() as server:
        yield server

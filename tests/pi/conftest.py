"""Fixtures of the Pi agent tests: the real Pi, the rollout image, a scripted provider.

Pi is installed once (`atoll pi install`, as CI does before the tests) and the
rollout image built once (`atoll pi image build`); without Node.js or an
engine the tests that need them skip on a developer machine and fail in CI.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.openai_server import ScriptedOpenAIServer

from atoll.pi import container, image, install

TASKS = Path(__file__).parent / "tasks"
KEY_ENV = "ATOLL_PI_TEST_KEY"


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def need(ok: bool, why: str) -> None:
    """Skip here, fail in CI: the Pi tests must really run there."""
    if ok:
        return
    if in_ci():
        pytest.fail(f"{why} (CI installs Pi and builds the rollout image before the tests)")
    pytest.skip(why)


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


def rollout_containers(client: object, rollout_id: str) -> list[str]:
    """Ids of the engine's containers (running or not) of one rollout."""
    found = client.api.containers(  # type: ignore[attr-defined]
        all=True, filters={"label": f"{container.LABEL}={rollout_id}"}
    )
    return [entry["Id"] for entry in found]

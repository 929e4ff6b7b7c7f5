"""Fixtures of the Euler tests that run real Pi rollouts: Pi, the rollout image, a sample store.

Pi and the rollout image are prepared once per session (as CI does before the
tests); without Node.js or a Docker engine these tests skip on a developer
machine and fail under CI=true.
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from support import ci
from support.euler_cli import ATOLL, KEY_ENV


def need(ok: bool, why: str) -> None:
    ci.need(ok, why, "CI installs Pi, starts the Docker engine and builds the rollout image first")


@pytest.fixture(scope="session")
def rollout_ready() -> dict[str, Any]:
    """Pi installed and the rollout image built: what every real rollout needs."""
    from atoll.pi import container, image, install

    try:
        install.ensure()
    except install.PiUnavailable as exc:
        need(False, f"Pi is not available: {exc}")
    try:
        client = container.connect()
        built = image.ensure(client)
    except container.ContainerError as exc:
        need(False, f"no Docker engine or rollout image: {exc}")
        raise
    info = built.to_json()
    client.close()
    return info


@pytest.fixture(scope="session")
def sample_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    store = tmp_path_factory.mktemp("euler") / "store"
    subprocess.run(
        [ATOLL, "euler", "import", "--sample", "--store", str(store)],
        check=True,
        capture_output=True,
        timeout=120,
    )
    return store


@pytest.fixture(scope="session")
def key_env() -> dict[str, str]:
    return {**os.environ, KEY_ENV: "sk-euler-test-key"}

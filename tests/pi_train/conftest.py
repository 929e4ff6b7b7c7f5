"""One tiny model and one local Tinker server for every pi-train test that needs them.

Each module starting its own SkyRL tx would pay the engine's start and its
shape compiles again; the session shares them. The server's teardown checks
that `atoll tinker local down` leaves no process behind.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from support.tinker_local import local_server, make_tiny_model


@pytest.fixture(scope="session")
def tiny_model(tmp_path_factory: pytest.TempPathFactory, venv_bin: Path) -> Path:
    """The seed-3 tiny Qwen3 model and its tokenizer, built once."""
    return make_tiny_model(venv_bin, dict(os.environ), tmp_path_factory.mktemp("tiny") / "model")


@pytest.fixture(scope="session")
def server_env(
    tmp_path_factory: pytest.TempPathFactory, venv_bin: Path, tiny_model: Path
) -> Iterator[dict[str, str]]:
    """The environment with the shared local server's exports (TINKER_BASE_URL, TINKER_API_KEY)."""
    with local_server(
        venv_bin, dict(os.environ), tmp_path_factory.mktemp("local"), tiny_model
    ) as env:
        yield env

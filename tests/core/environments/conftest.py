"""Fixtures for the atoll-local environment: a started environment on a tiny task."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harbor.models.task.config import NetworkMode
from support.local_env import local_environment

from atoll.core.environments.local import LocalEnvironment

TASKS = Path(__file__).parent / "tasks"


@pytest.fixture
def task_dir() -> Path:
    return TASKS / "write-a-file"


@pytest.fixture
def make_env(tmp_path: Path, task_dir: Path) -> Callable[..., LocalEnvironment]:
    def make(
        *,
        network: NetworkMode = NetworkMode.NO_NETWORK,
        environment_dir: Path | None = None,
        **config: object,
    ) -> LocalEnvironment:
        return local_environment(
            tmp_path / "trial",
            environment_dir or task_dir / "environment",
            "write-a-file",
            network=network,
            log_mounts=True,
            **config,
        )

    return make

"""Fixtures for the atoll-local environment: a started environment on a tiny task."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from harbor.models.task.config import EnvironmentConfig, NetworkMode, NetworkPolicy
from harbor.models.trial.paths import TrialPaths

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
        paths = TrialPaths(tmp_path / "trial")
        for d in (paths.agent_dir, paths.verifier_dir, paths.artifacts_dir):
            d.mkdir(parents=True, exist_ok=True)
        return LocalEnvironment(
            environment_dir=environment_dir or task_dir / "environment",
            environment_name="write-a-file",
            session_id="write-a-file__test__env",
            trial_paths=paths,
            task_env_config=EnvironmentConfig(**config),
            mounts=[
                {"type": "bind", "source": str(paths.agent_dir), "target": "/logs/agent"},
                {"type": "bind", "source": str(paths.verifier_dir), "target": "/logs/verifier"},
            ],
            network_policy=NetworkPolicy(network_mode=network),
        )

    return make

"""An atoll-local environment for a task directory, built as Harbor builds one for a trial.

Tests that drive the environment (or a verifier, or Pi's tools) without a
whole Harbor trial need the same few steps: the trial's directories, the
environment's name and session, the network policy.
"""

from __future__ import annotations

from pathlib import Path

from harbor.models.task.config import EnvironmentConfig, NetworkMode, NetworkPolicy
from harbor.models.trial.paths import TrialPaths

from atoll.core.environments.local import LocalEnvironment


def local_environment(
    trial_dir: Path,
    environment_dir: Path,
    name: str,
    *,
    network: NetworkMode = NetworkMode.NO_NETWORK,
    allowed_hosts: list[str] | None = None,
    log_mounts: bool = False,
    **config: object,
) -> LocalEnvironment:
    """A not yet started atoll-local environment; its `trial_paths` directories exist.

    `log_mounts` binds the trial's agent and verifier log directories at
    /logs/agent and /logs/verifier, as Harbor's trial does; `config` goes to
    the task's EnvironmentConfig.
    """
    paths = TrialPaths(trial_dir)
    for d in (paths.agent_dir, paths.verifier_dir, paths.artifacts_dir):
        d.mkdir(parents=True, exist_ok=True)
    mounts = (
        [
            {"type": "bind", "source": str(paths.agent_dir), "target": "/logs/agent"},
            {"type": "bind", "source": str(paths.verifier_dir), "target": "/logs/verifier"},
        ]
        if log_mounts
        else None
    )
    return LocalEnvironment(
        environment_dir=environment_dir,
        environment_name=name,
        session_id=f"{name}__test__env",
        trial_paths=paths,
        task_env_config=EnvironmentConfig(**config),  # type: ignore[arg-type]
        mounts=mounts,
        network_policy=NetworkPolicy(network_mode=network, allowed_hosts=allowed_hosts or []),
    )

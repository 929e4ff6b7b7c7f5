"""Pi training on Tinker: hidden-variant tool RL, answer-only GRPO and a local Tinker-API service.

The managed Python 3.11 environment (the tinker SDK, tinker-cookbook, CPU
torch, SkyRL tx) is this distribution's; other distributions that run a
script in it (Guidance-TTT's Tinker policy) reach it through the names
below, imported on first use.
"""

from typing import TYPE_CHECKING

from atoll.core.lazy import exports

if TYPE_CHECKING:
    from atoll.pi_train.env import EnvironmentUnavailable, ManagedEnv
    from atoll.pi_train.env import ensure as ensure_managed_env
    from atoll.pi_train.env import env_dir as managed_env_dir
    from atoll.pi_train.env import installed as installed_managed_env
    from atoll.pi_train.local.server import LOCAL_API_KEY, log_tail
    from atoll.pi_train.training.run import default_base_url as default_tinker_url
    from atoll.pi_train.training.run import trainer_environment

__getattr__ = exports(
    __name__,
    {
        "EnvironmentUnavailable": "atoll.pi_train.env",
        "ManagedEnv": "atoll.pi_train.env",
        "ensure_managed_env": "atoll.pi_train.env:ensure",
        "managed_env_dir": "atoll.pi_train.env:env_dir",
        "installed_managed_env": "atoll.pi_train.env:installed",
        "LOCAL_API_KEY": "atoll.pi_train.local.server",
        "log_tail": "atoll.pi_train.local.server",
        "default_tinker_url": "atoll.pi_train.training.run:default_base_url",
        "trainer_environment": "atoll.pi_train.training.run",
    },
)

__all__ = [
    "LOCAL_API_KEY",
    "EnvironmentUnavailable",
    "ManagedEnv",
    "default_tinker_url",
    "ensure_managed_env",
    "installed_managed_env",
    "log_tail",
    "managed_env_dir",
    "trainer_environment",
]

"""atoll-pi-train's registrations: `atoll tinker`, doctor's checks of the managed Tinker
environment and the local server.

`atoll pi train` and `atoll pi bootstrap` are sub-groups of `atoll pi` (atoll-pi-docker's
command), registered in the entry-point group `atoll_pi_commands` (this distribution's
pyproject.toml), which `atoll pi` mounts.
"""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "tinker",
            Kind.COMMAND,
            "atoll.pi_train.cli:tinker_app",
            "A Tinker-API service on this machine (SkyRL tx) and tiny test models.",
            requires=("tinker-env", "tinker-local"),
        )
    ]


@hookimpl
def atoll_doctor_checks() -> list[Registration]:
    return [
        Registration(
            "tinker-env",
            Kind.CHECK,
            "atoll.pi_train.doctor:check_tinker_env",
            "The managed Python 3.11 environment holding the Tinker trainer and SkyRL tx.",
        ),
        Registration(
            "tinker-local",
            Kind.CHECK,
            "atoll.pi_train.doctor:check_tinker_local",
            "The local SkyRL tx server (`atoll tinker local up`): where it runs and if it answers.",
        ),
    ]

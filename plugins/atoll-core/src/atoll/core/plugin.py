"""atoll-core's own registrations: the commands every install has."""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "plugins",
            Kind.COMMAND,
            "atoll.core.plugins_cmd:app",
            "List installed atoll plugins and Harbor job plugins.",
        ),
        Registration(
            "doctor",
            Kind.COMMAND,
            "atoll.core.doctor:doctor_app",
            "Check what this machine has for each plugin, with fixes.",
        ),
        Registration(
            "docker",
            Kind.COMMAND,
            "atoll.core.docker_engine.cli:app",
            "A private Docker engine on its own socket, with Compose and the base image.",
        ),
        Registration(
            "emit",
            Kind.COMMAND,
            "atoll.core.emit_cmd:app",
            "Run a task emitter registered by a plugin (atoll emit NAME ...).",
        ),
    ]


@hookimpl
def atoll_environments() -> list[Registration]:
    return [
        Registration(
            "atoll-local",
            Kind.ENVIRONMENT,
            "atoll.core.environments.local:LocalEnvironment",
            "Trials under bubblewrap on this machine: no container engine needed.",
        ),
    ]

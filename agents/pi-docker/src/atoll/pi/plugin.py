"""atoll-pi-docker's registrations: the `pi-docker` Harbor agent, `atoll pi`, doctor's
checks."""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_agents() -> list[Registration]:
    return [
        Registration(
            "pi-docker",
            Kind.AGENT,
            "atoll.pi.agent:PiDockerAgent",
            "The Pi coding agent (0.73.1) on the host, its read/write/edit/bash in the trial's "
            "environment; any OpenAI-compatible model.",
            requires=("node", "pi"),
            # Its options checked by every job plugin before anything starts.
            settings="atoll.pi.settings:from_kwargs",
        )
    ]


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "pi",
            Kind.COMMAND,
            "atoll.pi.cli:app",
            "Install the pinned Pi, build the rollout image, run one rollout.",
            requires=("node", "pi", "docker", "pi-image"),
        ),
    ]


@hookimpl
def atoll_doctor_checks() -> list[Registration]:
    return [
        Registration("node", Kind.CHECK, "atoll.pi.doctor:check_node", "Node.js >= 20 runs Pi."),
        Registration("pi", Kind.CHECK, "atoll.pi.doctor:check_pi", "The pinned Pi coding agent."),
        Registration(
            "pi-image",
            Kind.CHECK,
            "atoll.pi.doctor:check_rollout_image",
            "The rollout image Pi's tools run in.",
        ),
    ]

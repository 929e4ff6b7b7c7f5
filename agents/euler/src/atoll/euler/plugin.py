"""atoll-euler's registration: the `atoll euler` command."""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "euler",
            Kind.COMMAND,
            "atoll.euler.cli:app",
            "Pi on Project Euler: import, eval, score, curriculum, report, transfer.",
            requires=("node", "pi", "docker", "pi-image"),
        )
    ]

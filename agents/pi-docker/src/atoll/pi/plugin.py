"""atoll-pi-docker's registrations with the atoll host.

`atoll euler`: the Project Euler importer, evaluator, gate, curriculum,
reports and frozen transfer evaluation on Pi rollouts.
"""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "euler",
            Kind.COMMAND,
            "atoll.pi.euler.cli:app",
            "Pi on Project Euler: import, eval, score, curriculum, report, transfer.",
            requires=("node", "docker"),
        )
    ]

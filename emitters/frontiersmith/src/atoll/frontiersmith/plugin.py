"""atoll-frontiersmith's registrations with the atoll host.

The FrontierSmith emitter, run as `atoll emit frontiersmith`.
"""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_emitters() -> list[Registration]:
    return [
        Registration(
            "frontiersmith",
            Kind.EMITTER,
            "atoll.frontiersmith.cli:app",
            "Turn closed problems into graded optimization tasks, checked by execution in Harbor.",
            requires=("bwrap",),
        )
    ]

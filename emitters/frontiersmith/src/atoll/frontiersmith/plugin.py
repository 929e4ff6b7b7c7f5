"""atoll-frontiersmith's registrations with the atoll host.

The `atoll emit frontiersmith` emitter, and the worked example task
`frontiersmith-example` (a bundle written by `atoll.frontiersmith.bundle`,
in tasks/ at the repository root).
"""

from __future__ import annotations

from pathlib import Path

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration
from atoll.core.task_dirs import packaged_task_dir

EXAMPLE_TASK = "frontiersmith-example"


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


@hookimpl
def atoll_task_sources() -> list[Registration]:
    return [
        Registration(
            EXAMPLE_TASK,
            Kind.TASK,
            str(task_dir(EXAMPLE_TASK)),
            "Light a walled courtyard with beacons under a budget: a FrontierSmith bundle, "
            "graded by the isolated checker.",
        )
    ]


def task_dir(name: str) -> Path:
    """The task's copy packaged in the wheel, or the repository's in an editable install."""
    return packaged_task_dir("atoll.frontiersmith", name, Path(__file__).resolve().parents[5])

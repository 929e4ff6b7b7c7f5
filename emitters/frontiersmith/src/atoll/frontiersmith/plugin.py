"""atoll-frontiersmith's registrations with the atoll host.

The `atoll emit frontiersmith` emitter, and the worked example task
`frontiersmith-example` (a bundle written by `atoll.frontiersmith.bundle`,
in tasks/ at the repository root).
"""

from __future__ import annotations

import json
from importlib import metadata, resources
from pathlib import Path

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration

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
    """The task's copy packaged in the wheel, or the repository's in an editable install.

    An editable install also gets a packaged copy, but it is a snapshot taken at
    install time, so there the repository's live directory is the one to use.
    """
    if not _editable_install():
        packaged = resources.files("atoll.frontiersmith").joinpath("tasks", name)
        if packaged.is_dir():
            return Path(str(packaged))
    return Path(__file__).resolve().parents[5] / "tasks" / name


def _editable_install() -> bool:
    try:
        direct_url = metadata.distribution("atoll-frontiersmith").read_text("direct_url.json")
    except metadata.PackageNotFoundError:
        return False
    try:
        return bool(json.loads(direct_url or "{}").get("dir_info", {}).get("editable", False))
    except (ValueError, AttributeError):
        return False

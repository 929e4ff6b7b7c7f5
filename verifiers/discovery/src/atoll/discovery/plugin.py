"""atoll-discovery's registrations with the atoll host: its five tasks, `atoll suite`, a check."""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration
from atoll.discovery.tasks import SUMMARIES, task_dir


@hookimpl
def atoll_task_sources() -> list[Registration]:
    # Scored by their own verifier (the `verifier` scorer): no job plugin, no judge.
    return [
        Registration(
            name, Kind.TASK, str(task_dir(name)), summary, requires=("bwrap", "python3-numpy")
        )
        for name, summary in SUMMARIES.items()
    ]


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "suite",
            Kind.COMMAND,
            "atoll.discovery.suite_cli:app",
            "Search several tasks in turn with `atoll run` (resumable) and tabulate the best "
            "scores against the published records.",
        )
    ]


@hookimpl
def atoll_doctor_checks() -> list[Registration]:
    return [
        Registration(
            "python3-numpy",
            Kind.CHECK,
            "atoll.discovery.doctor:check_numpy",
            "numpy for the python3 the discovery tasks' candidates run with under atoll-local.",
        )
    ]

"""atoll-checker's registrations with the atoll host: the `atoll checker` command and two scorers."""

from __future__ import annotations

from atoll.core.hookspecs import hookimpl
from atoll.core.records import Kind, Registration


@hookimpl
def atoll_commands() -> list[Registration]:
    return [
        Registration(
            "checker",
            Kind.COMMAND,
            "atoll.checker.cli:app",
            "Grade a submission with the isolated grader of emitted tasks, or verify a bundle.",
        )
    ]


@hookimpl
def atoll_scorers() -> list[Registration]:
    return [
        Registration(
            "checker",
            Kind.SCORER,
            "atoll.checker.scorer:open_checker_scorer",
            "Score a search's candidates with the task's own bundled grader, "
            "run as its verifier runs it.",
            requires=("bwrap",),
        ),
        Registration(
            "verifier",
            Kind.SCORER,
            "atoll.checker.verifier_scorer:open_verifier_scorer",
            "Score a search's candidates with the task's own Harbor verifier (tests/test.sh), "
            "run as atoll-local runs it; the score is its reward.json.",
            requires=("bwrap",),
        ),
    ]

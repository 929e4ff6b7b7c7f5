"""Scorers: what turns one candidate program of a task into a score, chosen by name.

A search (Guidance-TTT) scores thousands of candidates and must not know how
any task grades them: a FrontierCS problem is scored by the judge, an emitted
FrontierSmith task by its own bundled grader. Each way of scoring is a plugin
registration (`atoll_scorers`) whose target opens a scorer for one task; the
task's contract names the scorer it needs, so adding a kind of task is a
plugin, not a change to the search.

Two kinds of failure must never be confused, whatever the scorer: a candidate
that fails (does not compile, crashes, prints nonsense) is a normal result
with reward 0; a scorer that cannot score (down, broken, too slow) raises
`ScorerUnavailable`, since its failure says nothing about the candidate.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from enum import StrEnum
from pathlib import Path
from typing import Any, Protocol, runtime_checkable

from atoll.core.records import Kind
from atoll.core.registry import Registry, load
from atoll.core.targets import TargetError, import_target


class ScorerUnavailable(RuntimeError):
    """The scorer could not score a candidate (an infrastructure failure): nothing was scored."""


class ScorerNotInstalled(LookupError):
    """A task names a scorer that no installed plugin registers."""


class ScoreStatus(StrEnum):
    """How a candidate fared. Only `valid` candidates carry a raw score."""

    VALID = "valid"
    INVALID = "invalid"
    COMPILE_ERROR = "compile_error"


@dataclass(frozen=True)
class CandidateScore:
    """A scorer's verdict on one candidate.

    `raw_score` is the task's own number (the one its raw-score label names),
    `reward` what the task's verifier would report for the same program, and
    `receipt` what the scorer can show for the verdict (per-case scores, the
    hash of what it graded with), kept with the candidate as evidence.
    """

    status: ScoreStatus
    raw_score: float | None
    reward: float
    message: str = ""
    receipt: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.raw_score is not None and not math.isfinite(self.raw_score):
            raise ValueError(f"a raw score must be a finite number, got {self.raw_score!r}")
        if not math.isfinite(self.reward):
            raise ValueError(f"a reward must be a finite number, got {self.reward!r}")


@dataclass(frozen=True)
class ScorerSetup:
    """What a scorer may know about the task and the run it scores for.

    `task_dir` is the Harbor task directory (a scorer that grades with the
    task's own files reads them there); `problem_id` the task's id at a
    remote judge, if it has one; `state_dir` a directory the scorer may keep
    state in; `environ` the run's environment (service addresses; never
    written anywhere by a scorer).
    """

    language: str
    task_dir: Path | None = None
    problem_id: str | None = None
    state_dir: Path | None = None
    environ: Mapping[str, str] = field(default_factory=dict)


class CandidateScorer(Protocol):
    """An open scorer: scores programs of one task, from several threads at once."""

    def check(self) -> None:
        """Raise ScorerUnavailable when the scorer cannot score at all (before a step starts)."""

    def score(self, program: str) -> CandidateScore:
        """One program's verdict, or ScorerUnavailable."""

    def close(self) -> None:
        """Abort calls in flight and release what the scorer holds; idempotent."""


@runtime_checkable
class ReportsWorkers(Protocol):
    """A scorer that can say how many programs it scores at once (a judge's worker budget)."""

    def workers(self) -> int | None:
        """Programs scored at once, None when it cannot tell."""


ScorerFactory = Callable[[ScorerSetup], AbstractContextManager[CandidateScorer]]


def not_installed(name: str, registry: Registry) -> ScorerNotInstalled:
    """The one-line refusal of a task whose scorer `name` no installed plugin registers."""
    installed = ", ".join(registry.names(Kind.SCORER)) or "none"
    return ScorerNotInstalled(
        f"the task's scorer {name!r} is not installed (installed scorers: {installed}); "
        "install the plugin that registers it"
    )


def scorer_factory(name: str, registry: Registry | None = None) -> ScorerFactory:
    """The factory the installed scorer `name` registers; one line naming it when none does."""
    registry = registry or load()
    record = registry.find(Kind.SCORER, name)
    if record is None:
        raise not_installed(name, registry)
    try:
        factory = import_target(record.target)
    except TargetError as exc:
        raise ScorerNotInstalled(f"scorer {name!r} ({record.distribution}): {exc}") from None
    if not callable(factory):
        raise ScorerNotInstalled(
            f"scorer {name!r} ({record.distribution}): {record.target} is not callable"
        )
    return factory  # type: ignore[no-any-return]


CONTRACT_FILE = "contract.json"


def contract_scorer(task_dir: Path | None, default: str) -> str:
    """The scorer a task's `contract.json` names; `default` without a readable one or a name.

    Only what to start for a run is decided from this: the search itself
    validates the contract and refuses a bad one in its own words.
    """
    if task_dir is None:
        return default
    try:
        data = json.loads((task_dir / CONTRACT_FILE).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return default
    named = data.get("scorer") if isinstance(data, dict) else None
    return named.strip() if isinstance(named, str) and named.strip() else default


def open_scorer(
    name: str, setup: ScorerSetup, registry: Registry | None = None
) -> AbstractContextManager[CandidateScorer]:
    """Open the installed scorer `name` for the task `setup` describes."""
    return scorer_factory(name, registry)(setup)

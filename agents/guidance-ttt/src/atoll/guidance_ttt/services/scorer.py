"""Scores candidate programs with the scorer the task's contract names, for the archive and Reef.

The search knows no scorer: `contract.json` names one (`frontiercs-judge` by
default, `checker` for an emitted task's own grader), and whichever installed
plugin registers that name (`atoll_scorers`) is opened for the run. A task
whose scorer is not installed is refused before anything is sampled.

Two kinds of failure must never be confused. A program that does not compile
or that its scorer rejects is a normal result: status and reward 0, reported
to Reef and counted as a PUCT visit. A program the scorer finished scoring is
a valid candidate whatever its score, 0 included: it becomes an archive node
and counts for its parent's best-child value. A scorer that is down, too slow
or broken says nothing about the program, so it raises `JudgeDown` and stops
the step; a reward of 0 there would train the guidance model on an
infrastructure fault.

With the `frontiercs-judge` scorer, which judge scores is part of the run's
identity (`task_judge`): the embedded judge (the one the run starts, or the
one `atoll run`'s job plugin starts and names in `FRONTIERCS_JUDGE_URL`) by
its version, a judge serving on its own by its URL and the version it reports.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

from atoll.core.scoring import (
    CandidateScore,
    CandidateScorer,
    ScorerSetup,
    ScorerUnavailable,
    scorer_factory,
)
from atoll.guidance_ttt.contract import Task, TaskContract
from atoll.guidance_ttt.search.scored_program import Status, Verification
from atoll.judge import JUDGE_URL_ENV, SCORER_NAME, describe_judge, judge_url

__all__ = [
    "JUDGE_URL_ENV",
    "JudgeDown",
    "Scorer",
    "judge_url",
    "open_task_scorer",
    "task_judge",
    "verification_of",
]

# A scorer that cannot score: the step stops and nothing is scored.
JudgeDown = ScorerUnavailable


class Scorer:
    """The run's view of an open candidate scorer: programs in, archive verifications out."""

    def __init__(self, candidates: CandidateScorer, name: str = "") -> None:
        self.candidates = candidates
        self.name = name

    def close(self) -> None:
        self.candidates.close()

    def check(self) -> None:
        """Fail before a step starts when the scorer cannot score at all."""
        self.candidates.check()

    def score(self, program: str) -> Verification:
        """Score one program: a verification, or JudgeDown."""
        return verification_of(self.candidates.score(program))


def verification_of(score: CandidateScore) -> Verification:
    """The archive's view of a scorer's verdict, its receipt kept."""
    return Verification(
        Status(score.status.value), score.raw_score, score.reward, score.message, score.receipt
    )


def check_installed(contract: TaskContract) -> None:
    """Refuse, in one line naming it, a task whose scorer no installed plugin registers."""
    scorer_factory(contract.scorer)


def task_judge(contract: TaskContract, environ: Mapping[str, str]) -> dict[str, str | None] | None:
    """The judge that will score the task's candidates, without starting it; None if no judge will.

    Read before any service starts, so that a resume under another judge is
    refused before anything runs; `open_task_scorer` with the same `environ`
    scores with this judge. A judge URL that cannot be asked is JudgeDown.
    """
    if contract.scorer != SCORER_NAME:
        return None
    return describe_judge(environ.get(JUDGE_URL_ENV)).to_json()


def scorer_setup(task: Task, state_dir: Path, environ: Mapping[str, str]) -> ScorerSetup:
    return ScorerSetup(
        language=task.contract.solution_language.value,
        task_dir=task.directory,
        problem_id=task.contract.judge_problem_id,
        state_dir=state_dir,
        environ=environ,
    )


@contextmanager
def open_task_scorer(task: Task, state_dir: Path, environ: Mapping[str, str]) -> Iterator[Scorer]:
    """The installed scorer the task's contract names, open for the run, checked, then closed."""
    factory = scorer_factory(task.contract.scorer)
    with factory(scorer_setup(task, state_dir, environ)) as candidates:
        yield Scorer(candidates, task.contract.scorer)

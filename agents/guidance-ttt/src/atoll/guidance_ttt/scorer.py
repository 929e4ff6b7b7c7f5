"""Scores candidate programs with the FrontierCS judge, for the archive and for Reef.

Two kinds of failure must never be confused. A program that does not compile
or that the judge rejects is a normal result: status and reward 0, reported
to Reef and counted as a PUCT visit. A program the judge finished scoring is
a valid candidate whatever its score, 0 included: it becomes an archive node
and counts for its parent's best-child value. Its raw score is the judge's
bounded `score` (the number the task's verifier reports as the trial's
reward), not `scoreUnbounded`. A judge that is down, too slow or broken says
nothing about the program, so it raises `JudgeDown` and stops the step; a
reward of 0 there would train the guidance model on an infrastructure fault.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from atoll.guidance_ttt.contract import TaskContract
from atoll.guidance_ttt.entries import Status, Verification
from atoll.judge.client import DEFAULT_DEADLINE_S, Invalid, JudgeClient, JudgeUnavailable, Scored
from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge, JudgeSetup


class JudgeDown(RuntimeError):
    """The judge could not score a program; the step stops and nothing is scored."""


class Scorer:
    """Submits programs of one task to one judge and turns outcomes into verifications."""

    def __init__(
        self,
        url: str,
        contract: TaskContract,
        *,
        deadline_s: float = DEFAULT_DEADLINE_S,
        poll_interval_s: float = 0.25,
    ) -> None:
        self.url = url
        self.contract = contract
        self.deadline_s = deadline_s
        self._client = JudgeClient(url, poll_interval=poll_interval_s)

    def close(self) -> None:
        self._client.close()

    def check(self) -> None:
        """Fail before a step starts when the judge does not answer its health check."""
        if not self._client.health():
            raise JudgeDown(f"the judge at {self.url} does not answer GET /health")

    def score(self, program: str) -> Verification:
        """Judge one program: a verification, or JudgeDown."""
        try:
            outcome = self._client.score(
                program,
                pid=self.contract.judge_problem_id,
                lang=self.contract.solution_language.value,
                deadline_s=self.deadline_s,
            )
        except JudgeUnavailable as exc:
            raise JudgeDown(f"judge failure, step stopped: {exc}") from exc
        return verification_of(outcome)


def verification_of(outcome: Scored | Invalid) -> Verification:
    """The archive's view of a judge outcome."""
    if isinstance(outcome, Invalid):
        first = outcome.reason.strip().splitlines()[0] if outcome.reason.strip() else "invalid"
        status = Status.COMPILE_ERROR if first.lower().startswith("compile") else Status.INVALID
        return Verification(status, None, 0.0, first)
    message = str(outcome.result.get("result") or "")
    return Verification(Status.VALID, outcome.score, float(outcome.reward), message)


@contextmanager
def judge_url(url: str | None = None, state_dir: Path | None = None) -> Iterator[str]:
    """The judge to use: `url`, else `FRONTIERCS_JUDGE_URL`, else an embedded judge for the run."""
    chosen = url or os.environ.get(JUDGE_URL_ENV)
    if chosen:
        yield chosen.rstrip("/")
        return
    with EmbeddedJudge(JudgeSetup(state_dir=state_dir)) as judge:
        yield judge.url

"""The `frontiercs-judge` scorer: candidates scored by a FrontierCS judge, for a search.

A program that does not compile or that the judge rejects is a normal result
(reward 0). A program the judge finished scoring is a valid candidate whatever
its score, 0 included; its raw score is the judge's bounded `score` (the number
the task's verifier reports as the trial's reward), not `scoreUnbounded`. A
judge that is down, too slow or broken says nothing about the program: it is
`ScorerUnavailable`, never a score.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from atoll.core.scoring import CandidateScore, ScorerSetup, ScorerUnavailable, ScoreStatus
from atoll.judge.client import DEFAULT_DEADLINE_S, Invalid, JudgeClient, JudgeUnavailable, Scored
from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge, JudgeSetup

SCORER_NAME = "frontiercs-judge"


class JudgeScorer:
    """Submits programs of one problem to one judge and turns outcomes into candidate scores."""

    def __init__(
        self,
        url: str,
        problem_id: str,
        language: str,
        *,
        deadline_s: float = DEFAULT_DEADLINE_S,
        poll_interval_s: float = 0.25,
    ) -> None:
        self.url = url
        self.problem_id = problem_id
        self.language = language
        self.deadline_s = deadline_s
        self._client = JudgeClient(url, poll_interval=poll_interval_s)

    def close(self) -> None:
        self._client.close()

    def check(self) -> None:
        """Fail before a step starts when the judge does not answer its health check."""
        if not self._client.health():
            raise ScorerUnavailable(f"the judge at {self.url} does not answer GET /health")

    def score(self, program: str) -> CandidateScore:
        """Judge one program: a candidate score, or ScorerUnavailable."""
        try:
            outcome = self._client.score(
                program, pid=self.problem_id, lang=self.language, deadline_s=self.deadline_s
            )
        except JudgeUnavailable as exc:
            raise ScorerUnavailable(f"judge failure, step stopped: {exc}") from exc
        return score_of(outcome)


def score_of(outcome: Scored | Invalid) -> CandidateScore:
    """A judge outcome as a candidate score; the receipt names the judge's submission."""
    receipt = {"scorer": SCORER_NAME, "submission_id": outcome.sid}
    if isinstance(outcome, Invalid):
        first = outcome.reason.strip().splitlines()[0] if outcome.reason.strip() else "invalid"
        status = (
            ScoreStatus.COMPILE_ERROR
            if first.lower().startswith("compile")
            else ScoreStatus.INVALID
        )
        return CandidateScore(status, None, 0.0, first, receipt)
    message = str(outcome.result.get("result") or "")
    return CandidateScore(ScoreStatus.VALID, outcome.score, float(outcome.reward), message, receipt)


@contextmanager
def judge_url(url: str | None = None, state_dir: Path | None = None) -> Iterator[str]:
    """The judge to use: `url`, else `FRONTIERCS_JUDGE_URL`, else an embedded judge for the run."""
    chosen = url or os.environ.get(JUDGE_URL_ENV)
    if chosen:
        yield chosen.rstrip("/")
        return
    with EmbeddedJudge(JudgeSetup(state_dir=state_dir)) as judge:
        yield judge.url


@contextmanager
def open_judge_scorer(setup: ScorerSetup) -> Iterator[JudgeScorer]:
    """The judge `FRONTIERCS_JUDGE_URL` names in the run's environment, else an embedded one."""
    if not setup.problem_id:
        raise ValueError(
            "the frontiercs-judge scorer needs the judge's problem id: "
            "set judge_problem_id in the task's contract.json"
        )
    state_dir = None if setup.state_dir is None else setup.state_dir / "judge"
    with judge_url(setup.environ.get(JUDGE_URL_ENV), state_dir=state_dir) as url:
        scorer = JudgeScorer(url, setup.problem_id, setup.language)
        try:
            scorer.check()
            yield scorer
        finally:
            scorer.close()

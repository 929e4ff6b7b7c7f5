"""The `frontiercs-judge` scorer: candidates scored by a FrontierCS judge, for a search.

A program that does not compile or that the judge rejects is a normal result
(reward 0). A program the judge finished scoring is a valid candidate whatever
its score, 0 included; its raw score is the judge's bounded `score` (the number
the task's verifier reports as the trial's reward), not `scoreUnbounded`. A
judge that is down, too slow or broken says nothing about the program: it is
`ScorerUnavailable`, never a score.

Which judge scored is part of a search's identity (`describe_judge`): the
embedded judge by its version alone (its port changes every start, whether
the search starts it or a job plugin does and names it in
`FRONTIERCS_JUDGE_URL`), a judge serving on its own by its URL and the version
it reports.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final, Literal

from atoll.core.scoring import CandidateScore, ScorerSetup, ScorerUnavailable, ScoreStatus
from atoll.judge.api import package_version
from atoll.judge.client import DEFAULT_DEADLINE_S, Invalid, JudgeClient, JudgeUnavailable, Scored
from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge, JudgeSetup

SCORER_NAME = "frontiercs-judge"
EMBEDDED: Final = "embedded"
REMOTE: Final = "remote"
# How long `describe_judge` waits for a judge's `GET /version`.
VERSION_TIMEOUT_S = 10.0


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

    def workers(self) -> int | None:
        """The judge's worker budget (see `JudgeClient.workers`), None if it reports none."""
        return self._client.workers()

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
    """A judge outcome as a candidate score; the receipt names the judge's submission.

    A scored submission's receipt also holds each case's score ratio
    (`case_scores`, 0..1) and status (`statuses`), in case order.
    """
    receipt: dict[str, Any] = {"scorer": SCORER_NAME, "submission_id": outcome.sid}
    if isinstance(outcome, Invalid):
        first = outcome.reason.strip().splitlines()[0] if outcome.reason.strip() else "invalid"
        status = (
            ScoreStatus.COMPILE_ERROR
            if first.lower().startswith("compile")
            else ScoreStatus.INVALID
        )
        return CandidateScore(status, None, 0.0, first, receipt)
    message = str(outcome.result.get("result") or "")
    # Per case, as the checker's receipt has them: what a reader of the run looks at first.
    receipt["case_scores"] = [case.ratio for case in outcome.cases]
    receipt["statuses"] = [case.status for case in outcome.cases]
    return CandidateScore(ScoreStatus.VALID, outcome.score, float(outcome.reward), message, receipt)


@dataclass(frozen=True)
class JudgeRecord:
    """Which judge scores: what a search records, and a resume must find unchanged.

    `kind` is `embedded` (an atoll process's own judge, whose `address` is
    then `embedded`: its port is of the moment) or `remote` (a judge serving
    on its own at the URL `address`). `version` is the judge's package
    version, as it reports it; None from a judge that reports none.
    """

    kind: Literal["embedded", "remote"]
    address: str
    version: str | None

    def to_json(self) -> dict[str, str | None]:
        return {"kind": self.kind, "address": self.address, "version": self.version}


def chosen_url(url: str | None = None) -> str | None:
    """The judge URL to use: `url`, else `FRONTIERCS_JUDGE_URL`; None for an embedded judge."""
    chosen = url or os.environ.get(JUDGE_URL_ENV)
    return chosen.rstrip("/") if chosen else None


def describe_judge(url: str | None = None) -> JudgeRecord:
    """The judge `judge_url(url)` scores with, without starting one.

    With no URL that is the embedded judge of this installation. A URL is
    asked `GET /version`; one that cannot be asked is ScorerUnavailable.
    """
    chosen = chosen_url(url)
    if chosen is None:
        return JudgeRecord(EMBEDDED, EMBEDDED, package_version())
    return judge_at(chosen)


def judge_at(url: str) -> JudgeRecord:
    """The record of the judge answering at `url`, from its `GET /version`."""
    with JudgeClient(url, request_timeout=VERSION_TIMEOUT_S) as client:
        try:
            about = client.about()
        except JudgeUnavailable as exc:
            raise ScorerUnavailable(f"cannot tell which judge answers at {url}: {exc}") from exc
    if about is None:  # a judge from before GET /version: its URL is all that names it
        return JudgeRecord(REMOTE, url, None)
    if about.embedded:
        return JudgeRecord(EMBEDDED, EMBEDDED, about.version)
    return JudgeRecord(REMOTE, url, about.version)


@contextmanager
def judge_url(url: str | None = None, state_dir: Path | None = None) -> Iterator[str]:
    """The judge to use: `url`, else `FRONTIERCS_JUDGE_URL`, else an embedded judge for the run."""
    chosen = chosen_url(url)
    if chosen:
        yield chosen
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

"""Harbor verifier `frontiercs-judge`: score the trial's candidate with a FrontierCS judge.

The candidate is read out of the trial environment (default
`/workspace/solution.cpp`), sent to the judge named by `FRONTIERCS_JUDGE_URL`
(or to an embedded judge started in-process when none is named), and the
judge's score becomes the reward (0-100), with the raw score beside it. A
missing candidate or one that does not compile earns 0; a judge that cannot
answer raises, so Harbor records a failed verification, never a score.

Use it with `--verifier atoll.judge.verifier:FrontierCSJudgeVerifier` (or the short
name `--verifier frontiercs-judge` under `atoll run`)
and, optionally, `--verifier-kwarg` `solution_path`, `problem`, `judge_url`,
`deadline_s`.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from pathlib import Path
from typing import Any

from harbor.models.verifier.result import VerifierResult
from harbor.verifier.base import BaseVerifier

from atoll.core.durable import atomic_write_text
from atoll.judge.api import MAX_SOURCE_BYTES
from atoll.judge.client import DEFAULT_DEADLINE_S, Invalid, JudgeClient, Outcome, Scored
from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge

DEFAULT_SOLUTION_PATH = "/workspace/solution.cpp"


class FrontierCSJudgeVerifier(BaseVerifier):
    def __init__(
        self,
        *,
        solution_path: str = DEFAULT_SOLUTION_PATH,
        problem: str = "0",
        judge_url: str | None = None,
        deadline_s: float = DEFAULT_DEADLINE_S,
        **kwargs: Any,
    ) -> None:
        super().__init__(**kwargs)
        self.solution_path = solution_path
        self.problem = str(problem)
        self.judge_url = judge_url
        self.deadline_s = float(deadline_s)

    def _configured_url(self) -> str | None:
        for source in (self.override_env, self.verifier_env or {}, os.environ):
            if source.get(JUDGE_URL_ENV):
                return source[JUDGE_URL_ENV]
        return self.judge_url

    async def verify(self) -> VerifierResult:
        verifier_dir = self.trial_paths.verifier_dir
        verifier_dir.mkdir(parents=True, exist_ok=True)
        source = await self._candidate()
        if source is None:
            outcome: Outcome = Invalid(None, f"no candidate at {self.solution_path}", {})
        elif len(source) > MAX_SOURCE_BYTES:
            outcome = Invalid(None, f"candidate is larger than {MAX_SOURCE_BYTES} bytes", {})
        else:
            outcome = await asyncio.to_thread(self._score, source)
        rewards = {"reward": float(outcome.reward), "raw_score": float(outcome.raw_score)}
        _write_json(verifier_dir / "judge.json", _report(outcome, self.problem))
        _write_json(verifier_dir / "reward.json", rewards)
        self.logger.info("frontiercs-judge: %s", _one_line(outcome))
        return VerifierResult(rewards=rewards)

    async def _candidate(self) -> bytes | None:
        if not await self.environment.is_file(self.solution_path):
            return None
        with tempfile.TemporaryDirectory(prefix="frontiercs-candidate-") as tmp:
            local = Path(tmp) / "solution.cpp"
            await self.environment.download_file(self.solution_path, local)
            return local.read_bytes()

    def _score(self, source: bytes) -> Outcome:
        url = self._configured_url()
        if url:
            with JudgeClient(url) as client:
                return client.score(source, pid=self.problem, deadline_s=self.deadline_s)
        with EmbeddedJudge() as judge, JudgeClient(judge.url) as client:
            return client.score(source, pid=self.problem, deadline_s=self.deadline_s)


def _report(outcome: Outcome, problem: str) -> dict[str, Any]:
    base: dict[str, Any] = {"problem": problem, "sid": outcome.sid, "reward": outcome.reward}
    if isinstance(outcome, Scored):
        base.update(status="scored", score=outcome.score, raw_score=outcome.raw_score)
        base["cases"] = [
            {"case": c.number, "status": c.status, "ratio": c.ratio, "msg": c.message}
            for c in outcome.cases
        ]
    else:
        base.update(status="invalid", reason=outcome.reason)
    return base


def _one_line(outcome: Outcome) -> str:
    if isinstance(outcome, Scored):
        return f"score {outcome.score:.6f} (raw {outcome.raw_score:.6f})"
    return (
        f"invalid candidate, reward 0: {outcome.reason.splitlines()[0] if outcome.reason else ''}"
    )


def _write_json(path: Path, value: dict[str, Any]) -> None:
    atomic_write_text(path, json.dumps(value, indent=2))

"""One seed's view of the model: a stage request in, a validated answer out, repairs counted.

Every stage request is a strict json_schema Chat Completions request named
after its stage (see `protocol`). The answer is paid for before it is
judged, so an invalid answer is still recorded in the ledger (with why it
was invalid) and counted in the seed's tally; the repair that follows
carries the invalid answer and the reason, and spends one of the stage's
repairs.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from atoll.core.llm import PaidChat, chat_body
from atoll.frontiersmith import prompts
from atoll.frontiersmith.outcome import Reason, Rejected, Tally
from atoll.frontiersmith.protocol import InvalidAnswer, parse_answer, schema


class StageModel:
    """Stage requests for one seed, through the run's paid chat client."""

    def __init__(
        self, chat: PaidChat, seed_id: str, tally: Tally, language: str = "python"
    ) -> None:
        self.chat = chat
        self.seed_id = seed_id
        self.tally = tally
        self.language = language  # what baseline and solve answers are written in

    async def ask(
        self,
        stage: str,
        messages: list[dict[str, str]],
        *,
        samples: int | None = None,
        check: Callable[[dict[str, Any]], str] | None = None,
    ) -> tuple[dict[str, Any] | None, str, str]:
        """(answer or None, raw content, why invalid) for one request.

        `check` may add a rule of the caller's, as in `ask_valid`: an answer it finds evidence
        against is invalid, recorded so in the ledger and the tally.
        """
        body = chat_body(self.chat.endpoint, messages, schema_name=stage, schema=schema(stage))
        completion = await self.chat.complete(body, label=f"{stage}:{self.seed_id}")
        self.tally.requests += 1
        self.tally.replayed += int(completion.replayed)
        self.tally.cost_micro += completion.cost_micro
        self.tally.prompt_tokens += int(completion.usage.get("prompt_tokens") or 0)
        self.tally.completion_tokens += int(completion.usage.get("completion_tokens") or 0)
        self.tally.model_seconds += 0.0 if completion.replayed else completion.latency_s
        try:
            value = parse_answer(stage, completion.content, samples=samples, language=self.language)
            why = check(value) if check is not None else ""
            if why:
                raise InvalidAnswer(why)
        except InvalidAnswer as exc:
            self.tally.invalid_outputs += 1
            if not completion.replayed:
                self.chat.ledger.judge(completion.receipt_id, f"invalid: {exc}")
            return None, completion.content, str(exc)
        if not completion.replayed:
            self.chat.ledger.judge(completion.receipt_id, "valid")
        return value, completion.content, ""

    async def ask_valid(
        self,
        stage: str,
        messages: list[dict[str, str]],
        *,
        repairs: int,
        samples: int | None = None,
        check: Callable[[dict[str, Any]], str] | None = None,
    ) -> dict[str, Any]:
        """A valid answer within `repairs` repairs; Rejected(invalid_model_output) otherwise.

        `check` may add a rule of the caller's: it returns evidence against the
        answer (empty when the answer is fine), which a repair then carries.
        """
        request = messages
        reasons: list[str] = []
        for attempt in range(repairs + 1):
            if attempt:
                self.tally.repairs += 1
            value, content, why = await self.ask(stage, request, samples=samples)
            if value is not None and check is not None:
                why = check(value)
            if value is not None and not why:
                return value
            reasons.append(why)
            request = prompts.repair(request, content, why)  # the whole exchange so far
        raise Rejected(
            stage,
            Reason.INVALID_MODEL_OUTPUT,
            f"{stage}: no valid answer in {repairs + 1} tries (last: {reasons[-1]})",
            invalid_answers=reasons,
        )

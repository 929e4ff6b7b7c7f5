"""Guidance samples through Reef, and the score reports that train on them.

Reef serves the trainable guidance model and trains it on reports that
reference the receipts of its inferences. Each rollout therefore makes exactly
one guidance inference through Reef, keeps its receipt, and later posts one
report against that receipt with the rollout's grid coordinates, so that Reef's
tttd recipe can fill the (step, group, rollout) slot. The client sends each
call once and says how it failed: whether Reef certainly recorded nothing
(`GuidanceUnavailable.unrecorded`), which is the one case where the step may
send a slot's call again (see `search.step`); any other failure is booked as
the slot's failed rollout. Reports carry a stable
client-chosen id, which makes a re-post after a crash or a lost answer
idempotent on Reef's side. The client speaks Reef's HTTP protocol itself
(three calls) rather than through the blocking stdlib client, so that a
cancelled run can abort an inference that is still generating.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import httpx

from atoll.core import reef_env
from atoll.guidance_ttt.prompting.model_answer import (
    answer_fields,
    answer_from_json,
    answer_to_json,
)
from atoll.guidance_ttt.prompting.prompts import PROMPT_MODE, Prompt, guidance_request
from atoll.guidance_ttt.search.scored_program import Verification
from atoll.guidance_ttt.services.cancel import Cancellation

CHAT_PATH = "/v1/chat/completions"
REPORT_PATH = "/reef/report"
STATUS_PATH = "/reef/status"
RECEIPT_HEADER = "x-reef-agent-record-id"
SCENARIO_HEADER = "x-reef-scenario"
# Reports and status reads are small; only an inference may take long.
SHORT_TIMEOUT_S = 60.0
ALGORITHM = "ttt-discover"
# Reef's own error answers after which it holds no record of the call: the model's
# server failed (502) or shed load (429, relayed), or Reef's inference deadline passed
# or its artifact was unavailable (503). Reef writes an inference record only once the
# model's answer is complete, and then always answers with its receipt. Left out: 500
# (an unexpected failure, possibly after the record was written), 408 and 504 (a
# timeout: whatever gave up, something may still answer and be recorded) and the other
# 4xx (the same request would be refused again).
UNRECORDED_STATUSES = frozenset({429, 502, 503})


class ReefSettingsError(ValueError):
    """The Reef URL or token is missing or malformed."""


class GuidanceUnavailable(RuntimeError):
    """Reef produced no guidance sample for this call; the client does not send it again.

    `status` is Reef's HTTP status when it answered with an error, None when
    no answer came back (`answer_lost`: Reef may hold an orphan record).
    `receipt` is the record id Reef sent with its error answer, if any: the
    slot's failure is reported against it. `unrecorded` is True only when
    Reef answered with one of `UNRECORDED_STATUSES` and no receipt: it
    certainly recorded nothing, so sending the call again samples no slot
    twice.
    """

    def __init__(
        self,
        message: str,
        *,
        answer_lost: bool,
        status: int | None = None,
        receipt: str | None = None,
        unrecorded: bool = False,
    ) -> None:
        super().__init__(message)
        self.answer_lost = answer_lost
        self.status = status
        self.receipt = receipt
        self.unrecorded = unrecorded


class ReportRejected(RuntimeError):
    """Reef refused a report; a retry with the same content cannot succeed."""


class ReefRequestFailed(RuntimeError):
    """Reef answered a report or status request with an error, or not at all."""


@dataclass(frozen=True)
class ReefEndpoint:
    """Where Reef is and the bearer token for it; the token never appears in a repr."""

    url: str
    token: str | None

    def __repr__(self) -> str:
        return f"ReefEndpoint(url={self.url!r}, token={'<set>' if self.token else None})"

    __str__ = __repr__

    @classmethod
    def resolve(
        cls,
        url: str | None = None,
        token: str | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> ReefEndpoint:
        """Flags first, then `REEF_URL` / `REEF_TOKEN` from `environ` (default: the process's)."""
        url = url or reef_env.named_url(environ)
        token = token or reef_env.named_token(environ)
        if not url:
            raise ReefSettingsError(f"no Reef URL: pass --reef-url or set {reef_env.URL_ENV}")
        if not url.startswith(("http://", "https://")):
            raise ReefSettingsError(f"Reef URL must start with http:// or https://, got {url!r}")
        return cls(url.rstrip("/"), token)


@dataclass(frozen=True)
class GridSlot:
    """The coordinates of one rollout in a step's G x R grid."""

    step: int
    group: int
    rollout: int
    groups_per_step: int
    rollouts_per_group: int

    def __post_init__(self) -> None:
        if not (
            0 <= self.group < self.groups_per_step and 0 <= self.rollout < self.rollouts_per_group
        ):
            raise ValueError(
                f"slot (group {self.group}, rollout {self.rollout}) is outside the "
                f"{self.groups_per_step} x {self.rollouts_per_group} grid"
            )

    @property
    def comparison_set(self) -> str:
        return f"tttd-step-{self.step}-group-{self.group}"

    def report_id(self, run_id: str) -> str:
        """The idempotency id of this slot's report: the same on every re-post."""
        return f"guidance-ttt-{run_id}-s{self.step}-g{self.group}-r{self.rollout}"


@dataclass(frozen=True)
class SampledTokens:
    """Exactly what the policy sampled: the tokens an update trains on, and who sampled them.

    A policy server that trains (atoll's Tinker policy) answers with the
    prompt's token ids, the completion's token ids with their sampled
    logprobs, and the name of the sampler weights in `system_fingerprint`;
    Reef records that answer whole. Any other endpoint leaves this None.
    """

    prompt: tuple[int, ...]
    completion: tuple[int, ...]
    logprobs: tuple[float, ...]
    sampler: str

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": list(self.prompt),
            "completion": list(self.completion),
            "logprobs": list(self.logprobs),
            "sampler": self.sampler,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> SampledTokens:
        return cls(
            prompt=tuple(int(t) for t in data["prompt"]),
            completion=tuple(int(t) for t in data["completion"]),
            logprobs=tuple(float(x) for x in data["logprobs"]),
            sampler=str(data["sampler"]),
        )

    @classmethod
    def from_answer(cls, body: Mapping[str, Any]) -> SampledTokens | None:
        """The sampled tokens an answer carries; None when it carries none or they disagree."""
        try:
            choice = body["choices"][0]
            prompt = tuple(int(t) for t in body["prompt_token_ids"])
            completion = tuple(int(t) for t in choice["token_ids"])
            logprobs = tuple(float(entry["logprob"]) for entry in choice["logprobs"]["content"])
            sampler = body["system_fingerprint"]
        except (KeyError, IndexError, TypeError, ValueError):
            return None
        if not prompt or not completion or len(logprobs) != len(completion):
            return None
        if not isinstance(sampler, str) or not sampler:
            return None
        return cls(prompt, completion, logprobs, sampler)


@dataclass(frozen=True)
class GuidanceSample:
    """One guidance answer and the receipt Reef recorded it under."""

    receipt: str
    content: str
    reasoning: str | None
    finish_reason: str | None
    completion_tokens: int | None
    tokens: SampledTokens | None = None

    def to_json(self) -> dict[str, Any]:
        data = {"receipt": self.receipt, **answer_to_json(self)}
        if self.tokens is not None:
            data["tokens"] = self.tokens.to_json()
        return data

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GuidanceSample:
        tokens = data.get("tokens")
        return cls(
            receipt=str(data["receipt"]),
            **answer_from_json(data),
            tokens=None if tokens is None else SampledTokens.from_json(tokens),
        )


def report_payload(
    *,
    run_id: str,
    slot: GridSlot,
    verification: Verification,
    parent_id: int,
    search_value: float | None,
    library_entry_id: int | None,
) -> dict[str, Any]:
    """The report body for one rollout, without its references (they are the receipt).

    `search_value` is the rollout's own value in the search (the raw score,
    negated when the task minimizes; None when nothing was scored) and
    `library_entry_id` the archive node the rollout created, if any.
    """
    feedback = f"{verification.status.value}: {verification.message}".rstrip()
    return {
        "agent_record_id": slot.report_id(run_id),
        "score": float(verification.reward),
        "feedback": feedback,
        "metadata": {
            "comparison_set": slot.comparison_set,
            "algorithm": ALGORITHM,
            "step": slot.step,
            "group": slot.group,
            "rollout": slot.rollout,
            "groups_per_step": slot.groups_per_step,
            "rollouts_per_group": slot.rollouts_per_group,
            "parent_id": parent_id,
            "search_value": search_value,
            "guidance_ttt": True,
            "prompt_mode": PROMPT_MODE,
            "archive_timestep": slot.step + 1,
            "library_entry_id": library_entry_id,
        },
    }


class GuidanceClient:
    """Guidance inferences and score reports for one Reef scenario."""

    def __init__(
        self,
        endpoint: ReefEndpoint,
        *,
        scenario: str,
        model: str,
        max_completion_tokens: int,
        timeout_s: float = 1800.0,
        cancellation: Cancellation | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.scenario = scenario
        self.model = model
        self.max_completion_tokens = max_completion_tokens
        self.timeout_s = timeout_s
        self.cancellation = cancellation or Cancellation()
        headers = {"Authorization": f"Bearer {endpoint.token}"} if endpoint.token else {}
        self._http = self.cancellation.http_client(
            base_url=endpoint.url,
            headers=headers,
            timeout=httpx.Timeout(SHORT_TIMEOUT_S, connect=min(SHORT_TIMEOUT_S, timeout_s)),
        )

    def close(self) -> None:
        self._http.close()

    def request(self, prompt: Prompt, seed: int | None = None) -> dict[str, Any]:
        """The exact chat-completions body sent for `prompt`."""
        return guidance_request(prompt, self.model, self.max_completion_tokens, seed)

    def sample(self, prompt: Prompt, seed: int | None = None) -> GuidanceSample:
        """One inference through Reef, sent once.

        Raises GuidanceUnavailable with `answer_lost` True when the request
        may have reached the model but no answer came back (Reef may hold an
        orphan record), False when Reef answered with an error; `unrecorded`
        True when that error says Reef recorded nothing (`recorded_nothing`).
        """
        try:
            response = self._http.post(
                CHAT_PATH,
                json=self.request(prompt, seed),
                headers={SCENARIO_HEADER: self.scenario},
                timeout=httpx.Timeout(self.timeout_s),
            )
        except httpx.TransportError as exc:  # refused, reset, timed out, or cancelled mid-answer
            why = "the run was cancelled" if self.cancellation.cancelled else str(exc)
            raise GuidanceUnavailable(
                f"no answer from Reef at {self.endpoint.url} for the guidance inference: {why}",
                answer_lost=True,
            ) from exc
        receipt = response.headers.get(RECEIPT_HEADER) or None
        if response.is_error or not receipt:
            status = response.status_code if response.is_error else 502
            body = response.text if response.is_error else f"the answer has no {RECEIPT_HEADER}"
            raise GuidanceUnavailable(
                f"Reef answered the guidance inference with HTTP {status}: {body[:300]}",
                answer_lost=False,
                status=status,
                receipt=receipt,
                unrecorded=recorded_nothing(response),
            )
        return _sample(_json(response), receipt)

    def report(self, payload: Mapping[str, Any], receipt: str) -> str:
        """Post one report against `receipt`; returns the id Reef stored it under.

        A re-post of identical content is accepted by Reef as the same record.
        """
        expected = payload.get("agent_record_id")
        body = {"references": [receipt], **payload}
        response = self._call("POST", REPORT_PATH, f"report {expected}", json=body)
        if response.status_code == 409:
            raise ReportRejected(
                f"Reef already holds report {expected} with different "
                "content; the rollout journal and Reef disagree"
            )
        stored = _json(_checked(response, f"report {expected}")).get("agent_record_id")
        if expected is not None and stored != expected:
            raise ReportRejected(f"Reef stored report {expected} as {stored}")
        return str(stored)

    def status(self) -> dict[str, Any]:
        """`GET /reef/status`."""
        return _json(_checked(self._call("GET", STATUS_PATH, "the status read"), "status"))

    def _call(self, method: str, path: str, what: str, **kwargs: Any) -> httpx.Response:
        try:
            return self._http.request(
                method, path, headers={SCENARIO_HEADER: self.scenario}, **kwargs
            )
        except httpx.TransportError as exc:
            self.cancellation.check(f"Reef answered {what}")
            raise ReefRequestFailed(
                f"no answer from Reef at {self.endpoint.url} to {what}: {exc}"
            ) from exc


def recorded_nothing(response: httpx.Response) -> bool:
    """Whether Reef's answer to an inference certainly left no record of it.

    Only an error answer without a receipt whose status is one Reef gives
    before any record exists; a success without a receipt does not count
    (the model answered, and something between may have dropped the header).
    """
    return (
        response.is_error
        and not response.headers.get(RECEIPT_HEADER)
        and response.status_code in UNRECORDED_STATUSES
    )


def _checked(response: httpx.Response, what: str) -> httpx.Response:
    if response.is_error:
        raise ReefRequestFailed(
            f"Reef answered {what} with HTTP {response.status_code}: {response.text[:300]}"
        )
    return response


def _json(response: httpx.Response) -> dict[str, Any]:
    """The answer's JSON object; anything else is an empty answer."""
    try:
        data = response.json() if response.content else {}
    except (json.JSONDecodeError, UnicodeDecodeError):
        return {}
    return data if isinstance(data, dict) else {}


def _sample(body: Mapping[str, Any], receipt: str) -> GuidanceSample:
    """The answer Reef recorded; a malformed body is an empty answer (it fails parsing, reward 0)."""
    body = body if isinstance(body, Mapping) else {}
    fields = answer_fields(body)
    return GuidanceSample(receipt=receipt, **fields, tokens=SampledTokens.from_answer(body))

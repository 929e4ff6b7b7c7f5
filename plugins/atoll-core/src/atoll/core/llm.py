"""Paid chat completions with receipts: reserve, send, settle, or leave a request uncertain.

Every request to an OpenAI-compatible endpoint goes through `PaidChat`,
which keeps the money promises of `atoll.core.ledger`:

- the request's identity is the sha256 of its exact JSON body (model,
  messages, response schema, limits); an identity with an answered receipt
  is replayed from the ledger, never paid again;
- its worst-case cost is reserved before it leaves: prompt tokens bounded by
  the body's UTF-8 size (a token is at least one byte) plus a per-message
  allowance, completion tokens by the body's `max_completion_tokens`;
- the answer settles it at the exact cost of the provider's reported usage;
- a request refused outright (400, 401, 403, 404, 422 and the other 4xx but
  408/409/429) settles at zero; 408, 409, 429 and 503 (the provider says it
  did not process it) settle at zero and are retried with backoff, as is a
  connection that never opened; any other failure after the request left
  (a read timeout, a dropped connection, another 5xx) leaves the reservation
  standing and the receipt uncertain, and an identity with an unreconciled
  uncertain receipt is never sent again.

The transport is httpx directly rather than the `openai` SDK: the receipts
keep the exact request and response bodies, and the decision "never
connected" (safe to retry) versus "lost after sending" (uncertain) needs
httpx's own exception types, which the SDK folds into one connection error.

The API key is read from the environment when the client is built, lives
only in the HTTP client's headers, and is never recorded or logged.
"""

from __future__ import annotations

import asyncio
import math
import os
import random
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal
from typing import Any

import httpx

from atoll.core.durable import canonical_json
from atoll.core.ledger import BudgetExhausted, Ledger, Receipt, request_key

# Provider answers that settle at zero and end the request.
REJECTED_STATUSES = frozenset({400, 401, 403, 404, 422})
# Provider answers that say the request was not processed: zero cost, retried.
RETRYABLE_STATUSES = frozenset({408, 409, 429, 503})
# Transport errors raised before a byte of the request could reach the provider.
_NOT_SENT = (httpx.ConnectError, httpx.ConnectTimeout, httpx.PoolTimeout, httpx.UnsupportedProtocol)
# Tokens of chat framing (role markers, separators) allowed per message, and per request.
FRAMING_TOKENS_PER_MESSAGE = 16
FRAMING_TOKENS_PER_REQUEST = 64


class LLMError(Exception):
    """A paid request did not produce an answer."""


class EndpointError(LLMError):
    """The endpoint cannot be used at all (unreachable, or it refused the key)."""


class ProviderRejected(LLMError):
    """The provider refused the request outright; it was settled at zero."""

    def __init__(self, status: int, message: str, receipt_id: int) -> None:
        self.status = status
        self.receipt_id = receipt_id
        super().__init__(f"the provider refused the request (HTTP {status}): {message}")


class ProviderUnavailable(LLMError):
    """The provider could not be reached or kept saying it was busy; nothing was charged."""


class RequestUncertain(LLMError):
    """The answer was lost after the request left: it may have been charged."""

    def __init__(self, receipt_id: int, detail: str) -> None:
        self.receipt_id = receipt_id
        super().__init__(
            f"request {receipt_id} was sent but its answer was lost ({detail}); it stays "
            "reserved and uncertain until reconciled"
        )


class BlockedByUncertain(LLMError):
    """An earlier send of this exact request is uncertain and not yet reconciled."""

    def __init__(self, receipt: Receipt) -> None:
        self.receipt = receipt
        super().__init__(
            f"request {receipt.id} ({receipt.label}) is uncertain: reconcile it before it is "
            "sent again"
        )


@dataclass(frozen=True)
class Prices:
    """Dollars per million tokens. One dollar per million tokens is one micro-dollar per token."""

    input_usd_per_mtok: Decimal
    output_usd_per_mtok: Decimal

    @classmethod
    def of(cls, input_usd_per_mtok: float | str, output_usd_per_mtok: float | str) -> Prices:
        values = Decimal(str(input_usd_per_mtok)), Decimal(str(output_usd_per_mtok))
        if any(not v.is_finite() or v < 0 for v in values):
            raise ValueError("prices must be non-negative numbers of dollars per million tokens")
        return cls(*values)

    def cost_micro(self, prompt_tokens: int, completion_tokens: int) -> int:
        """The exact cost of a usage, rounded up to a whole micro-dollar."""
        total = prompt_tokens * self.input_usd_per_mtok
        total += completion_tokens * self.output_usd_per_mtok
        return int(total.to_integral_value(rounding=ROUND_CEILING))

    def to_json(self) -> dict[str, str]:
        return {
            "input_usd_per_mtok": str(self.input_usd_per_mtok),
            "output_usd_per_mtok": str(self.output_usd_per_mtok),
        }


@dataclass(frozen=True)
class Endpoint:
    """Where requests go and how they are limited. Holds the key's variable name, never the key."""

    base_url: str
    model: str
    api_key_env: str = "OPENAI_API_KEY"
    timeout_s: float = 1800.0  # long generations are normal; a timeout makes a request uncertain
    max_completion_tokens: int = 16384
    connect_retries: int = 4
    backoff_s: float = 1.0

    def identity(self) -> dict[str, Any]:
        """What a run's fingerprint records about the endpoint: no credential."""
        return {
            "base_url": self.base_url.rstrip("/"),
            "model": self.model,
            "max_completion_tokens": self.max_completion_tokens,
        }


@dataclass(frozen=True)
class Completion:
    """One answer, fresh or replayed from its receipt."""

    receipt_id: int
    key: str
    content: str
    finish_reason: str | None
    usage: dict[str, Any]
    cost_micro: int
    replayed: bool
    latency_s: float


def answer_fields(completion: Mapping[str, Any]) -> dict[str, Any]:
    """The recorded fields of a chat-completion body; a malformed body is an empty answer."""
    choices = completion.get("choices")
    choice = choices[0] if isinstance(choices, list) and choices else {}
    message = choice.get("message") if isinstance(choice, Mapping) else None
    message = message if isinstance(message, Mapping) else {}
    usage = completion.get("usage")
    reasoning = message.get("reasoning_content") or message.get("reasoning")
    return {
        "content": str(message.get("content") or ""),
        "reasoning": None if reasoning is None else str(reasoning),
        "finish_reason": choice.get("finish_reason") if isinstance(choice, Mapping) else None,
        "completion_tokens": usage.get("completion_tokens") if isinstance(usage, Mapping) else None,
    }


def worst_case_micro(body: Mapping[str, Any], prices: Prices) -> int:
    """The most a request can cost: every body byte a prompt token, every allowed token output."""
    messages = body.get("messages") or []
    prompt_bound = len(canonical_json(dict(body)))
    prompt_bound += FRAMING_TOKENS_PER_MESSAGE * len(messages) + FRAMING_TOKENS_PER_REQUEST
    completion_bound = int(body.get("max_completion_tokens") or 0)
    if completion_bound <= 0:
        raise ValueError("a paid request needs max_completion_tokens to bound its cost")
    return prices.cost_micro(prompt_bound, completion_bound)


def read_api_key(env_name: str, environ: Mapping[str, str] | None = None) -> str:
    """The key from the environment variable `env_name`; an error naming the variable if unset."""
    value = (os.environ if environ is None else environ).get(env_name, "")
    if not value.strip():
        raise EndpointError(
            f"no API key in the environment variable {env_name}; set it, or name another "
            "variable with --api-key-env"
        )
    return value.strip()


def chat_body(
    endpoint: Endpoint,
    messages: list[dict[str, str]],
    *,
    schema_name: str | None = None,
    schema: Mapping[str, Any] | None = None,
    extra: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The JSON body of one chat-completions request, strict json_schema output if a schema is given."""
    body: dict[str, Any] = {
        "model": endpoint.model,
        "messages": messages,
        "max_completion_tokens": endpoint.max_completion_tokens,
    }
    if schema is not None:
        body["response_format"] = {
            "type": "json_schema",
            "json_schema": {
                "name": schema_name or "answer",
                "strict": True,
                "schema": dict(schema),
            },
        }
    body.update(extra or {})
    return body


class PaidChat:
    """Chat completions against one endpoint, every request through the ledger."""

    def __init__(
        self,
        endpoint: Endpoint,
        prices: Prices,
        ledger: Ledger,
        *,
        api_key: str,
        stop_requested: Callable[[], bool] | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
    ) -> None:
        self.endpoint = endpoint
        self.prices = prices
        self.ledger = ledger
        self._stop_requested = stop_requested or (lambda: False)
        self._in_flight: dict[str, asyncio.Lock] = {}
        self._client = httpx.AsyncClient(
            base_url=endpoint.base_url.rstrip("/"),
            headers={"Authorization": f"Bearer {api_key}"},
            timeout=httpx.Timeout(endpoint.timeout_s, connect=min(30.0, endpoint.timeout_s)),
            limits=httpx.Limits(max_connections=64, max_keepalive_connections=16),
            transport=transport,
        )

    async def aclose(self) -> None:
        await self._client.aclose()

    def __repr__(self) -> str:
        return f"PaidChat({self.endpoint.identity()})"

    def reservation_micro(self, body: Mapping[str, Any]) -> int:
        return worst_case_micro(body, self.prices)

    async def complete(self, body: Mapping[str, Any], *, label: str) -> Completion:
        """The answer to `body`: replayed if already paid for, else reserved, sent and settled.

        Two identical requests at once are one request: the second waits for the
        first's answer and replays it.
        """
        key = request_key(body)
        lock = self._in_flight.setdefault(key, asyncio.Lock())
        async with lock:
            return await self._complete(key, body, label)

    async def _complete(self, key: str, body: Mapping[str, Any], label: str) -> Completion:
        done = self.ledger.answered(key)
        if done is not None:
            return _from_receipt(done, replayed=True)
        blocking = self.ledger.blocking(key)
        if blocking is not None:
            raise BlockedByUncertain(blocking)
        attempt = 0
        while True:
            if self._stop_requested():
                raise StopRequested("the run is stopping: no new paid request is sent")
            receipt_id = self.ledger.reserve(
                key, label, self.endpoint.model, body, self.reservation_micro(body)
            )
            outcome = await self._send(receipt_id, key, body)
            if isinstance(outcome, Completion):
                return outcome
            attempt += 1
            if attempt > self.endpoint.connect_retries:
                raise ProviderUnavailable(
                    f"{self.endpoint.base_url} gave no answer after {attempt} tries: {outcome}"
                )
            await asyncio.sleep(outcome.wait_s(self.endpoint.backoff_s, attempt))

    async def _send(
        self, receipt_id: int, key: str, body: Mapping[str, Any]
    ) -> Completion | _Retry:
        self.ledger.dispatch(receipt_id)
        started = time.monotonic()
        try:
            response = await self._client.post("/chat/completions", json=dict(body))
        except _NOT_SENT as exc:
            self.ledger.release(receipt_id, f"not sent: {type(exc).__name__}: {exc}")
            return _Retry(f"{type(exc).__name__}: {exc}", None)
        except httpx.HTTPError as exc:
            detail = f"{type(exc).__name__}: {exc}".rstrip(": ")
            self.ledger.mark_uncertain(receipt_id, detail)
            raise RequestUncertain(receipt_id, detail) from None
        except asyncio.CancelledError:
            self.ledger.mark_uncertain(receipt_id, "cancelled while the request was in flight")
            raise
        latency = time.monotonic() - started
        status = response.status_code
        if status in RETRYABLE_STATUSES:
            self.ledger.reject(receipt_id, status, _error_text(response))
            return _Retry(f"HTTP {status}: {_error_text(response)}", _retry_after(response))
        if 400 <= status < 500:
            message = _error_text(response)
            self.ledger.reject(receipt_id, status, message)
            raise ProviderRejected(status, message, receipt_id)
        if status != 200:
            detail = f"HTTP {status}: {_error_text(response)}"
            self.ledger.mark_uncertain(receipt_id, detail, http_status=status)
            raise RequestUncertain(receipt_id, detail)
        try:
            payload = response.json()
            if not isinstance(payload, dict):
                raise ValueError("not a JSON object")
        except ValueError as exc:
            detail = f"HTTP 200 with an unreadable body ({exc})"
            self.ledger.mark_uncertain(receipt_id, detail, http_status=status)
            raise RequestUncertain(receipt_id, detail) from None
        usage = payload.get("usage") if isinstance(payload.get("usage"), dict) else None
        cost = self._cost(usage, receipt_id)
        self.ledger.settle(
            receipt_id, cost, response=payload, usage=usage, http_status=status, latency_s=latency
        )
        return _from_receipt(self.ledger.receipt(receipt_id), replayed=False)

    def _cost(self, usage: Mapping[str, Any] | None, receipt_id: int) -> int:
        """The usage's exact cost; without a usable usage, the whole reservation (worst case)."""
        if usage is None:
            return self.ledger.receipt(receipt_id).reserved_micro
        try:
            prompt = int(usage["prompt_tokens"])
            completion = int(usage["completion_tokens"])
        except (TypeError, KeyError, ValueError):
            return self.ledger.receipt(receipt_id).reserved_micro
        if prompt < 0 or completion < 0:
            return self.ledger.receipt(receipt_id).reserved_micro
        return self.prices.cost_micro(prompt, completion)


class StopRequested(LLMError):
    """The run asked that no new paid request be sent (target reached, budget spent, a signal)."""


@dataclass(frozen=True)
class _Retry:
    why: str
    retry_after_s: float | None

    def wait_s(self, base_s: float, attempt: int) -> float:
        if self.retry_after_s is not None:
            return min(self.retry_after_s, 60.0)
        return min(60.0, base_s * 2.0 ** (attempt - 1)) * (0.5 + random.random() / 2)

    def __str__(self) -> str:
        return self.why


def _retry_after(response: httpx.Response) -> float | None:
    value = response.headers.get("retry-after")
    try:
        seconds = float(value) if value is not None else None
    except ValueError:
        return None
    return seconds if seconds is not None and math.isfinite(seconds) and seconds >= 0 else None


def _error_text(response: httpx.Response, limit: int = 300) -> str:
    try:
        payload = response.json()
        error = payload.get("error") if isinstance(payload, dict) else None
        text = error.get("message") if isinstance(error, dict) else (error or payload)
    except ValueError:
        text = response.text
    text = " ".join(str(text).split())
    return text if len(text) <= limit else text[:limit] + " …"


def _from_receipt(receipt: Receipt, *, replayed: bool) -> Completion:
    response = receipt.response or {}
    fields = answer_fields(response)
    return Completion(
        receipt_id=receipt.id,
        key=receipt.key,
        content=fields["content"],
        finish_reason=fields["finish_reason"],
        usage=dict(receipt.usage or {}),
        cost_micro=receipt.cost_micro or 0,
        replayed=replayed,
        latency_s=receipt.latency_s or 0.0,
    )


async def check_endpoint(endpoint: Endpoint, api_key: str, *, timeout_s: float = 10.0) -> None:
    """Refuse an endpoint that cannot be reached or refuses the key, before anything is paid.

    `GET {base_url}/models` costs nothing; any answer but 401/403 shows the
    endpoint is there (some servers have no model list and answer 404).
    """
    url = endpoint.base_url.rstrip("/") + "/models"
    try:
        async with httpx.AsyncClient(timeout=timeout_s) as client:
            response = await client.get(url, headers={"Authorization": f"Bearer {api_key}"})
    except httpx.HTTPError as exc:
        raise EndpointError(
            f"the endpoint {endpoint.base_url} cannot be reached ({type(exc).__name__}: {exc})"
        ) from None
    if response.status_code in (401, 403):
        raise EndpointError(
            f"the endpoint {endpoint.base_url} refused the key (HTTP {response.status_code}); "
            f"check the variable {endpoint.api_key_env}"
        )


__all__ = [
    "BlockedByUncertain",
    "BudgetExhausted",
    "Completion",
    "Endpoint",
    "EndpointError",
    "LLMError",
    "PaidChat",
    "Prices",
    "ProviderRejected",
    "ProviderUnavailable",
    "RequestUncertain",
    "StopRequested",
    "answer_fields",
    "chat_body",
    "check_endpoint",
    "read_api_key",
    "worst_case_micro",
]

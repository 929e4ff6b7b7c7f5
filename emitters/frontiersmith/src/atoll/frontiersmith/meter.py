"""A loopback endpoint that puts a rollout agent's model requests through the run's ledger.

A coding agent in a rollout talks to an OpenAI-compatible endpoint on its
own. Pointed here instead of at `--base-url`, each of its chat requests is
sent by the run's `PaidChat`: reserved at its worst case before dispatch,
settled on the answer, left uncertain (never re-sent) when the answer is
lost, replayed from its receipt when an identical request was answered
before. The agent's stream is served from the whole answer: the provider is
asked without streaming (a receipt needs the whole response), and the
answer is sent back as the `chat.completion.chunk` events the agent expects
(atoll-core's `chat_stream`, which `atoll tinker serve` streams with too).
Served by starlette on uvicorn (see `loopback`), which reads the HTTP,
chunked request bodies included.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator
from typing import Any

from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from atoll.core.ledger import BudgetExhausted
from atoll.core.llm import (
    BlockedByUncertain,
    PaidChat,
    ProviderRejected,
    ProviderUnavailable,
    RequestUncertain,
    StopRequested,
)
from atoll.core.portable import chat_stream
from atoll.frontiersmith import loopback

MAX_BODY_BYTES = 64 * 1024 * 1024
# Every method reaches `_route`, which answers all but POST .../chat/completions with a 404.
METHODS = ["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"]


class BodyTooLarge(ValueError):
    """A request body over the endpoint's limit: refused before the rest of it is read."""

    def __init__(self) -> None:
        super().__init__("the body is too large")


def _error(status: int, message: str) -> Response:
    return JSONResponse({"error": {"message": message}}, status_code=status)


async def _body(request: Request, limit: int) -> bytes:
    """The request's body, refused past `limit` bytes, declared or sent in chunks."""
    declared = request.headers.get("content-length")
    if declared is not None and int(declared) > limit:
        raise BodyTooLarge
    body = bytearray()
    async for piece in request.stream():
        body += piece
        if len(body) > limit:
            raise BodyTooLarge
    return bytes(body)


class MeteredEndpoint:
    """`base_url` serves POST /chat/completions through `chat`; every receipt labelled `label`."""

    def __init__(
        self,
        chat: PaidChat,
        label: str,
        max_completion_tokens: int,
        max_body_bytes: int = MAX_BODY_BYTES,
    ) -> None:
        self.chat = chat
        self.label = label
        self.max_completion_tokens = max_completion_tokens
        self.max_body_bytes = max_body_bytes
        self.base_url = ""

    @contextlib.asynccontextmanager
    async def serving(self, port: int = 0) -> AsyncIterator[MeteredEndpoint]:
        """Serve on loopback `port` when it is free (a resumed search asks for its own), else any."""
        app = Starlette(routes=[Route("/{path:path}", self._route, methods=METHODS)])
        async with loopback.serving(app, port) as bound:
            self.base_url = f"http://127.0.0.1:{bound}/v1"
            yield self

    async def _route(self, request: Request) -> Response:
        """Any path ending in /chat/completions (with or without /v1), as agents' clients vary."""
        method, path = request.method, request.url.path
        if method != "POST" or not path.rstrip("/").endswith("/chat/completions"):
            return _error(404, f"no route {method} {path}")
        try:
            return await self._complete(await _body(request, self.max_body_bytes))
        except BodyTooLarge as exc:
            refused = _error(400, f"bad request: {exc}")
            refused.headers["connection"] = "close"  # the rest of the body is never read
            return refused
        except ValueError as exc:
            return _error(400, f"bad request: {exc}")

    def _bound(self, request: dict[str, Any]) -> int:
        """The completion bound sent and reserved: the agent's own, never above the run's.

        `--max-completion-tokens` bounds every reservation of the run, a
        rollout agent's included; an agent asking for more (Pi asks for the
        model's whole output window) is held to it, one asking for less keeps
        its own.
        """
        asked = request.pop("max_tokens", None)
        asked = request.get("max_completion_tokens") or asked
        if asked is None:
            return self.max_completion_tokens
        try:
            wanted = int(asked)
        except (TypeError, ValueError):
            raise ValueError(f"max_tokens {asked!r} is not a whole number") from None
        if wanted < 1:
            raise ValueError(f"max_tokens {asked!r} is not a positive number")
        return min(wanted, self.max_completion_tokens)

    async def _complete(self, raw: bytes) -> Response:
        request = json.loads(raw or b"{}")
        if not isinstance(request, dict):
            raise ValueError("the body is not a JSON object")
        stream = bool(request.pop("stream", False))
        usage_chunk = bool((request.pop("stream_options", None) or {}).get("include_usage"))
        request["max_completion_tokens"] = self._bound(request)
        try:
            completion = await self.chat.complete(request, label=self.label)
        except ProviderRejected as exc:
            return _error(exc.status, str(exc))
        except (RequestUncertain, BlockedByUncertain) as exc:
            return _error(502, f"answer lost, not re-sent: {exc}")
        except (ProviderUnavailable, StopRequested, BudgetExhausted) as exc:
            return _error(503, str(exc))
        response = self.chat.ledger.receipt(completion.receipt_id).response or {}
        if not stream:
            return JSONResponse(response)
        return StreamingResponse(
            chat_stream.events(response, usage_chunk),
            media_type="text/event-stream",
            headers={"cache-control": "no-cache"},
        )

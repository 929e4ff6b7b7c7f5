"""A loopback endpoint that puts a rollout agent's model requests through the run's ledger.

A coding agent in a rollout talks to an OpenAI-compatible endpoint on its
own. Pointed here instead of at `--base-url`, each of its chat requests is
sent by the run's `PaidChat`: reserved at its worst case before dispatch,
settled on the answer, left uncertain (never re-sent) when the answer is
lost, replayed from its receipt when an identical request was answered
before. The agent's stream is served from the whole answer: the provider is
asked without streaming (a receipt needs the whole response), and the
answer is sent back as the `chat.completion.chunk` events the agent expects.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import time
from collections.abc import AsyncIterator
from typing import Any

from atoll.core.ledger import BudgetExhausted
from atoll.core.llm import (
    BlockedByUncertain,
    PaidChat,
    ProviderRejected,
    ProviderUnavailable,
    RequestUncertain,
    StopRequested,
)

MAX_BODY_BYTES = 64 * 1024 * 1024


class MeteredEndpoint:
    """`base_url` serves POST /chat/completions through `chat`; every receipt labelled `label`."""

    def __init__(self, chat: PaidChat, label: str, max_completion_tokens: int) -> None:
        self.chat = chat
        self.label = label
        self.max_completion_tokens = max_completion_tokens
        self.base_url = ""

    @contextlib.asynccontextmanager
    async def serving(self, port: int = 0) -> AsyncIterator[MeteredEndpoint]:
        """Serve on loopback `port` when it is free (a resumed search asks for its own), else any."""
        try:
            server = await asyncio.start_server(self._connection, "127.0.0.1", port)
        except OSError:
            if not port:
                raise
            server = await asyncio.start_server(self._connection, "127.0.0.1", 0)
        port = server.sockets[0].getsockname()[1]
        self.base_url = f"http://127.0.0.1:{port}/v1"
        try:
            yield self
        finally:
            server.close()
            await server.wait_closed()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            method, path, body = await _read_request(reader)
            if method == "POST" and path.rstrip("/").endswith("/chat/completions"):
                await self._complete(body, writer)
            else:
                _write_json(writer, 404, {"error": {"message": f"no route {method} {path}"}})
        except (ValueError, asyncio.IncompleteReadError) as exc:
            _write_json(writer, 400, {"error": {"message": f"bad request: {exc}"}})
        finally:
            with contextlib.suppress(ConnectionError):
                await writer.drain()
            writer.close()

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

    async def _complete(self, raw: bytes, writer: asyncio.StreamWriter) -> None:
        request = json.loads(raw or b"{}")
        if not isinstance(request, dict):
            raise ValueError("the body is not a JSON object")
        stream = bool(request.pop("stream", False))
        usage_chunk = bool((request.pop("stream_options", None) or {}).get("include_usage"))
        request["max_completion_tokens"] = self._bound(request)
        try:
            completion = await self.chat.complete(request, label=self.label)
        except ProviderRejected as exc:
            _write_json(writer, exc.status, {"error": {"message": str(exc)}})
            return
        except (RequestUncertain, BlockedByUncertain) as exc:
            _write_json(writer, 502, {"error": {"message": f"answer lost, not re-sent: {exc}"}})
            return
        except (ProviderUnavailable, StopRequested, BudgetExhausted) as exc:
            _write_json(writer, 503, {"error": {"message": str(exc)}})
            return
        response = self.chat.ledger.receipt(completion.receipt_id).response or {}
        if not stream:
            _write_json(writer, 200, response)
            return
        writer.write(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
            b"Cache-Control: no-cache\r\nConnection: close\r\n\r\n"
        )
        for chunk in stream_chunks(response, usage_chunk):
            writer.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
        writer.write(b"data: [DONE]\n\n")


def stream_chunks(response: dict[str, Any], with_usage: bool) -> list[dict[str, Any]]:
    """A whole chat completion as the chunk events of its stream."""
    base = {
        "id": response.get("id", "chatcmpl-metered"),
        "object": "chat.completion.chunk",
        "created": response.get("created", int(time.time())),
        "model": response.get("model", ""),
    }
    choices = response.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message") or {}
    delta: dict[str, Any] = {"role": "assistant", "content": message.get("content") or ""}
    for key in ("reasoning_content", "reasoning"):
        if message.get(key):
            delta[key] = message[key]
    calls = message.get("tool_calls") or []
    if calls:
        delta["tool_calls"] = [{"index": i, **call} for i, call in enumerate(calls)]
    chunks = [
        {**base, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {
            **base,
            "choices": [{"index": 0, "delta": {}, "finish_reason": choice.get("finish_reason")}],
        },
    ]
    if with_usage and response.get("usage"):
        chunks.append({**base, "choices": [], "usage": response["usage"]})
    return chunks


async def _read_request(reader: asyncio.StreamReader) -> tuple[str, str, bytes]:
    head = await reader.readuntil(b"\r\n\r\n")
    lines = head.decode("latin-1").split("\r\n")
    method, path, _ = lines[0].split(" ", 2)
    headers = {}
    for line in lines[1:]:
        if ":" in line:
            name, value = line.split(":", 1)
            headers[name.strip().lower()] = value.strip()
    if headers.get("transfer-encoding", "").lower() == "chunked":
        body = bytearray()
        while True:
            size = int((await reader.readuntil(b"\r\n")).split(b";")[0].strip(), 16)
            if size == 0:
                await reader.readuntil(b"\r\n")
                break
            body += await reader.readexactly(size)
            await reader.readexactly(2)
            if len(body) > MAX_BODY_BYTES:
                raise ValueError("the body is too large")
        return method, path, bytes(body)
    length = int(headers.get("content-length") or 0)
    if length > MAX_BODY_BYTES:
        raise ValueError("the body is too large")
    return method, path, await reader.readexactly(length) if length else b""


def _write_json(writer: asyncio.StreamWriter, status: int, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    writer.write(
        f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
        f"Content-Type: application/json\r\nContent-Length: {len(data)}\r\n"
        "Connection: close\r\n\r\n".encode()
        + data
    )

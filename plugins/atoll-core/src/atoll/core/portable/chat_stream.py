"""A whole chat completion as the `chat.completion.chunk` events OpenAI streams.

Standard library only (see `atoll.core.portable`): FrontierSmith's metered
endpoint replays a provider's whole answer as a stream, and `atoll tinker
serve`'s server, run by the managed Python 3.11, streams the reply it
sampled. Both write their stream here, so an agent folds the same deltas
from either: the role first; the reasoning and the content in pieces; each
tool call as a delta with its index, id and name, then its arguments in
pieces; the finish reason; the usage (empty choices) when the request asked
for it; `data: [DONE]`.
"""

from __future__ import annotations

import json
import time
import uuid
from collections.abc import Iterator
from typing import Any

__all__ = ["DONE", "PIECE", "chunks", "events", "sse"]

DONE = "[DONE]"
PIECE = 24  # characters a delta carries, about a few tokens, as a provider's stream does
REASONING_KEYS = ("reasoning_content", "reasoning")  # DeepSeek's and vLLM's, OpenRouter's


def _pieces(text: Any, size: int) -> Iterator[Any]:
    """`text` in pieces of `size` characters; anything but a string, whole."""
    if not text:
        return
    if not isinstance(text, str):
        yield text
        return
    for start in range(0, len(text), size):
        yield text[start : start + size]


def _call_deltas(index: int, call: Any, piece: int) -> Iterator[dict[str, Any]]:
    """One tool call: every field but the arguments first, then the arguments in pieces."""
    call = call if isinstance(call, dict) else {}
    function = call.get("function")
    function = function if isinstance(function, dict) else {}
    arguments = function.get("arguments")
    if arguments is not None and not isinstance(arguments, str):
        arguments = json.dumps(arguments)
    head = {key: value for key, value in call.items() if key not in ("index", "function")}
    head.setdefault("type", "function")
    yield {"index": index, **head, "function": {**function, "arguments": ""}}
    for text in _pieces(arguments, piece):
        yield {"index": index, "function": {"arguments": text}}


def chunks(
    completion: dict[str, Any], include_usage: bool, piece: int = PIECE
) -> Iterator[dict[str, Any]]:
    """The first choice of a `chat.completion` object as its stream's chunk objects.

    The chunks carry the completion's id, creation time and model (a new id
    and the time now where it has none); the usage chunk comes only when
    `include_usage` asks for it and the completion has a usage.
    """
    base = {
        "id": completion.get("id") or "chatcmpl-" + uuid.uuid4().hex[:24],
        "object": "chat.completion.chunk",
        "created": completion.get("created") or int(time.time()),
        "model": completion.get("model") or "",
    }
    choices = completion.get("choices") or [{}]
    choice = choices[0] if isinstance(choices[0], dict) else {}
    message = choice.get("message")
    message = message if isinstance(message, dict) else {}

    def chunk(delta: dict[str, Any], finish: Any = None) -> dict[str, Any]:
        return {
            **base,
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish, "logprobs": None}],
        }

    yield chunk({"role": "assistant", "content": ""})
    for key in REASONING_KEYS:
        for text in _pieces(message.get(key), piece):
            yield chunk({key: text})
    for text in _pieces(message.get("content"), piece):
        yield chunk({"content": text})
    for index, call in enumerate(message.get("tool_calls") or []):
        for delta in _call_deltas(index, call, piece):
            yield chunk({"tool_calls": [delta]})
    yield chunk({}, choice.get("finish_reason"))
    if include_usage and completion.get("usage"):
        yield {**base, "choices": [], "usage": completion["usage"]}


def sse(data: dict[str, Any] | str) -> bytes:
    """One server-sent event: `data: <json>` (or `data: [DONE]`) and a blank line."""
    text = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
    return f"data: {text}\n\n".encode()


def events(completion: dict[str, Any], include_usage: bool, piece: int = PIECE) -> Iterator[bytes]:
    """The whole stream as server-sent events, ending with `data: [DONE]`."""
    for chunk in chunks(completion, include_usage, piece):
        yield sse(chunk)
    yield sse(DONE)

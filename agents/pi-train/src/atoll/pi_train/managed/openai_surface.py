"""The OpenAI chat-completions surface of `atoll tinker serve`, apart from Tinker.

Standard library only, so that both sides use the same module: the managed
Python 3.11 server (`openai_serve.py`, which imports it from its own folder)
turns requests into a renderer's messages and sampled tokens back into a
`Reply`; this module checks the request and writes the reply as a
`chat.completion` (streamed, that object becomes its chunk events through
`atoll.core.portable.chat_stream`, which FrontierSmith's metered endpoint
streams with too). A request the surface cannot serve is a `RequestError`
(an HTTP 400 with OpenAI's error body); what the model wrote is never one.
"""

from __future__ import annotations

import json
import time
import uuid
from dataclasses import dataclass, field, replace
from typing import Any

ROLES = ("system", "developer", "user", "assistant", "tool")


class RequestError(Exception):
    """A request this server cannot serve; the message names the field."""

    def __init__(self, message: str, status: int = 400, kind: str = "invalid_request_error"):
        super().__init__(message)
        self.status = status
        self.kind = kind


@dataclass(frozen=True)
class ChatRequest:
    """A checked request: messages with text content, tool specs, sampling settings."""

    model: str
    messages: list[dict[str, Any]]
    tools: list[dict[str, Any]]
    max_tokens: int | None
    temperature: float
    stop: list[str]
    stream: bool
    include_usage: bool


@dataclass(frozen=True)
class Reply:
    """What the model answered, as the renderer parsed it, and the token counts."""

    content: str
    tool_calls: list[dict[str, str]] = field(default_factory=list)  # id, name, arguments
    reasoning: str | None = None
    finish_reason: str = "stop"  # stop | length | tool_calls
    prompt_tokens: int = 0
    completion_tokens: int = 0


def error_body(message: str, kind: str = "invalid_request_error") -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None, "code": None}}


def _text(content: Any, where: str) -> str:
    """A message's text: a string, or the text parts of a content list joined."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts = []
        for part in content:
            if not isinstance(part, dict) or part.get("type") != "text":
                kind = part.get("type") if isinstance(part, dict) else type(part).__name__
                raise RequestError(f"{where}: only text content is served (got a {kind!r} part)")
            texts.append(str(part.get("text") or ""))
        return "".join(texts)
    raise RequestError(f"{where}: content must be a string or a list of text parts")


def _tool_calls(calls: Any, where: str) -> list[dict[str, str]]:
    if calls is None:
        return []
    if not isinstance(calls, list):
        raise RequestError(f"{where}.tool_calls must be a list")
    found = []
    for i, call in enumerate(calls):
        function = call.get("function") if isinstance(call, dict) else None
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise RequestError(f"{where}.tool_calls[{i}] needs function.name")
        arguments = function.get("arguments")
        if not isinstance(arguments, str):
            arguments = json.dumps(arguments if arguments is not None else {})
        found.append(
            {"id": str(call.get("id") or ""), "name": function["name"], "arguments": arguments}
        )
    return found


def _message(raw: Any, index: int) -> dict[str, Any]:
    where = f"messages[{index}]"
    if not isinstance(raw, dict):
        raise RequestError(f"{where} must be an object")
    role = raw.get("role")
    if role not in ROLES:
        raise RequestError(f"{where}.role must be one of {', '.join(ROLES)} (got {role!r})")
    message: dict[str, Any] = {
        "role": "system" if role == "developer" else role,
        "content": _text(raw.get("content"), where),
    }
    if role == "assistant":
        message["tool_calls"] = _tool_calls(raw.get("tool_calls"), where)
    if role == "tool":
        message["tool_call_id"] = str(raw.get("tool_call_id") or "")
        if isinstance(raw.get("name"), str):
            message["name"] = raw["name"]
    return message


def _tools(raw: Any) -> list[dict[str, Any]]:
    if raw is None:
        return []
    if not isinstance(raw, list):
        raise RequestError("tools must be a list")
    specs = []
    for i, tool in enumerate(raw):
        function = tool.get("function") if isinstance(tool, dict) else None
        if not isinstance(tool, dict) or tool.get("type", "function") != "function":
            raise RequestError(f"tools[{i}]: only function tools are served")
        if not isinstance(function, dict) or not isinstance(function.get("name"), str):
            raise RequestError(f"tools[{i}] needs function.name")
        specs.append(
            {
                "name": function["name"],
                "description": str(function.get("description") or ""),
                "parameters": function.get("parameters") or {"type": "object", "properties": {}},
            }
        )
    return specs


def _stop(raw: Any) -> list[str]:
    if raw is None:
        return []
    if isinstance(raw, str):
        return [raw] if raw else []
    if isinstance(raw, list) and all(isinstance(s, str) for s in raw):
        return [s for s in raw if s]
    raise RequestError("stop must be a string or a list of strings")


def parse_request(body: Any, served_model: str, max_tokens_cap: int | None) -> ChatRequest:
    """A checked request, or RequestError naming what is wrong."""
    if not isinstance(body, dict):
        raise RequestError("the request body must be a JSON object")
    model = body.get("model")
    if model != served_model:
        raise RequestError(
            f"model {model!r} is not served here (this server serves {served_model!r})",
            status=404,
            kind="not_found_error",
        )
    messages = body.get("messages")
    if not isinstance(messages, list) or not messages:
        raise RequestError("messages must be a non-empty list")
    n = body.get("n", 1)
    if n not in (1, None):
        raise RequestError("n: one choice per request is served")
    # OpenAI's newer name wins; a null one (some clients send it) leaves max_tokens in force.
    limit = body.get("max_completion_tokens")
    if limit is None:
        limit = body.get("max_tokens")
    if limit is not None and (not isinstance(limit, int) or isinstance(limit, bool) or limit < 1):
        raise RequestError("max_tokens must be a positive integer")
    if max_tokens_cap is not None:
        limit = max_tokens_cap if limit is None else min(limit, max_tokens_cap)
    temperature = body.get("temperature", 1.0)
    if temperature is None:
        temperature = 1.0
    if (
        not isinstance(temperature, int | float)
        or isinstance(temperature, bool)
        or not 0 <= temperature <= 2
    ):
        raise RequestError("temperature must be a number between 0 and 2")
    options = body.get("stream_options") or {}
    return ChatRequest(
        model=model,
        messages=[_message(m, i) for i, m in enumerate(messages)],
        tools=_tools(body.get("tools")),
        max_tokens=limit,
        temperature=float(temperature),
        stop=_stop(body.get("stop")),
        stream=bool(body.get("stream")),
        include_usage=bool(isinstance(options, dict) and options.get("include_usage")),
    )


def apply_stop(reply: Reply, stop: list[str]) -> Reply:
    """Cut the content at the first of the request's stop strings, as OpenAI does.

    Tinker stops on the renderer's end-of-message token; a caller's own stop
    strings are applied to the parsed text. A reply cut there ends before any
    tool call it went on to make, so those are dropped with the rest.
    """
    cut = min((i for s in stop if (i := reply.content.find(s)) >= 0), default=-1)
    if cut < 0:
        return reply
    return replace(reply, content=reply.content[:cut], tool_calls=[], finish_reason="stop")


def new_id() -> str:
    return "chatcmpl-" + uuid.uuid4().hex[:24]


def _usage(reply: Reply) -> dict[str, int]:
    return {
        "prompt_tokens": reply.prompt_tokens,
        "completion_tokens": reply.completion_tokens,
        "total_tokens": reply.prompt_tokens + reply.completion_tokens,
    }


def _openai_tool_calls(reply: Reply) -> list[dict[str, Any]]:
    return [
        {
            "id": call["id"],
            "type": "function",
            "function": {"name": call["name"], "arguments": call["arguments"]},
        }
        for call in reply.tool_calls
    ]


def completion(reply: Reply, model: str, completion_id: str | None = None) -> dict[str, Any]:
    """The whole reply as one `chat.completion` object."""
    message: dict[str, Any] = {"role": "assistant", "content": reply.content}
    if reply.reasoning:
        message["reasoning_content"] = reply.reasoning
    if reply.tool_calls:
        message["tool_calls"] = _openai_tool_calls(reply)
    return {
        "id": completion_id or new_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {"index": 0, "message": message, "finish_reason": reply.finish_reason, "logprobs": None}
        ],
        "usage": _usage(reply),
    }


def models_list(served_model: str, base_model: str, model_path: str | None) -> dict[str, Any]:
    """`/v1/models`: the one model served, with the base model and checkpoint it samples."""
    return {
        "object": "list",
        "data": [
            {
                "id": served_model,
                "object": "model",
                "created": 0,
                "owned_by": "atoll-tinker-serve",
                "root": base_model,
                "model_path": model_path,
            }
        ],
    }

"""Scripted models for the Pi tests: one reply per model turn, tool calls included."""

from __future__ import annotations

from typing import Any

from support.openai_server import Reply, Script, ToolCall


def call(name: str, **arguments: Any) -> Reply:
    """A turn that calls one of Pi's tools."""
    return Reply(tool_calls=(ToolCall(name, arguments),), completion_tokens=12)


def say(text: str) -> Reply:
    """A final turn: text, no tool call."""
    return Reply(content=text, completion_tokens=6)


def turns(*replies: Reply) -> Script:
    """The model's n-th turn (counted by the assistant messages it was sent) gets replies[n].

    Past the last reply it keeps repeating the last one.
    """

    def script(request: dict[str, Any]) -> Reply:
        done = sum(1 for m in request.get("messages") or [] if m.get("role") == "assistant")
        return replies[min(done, len(replies) - 1)]

    return script

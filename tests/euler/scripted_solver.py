"""A scripted model for Euler rollouts: per problem and language, a fixed sequence of tool calls.

The script reads which problem (or transfer task) and language the prompt
assigns, plays that scenario's tool calls one turn at a time, and at the end
states the last non-empty line of the last tool result, as an honest model
reports what its program printed.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from support.openai_server import Reply, ToolCall

Steps = list[Reply]


def call(name: str, **arguments: Any) -> Reply:
    return Reply(tool_calls=(ToolCall(name, arguments),), completion_tokens=12)


def write(path: str, content: str) -> Reply:
    return call("write", path=path, content=content)


def bash(command: str) -> Reply:
    return call("bash", command=command)


def read(path: str) -> Reply:
    return call("read", path=path)


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    return "\n".join(str(part.get("text", "")) for part in content or [] if isinstance(part, dict))


def assignment(request: dict[str, Any]) -> tuple[str, str]:
    """(problem key, language) from the first user message: ("p1", "python"), ("t:filtered-logs", ...)."""
    prompt = next(
        (_text(m.get("content")) for m in request.get("messages") or [] if m.get("role") == "user"),
        "",
    )
    problem = re.search(r"^## Problem (\d+):", prompt, re.M)
    task = re.search(r"^## Task: (.+)$", prompt, re.M)
    key = f"p{problem.group(1)}" if problem else f"t:{task.group(1).strip()}" if task else "?"
    language = "javascript" if "JavaScript" in prompt else "python"
    return key, language


def solver(
    scenarios: Callable[[str, str, str], Steps], delay_s: float = 0.0
) -> Callable[[dict[str, Any]], Reply]:
    """The script for the provider: scenarios(key, language, model) gives the steps."""

    def script(request: dict[str, Any]) -> Reply:
        key, language = assignment(request)
        steps = scenarios(key, language, str(request.get("model")))
        messages = request.get("messages") or []
        done = sum(1 for m in messages if m.get("role") == "assistant")
        if done < len(steps):
            step = steps[done]
            return Reply(
                content=step.content,
                tool_calls=step.tool_calls,
                completion_tokens=12,
                delay_s=delay_s,
            )
        results = [_text(m.get("content")) for m in messages if m.get("role") == "tool"]
        lines = [line for line in (results[-1] if results else "").splitlines() if line.strip()]
        return Reply(
            content=f"The program printed {lines[-1].strip() if lines else 'nothing'}.",
            delay_s=delay_s,
        )

    return script

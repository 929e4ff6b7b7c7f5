"""Helpers of the Pi tests: scripted models (one reply per model turn) and what to look for."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from support.openai_server import Reply, Script, ToolCall

from atoll.pi import container

TASKS = Path(__file__).parent / "tasks"
KEY_ENV = "ATOLL_PI_TEST_KEY"


def rollout_containers(client: Any, rollout_id: str) -> list[str]:
    """Ids of the engine's containers (running or not) of one rollout."""
    found = client.api.containers(all=True, filters={"label": f"{container.LABEL}={rollout_id}"})
    return [entry["Id"] for entry in found]


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

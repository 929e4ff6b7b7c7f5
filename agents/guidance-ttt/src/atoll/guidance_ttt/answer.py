"""One model answer as the run records it, whichever endpoint gave it.

The executor (through the `openai` SDK) and the guidance model (through
Reef's OpenAI-compatible proxy) both answer with a chat completion. What the
run keeps of it (the text, the reasoning under either field name servers use,
the finish reason, the completion tokens) and how that is journaled must be
the same for both, so it is read and written here once.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol


class ModelAnswer(Protocol):
    content: str
    reasoning: str | None
    finish_reason: str | None
    completion_tokens: int | None


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


def answer_to_json(answer: ModelAnswer) -> dict[str, Any]:
    return {
        "content": answer.content,
        "reasoning": answer.reasoning,
        "finish_reason": answer.finish_reason,
        "completion_tokens": answer.completion_tokens,
    }


def answer_from_json(data: Mapping[str, Any]) -> dict[str, Any]:
    """The keyword arguments that rebuild an answer from its `answer_to_json` form."""
    return {
        "content": str(data["content"]),
        "reasoning": data.get("reasoning"),
        "finish_reason": data.get("finish_reason"),
        "completion_tokens": data.get("completion_tokens"),
    }

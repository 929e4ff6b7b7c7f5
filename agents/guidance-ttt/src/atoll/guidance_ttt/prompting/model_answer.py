"""One model answer as the run records it, whichever endpoint gave it.

The executor (through the `openai` SDK) and the guidance model (through
Reef's OpenAI-compatible proxy) both answer with a chat completion. What the
run keeps of it (the text, the reasoning under either field name servers use,
the finish reason, the completion tokens) and how that is journaled must be
the same for both, so it is written here once, and read by atoll.core's
`answer_fields`, which every chat-completion reader shares.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from atoll.core.llm import answer_fields

__all__ = ["ModelAnswer", "answer_fields", "answer_from_json", "answer_to_json"]


class ModelAnswer(Protocol):
    """What the run reads of an answer; read-only, so frozen records satisfy it."""

    @property
    def content(self) -> str: ...

    @property
    def reasoning(self) -> str | None: ...

    @property
    def finish_reason(self) -> str | None: ...

    @property
    def completion_tokens(self) -> int | None: ...


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

"""`atoll.core.portable.chat_stream`: a provider's whole completion as the stream an agent folds.

The metered endpoint replays whatever a provider answered, so the stream
must carry a provider's own shapes too: OpenRouter's `reasoning` key, tool
calls with fields of their own (Gemini's thought signatures ride in one),
arguments sent as an object, a completion with no choice at all.
"""

from __future__ import annotations

import json
from typing import Any

from atoll.core.portable import chat_stream

SIGNED = {"google": {"thought_signature": "c2lnbmVk"}}
PROVIDER = {
    "id": "gen-17",
    "object": "chat.completion",
    "created": 1700000000,
    "model": "google/gemini-2.5-pro",
    "choices": [
        {
            "index": 0,
            "finish_reason": "tool_calls",
            "message": {
                "role": "assistant",
                "content": "Running the tests next.",
                "reasoning": "The fix is in parse(); the tests will say.",
                "tool_calls": [
                    {
                        "id": "tool_0",
                        "type": "function",
                        "extra_content": SIGNED,
                        "function": {"name": "bash", "arguments": {"command": "pytest -q"}},
                    }
                ],
            },
        }
    ],
    "usage": {"prompt_tokens": 40, "completion_tokens": 12, "total_tokens": 52},
}


def _fold(chunks: list[dict[str, Any]]) -> dict[str, Any]:
    """What a streaming client assembles: text per key, tool calls by index, finish, usage."""
    folded: dict[str, Any] = {"text": {}, "calls": {}, "finish": None, "usage": None}
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk" and chunk["id"] == "gen-17"
        folded["usage"] = chunk.get("usage") or folded["usage"]
        for choice in chunk["choices"]:
            folded["finish"] = choice["finish_reason"] or folded["finish"]
            for key, value in choice["delta"].items():
                if key == "tool_calls":
                    for delta in value:
                        slot = folded["calls"].setdefault(delta["index"], {"arguments": ""})
                        function = delta.get("function") or {}
                        slot["arguments"] += function.get("arguments") or ""
                        slot.update({k: v for k, v in delta.items() if k != "function"})
                        slot.update({k: v for k, v in function.items() if k != "arguments"})
                elif isinstance(value, str):
                    folded["text"][key] = folded["text"].get(key, "") + value
    return folded


def test_a_providers_completion_folds_back_whole_with_its_own_fields() -> None:
    chunks = list(chat_stream.chunks(PROVIDER, include_usage=True, piece=5))
    folded = _fold(chunks)
    message = PROVIDER["choices"][0]["message"]
    assert folded["text"]["role"] == "assistant"
    assert folded["text"]["content"] == message["content"]
    assert folded["text"]["reasoning"] == message["reasoning"]
    (call,) = folded["calls"].values()
    assert call["id"] == "tool_0" and call["name"] == "bash"
    assert call["extra_content"] == SIGNED  # the provider's own field reaches the agent
    assert json.loads(call["arguments"]) == {"command": "pytest -q"}  # an object sent as JSON text
    assert folded["finish"] == "tool_calls" and folded["usage"] == PROVIDER["usage"]
    assert chunks[-1]["choices"] == []
    pieces = [c["choices"][0]["delta"].get("content") for c in chunks if c["choices"]]
    assert [p for p in pieces if p] == ["Runni", "ng th", "e tes", "ts ne", "xt."]


def test_usage_only_when_asked_and_a_choiceless_completion_still_ends() -> None:
    asked = [c for c in chat_stream.chunks(PROVIDER, include_usage=False) if "usage" in c]
    assert asked == []
    events = list(chat_stream.events({"id": "gen-17", "choices": []}, include_usage=True))
    assert events[-1] == b"data: [DONE]\n\n"
    chunks = [json.loads(e.removeprefix(b"data: ")) for e in events[:-1]]
    assert [c["choices"][0]["delta"] for c in chunks] == [{"role": "assistant", "content": ""}, {}]
    assert chunks[-1]["choices"][0]["finish_reason"] is None and chunks[0]["model"] == ""

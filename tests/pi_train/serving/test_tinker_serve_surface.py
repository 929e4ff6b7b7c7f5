"""The OpenAI surface of `atoll tinker serve`: requests it takes and refuses, replies, streaming.

`openai_surface` is the part of the server that speaks OpenAI's protocol;
the renderer's side (prompt tokens, parsing) is tested against the real
cookbook renderer in test_tinker_serve.py. The server streams the whole
reply through atoll-core's `chat_stream`; its chunks are folded back into a
message here as an OpenAI client folds them, and must give the same message
as the non-streamed reply.
"""

from __future__ import annotations

import json
from typing import Any

import pytest

from atoll.core.portable import chat_stream
from atoll.pi_train.managed import openai_surface as surface
from atoll.pi_train.managed.openai_surface import Reply, RequestError

MODEL = "tiny"

PI_LIKE = {
    "model": MODEL,
    "stream": True,
    "stream_options": {"include_usage": True},
    "max_completion_tokens": 512,
    "store": False,
    "messages": [
        {"role": "developer", "content": "You are Pi."},
        {
            "role": "user",
            "content": [{"type": "text", "text": "Sum "}, {"type": "text", "text": "it."}],
        },
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"command": "ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "data.txt\n"},
    ],
    "tools": [
        {
            "type": "function",
            "function": {
                "name": "bash",
                "description": "Run a command.",
                "parameters": {"type": "object", "properties": {"command": {"type": "string"}}},
            },
        }
    ],
}


def test_a_request_as_pi_sends_it_is_taken_whole() -> None:
    request = surface.parse_request(PI_LIKE, MODEL, None)
    assert request.stream and request.include_usage
    assert request.max_tokens == 512
    assert [m["role"] for m in request.messages] == ["system", "user", "assistant", "tool"]
    assert request.messages[1]["content"] == "Sum it."
    assert request.messages[2]["content"] == ""
    assert request.messages[2]["tool_calls"] == [
        {"id": "call_1", "name": "bash", "arguments": '{"command": "ls"}'}
    ]
    assert request.messages[3]["tool_call_id"] == "call_1"
    assert request.tools[0]["name"] == "bash"
    assert request.tools[0]["parameters"]["properties"]["command"] == {"type": "string"}


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ({}, (None, 1.0, [])),
        ({"max_tokens": 64, "temperature": 0, "stop": "END"}, (64, 0.0, ["END"])),
        ({"max_tokens": 64, "stop": ["a", "b"], "temperature": 0.7}, (64, 0.7, ["a", "b"])),
        ({"temperature": None, "stop": None}, (None, 1.0, [])),
        ({"max_completion_tokens": 48, "max_tokens": 64}, (48, 1.0, [])),
        # a null max_completion_tokens (some clients send every field) leaves max_tokens
        ({"max_completion_tokens": None, "max_tokens": 64}, (64, 1.0, [])),
    ],
)
def test_sampling_settings_are_read(extra: dict[str, Any], expected: tuple[Any, ...]) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **extra}
    request = surface.parse_request(body, MODEL, None)
    assert (request.max_tokens, request.temperature, request.stop) == expected
    assert request.tools == [] and not request.stream


def test_the_server_cap_bounds_max_tokens() -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}]}
    assert surface.parse_request(body, MODEL, 32).max_tokens == 32
    assert surface.parse_request({**body, "max_tokens": 8}, MODEL, 32).max_tokens == 8
    assert surface.parse_request({**body, "max_tokens": 800}, MODEL, 32).max_tokens == 32


@pytest.mark.parametrize(
    ("change", "message", "status"),
    [
        ({"model": "other"}, "model 'other' is not served here", 404),
        ({"messages": []}, "messages must be a non-empty list", 400),
        ({"n": 2}, "one choice per request", 400),
        ({"max_tokens": 0}, "max_tokens must be a positive integer", 400),
        ({"temperature": 3}, "temperature must be a number between 0 and 2", 400),
        ({"stop": [1]}, "stop must be a string or a list of strings", 400),
        (
            {"messages": [{"role": "user", "content": [{"type": "image_url"}]}]},
            "only text content is served",
            400,
        ),
        ({"messages": [{"role": "robot", "content": "x"}]}, "messages[0].role must be one of", 400),
        ({"tools": [{"type": "retrieval"}]}, "only function tools are served", 400),
    ],
)
def test_requests_it_cannot_serve_are_refused_with_the_field_named(
    change: dict[str, Any], message: str, status: int
) -> None:
    body = {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], **change}
    with pytest.raises(RequestError) as caught:
        surface.parse_request(body, MODEL, None)
    assert message in str(caught.value)
    assert caught.value.status == status


def _fold(chunks: list[dict[str, Any]]) -> tuple[dict[str, Any], str | None, dict[str, Any] | None]:
    """The message, finish reason and usage a streaming client assembles from the chunks."""
    message: dict[str, Any] = {
        "role": None,
        "content": "",
        "reasoning_content": "",
        "tool_calls": [],
    }
    finish, usage = None, None
    for chunk in chunks:
        assert chunk["object"] == "chat.completion.chunk"
        if chunk.get("usage"):
            assert chunk["choices"] == []
            usage = chunk["usage"]
        for choice in chunk["choices"]:
            delta = choice["delta"]
            message["role"] = delta.get("role", message["role"])
            message["content"] += delta.get("content") or ""
            message["reasoning_content"] += delta.get("reasoning_content") or ""
            for call in delta.get("tool_calls") or []:
                calls = message["tool_calls"]
                while len(calls) <= call["index"]:
                    calls.append({"id": None, "name": "", "arguments": ""})
                slot = calls[call["index"]]
                slot["id"] = call.get("id") or slot["id"]
                slot["name"] += (call.get("function") or {}).get("name") or ""
                slot["arguments"] += (call.get("function") or {}).get("arguments") or ""
            finish = choice["finish_reason"] or finish
    return message, finish, usage


TOOL_REPLY = Reply(
    content="Let me look at the files first, then write the program.",
    tool_calls=[
        {"id": "call_a", "name": "bash", "arguments": json.dumps({"command": "ls -la"})},
        {
            "id": "call_b",
            "name": "write",
            "arguments": json.dumps({"path": "solution.py", "content": "print(sum(range(10)))\n"}),
        },
    ],
    reasoning="The data is in a file.",
    finish_reason="tool_calls",
    prompt_tokens=321,
    completion_tokens=45,
)


def test_a_streamed_reply_folds_into_the_same_message_as_the_whole_one() -> None:
    whole = surface.completion(TOOL_REPLY, MODEL)
    streamed = list(chat_stream.chunks(whole, include_usage=True, piece=7))
    message, finish, usage = _fold(streamed)
    expected = whole["choices"][0]["message"]
    assert message["role"] == "assistant"
    assert message["content"] == expected["content"]
    assert message["reasoning_content"] == expected["reasoning_content"]
    assert [(c["id"], c["name"], c["arguments"]) for c in message["tool_calls"]] == [
        (c["id"], c["function"]["name"], c["function"]["arguments"]) for c in expected["tool_calls"]
    ]
    assert finish == whole["choices"][0]["finish_reason"] == "tool_calls"
    assert (
        usage
        == whole["usage"]
        == {"prompt_tokens": 321, "completion_tokens": 45, "total_tokens": 366}
    )
    # Really streamed: the content and each call's arguments arrive in several pieces.
    assert sum(1 for c in streamed if c["choices"] and c["choices"][0]["delta"].get("content")) > 3
    assert all(len(c["id"]) > 8 and c["id"] == streamed[0]["id"] for c in streamed)


def test_usage_is_streamed_only_when_asked_and_always_in_the_whole_reply() -> None:
    reply = Reply(content="42", prompt_tokens=10, completion_tokens=2)
    streamed = list(chat_stream.chunks(surface.completion(reply, MODEL), include_usage=False))
    assert all("usage" not in c for c in streamed)
    assert _fold(streamed)[:2] == (
        {"role": "assistant", "content": "42", "reasoning_content": "", "tool_calls": []},
        "stop",
    )
    whole = surface.completion(reply, MODEL)
    assert whole["usage"]["total_tokens"] == 12
    assert "tool_calls" not in whole["choices"][0]["message"]


def test_server_sent_events_are_data_lines_and_end_with_done() -> None:
    events = list(chat_stream.events(surface.completion(Reply(content="hi"), MODEL), True))
    for event in events[:-1]:
        assert event.startswith(b"data: {") and event.endswith(b"}\n\n")
        json.loads(event[len(b"data: ") :])
    assert events[-1] == b"data: [DONE]\n\n"


def test_a_stop_string_cuts_the_text_and_what_followed() -> None:
    cut = surface.apply_stop(TOOL_REPLY, ["first,", "never"])
    assert cut.content == "Let me look at the files "
    assert cut.tool_calls == [] and cut.finish_reason == "stop"
    assert cut.completion_tokens == TOOL_REPLY.completion_tokens
    assert surface.apply_stop(TOOL_REPLY, ["absent"]) == TOOL_REPLY
    assert surface.apply_stop(TOOL_REPLY, []) == TOOL_REPLY


def test_models_lists_the_served_model_with_its_checkpoint() -> None:
    listed = surface.models_list(MODEL, "/models/tiny", "tinker://run/sampler_weights/000001")
    assert [m["id"] for m in listed["data"]] == [MODEL]
    assert listed["data"][0]["model_path"] == "tinker://run/sampler_weights/000001"
    assert listed["data"][0]["root"] == "/models/tiny"

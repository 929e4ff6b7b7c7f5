"""The metered endpoint a rollout agent talks to: every request through the run's ledger.

The agent side is a real HTTP client (httpx, or the `openai` SDK) on
loopback; the provider is the scripted OpenAI server; between them the real
`PaidChat` and ledger.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable
from pathlib import Path
from typing import Any

import httpx
import openai
from support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

from atoll.core.ledger import Ledger, State
from atoll.core.llm import Endpoint, PaidChat, Prices
from atoll.frontiersmith.meter import MAX_BODY_BYTES, MeteredEndpoint

CALL = Reply(tool_calls=(ToolCall("write", {"path": "a.py", "content": "print(1)"}),))


def _metered(
    tmp_path: Path, script, talk: Callable[[str], Awaitable[Any]], max_body_bytes: int | None = None
) -> tuple[Any, Ledger]:
    """What `talk(base_url)` returns, talking to a metered endpoint of a fresh ledger."""
    ledger = Ledger.create(tmp_path / "ledger.sqlite", 10**6)
    limit = {} if max_body_bytes is None else {"max_body_bytes": max_body_bytes}

    async def go(server: ScriptedOpenAIServer) -> Any:
        endpoint = Endpoint(base_url=server.base_url, model="m", api_key_env="K")
        chat = PaidChat(endpoint, Prices.of("1", "2"), ledger, api_key="k")
        meter = MeteredEndpoint(chat, "rollout:s1", 256, **limit)
        try:
            async with meter.serving():
                return await talk(meter.base_url)
        finally:
            await chat.aclose()

    with ScriptedOpenAIServer(script) as server:
        return asyncio.run(go(server)), ledger


def _exchange(tmp_path: Path, script, requests: list[dict]) -> tuple[list[httpx.Response], Ledger]:
    async def talk(base_url: str) -> list[httpx.Response]:
        async with httpx.AsyncClient(timeout=30) as client:
            return [await client.post(f"{base_url}/chat/completions", json=b) for b in requests]

    return _metered(tmp_path, script, talk)


def _events(response: httpx.Response) -> list[dict]:
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


def _tool_calls(events: list[dict]) -> list[dict]:
    """The tool calls a streaming client assembles from the events' deltas, by index."""
    calls: dict[int, dict] = {}
    for event in events:
        for choice in event["choices"]:
            for delta in choice["delta"].get("tool_calls") or []:
                slot = calls.setdefault(
                    delta["index"], {"index": delta["index"], "id": "", "name": "", "arguments": ""}
                )
                slot["id"] = delta.get("id") or slot["id"]
                slot["name"] += (delta.get("function") or {}).get("name") or ""
                slot["arguments"] += (delta.get("function") or {}).get("arguments") or ""
    return [calls[i] for i in sorted(calls)]


def test_a_streamed_tool_call_is_paid_once_and_streamed_back(tmp_path: Path) -> None:
    body = {
        "model": "m",
        "messages": [{"role": "user", "content": "write a.py"}],
        "stream": True,
        "stream_options": {"include_usage": True},
        "max_tokens": 100,
    }
    (first, again), ledger = _exchange(tmp_path, lambda request: CALL, [body, body])
    for response in (first, again):
        assert response.status_code == 200
        events = _events(response)
        assert events[0]["choices"][0]["delta"]["role"] == "assistant"
        (call,) = _tool_calls(events)
        assert call["index"] == 0 and call["name"] == "write" and call["id"]
        assert json.loads(call["arguments"])["path"] == "a.py"
        assert events[-2]["choices"][0]["finish_reason"] == "tool_calls"
        assert events[-1]["choices"] == []
        assert events[-1]["usage"]["completion_tokens"] == CALL.completion_tokens
    (receipt,) = ledger.receipts()  # the identical second request was replayed, not paid
    assert receipt.state is State.ANSWERED and receipt.label == "rollout:s1"
    assert receipt.request["max_completion_tokens"] == 100
    assert "stream" not in receipt.request and "max_tokens" not in receipt.request


def test_a_plain_request_gets_the_whole_answer(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    (response,), ledger = _exchange(tmp_path, lambda request: Reply(content="hello"), [body])
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "hello"
    (receipt,) = ledger.receipts()
    assert receipt.request["max_completion_tokens"] == 256  # the run's bound, none given


def test_refusals_and_lost_answers_reach_the_agent_as_errors(tmp_path: Path) -> None:
    bodies = [
        {"model": "m", "messages": [{"role": "user", "content": text}], "max_tokens": 10}
        for text in ("refused", "lost")
    ]

    def script(request: dict) -> Reply:
        if request["messages"][0]["content"] == "refused":
            return Reply(status=400, error_message="bad tool schema")
        return Reply(status=500, error_message="boom")

    (refused, lost), ledger = _exchange(tmp_path, script, bodies)
    assert refused.status_code == 400 and "bad tool schema" in refused.text
    assert lost.status_code == 502 and "not re-sent" in lost.text
    states = {r.request["messages"][0]["content"]: r.state for r in ledger.receipts()}
    assert states == {"refused": State.REJECTED, "lost": State.UNCERTAIN}


def test_an_agents_bound_is_held_to_the_runs_and_a_smaller_one_kept(tmp_path: Path) -> None:
    asks = [
        {"max_tokens": 32000},  # Pi asks for the model's whole output window
        {"max_completion_tokens": 100000},
        {"max_tokens": 64},
        {"max_completion_tokens": 256},
    ]
    bodies = [
        {"model": "m", "messages": [{"role": "user", "content": f"q{i}"}], **ask}
        for i, ask in enumerate(asks)
    ]
    responses, ledger = _exchange(tmp_path, lambda request: Reply(content="ok"), bodies)
    assert [r.status_code for r in responses] == [200] * 4
    receipts = sorted(ledger.receipts(), key=lambda r: r.request["messages"][0]["content"])
    assert [r.request["max_completion_tokens"] for r in receipts] == [256, 256, 64, 256]
    # the reservation is the worst case at the bound actually sent: 256 tokens at most
    reserved = [r.reserved_micro for r in receipts]
    assert reserved[0] == reserved[1] == reserved[3] > reserved[2]


def test_a_bound_that_is_not_a_number_is_refused_and_not_sent(tmp_path: Path) -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "q"}], "max_tokens": "lots"}
    (response,), ledger = _exchange(tmp_path, lambda request: Reply(content="ok"), [body])
    assert response.status_code == 400 and "not a whole number" in response.text
    assert ledger.receipts() == []


ANSWER = Reply(
    content="The sum of the multiples of 3 or 5 below 1000 is 233168, as solution.py printed.",
    reasoning="Inclusion-exclusion, then check it by running the program.",
    tool_calls=(ToolCall("bash", {"command": "python solution.py"}),),
    prompt_tokens=17,
    completion_tokens=31,
)


def test_a_real_openai_client_streams_the_answer_it_gets_whole(tmp_path: Path) -> None:
    messages = [{"role": "user", "content": "sum the multiples"}]

    async def talk(base_url: str) -> tuple[Any, list[Any]]:
        client = openai.AsyncOpenAI(base_url=base_url, api_key="metered", max_retries=0)
        try:
            whole = await client.chat.completions.create(
                model="m", messages=messages, max_tokens=100
            )
            stream = await client.chat.completions.create(
                model="m",
                messages=messages,
                max_tokens=100,
                stream=True,
                stream_options={"include_usage": True},
            )
            return whole, [chunk async for chunk in stream]
        finally:
            await client.close()

    (whole, chunks), ledger = _metered(tmp_path, lambda request: ANSWER, talk)
    deltas = [c.choices[0].delta for c in chunks if c.choices]
    message = whole.choices[0].message
    assert "".join(d.content or "" for d in deltas) == message.content == ANSWER.content
    assert sum(1 for d in deltas if d.content) > 1  # streamed in pieces, as a provider does
    reasoning = "".join(getattr(d, "reasoning_content", None) or "" for d in deltas)
    assert reasoning == message.model_extra["reasoning_content"] == ANSWER.reasoning
    calls = [call for d in deltas for call in d.tool_calls or []]
    assert {c.index for c in calls} == {0}
    assert calls[0].id == message.tool_calls[0].id and calls[0].function.name == "bash"
    arguments = "".join(c.function.arguments or "" for c in calls)
    assert arguments == message.tool_calls[0].function.arguments
    finishes = [c.choices[0].finish_reason for c in chunks if c.choices]
    assert finishes[-1] == whole.choices[0].finish_reason == "tool_calls"
    assert chunks[-1].choices == [] and chunks[-1].usage == whole.usage
    assert whole.usage is not None and whole.usage.completion_tokens == 31
    (receipt,) = ledger.receipts()  # the stream was the same request: replayed, not paid again
    assert receipt.state is State.ANSWERED


def _body(content: str) -> bytes:
    request = {"model": "m", "messages": [{"role": "user", "content": content}], "max_tokens": 10}
    return json.dumps(request).encode()


async def _in_chunks(body: bytes, size: int = 1000) -> AsyncIterator[bytes]:
    for start in range(0, len(body), size):
        yield body[start : start + size]


def test_a_chunked_request_body_is_read_whole(tmp_path: Path) -> None:
    async def talk(base_url: str) -> httpx.Response:
        async with httpx.AsyncClient(timeout=30) as client:
            return await client.post(
                f"{base_url}/chat/completions", content=_in_chunks(_body("x" * 5000))
            )

    response, ledger = _metered(tmp_path, lambda request: Reply(content="ok"), talk)
    assert response.request.headers["transfer-encoding"] == "chunked"
    assert response.status_code == 200
    assert response.json()["choices"][0]["message"]["content"] == "ok"
    (receipt,) = ledger.receipts()
    assert receipt.request["messages"][0]["content"] == "x" * 5000


def test_a_body_over_the_limit_is_refused_unpaid_whether_declared_or_chunked(
    tmp_path: Path,
) -> None:
    too_large = {"error": {"message": "bad request: the body is too large"}}

    async def talk(base_url: str) -> list[httpx.Response]:
        url = f"{base_url}/chat/completions"
        async with httpx.AsyncClient(timeout=30) as client:
            return [
                await client.post(url, content=_body("x" * 3000)),  # Content-Length
                await client.post(url, content=_in_chunks(_body("y" * 3000))),
                await client.post(url, content=_body("small")),  # the endpoint still serves
            ]

    (declared, chunked, fits), ledger = _metered(
        tmp_path, lambda request: Reply(content="ok"), talk, max_body_bytes=2048
    )
    assert "content-length" in declared.request.headers
    assert "content-length" not in chunked.request.headers
    for refused in (declared, chunked):
        assert refused.status_code == 400 and refused.json() == too_large
        assert refused.headers["connection"] == "close"
    assert fits.status_code == 200
    assert [r.request["messages"][0]["content"] for r in ledger.receipts()] == ["small"]


def test_a_declared_length_over_the_default_limit_is_refused_before_any_body(
    tmp_path: Path,
) -> None:
    async def talk(base_url: str) -> bytes:
        port = int(base_url.rsplit(":", 1)[1].split("/")[0])
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(
            b"POST /v1/chat/completions HTTP/1.1\r\nHost: agent\r\n"
            b"Content-Type: application/json\r\n"
            + f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode()
        )
        await writer.drain()
        try:
            return await asyncio.wait_for(reader.read(), 10)  # all of it: the server closes
        finally:
            writer.close()

    answer, ledger = _metered(tmp_path, lambda request: Reply(content="ok"), talk)
    head, _, body = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 ")
    assert json.loads(body) == {"error": {"message": "bad request: the body is too large"}}
    assert ledger.receipts() == []

"""The metered endpoint a rollout agent talks to: every request through the run's ledger.

The agent side is a real HTTP client (httpx) on loopback; the provider is the
scripted OpenAI server; between them the real `PaidChat` and ledger.
"""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import httpx
from support.openai_server import Reply, ScriptedOpenAIServer, ToolCall

from atoll.core.ledger import Ledger, State
from atoll.core.llm import Endpoint, PaidChat, Prices
from atoll.frontiersmith.meter import MeteredEndpoint

CALL = Reply(tool_calls=(ToolCall("write", {"path": "a.py", "content": "print(1)"}),))


def _exchange(tmp_path: Path, script, requests: list[dict]) -> tuple[list[httpx.Response], Ledger]:
    ledger = Ledger.create(tmp_path / "ledger.sqlite", 10**6)

    async def go(server: ScriptedOpenAIServer) -> list[httpx.Response]:
        endpoint = Endpoint(base_url=server.base_url, model="m", api_key_env="K")
        chat = PaidChat(endpoint, Prices.of("1", "2"), ledger, api_key="k")
        meter = MeteredEndpoint(chat, "rollout:s1", 256)
        try:
            async with meter.serving(), httpx.AsyncClient(timeout=30) as client:
                return [
                    await client.post(f"{meter.base_url}/chat/completions", json=body)
                    for body in requests
                ]
        finally:
            await chat.aclose()

    with ScriptedOpenAIServer(script) as server:
        return asyncio.run(go(server)), ledger


def _events(response: httpx.Response) -> list[dict]:
    lines = [line[6:] for line in response.text.splitlines() if line.startswith("data: ")]
    assert lines[-1] == "[DONE]"
    return [json.loads(line) for line in lines[:-1]]


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
        (call,) = events[0]["choices"][0]["delta"]["tool_calls"]
        assert call["index"] == 0 and call["function"]["name"] == "write"
        assert json.loads(call["function"]["arguments"])["path"] == "a.py"
        assert events[1]["choices"][0]["finish_reason"] == "tool_calls"
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

"""Paid chat completions against a real loopback server: reserve, settle, replay, uncertainty."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path

import pytest
from support.openai_server import Reply, ScriptedOpenAIServer, StageScript
from support.ports import free_port

from atoll.core.ledger import BudgetExhausted, Ledger, State
from atoll.core.llm import (
    BlockedByUncertain,
    Endpoint,
    EndpointError,
    PaidChat,
    Prices,
    ProviderRejected,
    ProviderUnavailable,
    RequestUncertain,
    chat_body,
    check_endpoint,
    read_api_key,
    worst_case_micro,
)

SCHEMA = {
    "type": "object",
    "properties": {"x": {"type": "integer"}},
    "required": ["x"],
    "additionalProperties": False,
}
PRICES = Prices.of("2", "10")  # $ per Mtok = micro-dollars per token


def _body(endpoint: Endpoint, text: str = "hello") -> dict:
    return chat_body(
        endpoint, [{"role": "user", "content": text}], schema_name="probe", schema=SCHEMA
    )


def _chat(server: ScriptedOpenAIServer, tmp_path: Path, limit: int = 10**9, **kw) -> PaidChat:
    endpoint = Endpoint(
        base_url=server.base_url,
        model="m",
        timeout_s=kw.pop("timeout_s", 5.0),
        max_completion_tokens=1000,
        backoff_s=0.01,
        **kw,
    )
    ledger = Ledger.create(tmp_path / "ledger.sqlite", limit)
    return PaidChat(endpoint, PRICES, ledger, api_key="sk-test-secret")


def _run(coro):
    return asyncio.run(coro)


async def _complete(chat: PaidChat, body: dict, label: str = "probe"):
    try:
        return await chat.complete(body, label=label)
    finally:
        await chat.aclose()


def test_answer_settles_at_the_usage_cost_and_replays_free(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(
        StageScript({"probe": Reply('{"x": 1}', completion_tokens=40)})
    ) as server:
        chat = _chat(server, tmp_path)
        body = _body(chat.endpoint)
        first = _run(_complete(chat, body))
        chat2 = PaidChat(chat.endpoint, PRICES, chat.ledger, api_key="k")
        again = _run(_complete(chat2, body))
        assert len(server.chat_requests()) == 1
    assert first.cost_micro == 16 * 2 + 40 * 10 and not first.replayed
    assert again.replayed and again.content == '{"x": 1}' and again.receipt_id == first.receipt_id
    sent = server.chat_requests()[0]
    assert sent.body == body
    assert sent.body["response_format"]["json_schema"] == {
        "name": "probe",
        "strict": True,
        "schema": SCHEMA,
    }
    assert sent.headers["authorization"] == "Bearer sk-test-secret"
    receipt = chat.ledger.receipt(first.receipt_id)
    assert receipt.state is State.ANSWERED and receipt.reserved_micro == worst_case_micro(
        body, PRICES
    )
    assert "sk-test-secret" not in (tmp_path / "ledger.sqlite").read_bytes().decode("latin-1")


def test_reservation_bounds_prompt_by_bytes_and_output_by_max_tokens() -> None:
    endpoint = Endpoint(base_url="http://x", model="m", max_completion_tokens=1000)
    body = _body(endpoint, "é" * 100)
    reserved = worst_case_micro(body, PRICES)
    assert reserved >= 1000 * 10 + len(json.dumps(body, ensure_ascii=False).encode()) * 2
    with pytest.raises(ValueError, match="max_completion_tokens"):
        worst_case_micro({"messages": []}, PRICES)


@pytest.mark.parametrize("status", [400, 401, 403, 404, 422])
def test_outright_refusals_settle_at_zero(tmp_path: Path, status: int) -> None:
    with ScriptedOpenAIServer(lambda body: Reply(status=status, error_message="nope")) as server:
        chat = _chat(server, tmp_path)
        with pytest.raises(ProviderRejected, match=f"HTTP {status}"):
            _run(_complete(chat, _body(chat.endpoint)))
    (receipt,) = chat.ledger.receipts()
    assert receipt.state is State.REJECTED and receipt.cost_micro == 0
    assert chat.ledger.totals().spent_micro == 0


def test_busy_provider_is_retried_at_zero_cost(tmp_path: Path) -> None:
    replies = iter(
        [Reply(status=429, headers={"Retry-After": "0"}), Reply(status=503), Reply('{"x": 2}')]
    )
    with ScriptedOpenAIServer(lambda body: next(replies)) as server:
        chat = _chat(server, tmp_path)
        answer = _run(_complete(chat, _body(chat.endpoint)))
    assert json.loads(answer.content) == {"x": 2}
    states = [r.state for r in chat.ledger.receipts()]
    assert states == [State.REJECTED, State.REJECTED, State.ANSWERED]


def test_lost_answer_is_uncertain_and_blocks_resending(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(lambda body: Reply(drop=True)) as server:
        chat = _chat(server, tmp_path)
        body = _body(chat.endpoint)
        with pytest.raises(RequestUncertain):
            _run(_complete(chat, body))
        chat2 = PaidChat(chat.endpoint, PRICES, chat.ledger, api_key="k")
        with pytest.raises(BlockedByUncertain):
            _run(_complete(chat2, body))
        assert len(server.chat_requests()) == 1
    (receipt,) = chat.ledger.receipts()
    assert receipt.state is State.UNCERTAIN
    assert chat.ledger.totals().open_micro == receipt.reserved_micro


def test_read_timeout_after_dispatch_is_uncertain(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(lambda body: Reply('{"x": 1}', delay_s=1.5)) as server:
        chat = _chat(server, tmp_path, timeout_s=0.3)
        with pytest.raises(RequestUncertain, match="ReadTimeout"):
            _run(_complete(chat, _body(chat.endpoint)))


def test_server_error_is_uncertain(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(lambda body: Reply(status=500)) as server:
        chat = _chat(server, tmp_path)
        with pytest.raises(RequestUncertain, match="HTTP 500"):
            _run(_complete(chat, _body(chat.endpoint)))


def test_connection_never_made_is_released_and_retried(tmp_path: Path) -> None:
    endpoint = Endpoint(
        base_url=f"http://127.0.0.1:{free_port()}/v1",
        model="m",
        max_completion_tokens=10,
        connect_retries=2,
        backoff_s=0.01,
    )
    chat = PaidChat(endpoint, PRICES, Ledger.create(tmp_path / "l.sqlite", 10**6), api_key="k")
    with pytest.raises(ProviderUnavailable, match="3 tries"):
        _run(_complete(chat, _body(endpoint)))
    assert [r.state for r in chat.ledger.receipts()] == [State.RELEASED] * 3
    with pytest.raises(EndpointError, match="cannot be reached"):
        _run(check_endpoint(endpoint, "k"))


def test_budget_exhaustion_sends_nothing(tmp_path: Path) -> None:
    with ScriptedOpenAIServer() as server:
        chat = _chat(server, tmp_path, limit=100)
        with pytest.raises(BudgetExhausted):
            _run(_complete(chat, _body(chat.endpoint)))
        assert server.chat_requests() == []


def test_key_comes_from_the_environment_only() -> None:
    assert read_api_key("K", {"K": " abc "}) == "abc"
    with pytest.raises(EndpointError, match="--api-key-env"):
        read_api_key("K", {})


def test_endpoint_refusing_the_key() -> None:
    with ScriptedOpenAIServer() as server:
        endpoint = Endpoint(base_url=server.base_url, model="m")
        _run(check_endpoint(endpoint, "k"))
        server.models_status = 401
        with pytest.raises(EndpointError, match="refused the key"):
            _run(check_endpoint(endpoint, "k"))


def test_identical_requests_at_once_are_paid_once(tmp_path: Path) -> None:
    with ScriptedOpenAIServer(lambda body: Reply('{"x": 3}', delay_s=0.3)) as server:
        chat = _chat(server, tmp_path)
        body = _body(chat.endpoint)

        async def both():
            try:
                return await asyncio.gather(
                    chat.complete(body, label="a"), chat.complete(body, label="b")
                )
            finally:
                await chat.aclose()

        first, second = _run(both())
        assert len(server.chat_requests()) == 1
    assert {first.replayed, second.replayed} == {False, True}
    assert first.receipt_id == second.receipt_id

"""Executor presets against a scripted OpenAI-compatible server: requests, keys and retries."""

from __future__ import annotations

import dataclasses
import json

import pytest
from support.openai_server import Reply, replies_first

from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.services.executor import (
    Executor,
    ExecutorConfigError,
    ExecutorUnavailable,
    executor_spec,
)

PROMPT = Prompt("You write programs.", "write it")

pytest_plugins = ["support.fixtures"]


def _failing_then(statuses: list[int], content: str):
    return replies_first([Reply(status=s) for s in statuses], lambda r: Reply(content=content))


def test_local_preset_sends_temperature_zero_and_high_effort(scripted_llm):
    scripted_llm.script = lambda request: Reply(content="<solution>x</solution>", reasoning="r")
    spec = executor_spec("local", base_url=scripted_llm.base_url, max_completion_tokens=64)
    answer = Executor(spec, environ={}).complete(PROMPT)
    body = scripted_llm.chat_requests()[0].body
    assert body["model"] == "openai/gpt-oss-120b"
    assert body["temperature"] == 0
    assert body["reasoning_effort"] == "high"
    assert body["max_completion_tokens"] == 64
    assert body["messages"] == [
        {"role": "system", "content": "You write programs."},
        {"role": "user", "content": "write it"},
    ]
    assert answer.content == "<solution>x</solution>"
    assert answer.reasoning == "r"
    assert spec.timeout_s == 1200 and spec.max_retries == 0


def test_local_preset_does_not_retry_a_server_error(scripted_llm):
    scripted_llm.script = _failing_then([503], "never")
    spec = executor_spec("local", base_url=scripted_llm.base_url)
    with pytest.raises(ExecutorUnavailable, match="HTTP 503"):
        Executor(spec, environ={}).complete(PROMPT)
    assert len(scripted_llm.chat_requests()) == 1


@pytest.mark.slow
def test_openrouter_preset_retries_transient_errors_then_succeeds(scripted_llm):
    scripted_llm.script = _failing_then([500, 429], "done")
    spec = executor_spec("openrouter", base_url=scripted_llm.base_url)
    executor = Executor(spec, environ={"OPENROUTER_API_KEY": "or-key-123"})
    assert executor.complete(PROMPT).content == "done"
    requests = scripted_llm.chat_requests()
    assert len(requests) == 3
    assert all(r.headers["authorization"] == "Bearer or-key-123" for r in requests)
    assert requests[0].body["model"] == "z-ai/glm-5.2"
    assert requests[0].body["temperature"] == 1.0
    assert requests[0].body["reasoning"] == {"effort": "high", "exclude": False}
    assert spec.max_retries == 6


def test_openrouter_preset_retries_a_200_answer_that_carries_an_error_object(scripted_llm):
    answers = [Reply(error_in_body=True, error_message="provider returned error")] * 2
    scripted_llm.script = replies_first(answers, lambda r: Reply(content="done"))
    spec = dataclasses.replace(
        executor_spec("openrouter", base_url=scripted_llm.base_url), retry_backoff_s=0.01
    )
    assert Executor(spec, environ={"OPENROUTER_API_KEY": "k"}).complete(PROMPT).content == "done"
    assert len(scripted_llm.chat_requests()) == 3


def test_an_error_object_after_the_last_retry_is_unavailable(scripted_llm):
    scripted_llm.script = lambda request: Reply(error_in_body=True, error_message="no provider")
    spec = dataclasses.replace(
        executor_spec("openrouter", base_url=scripted_llm.base_url),
        retry_backoff_s=0.01,
        max_retries=2,
    )
    with pytest.raises(ExecutorUnavailable, match="error object .*no provider"):
        Executor(spec, environ={"OPENROUTER_API_KEY": "k"}).complete(PROMPT)
    assert len(scripted_llm.chat_requests()) == 3


def test_openrouter_preset_does_not_retry_a_client_error(scripted_llm):
    scripted_llm.script = _failing_then([400], "never")
    spec = executor_spec("openrouter", base_url=scripted_llm.base_url)
    with pytest.raises(ExecutorUnavailable, match="HTTP 400"):
        Executor(spec, environ={"OPENROUTER_API_KEY": "k"}).complete(PROMPT)
    assert len(scripted_llm.chat_requests()) == 1


@pytest.mark.slow
def test_openrouter_gives_up_after_its_retries(scripted_llm):
    scripted_llm.script = lambda request: Reply(status=502)
    spec = dataclasses.replace(
        executor_spec("openrouter", base_url=scripted_llm.base_url), max_retries=2
    )
    with pytest.raises(ExecutorUnavailable, match="HTTP 502"):
        Executor(spec, environ={"OPENROUTER_API_KEY": "k"}).complete(PROMPT)
    assert len(scripted_llm.chat_requests()) == 3


def test_timeout_is_unavailable_not_an_empty_answer(scripted_llm):
    scripted_llm.script = lambda request: Reply(content="late", delay_s=2.0)
    spec = dataclasses.replace(
        executor_spec("local", base_url=scripted_llm.base_url), timeout_s=0.3
    )
    with pytest.raises(ExecutorUnavailable, match="did not answer within 0.3 s"):
        Executor(spec, environ={}).complete(PROMPT)


def test_keys_come_only_from_the_environment_and_never_reach_the_identity(scripted_llm):
    with pytest.raises(ExecutorConfigError, match="OPENROUTER_API_KEY"):
        Executor(executor_spec("openrouter"), environ={"OPENAI_API_KEY": "wrong-variable"})
    spec = executor_spec("openai", base_url=scripted_llm.base_url, model="my-model")
    with pytest.raises(ExecutorConfigError, match="OPENAI_API_KEY"):
        Executor(spec, environ={})
    executor = Executor(spec, environ={"OPENAI_API_KEY": "sk-secret-value"})
    executor.complete(PROMPT)
    assert scripted_llm.chat_requests()[0].headers["authorization"] == "Bearer sk-secret-value"
    recorded = json.dumps(spec.identity()) + repr(spec) + repr(executor)
    assert "sk-secret-value" not in recorded
    assert spec.identity() == {
        "preset": "openai",
        "base_url": scripted_llm.base_url,
        "model": "my-model",
    }


def test_bad_preset_settings_are_one_clear_error():
    with pytest.raises(ExecutorConfigError, match="unknown executor preset 'gpt'; choose one of"):
        executor_spec("gpt")
    with pytest.raises(ExecutorConfigError, match="needs a model name"):
        executor_spec("openai")
    assert executor_spec("openrouter").base_url.startswith("https://")
    assert executor_spec("openrouter-glm") == executor_spec("openrouter")
    assert executor_spec("gpt-oss-local").model == "openai/gpt-oss-120b"

"""Cancelling a run aborts its HTTP calls in flight, and no call starts afterwards."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest
from support.openai_server import Reply, ScriptedOpenAIServer

from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.services.cancel import Cancellation, RunCancelled
from atoll.guidance_ttt.services.executor import Executor, executor_spec
from atoll.guidance_ttt.services.reef_guidance import (
    GuidanceClient,
    GuidanceUnavailable,
    ReefEndpoint,
)

PROMPT = Prompt("role", "prompt")

pytest_plugins = ["support.fixtures"]


def _hanging(request: dict[str, Any]) -> Reply:
    return Reply(content="too late", delay_s=60.0)


def _call_then_cancel(call, cancellation: Cancellation, after_s: float = 0.5):
    """Run `call` on a thread, cancel after `after_s`; (exception, seconds from cancel to end)."""
    outcome: dict[str, Any] = {}

    def target() -> None:
        try:
            call()
        except BaseException as exc:
            outcome["error"] = exc

    worker = threading.Thread(target=target)
    worker.start()
    time.sleep(after_s)
    cancelled = time.monotonic()
    cancellation.cancel()
    worker.join(timeout=30)
    assert not worker.is_alive()
    return outcome.get("error"), time.monotonic() - cancelled


@pytest.mark.slow
def test_an_executor_call_in_flight_ends_at_once_and_is_not_retried():
    cancellation = Cancellation()
    with ScriptedOpenAIServer(_hanging) as server:
        spec = executor_spec("openai", base_url=server.base_url, model="m")
        executor = Executor(spec, environ={"OPENAI_API_KEY": "k"}, cancellation=cancellation)
        assert spec.max_retries == 6
        error, took = _call_then_cancel(lambda: executor.complete(PROMPT), cancellation)
        assert isinstance(error, RunCancelled), error
        assert took < 15.0  # one SDK backoff at most, not the 60 s answer or the 1,200 s timeout
        assert len(server.chat_requests()) == 1  # the retry was refused before it was sent
        with pytest.raises(RunCancelled, match="cancelled before POST"):
            executor.complete(PROMPT)
        assert len(server.chat_requests()) == 1


@pytest.mark.slow
def test_a_guidance_inference_in_flight_is_an_answer_lost(reef_server, reset_reef_upstream):
    reset_reef_upstream.script = _hanging
    cancellation = Cancellation()
    client = GuidanceClient(
        ReefEndpoint(reef_server.url, reef_server.token),
        scenario=f"cancel-{uuid.uuid4().hex[:8]}",
        model="scripted",
        max_completion_tokens=8,
        cancellation=cancellation,
    )
    error, took = _call_then_cancel(lambda: client.sample(PROMPT), cancellation)
    assert isinstance(error, GuidanceUnavailable) and error.answer_lost, error
    assert "the run was cancelled" in str(error)
    assert took < 15.0  # not the 60 s answer
    with pytest.raises(RunCancelled):
        client.status()

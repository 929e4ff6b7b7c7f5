"""The one re-send of a training step's guidance call that Reef certainly did not record.

A training step needs every slot of its grid reported against a Reef receipt.
A guidance call that Reef answered with 429/502/503 and no receipt left no
record anywhere, so its slot's call is sent once more (journaled with the
failure, so no resume grants another); a call whose answer Reef may hold (a
timeout, a connection cut after the request left) is never sent again. The
step tests run the real Reef in front of a scripted model, and a scripted
loopback server in front of Reef where the test needs to cut a connection.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from support.guidance_run import (
    ExecutorScript,
    GuidanceScript,
    new_library,
    step_context,
    write_task,
)
from support.openai_server import Reply, ScriptedOpenAIServer, numbered

from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.search.step import GridIncomplete, Limits, StepContext, run_step
from atoll.guidance_ttt.services.cancel import RunCancelled
from atoll.guidance_ttt.services.reef_guidance import (
    RECEIPT_HEADER,
    SCENARIO_HEADER,
    GuidanceClient,
    GuidanceUnavailable,
    ReefEndpoint,
)
from atoll.guidance_ttt.state.durable_archive import Library
from atoll.guidance_ttt.state.jsonl_journal import read_journal
from atoll.guidance_ttt.state.run_dir import run_dir, step_journal_path
from atoll.guidance_ttt.state.step_journal import StepJournal, StepState, read_step

pytest_plugins = ["support.fixtures"]

SLOT = (0, 0)


def _scenario() -> str:
    return f"resend-{uuid.uuid4().hex[:8]}"


# -- Which failures say that Reef recorded nothing (no Reef needed: the server answers itself)


@pytest.mark.parametrize(
    ("reply", "unrecorded"),
    [
        (Reply(status=502), True),  # Reef: the model's server failed
        (Reply(status=503), True),  # Reef: its inference deadline passed, or no artifact
        (Reply(status=429), True),  # Reef relays the model server's rate limit
        (Reply(status=500), False),  # an unexpected failure, perhaps after the record
        (Reply(status=504), False),  # a gateway gave up; Reef may still record the answer
        (Reply(status=408), False),  # a timeout
        (Reply(status=400), False),  # the same request would be refused again
        (Reply(status=503, headers={RECEIPT_HEADER: "rec-1"}), False),  # Reef holds a record
        (Reply(content="<guidance>g</guidance>"), False),  # answered, but no receipt
    ],
)
def test_only_an_error_answer_without_a_receipt_from_reef_says_nothing_was_recorded(
    reply: Reply, unrecorded: bool
):
    with (
        ScriptedOpenAIServer(lambda request: reply) as server,
        pytest.raises(GuidanceUnavailable) as caught,
    ):
        _client(server.root_url).sample(Prompt("system", "user"))
    assert caught.value.answer_lost is False
    assert caught.value.unrecorded is unrecorded


def test_a_connection_cut_after_the_request_left_is_never_unrecorded():
    with (
        ScriptedOpenAIServer(lambda request: Reply(drop=True)) as server,
        pytest.raises(GuidanceUnavailable) as caught,
    ):
        _client(server.root_url).sample(Prompt("system", "user"))
    assert caught.value.answer_lost is True and caught.value.unrecorded is False


def _client(url: str) -> GuidanceClient:
    return GuidanceClient(
        ReefEndpoint(url, "t"), scenario="s", model="m", max_completion_tokens=8, timeout_s=10
    )


# -- The journal keeps the grant with the failure, so a resume grants no other


def test_the_grant_is_durable_with_the_failure_and_survives_a_kill(tmp_path: Path):
    journal = StepJournal(tmp_path, 0)
    journal.attempt(0, 0, 1)
    journal.attempt_failed(0, 0, 1, answer_lost=False, error="HTTP 502", resent=True)
    # Killed before the re-send was sent: the slot is open, and its re-send is spent.
    state = read_step(step_journal_path(tmp_path, 0), 0)
    assert state.resends == {SLOT} and state.failed_calls == {} and state.orphans == []
    assert state.attempts == {SLOT: 1}

    # Killed while the re-send was in flight: named as an orphan, like any call a crash cut off.
    journal.attempt(0, 0, 2)
    state = read_step(step_journal_path(tmp_path, 0), 0)
    assert state.resends == {SLOT} and state.failed_calls == {}
    assert [(o.attempt, o.error) for o in state.orphans] == [(2, "interrupted by a crash")]

    # The re-send failed: that failure, not the first, is the slot's outcome.
    journal.attempt_failed(0, 0, 2, answer_lost=False, error="HTTP 503")
    journal.close()
    state = read_step(step_journal_path(tmp_path, 0), 0)
    assert state.resends == {SLOT}
    assert state.failed_calls[SLOT].attempt == 2 and state.failed_calls[SLOT].error == "HTTP 503"


# -- Steps against the real Reef


@pytest.mark.slow
def test_a_call_reef_did_not_record_is_sent_again_once_and_the_step_trains(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    guidance = GuidanceScript()
    # The model's server fails on the first call; Reef answers 502 and records nothing.
    upstream = numbered(
        lambda request, n: (
            Reply(status=503, error_message="overloaded") if n == 1 else guidance(request)
        )
    )
    reset_reef_upstream.script = upstream
    scripted_llm.script = ExecutorScript()
    settings = _settings(tmp_path, reef_server, scripted_llm, judge_url, rollouts=2)
    context = _training_context(tmp_path, settings)
    summary = run_step(context, 0)

    assert upstream.calls == 3  # two slots, one re-send
    assert summary.sampled == 2 and summary.failed_guidance_calls == 0
    assert summary.unreported == [] and summary.orphans == []
    ((group, rollout),) = summary.resent_guidance_slots
    scenario = settings["scenario"]
    assert len(reef_server.records(scenario, "inference")) == 2  # the failed call left none
    assert len(reef_server.records(scenario, "report")) == 2  # the grid is complete
    state = _journal(tmp_path)
    assert state.resends == {(group, rollout)} and state.attempts[(group, rollout)] == 2
    assert state.failed_calls == {}
    (granted,) = [r for r in _records(tmp_path) if r.get("resent")]
    assert granted["attempt"] == 1 and "HTTP 502" in granted["error"]
    context.library.close()

    # The process is gone; a resume finishes from the journal and sends nothing again.
    library = Library.restore_committed(tmp_path / "state")
    again = run_step(_training_context(tmp_path, settings, library), 0)
    assert upstream.calls == 3 and again.resumed_rollouts == 2
    assert again.resent_guidance_slots == [[group, rollout]]
    library.close()


@pytest.mark.slow
def test_a_resume_after_the_re_send_was_cut_off_grants_no_second_one(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    settings = _settings(tmp_path, reef_server, scripted_llm, judge_url, rollouts=1)
    context = _training_context(tmp_path, settings)
    context.cancellation = context.guidance.cancellation  # type: ignore[attr-defined]

    def answer(request: dict[str, Any], number: int) -> Reply:
        if number == 2:  # the re-send is in flight: the run stops, as a kill would stop it
            context.cancellation.cancel()
        return Reply(status=503, error_message="down")

    reset_reef_upstream.script = upstream = numbered(answer)
    with pytest.raises(RunCancelled):
        run_step(context, 0)
    assert upstream.calls == 2
    context.library.close()

    library = Library.restore_committed(tmp_path / "state")
    with pytest.raises(GridIncomplete, match="its one re-send failed too"):
        run_step(_training_context(tmp_path, settings, library), 0)
    library.close()
    # The resume sent the slot's call once (the cut-off one is an orphan) and did not
    # grant the failure it ended in another re-send.
    assert upstream.calls == 3
    failures = [r for r in _records(tmp_path) if r["kind"] == "attempt_failed"]
    assert [(r["attempt"], r["resent"], r["cancelled"]) for r in failures] == [
        (1, True, False),
        (2, False, True),
        (3, False, False),
    ]
    assert _journal(tmp_path).failed_calls[SLOT].attempt == 3


@pytest.mark.slow
def test_two_failures_in_a_row_stop_the_training_step(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = upstream = numbered(
        lambda request, n: Reply(status=503, error_message="down")
    )
    settings = _settings(tmp_path, reef_server, scripted_llm, judge_url, rollouts=1)
    context = _training_context(tmp_path, settings)
    with pytest.raises(GridIncomplete, match="group 0, rollout 0 .*its one re-send failed too"):
        run_step(context, 0)
    assert upstream.calls == 2 and scripted_llm.chat_requests() == []
    assert reef_server.records(settings["scenario"], "inference") == []
    context.library.close()

    library = Library.restore_committed(tmp_path / "state")
    with pytest.raises(GridIncomplete, match="its one re-send failed too"):
        run_step(_training_context(tmp_path, settings, library), 0)
    assert upstream.calls == 2  # a resume samples nothing
    library.close()


@pytest.mark.slow
def test_an_answer_lost_after_reef_recorded_it_is_never_sent_again(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = GuidanceScript()
    before = len(reset_reef_upstream.chat_requests())
    settings = _settings(tmp_path, reef_server, scripted_llm, judge_url, rollouts=1)
    scenario = settings["scenario"]

    def forward_then_cut(request: dict[str, Any]) -> Reply:
        """Pass the call on to Reef, which records the answer; then cut the client off."""
        httpx.post(
            f"{reef_server.url}/v1/chat/completions",
            json=request,
            headers={SCENARIO_HEADER: scenario, "Authorization": f"Bearer {reef_server.token}"},
            timeout=30,
        ).raise_for_status()
        return Reply(drop=True)

    with ScriptedOpenAIServer(forward_then_cut) as front:
        in_front = SimpleNamespace(url=front.root_url, token=reef_server.token)
        context = _training_context(tmp_path, {**settings, "reef_server": in_front})
        with pytest.raises(GridIncomplete, match="only when Reef certainly recorded nothing"):
            run_step(context, 0)
        assert len(front.chat_requests()) == 1
    assert len(reset_reef_upstream.chat_requests()) - before == 1
    assert len(reef_server.records(scenario, "inference")) == 1  # the orphan Reef holds
    state = _journal(tmp_path)
    assert state.resends == set() and [o.attempt for o in state.orphans] == [1]
    context.library.close()


@pytest.mark.slow
def test_a_timed_out_call_is_never_sent_again(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    reset_reef_upstream.script = upstream = numbered(
        lambda request, n: Reply(content="<guidance>late</guidance>", delay_s=2.5)
    )
    settings = _settings(tmp_path, reef_server, scripted_llm, judge_url, rollouts=1)
    context = _training_context(tmp_path, {**settings, "guidance_timeout_s": 1.0})
    with pytest.raises(GridIncomplete, match="no answer from Reef"):
        run_step(context, 0)
    # Reef goes on waiting for the model and records the late answer: the orphan a
    # second call would have doubled. (Waiting for it also keeps the late call out of
    # the next test's script.)
    assert _eventually(lambda: len(reef_server.records(settings["scenario"], "inference")) == 1)
    assert upstream.calls == 1
    assert _journal(tmp_path).resends == set()
    context.library.close()


@pytest.mark.slow
def test_a_search_only_step_books_the_failed_call_and_sends_nothing_again(
    tmp_path, reef_server, reset_reef_upstream, scripted_llm, judge_url
):
    guidance = GuidanceScript()
    reset_reef_upstream.script = upstream = numbered(
        lambda request, n: Reply(status=503) if n == 1 else guidance(request)
    )
    scripted_llm.script = ExecutorScript()
    settings = _settings(tmp_path, reef_server, scripted_llm, judge_url, rollouts=1)
    context = _training_context(tmp_path, settings)
    context.complete_grid = False
    summary = run_step(context, 0)
    assert upstream.calls == 1 and summary.failed_guidance_calls == 1
    assert summary.resent_guidance_slots == [] and summary.unreported == [[0, 0]]
    context.library.close()


def _settings(
    tmp_path: Path, reef_server: Any, scripted_llm: Any, judge_url: str, *, rollouts: int
) -> dict[str, Any]:
    return {
        "task": write_task(tmp_path / "task"),
        "reef_server": reef_server,
        "scenario": _scenario(),
        "executor_url": scripted_llm.base_url,
        "judge_url": judge_url,
        "groups": 1,
        "rollouts": rollouts,
    }


def _training_context(
    tmp_path: Path, settings: dict[str, Any], library: Library | None = None
) -> StepContext:
    """A training step's context (complete grid) with one call at a time and no re-send wait."""
    if library is None:
        library = new_library(tmp_path / "state", settings["task"], groups=settings["groups"])
    context = step_context(library=library, **settings)
    context.complete_grid = True
    context.guidance_resend_delay_s = 0.0
    context.limits = Limits(guidance=1, executor=1, judge=1)
    return context


def _eventually(condition: Callable[[], bool], timeout_s: float = 20.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _journal(tmp_path: Path) -> StepState:
    return read_step(step_journal_path(run_dir(tmp_path / "state"), 0), 0)


def _records(tmp_path: Path) -> list[dict[str, Any]]:
    return read_journal(step_journal_path(run_dir(tmp_path / "state"), 0)).records

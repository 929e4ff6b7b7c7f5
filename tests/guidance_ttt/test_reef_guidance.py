"""Guidance samples and reports against the real Reef server in front of a scripted model."""

from __future__ import annotations

import uuid

import pytest
from support.openai_server import Reply
from support.ports import free_port

from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.search.scored_program import Status, Verification
from atoll.guidance_ttt.services.reef_guidance import (
    GridSlot,
    GuidanceClient,
    GuidanceUnavailable,
    ReefEndpoint,
    ReefSettingsError,
    ReportRejected,
    report_payload,
)

pytest_plugins = ["support.fixtures"]


def _client(reef_server, scenario: str) -> GuidanceClient:
    endpoint = ReefEndpoint(reef_server.url, reef_server.token)
    return GuidanceClient(endpoint, scenario=scenario, model="scripted", max_completion_tokens=321)


def _prompt(user: str = "prompt") -> Prompt:
    return Prompt("You guide a search.", user)


def _scenario() -> str:
    return f"tttd-{uuid.uuid4().hex[:8]}"


@pytest.mark.slow
def test_guidance_request_is_sent_as_specified_and_receipt_is_recorded(
    reef_server, reset_reef_upstream
):
    reset_reef_upstream.script = lambda request: Reply(
        content="I think.\n<guidance>Try a greedy packing.</guidance>", reasoning="hmm"
    )
    scenario = _scenario()
    client = _client(reef_server, scenario)
    sample = client.sample(_prompt("PROMPT-ONE"))

    sent = reset_reef_upstream.chat_requests()[-1].body
    assert sent["messages"] == [
        {"role": "system", "content": "You guide a search."},
        {"role": "user", "content": "PROMPT-ONE"},
    ]
    assert sent["temperature"] == 1
    assert sent["top_p"] == 1
    assert sent["top_k"] == -1
    assert sent["chat_template_kwargs"] == {"enable_thinking": True}
    assert sent.get("stream") in (False, None)
    assert sent["max_completion_tokens"] == 321
    assert sample.content.endswith("<guidance>Try a greedy packing.</guidance>")
    assert sample.reasoning == "hmm"
    inferences = reef_server.records(scenario, "inference")
    assert [r["agent_record_id"] for r in inferences] == [sample.receipt]


@pytest.mark.slow
def test_report_references_receipt_carries_grid_and_is_idempotent(reef_server, reset_reef_upstream):
    reset_reef_upstream.script = lambda request: "<guidance>Use local search.</guidance>"
    scenario = _scenario()
    client = _client(reef_server, scenario)
    sample = client.sample(_prompt())
    slot = GridSlot(step=3, group=1, rollout=2, groups_per_step=2, rollouts_per_group=4)
    payload = report_payload(
        run_id="run42",
        slot=slot,
        verification=Verification(Status.VALID, 81.5, 0.815, "packed 12 pieces"),
        parent_id=7,
        search_value=81.5,
        library_entry_id=19,
    )
    stored = client.report(payload, sample.receipt)
    assert stored == "guidance-ttt-run42-s3-g1-r2"
    # A re-post (after a lost acknowledgement or a crash) is the same record.
    assert client.report(payload, sample.receipt) == stored

    reports = reef_server.records(scenario, "report")
    assert len(reports) == 1
    assert reports[0]["agent_record_id"] == stored
    assert reports[0]["references"] == [sample.receipt]
    assert reports[0]["score"] == pytest.approx(0.815)
    text = repr(reef_server.record(scenario, stored)["payload"])
    for expected in (
        "tttd-step-3-group-1",
        "ttt-discover",
        "summary_only",
        "valid: packed 12 pieces",
        "'archive_timestep': 4",
        "'library_entry_id': 19",
        "'parent_id': 7",
        "'groups_per_step': 2",
        "'rollouts_per_group': 4",
        "'guidance_ttt': True",
    ):
        assert expected in text


@pytest.mark.slow
def test_report_with_same_id_and_different_content_is_refused(reef_server, reset_reef_upstream):
    scenario = _scenario()
    client = _client(reef_server, scenario)
    sample = client.sample(_prompt())
    slot = GridSlot(step=0, group=0, rollout=0, groups_per_step=1, rollouts_per_group=1)
    common = {"run_id": "r", "slot": slot, "parent_id": 0, "library_entry_id": None}
    first = report_payload(
        verification=Verification(Status.INVALID, None, 0.0, "overlap"), search_value=None, **common
    )
    client.report(first, sample.receipt)
    second = report_payload(
        verification=Verification(Status.VALID, 3.0, 0.3, ""), search_value=3.0, **common
    )
    with pytest.raises(ReportRejected, match="different content"):
        client.report(second, sample.receipt)


@pytest.mark.slow
def test_upstream_refusal_is_an_error_without_receipt(reef_server, reset_reef_upstream):
    reset_reef_upstream.script = lambda request: Reply(status=400, error_message="bad request")
    client = _client(reef_server, _scenario())
    with pytest.raises(GuidanceUnavailable) as caught:
        client.sample(_prompt())
    assert caught.value.answer_lost is False


@pytest.mark.slow
@pytest.mark.parametrize("status", [408, 429, 500, 503])
def test_a_failed_guidance_call_is_never_sent_again(reef_server, reset_reef_upstream, status):
    reset_reef_upstream.script = lambda request: Reply(status=status, error_message="busy")
    client = _client(reef_server, _scenario())
    before = len(reset_reef_upstream.chat_requests())
    with pytest.raises(GuidanceUnavailable) as caught:
        client.sample(_prompt())
    assert caught.value.answer_lost is False and caught.value.status is not None
    assert len(reset_reef_upstream.chat_requests()) - before == 1  # one generation attempt


def test_unreachable_reef_means_the_answer_may_be_lost():
    endpoint = ReefEndpoint(f"http://127.0.0.1:{free_port()}", "t")
    client = GuidanceClient(endpoint, scenario="s", model="m", max_completion_tokens=8, timeout_s=2)
    with pytest.raises(GuidanceUnavailable, match="no answer from Reef") as caught:
        client.sample(_prompt())
    assert caught.value.answer_lost is True


def test_endpoint_from_environment_hides_token(monkeypatch):
    monkeypatch.setenv("REEF_URL", "http://127.0.0.1:8900/")
    monkeypatch.setenv("REEF_TOKEN", "s3cr3t-token")
    endpoint = ReefEndpoint.resolve()
    assert endpoint.url == "http://127.0.0.1:8900"
    assert endpoint.token == "s3cr3t-token"
    assert "s3cr3t" not in repr(endpoint) and "s3cr3t" not in str(endpoint)
    assert ReefEndpoint.resolve("http://other:1", "flag").url == "http://other:1"
    monkeypatch.delenv("REEF_URL")
    with pytest.raises(ReefSettingsError, match="REEF_URL"):
        ReefEndpoint.resolve()
    with pytest.raises(ReefSettingsError, match="http"):
        ReefEndpoint.resolve("localhost:8900")


def test_blank_reef_variables_count_as_unset():
    # As the stack and `atoll doctor` read them: a blank token is no token, a blank URL no URL.
    endpoint = ReefEndpoint.resolve(
        environ={"REEF_URL": " http://127.0.0.1:9/ ", "REEF_TOKEN": " "}
    )
    assert endpoint == ReefEndpoint("http://127.0.0.1:9", None)
    with pytest.raises(ReefSettingsError, match="no Reef URL"):
        ReefEndpoint.resolve(environ={"REEF_URL": "  "})


def test_slot_outside_grid_is_refused():
    with pytest.raises(ValueError, match="outside"):
        GridSlot(step=0, group=2, rollout=0, groups_per_step=2, rollouts_per_group=1)

"""The model signature binds the checkpoint the endpoint really serves.

`atoll tinker serve` reports the checkpoint it samples in `/v1/models`
(`model_path`); `euler eval`, `transfer run` and `curriculum` check a
declared `--model-revision` against it and record it when none is declared.
"""

from __future__ import annotations

import pytest
import typer
from support.openai_server import ScriptedOpenAIServer

from atoll.euler.commands.common import RunOptions

CHECKPOINT = "tinker://run-1/sampler_weights/000004"


def _settings(url: str, revision: str | None) -> object:
    return RunOptions(
        base_url=url, model="scripted-model", api_key_env="ATOLL_TEST_REVISION_KEY", workers=1,
        model_revision=revision, thinking=None, system_prompt=None, max_turns=4, timeout=60.0,
        image=None,
    ).settings()  # fmt: skip


@pytest.fixture(autouse=True)
def _key(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ATOLL_TEST_REVISION_KEY", "k")


@pytest.mark.parametrize(
    ("fields", "declared", "signed"),
    [
        ({"model_path": CHECKPOINT}, CHECKPOINT, CHECKPOINT),  # the served checkpoint, declared
        ({"model_path": CHECKPOINT}, None, CHECKPOINT),  # recorded from the endpoint
        ({"model_path": None}, None, None),  # atoll's server on the base model
        ({}, None, None),  # any other OpenAI endpoint reports nothing
        ({}, "my-adapter-v2", "my-adapter-v2"),  # ... and the declared revision stands
    ],
)
def test_the_signed_revision_is_the_served_one(
    fields: dict, declared: str | None, signed: str | None
) -> None:
    with ScriptedOpenAIServer() as server:
        server.model_fields = fields
        settings = _settings(server.base_url, declared)
    assert settings.model_revision == signed  # type: ignore[attr-defined]
    assert settings.signature_parts["model_revision"] == signed  # type: ignore[attr-defined]


def test_an_endpoint_without_a_model_list_keeps_the_declared_revision() -> None:
    with ScriptedOpenAIServer() as server:
        server.models_status = 404
        assert _settings(server.base_url, CHECKPOINT).model_revision == CHECKPOINT  # type: ignore[attr-defined]


@pytest.mark.parametrize("served", ["tinker://run-1/sampler_weights/000002", None])
def test_a_revision_the_endpoint_does_not_serve_is_refused(
    served: str | None, capsys: pytest.CaptureFixture[str]
) -> None:
    with ScriptedOpenAIServer() as server:
        server.model_fields = {"model_path": served}
        with pytest.raises(typer.Exit) as stopped:
            _settings(server.base_url, CHECKPOINT)
    assert stopped.value.exit_code == 2
    line = capsys.readouterr().err.strip()
    assert "\n" not in line and f"--model-revision {CHECKPOINT} is not what" in line

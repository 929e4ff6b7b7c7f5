"""The frozen executor: an OpenAI-compatible model that turns parent + guidance into a program.

The executor is never trained and its sampling is not part of the method, so
its transport errors may be retried (where the preset allows it) without
biasing anything. Its key is read from the environment when the client is
built and lives only inside the client: what a run records about its executor
is the identity (preset, base URL, model), never a credential. Its HTTP
client comes from the run's `Cancellation`, so that cancelling the run aborts
an answer still being generated instead of waiting out the preset's timeout.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

import openai

from atoll.guidance_ttt.answer import answer_fields, answer_from_json, answer_to_json
from atoll.guidance_ttt.cancel import Cancellation

OPENROUTER_BASE_URL = "https://openrouter.ai/api/v1"
LOCAL_BASE_URL = "http://127.0.0.1:30000/v1"
# SGLang accepts any key unless started with one; this placeholder is not a secret.
LOCAL_PLACEHOLDER_KEY = "local"


class ExecutorConfigError(ValueError):
    """The executor settings are incomplete or contradictory."""


class ExecutorUnavailable(RuntimeError):
    """The executor gave no answer after the retries its preset allows; the step stops."""


class Preset(StrEnum):
    """The names the run config uses (`executor_preset`)."""

    LOCAL = "gpt-oss-local"
    OPENROUTER = "openrouter-glm"
    OPENAI = "openai"


# Short names accepted on the command line.
PRESET_ALIASES = {"local": Preset.LOCAL, "openrouter": Preset.OPENROUTER}


@dataclass(frozen=True)
class ExecutorSpec:
    """How to reach and sample the executor. Holds the name of the key variable, never the key."""

    preset: Preset
    base_url: str
    model: str
    api_key_env: str | None
    temperature: float | None
    reasoning_effort: str | None
    timeout_s: float
    max_retries: int
    max_completion_tokens: int | None = None

    def identity(self) -> dict[str, str]:
        """What a resume compares and what outputs record: no credential."""
        return {"preset": self.preset.value, "base_url": self.base_url, "model": self.model}


def executor_spec(
    preset: str | Preset,
    *,
    base_url: str | None = None,
    model: str | None = None,
    max_completion_tokens: int | None = None,
) -> ExecutorSpec:
    """The preset's settings, with the base URL and model overridable where it makes sense."""
    try:
        chosen = PRESET_ALIASES.get(str(preset)) or Preset(preset)
    except ValueError:
        names = ", ".join([p.value for p in Preset] + list(PRESET_ALIASES))
        raise ExecutorConfigError(
            f"unknown executor preset {preset!r}; choose one of {names}"
        ) from None
    if chosen is Preset.LOCAL:
        return ExecutorSpec(
            preset=chosen,
            base_url=(base_url or LOCAL_BASE_URL).rstrip("/"),
            model=model or "openai/gpt-oss-120b",
            api_key_env=None,
            temperature=0.0,
            reasoning_effort="high",
            timeout_s=1200.0,
            max_retries=0,
            max_completion_tokens=max_completion_tokens,
        )
    if chosen is Preset.OPENROUTER:
        return ExecutorSpec(
            preset=chosen,
            base_url=(base_url or OPENROUTER_BASE_URL).rstrip("/"),
            model=model or "z-ai/glm-5.2",
            api_key_env="OPENROUTER_API_KEY",
            temperature=None,
            reasoning_effort="high",
            timeout_s=1200.0,
            max_retries=6,
            max_completion_tokens=max_completion_tokens,
        )
    if not base_url or not model:
        raise ExecutorConfigError(
            "the openai executor preset needs both a base URL and a model name"
        )
    return ExecutorSpec(
        preset=chosen,
        base_url=base_url.rstrip("/"),
        model=model,
        api_key_env="OPENAI_API_KEY",
        temperature=None,
        reasoning_effort=None,
        timeout_s=1200.0,
        max_retries=6,
        max_completion_tokens=max_completion_tokens,
    )


@dataclass(frozen=True)
class ExecutorAnswer:
    """The executor's text and what the endpoint said about it."""

    content: str
    reasoning: str | None
    finish_reason: str | None
    completion_tokens: int | None

    def to_json(self) -> dict[str, Any]:
        return answer_to_json(self)

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> ExecutorAnswer:
        return cls(**answer_from_json(data))


class Executor:
    """A chat-completions client for one executor spec.

    Transport retries (408, 409, 429, 5xx, connection errors and timeouts, with
    exponential backoff honouring Retry-After) are the `openai` SDK's own,
    bounded by the preset's `max_retries`.
    """

    def __init__(
        self,
        spec: ExecutorSpec,
        environ: Mapping[str, str] | None = None,
        cancellation: Cancellation | None = None,
    ) -> None:
        env = os.environ if environ is None else environ
        if spec.api_key_env is None:
            key = LOCAL_PLACEHOLDER_KEY
        else:
            key = env.get(spec.api_key_env, "")
            if not key:
                raise ExecutorConfigError(
                    f"the {spec.preset.value} executor needs its key in the environment "
                    f"variable {spec.api_key_env}"
                )
        self.spec = spec
        self._client = openai.OpenAI(
            api_key=key,
            base_url=spec.base_url,
            timeout=spec.timeout_s,
            max_retries=spec.max_retries,
            http_client=(cancellation or Cancellation()).http_client(timeout=spec.timeout_s),
        )

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        return f"Executor({self.spec.identity()})"

    def request(self, prompt: str) -> dict[str, Any]:
        """The keyword arguments of the chat-completions call for `prompt`."""
        kwargs: dict[str, Any] = {
            "model": self.spec.model,
            "messages": [{"role": "user", "content": prompt}],
        }
        if self.spec.temperature is not None:
            kwargs["temperature"] = self.spec.temperature
        if self.spec.reasoning_effort is not None:
            kwargs["reasoning_effort"] = self.spec.reasoning_effort
        if self.spec.max_completion_tokens is not None:
            kwargs["max_completion_tokens"] = self.spec.max_completion_tokens
        return kwargs

    def complete(self, prompt: str) -> ExecutorAnswer:
        """One executor answer, or ExecutorUnavailable once the allowed retries are spent."""
        where = f"{self.spec.preset.value} executor {self.spec.model} at {self.spec.base_url}"
        try:
            response = self._client.chat.completions.create(**self.request(prompt))
        except openai.APIStatusError as exc:
            raise ExecutorUnavailable(
                f"{where} answered HTTP {exc.status_code} "
                f"(after {self.spec.max_retries} retries allowed): {_short(exc.message)}"
            ) from exc
        except openai.APITimeoutError as exc:
            raise ExecutorUnavailable(
                f"{where} did not answer within {self.spec.timeout_s:g} s "
                f"(after {self.spec.max_retries} retries allowed)"
            ) from exc
        except openai.APIConnectionError as exc:
            raise ExecutorUnavailable(f"{where} cannot be reached: {_short(str(exc))}") from exc
        if not response.choices:
            raise ExecutorUnavailable(f"{where} returned no choices")
        return ExecutorAnswer(**answer_fields(response.model_dump()))


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " …"

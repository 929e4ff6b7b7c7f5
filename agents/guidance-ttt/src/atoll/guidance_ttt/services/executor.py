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
from typing import Any

import openai

from atoll.guidance_ttt import presets
from atoll.guidance_ttt.prompting.model_answer import (
    answer_fields,
    answer_from_json,
    answer_to_json,
)
from atoll.guidance_ttt.prompting.prompts import Prompt
from atoll.guidance_ttt.services.cancel import Cancellation

# SGLang accepts any key unless started with one; this placeholder is not a secret.
LOCAL_PLACEHOLDER_KEY = "local"


class ExecutorConfigError(ValueError):
    """The executor settings are incomplete or contradictory."""


class ExecutorUnavailable(RuntimeError):
    """The executor gave no answer after the retries its preset allows; the step stops."""


@dataclass(frozen=True)
class ExecutorSpec:
    """How to reach and sample the executor. Holds the name of the key variable, never the key."""

    preset: str
    base_url: str
    model: str
    api_key_env: str | None
    temperature: float | None
    request_options: Mapping[str, Any]
    timeout_s: float
    max_retries: int
    max_completion_tokens: int | None = None
    retry_backoff_s: float = 2.0

    @property
    def reasoning_effort(self) -> str | None:
        return presets.preset(self.preset).reasoning_effort

    def identity(self) -> dict[str, str]:
        """What a resume compares and what outputs record: no credential."""
        return {"preset": self.preset, "base_url": self.base_url, "model": self.model}


def executor_spec(
    preset: str,
    *,
    base_url: str | None = None,
    model: str | None = None,
    max_completion_tokens: int | None = None,
) -> ExecutorSpec:
    """The preset's settings (`presets.PRESETS`), with its base URL and model overridable."""
    try:
        chosen = presets.preset(preset)
    except presets.UnknownPreset as exc:
        raise ExecutorConfigError(str(exc)) from None
    url = base_url or chosen.base_url
    name = model or chosen.model
    if not name:
        raise ExecutorConfigError(
            f"the {chosen.name} executor preset needs a model name (executor_model)"
        )
    return ExecutorSpec(
        preset=chosen.name,
        base_url=url.rstrip("/"),
        model=name,
        api_key_env=chosen.api_key_env,
        temperature=chosen.temperature,
        request_options=chosen.request_options,
        timeout_s=chosen.timeout_s,
        max_retries=chosen.max_retries,
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
    bounded by the preset's `max_retries`. An answer with HTTP 200 whose body
    is an error object (as OpenRouter sends when the provider behind it fails)
    is retried here, under the same bound.
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
                    f"the {spec.preset} executor needs its key in the environment "
                    f"variable {spec.api_key_env}"
                )
        self.spec = spec
        self._cancellation = cancellation or Cancellation()
        self._client = openai.OpenAI(
            api_key=key,
            base_url=spec.base_url,
            timeout=spec.timeout_s,
            max_retries=spec.max_retries,
            # openai's signature names httpx2's client; it accepts httpx's as well.
            http_client=self._cancellation.http_client(timeout=spec.timeout_s),  # type: ignore[arg-type]
        )

    def close(self) -> None:
        self._client.close()

    def __repr__(self) -> str:
        return f"Executor({self.spec.identity()})"

    def request(self, prompt: Prompt) -> dict[str, Any]:
        """The keyword arguments of the chat-completions call for `prompt`."""
        kwargs: dict[str, Any] = {"model": self.spec.model, "messages": prompt.messages()}
        if self.spec.temperature is not None:
            kwargs["temperature"] = self.spec.temperature
        if self.spec.max_completion_tokens is not None:
            kwargs["max_completion_tokens"] = self.spec.max_completion_tokens
        if self.spec.request_options:
            kwargs["extra_body"] = dict(self.spec.request_options)
        return kwargs

    def complete(self, prompt: Prompt) -> ExecutorAnswer:
        """One executor answer, or ExecutorUnavailable once the allowed retries are spent."""
        where = f"{self.spec.preset} executor {self.spec.model} at {self.spec.base_url}"
        for attempt in range(self.spec.max_retries + 1):
            body = self._create(prompt, where)
            error = body.get("error")
            if not error:
                break
            if attempt == self.spec.max_retries:
                raise ExecutorUnavailable(
                    f"{where} answered with an error object "
                    f"(after {self.spec.max_retries} retries allowed): {_short(str(error))}"
                )
            if self._cancellation.wait(self.spec.retry_backoff_s * 2**attempt):
                self._cancellation.check("an executor retry")
        if not body.get("choices"):
            raise ExecutorUnavailable(f"{where} returned no choices")
        return ExecutorAnswer(**answer_fields(body))

    def _create(self, prompt: Prompt, where: str) -> dict[str, Any]:
        """One call through the SDK (with its own transport retries); the answer's JSON body."""
        try:
            response = self._client.chat.completions.with_raw_response.create(
                **self.request(prompt)
            )
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
        try:
            body = response.http_response.json()
        except ValueError:
            body = None
        if not isinstance(body, dict):
            raise ExecutorUnavailable(f"{where} answered with a body that is not a JSON object")
        return body


def _short(text: str, limit: int = 300) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit] + " …"

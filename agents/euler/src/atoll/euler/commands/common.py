"""What every `atoll euler` command shares: its error line, its progress output, the run options.

`RunOptions` is the one object the rollout-running commands (eval, curriculum,
transfer run) build from their flags; it turns into the evaluator's settings.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import typer
from rich.console import Console
from rich.markup import escape

console = Console(highlight=False, soft_wrap=True)
err = Console(stderr=True, highlight=False, soft_wrap=True)


def fail(message: str, code: int = 2) -> typer.Exit:
    """Print one `error:` line; the caller raises the returned Exit. The message is printed as
    written: brackets in it (`atoll-euler[ray]`, a path) are text, not markup."""
    err.print(f"[bold red]error:[/bold red] {escape(message)}", markup=True)
    return typer.Exit(code)


def say(line: str) -> None:
    err.print(line, markup=False)


# -- the run options, shared by eval, curriculum and transfer run -------------------

BASE_URL = typer.Option(..., "--base-url", help="OpenAI-compatible endpoint of the model (…/v1).")
MODEL = typer.Option(..., "--model", help="The model's name at the endpoint.")
API_KEY_ENV = typer.Option(
    "OPENAI_API_KEY", "--api-key-env", help="Environment variable holding the endpoint's key."
)
WORKERS = typer.Option(1, "--workers", min=1, help="Rollouts run at a time.")
REVISION = typer.Option(
    None,
    "--model-revision",
    help="Checkpoint or adapter the endpoint serves under the model's name; part of the model signature.",
)
THINKING = typer.Option(
    None, "--thinking", help="Pi's thinking level (off, minimal, low, medium, high, xhigh)."
)
SYSTEM_PROMPT = typer.Option(
    None, "--system-prompt", help="A file whose text replaces Pi's system prompt."
)
MAX_TURNS = typer.Option(
    30, "--max-turns", min=1, help="Model turns per rollout before Pi is aborted."
)
TIMEOUT = typer.Option(900.0, "--timeout", min=1, help="Wall clock of one rollout, in seconds.")
IMAGE = typer.Option(
    None, "--image", help="Rollout image (tag or ID); default: atoll's, built on first use."
)
LANGUAGES = typer.Option(
    "python,javascript",
    "--languages",
    help="Comma-separated: python, javascript (julia is refused: the image lacks it).",
)
RAY = typer.Option(
    None,
    "--ray",
    help="Run each rollout as a task on this Ray cluster (ADDRESS or auto), on nodes that "
    "advertise atoll_docker; needs atoll-euler\\[ray]. Each node reads the model's key from "
    "its own environment.",
)
APPROACHES = typer.Option(
    "direct",
    "--approaches",
    help="Comma-separated prompt variants: direct, brute-force-then-optimize, math-first.",
)

_FLAGS = {
    "base_url": "--base-url",
    "model": "--model",
    "api_key_env": "--api-key-env",
    "thinking": "--thinking",
    "system_prompt": "--system-prompt",
    "max_turns": "--max-turns",
    "timeout_s": "--timeout",
}


@dataclass(frozen=True)
class RunOptions:
    """The model and run flags of a command that runs rollouts."""

    base_url: str
    model: str
    api_key_env: str
    workers: int
    model_revision: str | None
    thinking: str | None
    system_prompt: Path | None
    max_turns: int
    timeout: float
    image: str | None
    ray: str | None = None

    def settings(self) -> Any:
        """The evaluator's settings (with the model signature); a bad flag is one error line."""
        from atoll.euler import signature
        from atoll.euler.evaluate import Settings
        from atoll.pi.rollout import SettingsError
        from atoll.pi.rollout import build_settings as build

        values: dict[str, Any] = {
            "base_url": self.base_url,
            "model": self.model,
            "api_key_env": self.api_key_env,
            "max_turns": self.max_turns,
            "timeout_s": self.timeout,
        }
        if self.thinking:
            values["thinking"] = self.thinking
        if self.system_prompt is not None:
            values["system_prompt"] = self.system_prompt
        try:
            pi = build(values)
        except SettingsError as exc:
            message = str(exc)
            for field, flag in _FLAGS.items():
                message = message.replace(f"--ak {field}:", f"{flag}:")
            raise fail(message) from None
        revision = checked_revision(
            self.base_url, self.model, os.environ.get(self.api_key_env, ""), self.model_revision
        )
        digest, parts = signature.of(pi, revision)
        return Settings(
            pi=pi,
            model_revision=revision,
            workers=self.workers,
            image=self.image,
            ray=self.ray,
            signature=digest,
            signature_parts=parts,
        )


def served_model_path(base_url: str, model: str, api_key: str) -> tuple[bool, str | None]:
    """What the endpoint's `GET /models` says it serves under `model`: (reported, model_path).

    `atoll tinker serve` reports the checkpoint it samples as `model_path` (null for the
    base model); other endpoints report nothing, and an endpoint that does not answer
    is left to the rollouts to find out: (False, None).
    """
    import json
    import urllib.request

    request = urllib.request.Request(
        base_url.rstrip("/") + "/models",
        headers={"Authorization": f"Bearer {api_key}"} if api_key else {},
    )
    try:
        with urllib.request.urlopen(request, timeout=10) as answer:  # noqa: S310 (http only)
            listed = json.loads(answer.read())
    except (OSError, ValueError):
        return False, None
    entries = (listed.get("data") or []) if isinstance(listed, dict) else []
    for entry in entries if isinstance(entries, list) else []:
        if isinstance(entry, dict) and entry.get("id") == model and "model_path" in entry:
            path = entry["model_path"]
            return True, path if isinstance(path, str) else None
    return False, None


def checked_revision(base_url: str, model: str, api_key: str, declared: str | None) -> str | None:
    """The model revision the signature binds: the declared one, checked against the server.

    A server that reports the checkpoint it serves (`atoll tinker serve`) must serve the
    declared `--model-revision`, or the scores would be signed for another checkpoint: one
    error line. Without `--model-revision`, the reported checkpoint is recorded as the
    revision, so a checkpoint's scores never pass for the base model's.
    """
    if not base_url.startswith(("http://", "https://")):
        return declared
    reported, path = served_model_path(base_url, model, api_key)
    if not reported:
        return declared
    if declared is None:
        if path is not None:
            say(f"model revision: {path} (reported by the endpoint)")
        return path
    if path != declared:
        raise fail(
            f"--model-revision {declared} is not what {base_url} serves as {model} "
            f"(it reports model_path {path or 'null: the base model'})"
        )
    return declared


def language_list(text: str) -> tuple[str, ...]:
    from atoll.euler.runtimes import LanguageError, parse_languages

    try:
        return parse_languages(text)
    except LanguageError as exc:
        raise fail(str(exc)) from None


def approach_list(text: str) -> tuple[str, ...]:
    from atoll.euler.prompts import ApproachError, parse_approaches

    try:
        return parse_approaches(text)
    except ApproachError as exc:
        raise fail(str(exc)) from None


def open_store(path: Path) -> Any:
    from atoll.euler.store import Store, StoreError

    try:
        return Store(path)
    except StoreError as exc:
        raise fail(str(exc)) from None


def preflight(runner: Any, languages: tuple[str, ...]) -> None:
    """Check the key, engine, image and Pi; refuse languages the image lacks, before any write."""
    from atoll.euler.cluster import ClusterError
    from atoll.euler.runtimes import LanguageError, parse_languages
    from atoll.pi.rollout import ContainerError, PiUnavailable, SettingsError

    try:
        info = runner.preflight()
    except (SettingsError, ContainerError, PiUnavailable, ClusterError) as exc:
        raise fail(str(exc)) from None
    lacks = ", ".join(info.get("lacks") or []) or "nothing"
    say(f"rollout image {info['image_id'][:19]} ({info['tag']}): {info['runtimes']}; lacks {lacks}")
    available = frozenset(info.get("runtimes") or {}) - frozenset(info.get("lacks") or [])
    try:
        parse_languages(",".join(languages), available=available)
    except LanguageError as exc:
        raise fail(str(exc)) from None

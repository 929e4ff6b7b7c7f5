"""Checking a rendered serve.yaml with reef-infra's own configuration loader.

A field name that reef-infra does not know, a value of the wrong type or a
training option Reef reserves for itself is caught here, before any process
starts, by the same code `reef serve` runs: its YAML loader, its public-layout
translation and its full deployment resolution (which assembles the service
definitions without starting them). A dotted recipe such as the tttd recipe is
imported from the Reef checkout, so full resolution needs `reef_home` then.
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from atoll.stack.errors import StackError
from atoll.stack.render import TOKEN_REFERENCE

#: Stands in for the token while validating; Reef is never started with it.
PLACEHOLDER_TOKEN = "validation-only"


def reef_loader() -> Any:
    try:
        from reef.service.deploy import orchestrator
    except ImportError:
        raise StackError(
            "reef-infra is not installed; install it (pip install reef-infra) to check serve.yaml"
        ) from None
    return orchestrator


def load_layout(path: Path) -> dict[str, Any]:
    """The file as Reef reads it, translated to Reef's resolved layout (unknown fields fail)."""
    reef_loader()
    from reef.core.errors import DeployConfigError
    from reef.service.deploy.config_utils import load_config
    from reef.service.deploy.deployment_config import translate_layout

    try:
        return translate_layout(_placeholder(load_config(path, interpolate_env=False)))
    except DeployConfigError as exc:
        raise StackError(f"reef-infra rejects {path}: {_first_line(exc)}") from None


def resolve(
    path: Path,
    *,
    upstream: tuple[str, str] | None = None,
    reef_home: Path | None = None,
    recipe: str | None = None,
) -> dict[str, Any]:
    """Reef's fully resolved deployment for `path`, as `reef serve` would compute it.

    `recipe` replaces `recipe.implementation` (its `recipe.config` is then
    dropped): this checks every other section with a recipe the wheel ships
    when the Reef checkout is not at hand.
    """
    orchestrator = reef_loader()
    from reef.core.errors import DeployConfigError
    from reef.service.deploy.config_utils import load_config

    config = _placeholder(load_config(path, interpolate_env=False))
    if recipe is not None:
        section = dict(config.get("recipe") or {})
        section["implementation"] = recipe
        section.pop("config", None)
        config["recipe"] = section
    overrides: dict[str, str] = {}
    if upstream is not None:
        overrides = {"inference.upstream-url": upstream[0], "inference.upstream-model": upstream[1]}
    try:
        with _on_path(reef_home):
            resolved, _ = orchestrator.resolve_deployment_config(config, overrides, path)
    except DeployConfigError as exc:
        raise StackError(f"reef-infra rejects {path}: {_first_line(exc)}") from None
    return resolved


def _placeholder(config: Mapping[str, Any]) -> dict[str, Any]:
    def swap(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(TOKEN_REFERENCE, PLACEHOLDER_TOKEN)
        if isinstance(value, Mapping):
            return {key: swap(item) for key, item in value.items()}
        if isinstance(value, list):
            return [swap(item) for item in value]
        return value

    return swap(dict(config))


@contextlib.contextmanager
def _on_path(directory: Path | None) -> Iterator[None]:
    if directory is None:
        yield
        return
    entry = str(directory)
    sys.path.insert(0, entry)
    try:
        yield
    finally:
        with contextlib.suppress(ValueError):
            sys.path.remove(entry)


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip()
    return " ".join(line.strip() for line in text.splitlines() if line.strip())

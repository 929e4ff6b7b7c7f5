"""Checking a rendered serve.yaml with reef-infra's own configuration loader.

A field name that reef-infra does not know, a value of the wrong type or a
training option Reef reserves for itself is caught here, before any process
starts, by the same code `reef serve` runs: its YAML loader, its public-layout
translation and its full deployment resolution (which assembles the service
definitions without starting them). A dotted recipe such as the tttd recipe is
imported from the Reef checkout, so full resolution needs `reef_home` then.
reef-infra ships no type information, so its modules are imported by name and
what they return is checked here rather than trusted.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from atoll.stack.errors import StackError
from atoll.stack.render import TOKEN_REFERENCE

#: Stands in for the token while validating; Reef is never started with it.
PLACEHOLDER_TOKEN = "validation-only"


def reef_loader() -> Any:
    """reef-infra's deployment orchestrator; one clear error when reef-infra is missing."""
    try:
        return importlib.import_module("reef.service.deploy.orchestrator")
    except ImportError:
        raise StackError(
            "reef-infra is not installed; install it (pip install reef-infra) to check serve.yaml"
        ) from None


def _reef(module: str) -> Any:
    return importlib.import_module(module)


def load_layout(path: Path) -> dict[str, Any]:
    """The file as Reef reads it, translated to Reef's resolved layout (unknown fields fail)."""
    reef_loader()
    errors = _reef("reef.core.errors")
    config_utils = _reef("reef.service.deploy.config_utils")
    deployment_config = _reef("reef.service.deploy.deployment_config")
    try:
        layout = deployment_config.translate_layout(
            _placeholder(config_utils.load_config(path, interpolate_env=False))
        )
    except errors.DeployConfigError as exc:
        raise StackError(f"reef-infra rejects {path}: {_first_line(exc)}") from None
    return _mapping(layout, "translate_layout")


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
    errors = _reef("reef.core.errors")
    config_utils = _reef("reef.service.deploy.config_utils")
    config = _placeholder(config_utils.load_config(path, interpolate_env=False))
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
    except errors.DeployConfigError as exc:
        raise StackError(f"reef-infra rejects {path}: {_first_line(exc)}") from None
    return _mapping(resolved, "resolve_deployment_config")


def _mapping(value: object, what: str) -> dict[str, Any]:
    if not isinstance(value, Mapping):
        raise StackError(f"reef-infra's {what} returned {type(value).__name__}, not a mapping")
    return dict(value)


def _placeholder(config: Mapping[str, Any]) -> dict[str, Any]:
    def swap(value: Any) -> Any:
        if isinstance(value, str):
            return value.replace(TOKEN_REFERENCE, PLACEHOLDER_TOKEN)
        if isinstance(value, Mapping):
            return {key: swap(item) for key, item in value.items()}
        if isinstance(value, list):
            return [swap(item) for item in value]
        return value

    return dict(swap(dict(config)))


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

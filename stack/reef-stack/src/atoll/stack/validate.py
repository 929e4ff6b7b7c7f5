"""Checking a rendered serve.yaml with reef-infra's own configuration loader.

A field name that reef-infra does not know, a value of the wrong type or a
training option Reef reserves for itself is caught here, before any process
starts, by the same code `reef serve` runs: its YAML loader, its public-layout
translation and its full deployment resolution (which assembles the service
definitions without starting them). A dotted recipe such as the tttd recipe is
imported from the Reef checkout, so full resolution needs `reef_home` then.
reef-infra ships no type information, so its modules are imported by name and
what they return is checked here rather than trusted.

`check_method` then runs what Reef's Slime driver checks before it launches
anything, as far as it imports without a GPU: the training objective and its
loss family resolved by name, the family's validation of the driver's
arguments, the worker hooks the family requires registered at the paths the
file names, and the inference handler factory loaded.
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from argparse import Namespace
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from atoll.stack.errors import StackError
from atoll.stack.render import (
    ADVANTAGE_HOOK,
    LOSS_FAMILY,
    LOSS_HOOK,
    OBJECTIVE_MODULE,
    TOKEN_REFERENCE,
    TTTD_RECIPE,
)

#: Stands in for the token while validating; Reef is never started with it.
PLACEHOLDER_TOKEN = "validation-only"
#: A weight-training recipe the reef-infra wheel ships: it stands in for the tttd recipe (which
#: extends the Reef checkout's) so that every other section resolves without the checkout.
WHEEL_TRAINING_RECIPE = "reef.recipe.generated_tasks.recipe:GeneratedTaskRecipe"


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


def check_method(resolved: Mapping[str, Any]) -> Namespace:
    """Reef's pre-launch checks of the training method on `resolved`; the driver's arguments.

    `resolved` is `resolve`'s answer for a training file. Raises StackError
    with Reef's own reason when the Slime driver would refuse to start, or
    would train another objective than the method's.
    """
    reef_loader()
    try:
        importlib.import_module(OBJECTIVE_MODULE)
    except ImportError as exc:
        raise StackError(
            f"the method's objective ({OBJECTIVE_MODULE}) does not import: {exc}; install "
            "atoll-guidance-ttt[reef] where Reef runs"
        ) from None
    registry = _reef("reef.train.algos.registry")
    families = _reef("reef.train.slime_backend.loss_families")
    launch = _reef("reef.train.slime_backend.launch")
    deployment = _reef("reef.train.deployment")
    family = registry.resolve_objective(LOSS_FAMILY).loss_family
    try:
        spec = families.resolve_loss_family(family)
        arguments = driver_arguments(launch.driver_arguments(resolved, loss_family=family))
        spec.validate_backend_args(arguments, recipe=TTTD_RECIPE)
        _require_hooks(spec, arguments)
        handler = resolved.get("reef", {}).get("inference_handler_factory")
        deployment.inference_handler_factory_for(handler)
    except (RuntimeError, ValueError) as exc:
        raise StackError(
            f"Reef's Slime driver would refuse this file: {_first_line(exc)}"
        ) from None
    return arguments


def driver_arguments(arguments: list[str]) -> Namespace:
    """The driver's command line read into a Namespace the way Slime's parser spells it.

    Slime's own parser needs the GPU stack; the values the method's checks
    read are parsed the same way here: `--a-b=1` is `a_b = 1`, a bare flag is
    True, `--disable-x` sets `x` False, a flag followed by words is a list.
    The advantage pass is on unless disabled, as in Slime.
    """
    values: dict[str, Any] = {"compute_advantages_and_returns": True}
    name: str | None = None
    for token in arguments:
        if token.startswith("--"):
            flag, equals, text = token[2:].partition("=")
            name = flag.replace("-", "_")
            if equals:
                values[name] = _scalar(text)
                name = None
            elif name.startswith("disable_"):
                values[name.removeprefix("disable_")] = False
                name = None
            else:
                values[name] = True
        elif name is not None:
            current = values.get(name)
            values[name] = [*current, token] if isinstance(current, list) else [token]
    return Namespace(**values)


def _require_hooks(spec: Any, arguments: Namespace) -> None:
    """What a Megatron worker does at start: import the family's hooks and find each one required."""
    algorithm = _reef("reef.train.slime_backend.algorithm")
    module = f"{type(spec).__module__}.objective"
    importlib.import_module(module)
    registered = algorithm._objective_registry.get(module, {})
    required = {*spec.required_objective_hooks, "custom_loss_function_path"}
    missing = sorted(required.difference(registered))
    if missing:
        raise RuntimeError(f"{module} registers no {', '.join(missing)}")
    for attribute, function in registered.items():
        named = getattr(arguments, attribute, None)
        if named != f"{module}.{function}":
            raise RuntimeError(
                f"--{attribute.replace('_', '-')} names {named!r}, not {module}.{function}"
            )
    for path in (LOSS_HOOK, ADVANTAGE_HOOK):
        owner, _, function = path.rpartition(".")
        if not callable(getattr(importlib.import_module(owner), function, None)):
            raise RuntimeError(f"{path} is not a function")


def _scalar(text: str) -> Any:
    for kind in (int, float):
        try:
            return kind(text)
        except ValueError:
            pass
    return text

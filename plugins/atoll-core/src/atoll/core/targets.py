"""Import a `module:attr` target named by a record, with an error a user can act on."""

from __future__ import annotations

import importlib
from typing import Any


class TargetError(Exception):
    """A record names something that cannot be imported."""


def import_target(target: str) -> Any:
    module_name, sep, attr = target.partition(":")
    if not sep or not module_name or not attr:
        raise TargetError(f"{target!r} is not an import path of the form module:attribute")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        raise TargetError(f"cannot import {module_name} (for {target}): {exc}") from exc
    obj: Any = module
    for part in attr.split("."):
        try:
            obj = getattr(obj, part)
        except AttributeError:
            raise TargetError(f"{module_name} has no attribute {attr!r} (for {target})") from None
    return obj

"""Names a package exports but imports only when first used (PEP 562).

Every `atoll` call imports each plugin's hook module, and with it the hook
module's package: a package whose `__init__` imported its public API eagerly
would make every command pay for it. A package instead declares where each
public name lives; `from package import name` and `package.name` work as before.
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any


def exports(package: str, where: Mapping[str, str]) -> Callable[[str], Any]:
    """A module `__getattr__` for `package` that imports `name` from `where[name]` when asked.

    `where` maps each public name to `"module"` (same name there) or
    `"module:attribute"`. A loaded name is stored in the package, so it is
    looked up once.
    """

    def __getattr__(name: str) -> Any:
        try:
            target = where[name]
        except KeyError:
            raise AttributeError(f"module {package!r} has no attribute {name!r}") from None
        module, _, attribute = target.partition(":")
        value = getattr(importlib.import_module(module), attribute or name)
        setattr(importlib.import_module(package), name, value)
        return value

    return __getattr__

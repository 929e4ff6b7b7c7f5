"""atoll-pi-train's rooms: cli.py mounts each room's command and no module imports it back.

A command module that took its helpers from cli.py (as `shell` once did, lazily) made the
two import each other; what the training commands share lives in training.command instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import atoll.pi_train

PACKAGE = Path(atoll.pi_train.__file__).parent


def _imported_modules(path: Path) -> set[str]:
    """Every module `path` imports, at any depth (module level, functions, TYPE_CHECKING)."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text("utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
    return found


def test_no_module_imports_the_command_line_that_mounts_it() -> None:
    importing = sorted(
        str(path.relative_to(PACKAGE))
        for path in PACKAGE.rglob("*.py")
        if path.name != "cli.py" and "atoll.pi_train.cli" in _imported_modules(path)
    )
    assert importing == []


def test_the_shell_command_takes_the_shared_parts_from_training_command() -> None:
    shell = _imported_modules(PACKAGE / "shell" / "command.py")
    assert "atoll.pi_train.training.command" in shell
    assert "atoll.pi_train.cli" not in shell
    assert "atoll.pi_train.cli" not in _imported_modules(PACKAGE / "training" / "command.py")

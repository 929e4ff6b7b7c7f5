"""The names of Harbor's own top-level commands, known without importing Harbor's command line.

A plugin command must not take a Harbor command's name (it would hide it), so
every `atoll` call needs these names; but importing Harbor's command line
costs over a second, and plugin commands are otherwise dispatched without it.
The names are read once per installed Harbor build and kept in atoll's cache.
"""

from __future__ import annotations

import contextlib
import importlib.metadata as metadata
import json
from pathlib import Path

from atoll.core.durable import atomic_write_json
from atoll.core.user_dirs import cache_dir


def harbor_command_names() -> frozenset[str]:
    """Harbor's top-level command names."""
    return frozenset(harbor_commands())


def harbor_commands() -> dict[str, dict[str, object]]:
    """Harbor's top-level commands: each one's first help line and whether it is hidden (an alias).

    Cached per Harbor build.
    """
    key = _harbor_build()
    cached = _read_cache(key)
    if cached is not None:
        return cached
    commands = _import_commands()
    with contextlib.suppress(OSError):  # a read-only home only costs the import next time
        atomic_write_json(_cache_file(), {"harbor": key, "commands": commands}, make_parents=True)
    return commands


def _import_commands() -> dict[str, dict[str, object]]:
    import typer
    from harbor.cli.main import app

    group = typer.main.get_command(app)
    found: dict[str, dict[str, object]] = {}
    for name, command in getattr(group, "commands", {}).items():
        text = (command.help or command.short_help or "").strip()
        summary = text.splitlines()[0] if text else ""
        found[name] = {"summary": summary, "hidden": bool(command.hidden)}
    return found


def _harbor_build() -> str:
    """Harbor's version plus its CLI module's size and mtime: an edited install invalidates it."""
    try:
        dist = metadata.distribution("harbor")
    except metadata.PackageNotFoundError:
        return "absent"
    main = dist.locate_file("harbor/cli/main.py")
    try:
        stat = Path(str(main)).stat()
        return f"{dist.version}:{stat.st_size}:{stat.st_mtime_ns}"
    except OSError:
        return dist.version


def _cache_file() -> Path:
    return cache_dir() / "harbor-commands.json"


def _read_cache(key: str) -> dict[str, dict[str, object]] | None:
    try:
        data = json.loads(_cache_file().read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    if not isinstance(data, dict) or data.get("harbor") != key:
        return None
    commands = data.get("commands")
    if not isinstance(commands, dict) or not all(
        isinstance(v, dict)
        and isinstance(v.get("summary"), str)
        and isinstance(v.get("hidden"), bool)
        for v in commands.values()
    ):
        return None
    return commands

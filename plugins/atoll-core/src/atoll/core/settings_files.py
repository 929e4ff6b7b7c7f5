"""A file of settings: `.toml`, `.yaml` or `.yml`, holding a mapping of setting to value.

Guidance-TTT's run config and the Reef stack's own settings are the same kind
of file, read by the same rules, so a file one of them accepts the other reads
alike and the errors read alike; each wraps `SettingsFileError` in its own error.
"""

from __future__ import annotations

import tomllib
from pathlib import Path
from typing import Any

import yaml

__all__ = ["SUFFIXES", "SettingsFileError", "read_settings_file"]

SUFFIXES = (".toml", ".yaml", ".yml")


class SettingsFileError(ValueError):
    """The file cannot be read as settings; the message names the file and says why."""


def read_settings_file(path: Path) -> dict[str, Any]:
    """The settings in `path`; an empty YAML file is no settings."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise SettingsFileError(f"{path}: unknown config format; use a .toml, .yaml or .yml file")
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise SettingsFileError(f"{path}: cannot be read ({exc.strerror or exc})") from None
    try:
        data: Any = tomllib.loads(text) if suffix == ".toml" else yaml.safe_load(text)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        detail = str(exc).splitlines()[0]
        raise SettingsFileError(f"{path}: not valid {suffix[1:].upper()} ({detail})") from None
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise SettingsFileError(f"{path}: must be a mapping of setting names to values")
    return data

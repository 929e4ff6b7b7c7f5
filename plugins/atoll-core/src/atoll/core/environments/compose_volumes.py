"""The bind mounts a task's docker-compose.yaml gives its `main` service, for atoll-local.

A task states once, in `environment/docker-compose.yaml`, which host
directories its trial sees (a judge's socket, a dataset): Harbor's docker
environment mounts them through Compose, and atoll-local reads the same
entries so that both environments give the trial the same view. Compose's
interpolation rules apply (`${VAR}`, `${VAR:-default}`, `${VAR:?error}`,
`$$`), read from the host's environment when the trial starts, so a missing
variable stops the trial with the task's own message. Named volumes and
tmpfs entries have no meaning without an engine; they are reported, not
guessed at.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import yaml

MAIN_SERVICE = "main"
_COMPOSE_NAMES = ("docker-compose.yaml", "docker-compose.yml", "compose.yaml", "compose.yml")
_VARIABLE = re.compile(
    r"\$(?:(?P<escaped>\$)|\{(?P<braced>[^}]*)\}|(?P<named>[A-Za-z_][A-Za-z0-9_]*))"
)
_BRACED = re.compile(r"^(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?:(?P<op>:?[-?+])(?P<arg>.*))?$", re.S)


class ComposeVolumeError(ValueError):
    """A volume entry atoll-local cannot apply; the message names the entry and the fix."""


@dataclass(frozen=True)
class BindVolume:
    """One host directory or file, bound at `target` in the trial."""

    source: str  # uninterpolated, as the compose file says
    target: str
    read_only: bool


@dataclass(frozen=True)
class Volumes:
    binds: tuple[BindVolume, ...] = ()
    skipped: tuple[str, ...] = ()  # entries without meaning here, for one warning


def compose_file(environment_dir: Path) -> Path | None:
    for name in _COMPOSE_NAMES:
        if (environment_dir / name).is_file():
            return environment_dir / name
    return None


def parse(path: Path) -> Volumes:
    """The `main` service's volume entries in the compose file at `path`."""
    try:
        document = yaml.safe_load(path.read_text())
    except (OSError, yaml.YAMLError) as exc:
        raise ComposeVolumeError(f"cannot read {path}: {exc}") from None
    service = ((document or {}).get("services") or {}).get(MAIN_SERVICE) or {}
    binds: list[BindVolume] = []
    skipped: list[str] = []
    for entry in service.get("volumes") or []:
        volume = _entry(entry, path)
        if volume is None:
            skipped.append(str(entry))
        else:
            binds.append(volume)
    return Volumes(tuple(binds), tuple(skipped))


def _entry(entry: Any, path: Path) -> BindVolume | None:
    if isinstance(entry, str):
        parts = _split_outside_variables(entry)
        if len(parts) > 3:
            raise ComposeVolumeError(f"{path}: cannot read the volume entry {entry!r}")
        if len(parts) == 1:
            return None  # an anonymous volume
        source, target = parts[0], parts[1]
        options = parts[2].split(",") if len(parts) == 3 else []
        if not _is_host_path(source):
            return None  # a named volume
        return BindVolume(source, target, read_only="ro" in options)
    if isinstance(entry, Mapping):
        if entry.get("type") != "bind":
            return None
        if "source" not in entry or "target" not in entry:
            raise ComposeVolumeError(f"{path}: a bind volume needs source and target: {entry}")
        return BindVolume(
            str(entry["source"]), str(entry["target"]), bool(entry.get("read_only", False))
        )
    raise ComposeVolumeError(f"{path}: cannot read the volume entry {entry!r}")


def _split_outside_variables(entry: str) -> list[str]:
    """`SOURCE:TARGET[:MODE]`, where a `${VAR:-x}` in any part keeps its own colons."""
    parts: list[str] = []
    current: list[str] = []
    depth = 0
    for i, char in enumerate(entry):
        if char == "{" and i > 0 and entry[i - 1] == "$":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == ":" and depth == 0:
            parts.append("".join(current))
            current = []
            continue
        current.append(char)
    parts.append("".join(current))
    return parts


def _is_host_path(source: str) -> bool:
    return source.startswith(("/", ".", "~", "$"))


def resolve(
    volume: BindVolume, environment_dir: Path, env: Mapping[str, str] | None = None
) -> tuple[Path, str]:
    """The host path (interpolated, absolute, existing) and the target of one bind."""
    environ = os.environ if env is None else env
    source = Path(interpolate(volume.source, environ)).expanduser()
    if not source.is_absolute():
        source = (environment_dir / source).resolve()
    if not source.exists():
        raise ComposeVolumeError(
            f"the volume source {source} (from {volume.source!r}) does not exist; "
            "create it or point the variable elsewhere"
        )
    target = interpolate(volume.target, environ)
    if not target.startswith("/"):
        raise ComposeVolumeError(f"the volume target {target!r} is not an absolute path")
    return source, target


def interpolate(text: str, env: Mapping[str, str]) -> str:
    """Compose's variable substitution; `${VAR:?message}` raises with that message."""

    def substitute(match: re.Match[str]) -> str:
        if match.group("escaped"):
            return "$"
        if match.group("named"):
            return env.get(match.group("named"), "")
        braced = _BRACED.match(match.group("braced"))
        if braced is None:
            raise ComposeVolumeError(f"invalid variable ${{{match.group('braced')}}} in {text!r}")
        name, op, arg = braced.group("name"), braced.group("op"), braced.group("arg") or ""
        value = env.get(name)
        unset_or_empty = value is None or (op is not None and op.startswith(":") and value == "")
        if op in (":-", "-"):
            return arg if unset_or_empty else str(value)
        if op in (":?", "?"):
            if unset_or_empty:
                raise ComposeVolumeError(f"{name}: {arg or 'is not set'}")
            return str(value)
        if op in (":+", "+"):
            return "" if unset_or_empty else arg
        return value or ""

    return _VARIABLE.sub(substitute, text)

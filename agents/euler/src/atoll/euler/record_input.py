"""The gate's view of a rollout record (`record.json` of `atoll.pi.rollout`).

The operations come from `commands`, the bridge's own log of what the
container did (each command with its exit code and stdout as the container
returned them); the tool calls only say which tool made a write and with
what path argument; the final response is Pi's last assistant text.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from atoll.euler.gate import GateInput, Operation, ToolCall

RECORD_FILE = "record.json"
DEFAULT_WORKDIR = "/workspace"


class RecordError(Exception):
    """A rollout directory without a readable record."""


def load(rollout_dir: Path) -> dict[str, Any]:
    path = rollout_dir / RECORD_FILE if rollout_dir.is_dir() else rollout_dir
    try:
        data = json.loads(path.read_text("utf-8"))
    except FileNotFoundError:
        raise RecordError(f"{path} does not exist: not a finished rollout directory") from None
    except (OSError, ValueError) as exc:
        raise RecordError(f"{path} cannot be read: {exc}") from None
    if not isinstance(data, dict) or "commands" not in data:
        raise RecordError(f"{path} is not a Pi rollout record")
    return data


def gate_input(record: dict[str, Any]) -> GateInput:
    operations = []
    for entry in record.get("commands") or []:
        operations.append(
            Operation(
                seq=int(entry.get("seq", 0)),
                op=str(entry.get("op", "")),
                call_id=str(entry.get("call_id", "")),
                path=entry.get("path"),
                command=entry.get("command"),
                cwd=entry.get("cwd"),
                exit_code=entry.get("exit_code"),
                stdout=str(entry.get("stdout") or ""),
                stderr=str(entry.get("stderr") or ""),
                error=entry.get("error"),
                timed_out=bool(entry.get("timed_out")),
            )
        )
    calls = {
        str(c.get("id")): ToolCall(
            str(c.get("id")), str(c.get("name")), dict(c.get("arguments") or {})
        )
        for c in record.get("tool_calls") or []
    }
    workdir = (record.get("container") or {}).get("workdir") or DEFAULT_WORKDIR
    return GateInput(
        workdir=str(workdir),
        operations=tuple(sorted(operations, key=lambda o: o.seq)),
        tool_calls=calls,
        final_text=str(record.get("final_text") or ""),
    )

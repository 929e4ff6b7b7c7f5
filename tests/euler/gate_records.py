"""Rollout records as the bridge writes them, built step by step for gate tests."""

from __future__ import annotations

import hashlib
from typing import Any

WORKDIR = "/workspace"


class Trajectory:
    """Appends tool calls and the bridge operations they caused, in the record's JSON shape."""

    def __init__(self) -> None:
        self.tool_calls: list[dict[str, Any]] = []
        self.commands: list[dict[str, Any]] = []
        self.final_text = ""

    def _call(self, name: str, arguments: dict[str, Any]) -> str:
        call_id = f"call_{len(self.tool_calls) + 1}"
        self.tool_calls.append({"id": call_id, "name": name, "arguments": arguments})
        return call_id

    def _op(self, entry: dict[str, Any]) -> None:
        self.commands.append({"seq": len(self.commands) + 1, **entry})

    def write(
        self, path: str, content: str, *, tool: str = "write", error: str | None = None
    ) -> Trajectory:
        call = self._call(tool, {"path": path, "content": content})
        resolved = path if path.startswith("/") else f"{WORKDIR}/{path}"
        if tool == "edit":
            self._op({"call_id": call, "op": "read", "path": resolved, "writable": True})
        entry = {
            "call_id": call,
            "op": "write",
            "path": resolved,
            "bytes": len(content),
            "sha256": hashlib.sha256(content.encode()).hexdigest(),
            "content": content,
        }
        if error:
            entry["error"] = error
        self._op(entry)
        return self

    def read(self, path: str, error: str | None = None) -> Trajectory:
        call = self._call("read", {"path": path})
        entry: dict[str, Any] = {"call_id": call, "op": "read", "path": path}
        if error:
            entry["error"] = error
        self._op(entry)
        return self

    def bash(
        self,
        command: str,
        stdout: str = "",
        stderr: str = "",
        exit_code: int = 0,
        cwd: str = WORKDIR,
        timed_out: bool = False,
    ) -> Trajectory:
        call = self._call("bash", {"command": command})
        self._op(
            {
                "call_id": call,
                "op": "bash",
                "command": command,
                "cwd": cwd,
                "exit_code": exit_code,
                "stdout": stdout,
                "stderr": stderr,
                "timed_out": timed_out,
            }
        )
        return self

    def say(self, text: str) -> Trajectory:
        self.final_text = text
        return self

    def record(self) -> dict[str, Any]:
        return {
            "scorable": True,
            "outcome": "completed",
            "final_text": self.final_text,
            "tool_calls": self.tool_calls,
            "commands": self.commands,
            "container": {"workdir": WORKDIR},
            "audit": {"hits": [], "disqualified": False},
        }

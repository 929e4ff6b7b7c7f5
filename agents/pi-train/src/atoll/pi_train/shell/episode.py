"""The Pi-shaped environment of `atoll pi train shell`: Pi's four tools over one fresh workspace.

An `Episode` is one trajectory's workspace: the task's files, in memory,
and the tool calls the policy makes on them, with Pi's own tool names and
argument schemas (`TOOL_SPECS`: read, write, edit, bash). The rules:

- read names any file of the workspace by a relative path;
- write and edit change only the task's one program file (`solution.py`,
  `solution.js`, `solution.jl`): the data stays as it was given;
- bash runs exactly `<runtime> <program>` (`python3 solution.py`, `node
  solution.js`, `julia solution.jl`); nothing else is a command here.

A call outside the rules is refused with a tool result saying what is
allowed, and the episode goes on. A call naming a place outside the
workspace (an absolute or home path, `..` that leaves it, also inside
program text) is also caught by atoll-pi-docker's path audit, the one the
Docker evaluation applies, and disqualifies the trajectory as there.

A run sends the workspace's files to a SandboxFusion-compatible sandbox on
loopback (`sandbox_fusion.run_code`, the program as the code and every
file beside it) and returns the exit status and bounded stdout and stderr,
so the policy can repair its program. A sandbox that cannot run it raises
`InfrastructureFailure`: never a tool result, never a score.
"""

from __future__ import annotations

import base64
import json
import logging
import posixpath
import shlex
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from atoll.core.sandbox.fusion import require_loopback_url
from atoll.pi_train.shell.pi_tools import (
    TOOL_NAMES,
    TOOL_SPECS,
    edit_not_found,
    edit_not_unique,
    edited,
    edits_overlap,
    ran,
    wrote,
)

__all__ = ["TOOL_NAMES", "TOOL_SPECS"]

# The prefix of every refusal that real Pi would not make: the policy (and a reader of
# the log) can tell a rule of this training workspace from Pi's own error.
NOT_HERE = "Not allowed in this training workspace: "

logging.getLogger("sandbox_fusion").addHandler(logging.NullHandler())
logging.getLogger("sandbox_fusion").propagate = False


@dataclass(frozen=True)
class Runtime:
    """How the task's language runs: the commands that name it, its sandbox language, its file."""

    language: str
    commands: tuple[str, ...]
    sandbox_language: str
    program: str

    @property
    def command(self) -> str:
        return f"{self.commands[0]} {self.program}"


RUNTIMES: dict[str, Runtime] = {
    "python": Runtime("python", ("python3", "python"), "python", "solution.py"),
    "javascript": Runtime("javascript", ("node", "nodejs"), "nodejs", "solution.js"),
    "julia": Runtime("julia", ("julia",), "julia", "solution.jl"),
}


@dataclass(frozen=True)
class Bounds:
    """Hard limits of one episode (all in the run manifest)."""

    steps: int = 6  # policy turns
    tool_calls: int = 8
    episode_tokens: int = 4096  # prompt and every turn together
    read_chars: int = 4000
    stdout_chars: int = 2000
    stderr_chars: int = 1000
    run_timeout_s: float = 6.0
    program_bytes: int = 64 * 1024


class InfrastructureFailure(RuntimeError):
    """The sandbox could not run the program: there is no result to show and no score."""


@dataclass(frozen=True)
class RunResult:
    exit_code: int | None  # None: it ran out of time
    stdout: str
    stderr: str


Runner = Callable[[Runtime, dict[str, bytes], float], RunResult]


def fusion_runner(sandbox_url: str) -> Runner:
    """A runner over a SandboxFusion-compatible sandbox on loopback (NotLoopbackError otherwise)."""
    require_loopback_url(sandbox_url)
    # Imported here, not at the top: its HTTP stack (aiohttp) would cost every `atoll`
    # start that loads the shell command's options about 0.3 s.
    from sandbox_fusion import RunCodeRequest, run_code  # type: ignore[import-untyped]

    def run(runtime: Runtime, files: dict[str, bytes], timeout_s: float) -> RunResult:
        request = RunCodeRequest(
            code=files[runtime.program].decode("utf-8", errors="replace"),
            language=runtime.sandbox_language,
            run_timeout=timeout_s,
            stdin="",
            files={name: base64.b64encode(data).decode() for name, data in files.items()},
        )
        try:
            response = run_code(
                request, endpoint=sandbox_url, max_attempts=3, client_timeout=timeout_s * 10 + 30
            )
        except Exception as exc:  # the client raises bare Exception for every sandbox failure
            raise InfrastructureFailure(f"the sandbox failed: {type(exc).__name__}") from None
        result = response.run_result
        if result is None:
            raise InfrastructureFailure("the sandbox answered without a run")
        timed_out = str(getattr(result.status, "value", result.status)) == "TimeLimitExceeded"
        # A finished run without an exit status never counts as a success.
        code = -1 if result.return_code is None else int(result.return_code)
        return RunResult(
            None if timed_out else code,
            result.stdout or "",
            result.stderr or "",
        )

    return run


@dataclass(frozen=True)
class Execution:
    """One accepted run of the program: after which mutation, how it ended, what it printed."""

    after_mutation: int  # mutations before it (0: it ran a file the policy never wrote)
    exit_code: int | None
    stdout: str


@dataclass
class Episode:
    """One trajectory's workspace and the record the reward reads."""

    runtime: Runtime
    files: dict[str, bytes]
    runner: Runner
    bounds: Bounds = field(default_factory=Bounds)
    tool_calls: int = 0
    refused: int = 0
    mutations: int = 0
    executions: list[Execution] = field(default_factory=list)
    audit_hits: list[dict[str, Any]] = field(default_factory=list)
    log: list[dict[str, Any]] = field(default_factory=list)

    @property
    def budget_left(self) -> int:
        return max(0, self.bounds.tool_calls - self.tool_calls)

    def call(self, name: str, arguments: Any, call_id: str = "") -> str:
        """Carry out one tool call; the tool result text the policy reads next."""
        started = time.monotonic()
        if self.tool_calls >= self.bounds.tool_calls:
            return self._note(
                name, "budget", f"{NOT_HERE}the tool-call budget of this task is spent"
            )
        self.tool_calls += 1
        parsed = _arguments(arguments)
        if parsed is None:
            return self._refuse(name, "Validation failed: the arguments are not a JSON object")
        self._audit(call_id, name, parsed)
        if name == "read":
            text = self._read(parsed)
        elif name == "write":
            text = self._write(parsed)
        elif name == "edit":
            text = self._edit(parsed)
        elif name == "bash":
            text = self._bash(parsed)
        else:
            text = self._refuse(
                name, f"Tool {name} not found; the tools are {', '.join(TOOL_NAMES)}"
            )
        self.log[-1]["seconds"] = round(time.monotonic() - started, 3)
        return text

    # --- the tools ---------------------------------------------------------------------

    def _read(self, args: dict[str, Any]) -> str:
        path = _workspace_path(args.get("path"))
        if path is None or path not in self.files:
            names = ", ".join(sorted(self.files))
            return self._refuse("read", f"{NOT_HERE}no such file; the workspace holds: {names}")
        lines = self.files[path].decode("utf-8", errors="replace").splitlines()
        offset = _whole(args.get("offset"), 1)
        limit = _whole(args.get("limit"), len(lines))
        chosen = "\n".join(lines[offset - 1 : offset - 1 + limit])
        if len(chosen) > self.bounds.read_chars:
            cut = chosen[: self.bounds.read_chars].count("\n")
            if cut == 0:  # one line longer than the bound: show its head and go past it
                chosen = chosen[: self.bounds.read_chars]
                chosen += (
                    f"\n[line {offset} is cut at {self.bounds.read_chars} characters; "
                    f"{len(lines)} lines in all; continue with offset={offset + 1}]"
                )
                return self._note("read", "ok", chosen)
            chosen = chosen[: self.bounds.read_chars].rsplit("\n", 1)[0]
            chosen += (
                f"\n[truncated: {len(lines)} lines in all; continue with offset={offset + cut}]"
            )
        return self._note("read", "ok", chosen)

    def _write(self, args: dict[str, Any]) -> str:
        path = _workspace_path(args.get("path"))
        if path != self.runtime.program:
            return self._refuse("write", f"{NOT_HERE}only {self.runtime.program} may be written")
        content = args.get("content")
        if not isinstance(content, str):
            return self._refuse("write", "Validation failed: `content` must be a string")
        return self._store("write", path, content, wrote(path, content))

    def _edit(self, args: dict[str, Any]) -> str:
        path = _workspace_path(args.get("path"))
        if path != self.runtime.program:
            return self._refuse("edit", f"{NOT_HERE}only {self.runtime.program} may be edited")
        if path not in self.files:
            return self._refuse(
                "edit", f"Could not edit file: {path}. It does not exist yet; write it first."
            )
        edits = args.get("edits")
        if isinstance(edits, str):  # some models send the list as JSON text; Pi accepts it
            edits = _arguments_list(edits)
        if isinstance(args.get("oldText"), str) and isinstance(args.get("newText"), str):
            edits = [*(edits if isinstance(edits, list) else []), args]
        if not isinstance(edits, list) or not edits:
            return self._refuse(
                "edit", "Edit tool input is invalid. edits must contain at least one replacement."
            )
        original = self.files[path].decode("utf-8", errors="replace")
        spans = []
        for index, edit in enumerate(edits):
            which = None if len(edits) == 1 else index
            old = edit.get("oldText") if isinstance(edit, dict) else None
            new = edit.get("newText") if isinstance(edit, dict) else None
            if not isinstance(old, str) or not isinstance(new, str) or not old:
                return self._refuse(
                    "edit", "Validation failed: each edit needs a non-empty oldText and a newText"
                )
            count = original.count(old)
            if count == 0:
                return self._refuse("edit", edit_not_found(path, which))
            if count > 1:
                return self._refuse("edit", edit_not_unique(path, count, which))
            start = original.index(old)
            spans.append((start, start + len(old), new, index))
        spans.sort()
        for a, b in zip(spans, spans[1:], strict=False):
            if a[1] > b[0]:
                return self._refuse("edit", edits_overlap(path, min(a[3], b[3]), max(a[3], b[3])))
        result, last = [], 0
        for start, end, new, _ in spans:
            result += [original[last:start], new]
            last = end
        result.append(original[last:])
        return self._store("edit", path, "".join(result), edited(path, len(edits)))

    def _bash(self, args: dict[str, Any]) -> str:
        command = args.get("command")
        if not isinstance(command, str) or not self._is_the_run(command):
            return self._refuse("bash", f"{NOT_HERE}the only command is `{self.runtime.command}`")
        if self.runtime.program not in self.files:
            return self._refuse(
                "bash", ran(f"{self.runtime.program}: no such file; write it first", 1)
            )
        timeout_s = self.bounds.run_timeout_s
        asked = args.get("timeout")
        if isinstance(asked, int | float) and not isinstance(asked, bool) and asked > 0:
            timeout_s = min(timeout_s, float(asked))  # Pi's optional timeout, within the bound
        result = self.runner(self.runtime, dict(self.files), timeout_s)
        self.executions.append(Execution(self.mutations, result.exit_code, result.stdout))
        # Pi shows one output (stdout and stderr as they came); the sandbox returns them
        # apart, so stdout comes first, then stderr, each bounded.
        output = _bounded(result.stdout, self.bounds.stdout_chars)
        if result.stderr:
            output = f"{output.rstrip()}\n{_bounded(result.stderr, self.bounds.stderr_chars)}"
        return self._note("bash", "ran", ran(output.lstrip("\n"), result.exit_code, timeout_s))

    # --- rules -------------------------------------------------------------------------

    def _is_the_run(self, command: str) -> bool:
        """Whether `command` is exactly the assigned runtime on the program (quoting aside)."""
        try:
            words = shlex.split(command)
        except ValueError:
            return False
        return (
            len(words) == 2
            and words[0] in self.runtime.commands
            and _workspace_path(words[1]) == self.runtime.program
        )

    def _store(self, tool: str, path: str, content: str, result: str) -> str:
        data = content.encode("utf-8", errors="replace")
        if len(data) > self.bounds.program_bytes:
            return self._refuse(tool, f"{NOT_HERE}a program over {self.bounds.program_bytes} bytes")
        self.files[path] = data
        self.mutations += 1
        return self._note(tool, "ok", result)

    def _audit(self, call_id: str, name: str, arguments: dict[str, Any]) -> None:
        from atoll.pi import audit_tool_calls

        call = _Call(call_id, name, arguments)
        self.audit_hits += [hit.to_json() for hit in audit_tool_calls([call])]

    def _refuse(self, tool: str, text: str) -> str:
        self.refused += 1
        return self._note(tool, "refused", text)

    def _note(self, tool: str, outcome: str, text: str) -> str:
        self.log.append({"tool": tool, "outcome": outcome, "result": text})
        return text


@dataclass(frozen=True)
class _Call:
    """A tool call as the path audit reads it (id, name, arguments)."""

    id: str
    name: str
    arguments: dict[str, Any]


def _arguments(raw: Any) -> dict[str, Any] | None:
    if isinstance(raw, str):
        try:
            raw = json.loads(raw)
        except ValueError:
            return None
    return raw if isinstance(raw, dict) else None


def _arguments_list(text: str) -> list[Any] | None:
    try:
        value = json.loads(text)
    except ValueError:
        return None
    return value if isinstance(value, list) else None


def _workspace_path(raw: Any) -> str | None:
    """A relative path inside the workspace, normalized (`./a` -> `a`); None for any other."""
    if not isinstance(raw, str) or not raw.strip():
        return None
    text = raw.strip()
    if text.startswith(("/", "~")) or "\\" in text or "\x00" in text:
        return None
    normal = posixpath.normpath(text)
    if normal in (".", "..") or normal.startswith("../"):
        return None
    return normal


def _whole(value: Any, default: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 1:
        return default
    return int(value)


def _bounded(text: str, limit: int) -> str:
    """`text` within `limit` characters: its head and its tail (errors and results end there)."""
    if len(text) <= limit:
        return text
    half = limit // 2
    return f"{text[:half]}\n[... {len(text) - 2 * half} characters left out ...]\n{text[-half:]}"

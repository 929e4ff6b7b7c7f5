"""The host end of the tool bridge: a unix socket that carries out Pi's tool operations.

The extension shipped with this plugin (`extension/atoll_bridge.ts`) replaces
the operations behind Pi's read, write, edit and bash tools with requests to
this socket, one JSON object per line. The bridge runs each on the run's
`ToolTarget` (the container) and keeps its own record of every operation:
each command with its exit code and output as the container returned them,
each file read and write with its size and hash. That record, not Pi's text,
is what scoring trusts.

The bridge can also ask Pi to abort (wall clock, output size): the extension
calls Pi's own abort, so the run ends with Pi's `aborted` stop reason and
every event written.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import json
import os
import time
from pathlib import Path
from typing import Any

from atoll.core.sizes import KiB, MiB
from atoll.pi.target import BridgeFailure, FileError, ToolTarget, new_token

# Written files up to this size are kept in the record as text.
KEEP_WRITTEN_BYTES = 256 * KiB
MAX_LINE = 64 * MiB


class Bridge:
    """Serves one Pi process for one run; `ops` is the bridge's record, in order."""

    def __init__(self, socket_path: Path, rollout_id: str, tools: ToolTarget, log: Path) -> None:
        self.socket_path = socket_path
        self.rollout_id = rollout_id
        self.tools = tools
        self.log_path = log
        self.ops: list[dict[str, Any]] = []
        self.hello: dict[str, Any] | None = None
        self.system_prompt: str | None = None
        self.limit: str | None = None  # the limit the extension or the run reported
        self.infrastructure_error: str | None = None
        self.connected = asyncio.Event()
        self.first_op_at: float | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._server: asyncio.AbstractServer | None = None
        self._running: dict[str, str] = {}  # tool call id -> token of its running command
        self._tasks: set[asyncio.Task[None]] = set()
        self._abort_reason: str | None = None
        self._log = log.open("a", encoding="utf-8")

    async def start(self) -> None:
        self._server = await asyncio.start_unix_server(
            self._serve, path=str(self.socket_path), limit=MAX_LINE
        )
        os.chmod(self.socket_path, 0o600)

    async def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
            with contextlib.suppress(Exception):
                await self._writer.wait_closed()
        if self._server is not None:
            self._server.close()
            with contextlib.suppress(Exception):
                await self._server.wait_closed()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.gather(*self._tasks, return_exceptions=True)
        self._log.close()
        self.socket_path.unlink(missing_ok=True)

    # -- control ------------------------------------------------------------

    def abort(self, reason: str) -> None:
        """Ask Pi to abort; further operations are refused."""
        if self._abort_reason is None:
            self._abort_reason = reason
            self._send({"type": "abort", "reason": reason})

    def fail(self, message: str) -> None:
        """An infrastructure failure: recorded once, and Pi is aborted."""
        if self.infrastructure_error is None:
            self.infrastructure_error = message
        self.abort("infrastructure")

    @property
    def aborting(self) -> str | None:
        return self._abort_reason

    # -- connection ---------------------------------------------------------

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        if self._writer is not None:  # one Pi per bridge
            writer.close()
            return
        self._writer = writer
        try:
            while True:
                line = await reader.readline()
                if not line:
                    break
                try:
                    message = json.loads(line)
                except ValueError:
                    continue
                task = asyncio.create_task(self._handle(message))
                self._tasks.add(task)
                task.add_done_callback(self._tasks.discard)
        except (ConnectionError, asyncio.IncompleteReadError, ValueError):
            pass
        except asyncio.CancelledError:
            # Only the loop's shutdown (Ctrl-C, SIGTERM) cancels a connection, and the handler
            # ends here: raised on, Python 3.12's stream callback (which asks a cancelled task
            # for its exception) logs the handler as failed, with a traceback.
            writer.close()

    def _send(self, message: dict[str, Any]) -> None:
        if self._writer is None or self._writer.is_closing():
            return
        self._writer.write((json.dumps(message) + "\n").encode())

    async def _handle(self, message: dict[str, Any]) -> None:
        request_id = message.get("id", 0)
        op = str(message.get("op", ""))
        try:
            reply = await self._dispatch(op, message)
        except FileError as exc:
            reply = {"ok": False, "error": str(exc)}
        except BridgeFailure as exc:
            self.fail(str(exc))
            reply = {"ok": False, "error": f"the container failed: {exc}"}
        except Exception as exc:  # a bug here must reach Pi as an error, not hang it
            self.fail(f"bridge error in {op}: {exc!r}")
            reply = {"ok": False, "error": f"bridge error: {exc}"}
        if request_id:
            self._send({"id": request_id, **reply})

    async def _dispatch(self, op: str, message: dict[str, Any]) -> dict[str, Any]:
        if op == "hello":
            return self._hello(message)
        if op == "system_prompt":
            self.system_prompt = str(message.get("text", ""))
            return {"ok": True}
        if op == "limit":
            self.limit = self.limit or str(message.get("reason", "limit"))
            return {"ok": True}
        if op == "cancel":
            await self._cancel(str(message.get("call", "")))
            return {"ok": True}
        if self.hello is None:
            return {"ok": False, "error": "the bridge expects hello first"}
        if self._abort_reason is not None:
            return {"ok": False, "error": f"the run is being stopped ({self._abort_reason})"}
        if self.first_op_at is None:
            self.first_op_at = time.monotonic()
        if op == "bash":
            return await self._bash(message)
        if op == "read":
            return await self._read(message)
        if op == "write":
            return await self._write(message)
        return {"ok": False, "error": f"unknown operation {op!r}"}

    def _hello(self, message: dict[str, Any]) -> dict[str, Any]:
        if message.get("rollout") != self.rollout_id:
            return {"ok": False, "error": "this bridge serves another run"}
        self.hello = {"workdir": message.get("workdir"), "tools": message.get("tools") or []}
        self.connected.set()
        return {"ok": True}

    # -- operations ---------------------------------------------------------

    def _record(self, entry: dict[str, Any]) -> dict[str, Any]:
        entry = {"seq": len(self.ops) + 1, **entry}
        self.ops.append(entry)
        self._log.write(json.dumps(entry, ensure_ascii=False) + "\n")
        self._log.flush()
        return entry

    async def _bash(self, message: dict[str, Any]) -> dict[str, Any]:
        call = str(message.get("call", ""))
        command = str(message.get("command", ""))
        cwd = str(message.get("cwd") or self.hello_workdir)
        timeout = message.get("timeout")
        timeout_s = float(timeout) if isinstance(timeout, int | float) and timeout > 0 else None
        token = new_token()
        self._running[call] = token
        started = time.time()
        cancelled = False
        try:
            outcome = await self.tools.run(command, cwd, timeout_s, token)
        finally:
            cancelled = self._running.pop(call, None) is None  # a cancel removed it
        self._record(
            {
                "call_id": call,
                "op": "bash",
                "at": started,
                "command": command,
                "cwd": cwd,
                "exit_code": outcome.exit_code,
                "stdout": outcome.stdout,
                "stderr": outcome.stderr,
                "stdout_truncated": outcome.stdout_truncated,
                "stderr_truncated": outcome.stderr_truncated,
                "timed_out": outcome.timed_out,
                "timeout_s": outcome.timeout_s,
                "cancelled": cancelled,
                "duration_s": round(outcome.duration_s, 4),
            }
        )
        # Pi shows a command's output as one stream: stdout, then stderr.
        output = outcome.stdout + outcome.stderr
        return {
            "ok": True,
            "exit_code": outcome.exit_code,
            "output": base64.b64encode(output.encode("utf-8", "replace")).decode(),
            "timed_out": outcome.timed_out and not cancelled,
            "timeout": int(outcome.timeout_s),
            "cancelled": cancelled,
        }

    async def _cancel(self, call: str) -> None:
        token = self._running.pop(call, None)
        if token is None:
            return
        self._record({"call_id": call, "op": "cancel", "at": time.time()})
        await self.tools.cancel(token)

    async def _read(self, message: dict[str, Any]) -> dict[str, Any]:
        call = str(message.get("call", ""))
        path = str(message.get("path", ""))
        writable = bool(message.get("writable"))
        started = time.time()
        entry: dict[str, Any] = {"call_id": call, "op": "read", "at": started, "path": path}
        if writable:
            entry["writable"] = True
        try:
            data = await self.tools.read(path, writable)
        except FileError as exc:
            self._record({**entry, "error": str(exc), "duration_s": _since(started)})
            raise
        self._record(
            {
                **entry,
                "bytes": len(data),
                "sha256": hashlib.sha256(data).hexdigest(),
                "duration_s": _since(started),
            }
        )
        return {"ok": True, "data": base64.b64encode(data).decode()}

    async def _write(self, message: dict[str, Any]) -> dict[str, Any]:
        call = str(message.get("call", ""))
        path = str(message.get("path", ""))
        data = base64.b64decode(str(message.get("data", "")))
        started = time.time()
        entry: dict[str, Any] = {
            "call_id": call,
            "op": "write",
            "at": started,
            "path": path,
            "bytes": len(data),
            "sha256": hashlib.sha256(data).hexdigest(),
        }
        if len(data) <= KEEP_WRITTEN_BYTES:
            entry["content"] = data.decode("utf-8", "replace")
        try:
            await self.tools.write(path, data)
        except FileError as exc:
            self._record({**entry, "error": str(exc), "duration_s": _since(started)})
            raise
        self._record({**entry, "duration_s": _since(started)})
        return {"ok": True}

    @property
    def hello_workdir(self) -> str:
        return str((self.hello or {}).get("workdir") or "/")


def _since(started: float) -> float:
    return round(time.time() - started, 4)

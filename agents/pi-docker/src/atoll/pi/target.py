"""What Pi's tools do in the container, expressed as shell commands over one `exec` call.

Every place Pi's tools can run (a Harbor environment of any kind, atoll-local
included, or the rollout's own hardened container) offers `exec(command,
timeout_sec=...)` returning stdout, stderr and the exit code, so that is the
only thing a target needs. File contents cross as base64, so binary files and
any text survive Harbor's string-typed exec.

A bash command runs under `timeout` (which leads its own process group, whose
id is written to a pid file so that a cancel can kill the whole group), with
stdout and stderr each kept to their last N bytes by `tail`, so a program that
prints without end costs its time limit, not the host's memory. The script
ends only after the tails have printed: an environment may stop whatever is
left once its exec's main process exits (atoll-local does), and output still
in a tail would be lost.
"""

from __future__ import annotations

import base64
import math
import shlex
import time
import uuid
from dataclasses import dataclass
from typing import Protocol

from atoll.core.sizes import KiB

PID_DIR = "/tmp/.atoll-pi"
# Raw bytes per write command: its base64 stays well under one argument's 128 KiB limit.
WRITE_CHUNK = 64 * KiB
# Exit statuses of the read command, and what each means to the tools.
_READ_ERRORS = {
    3: "ENOENT: no such file or directory",
    4: "EISDIR: illegal operation on a directory",
    5: "EACCES: permission denied",
    6: "EACCES: permission denied (not writable)",
    7: "EFBIG: file too large for the tool bridge",
}
# `timeout` exits 124 when it stopped the command, 137 when it had to SIGKILL it.
_TIMEOUT_STATUSES = (124, 137)
KILL_GRACE_S = 2


# The tails print what they kept once every writer of their pipe has gone: the command,
# and any background process it left holding its output (Pi's own bash tool waits
# for those too). They get until the command's deadline; then the command's process
# group is stopped, and the status is `timeout`'s own 124.
_WAIT_FOR_OUTPUT = """\
polls=0
while kill -0 "$out" 2>/dev/null || kill -0 "$err" 2>/dev/null; do
  if [ "$SECONDS" -ge {deadline} ] && [ -n "$group" ]; then
    kill -TERM -- "-$group" 2>/dev/null; sleep {grace}; kill -KILL -- "-$group" 2>/dev/null
    rc=124; group=
  elif [ "$SECONDS" -ge $(({deadline} + 3 * {grace})) ]; then
    exit "$rc"  # held by a process outside the group: what the tails kept is lost
  fi
  polls=$((polls + 1))
  if [ "$polls" -le 10 ]; then sleep 0.001; elif [ "$polls" -le 60 ]; then sleep 0.01; else sleep 0.2; fi
done
wait "$out" "$err" 2>/dev/null"""


class ExecResultLike(Protocol):
    stdout: str | None
    stderr: str | None
    return_code: int


class ExecTarget(Protocol):
    """The one capability the bridge needs: Harbor's `BaseEnvironment.exec` has it."""

    async def exec(
        self,
        command: str,
        cwd: str | None = None,
        env: dict[str, str] | None = None,
        timeout_sec: int | None = None,
        user: str | int | None = None,
    ) -> ExecResultLike: ...


class BridgeFailure(RuntimeError):
    """The target could not carry out an operation (its exec failed): an infrastructure error."""


@dataclass
class CommandOutcome:
    """One bash command as the container ran it."""

    exit_code: int | None
    stdout: str
    stderr: str
    stdout_truncated: bool
    stderr_truncated: bool
    timed_out: bool
    timeout_s: float
    duration_s: float


class ToolTarget:
    """Pi's four tools' operations on one exec target."""

    def __init__(
        self, target: ExecTarget, *, command_timeout_s: float, output_bytes: int, max_read: int
    ) -> None:
        self.target = target
        self.command_timeout_s = command_timeout_s
        self.output_bytes = output_bytes
        self.max_read = max_read

    async def _exec(self, command: str, timeout_s: float | None = None) -> ExecResultLike:
        try:
            return await self.target.exec(
                command, timeout_sec=None if timeout_s is None else math.ceil(timeout_s)
            )
        except Exception as exc:  # the target's own failure, whatever its type
            raise BridgeFailure(f"exec in the container failed: {exc}") from exc

    async def run(
        self, command: str, cwd: str, timeout_s: float | None, token: str
    ) -> CommandOutcome:
        """Run the model's bash command in `cwd`; the model's timeout if shorter than ours."""
        limit = self.command_timeout_s if not timeout_s else min(timeout_s, self.command_timeout_s)
        keep = self.output_bytes + 1  # one byte more than kept tells that output was cut
        seconds = max(1, math.ceil(limit))
        pid_file = f"{PID_DIR}/{token}.pid"
        script = "\n".join(
            [
                f"cd -- {shlex.quote(cwd)} || exit 1",
                f"mkdir -p {PID_DIR} 2>/dev/null",
                f"exec > >(tail -c {keep}); out=$!",
                f"exec 2> >(tail -c {keep} >&2); err=$!",
                # `timeout` leads the command's process group; its pid is the group's id.
                'bash -c \'echo $$ > "$0" 2>/dev/null; exec timeout -k "$1" "$2" bash -c "$3"\' '
                + " ".join(
                    shlex.quote(arg)
                    for arg in (pid_file, f"{KILL_GRACE_S}s", f"{seconds}s", command)
                ),
                "rc=$?",
                f"group=$(cat {pid_file} 2>/dev/null); rm -f {pid_file}",
                "exec >&- 2>&-",
                _WAIT_FOR_OUTPUT.format(deadline=seconds, grace=KILL_GRACE_S),
                'exit "$rc"',
            ]
        )
        began = time.monotonic()
        # The target's own limit only backs up `timeout` inside the container.
        result = await self._exec(script, seconds + KILL_GRACE_S + 30)
        duration = time.monotonic() - began
        stdout, stdout_cut = _kept(result.stdout, self.output_bytes)
        stderr, stderr_cut = _kept(result.stderr, self.output_bytes)
        timed_out = result.return_code in _TIMEOUT_STATUSES and duration >= seconds - 0.5
        return CommandOutcome(
            exit_code=result.return_code,
            stdout=stdout,
            stderr=stderr,
            stdout_truncated=stdout_cut,
            stderr_truncated=stderr_cut,
            timed_out=timed_out,
            timeout_s=float(seconds),
            duration_s=duration,
        )

    async def cancel(self, token: str) -> None:
        """Stop a running command's whole process group (TERM, then KILL)."""
        pid_file = f"{PID_DIR}/{token}.pid"
        script = (
            f"p=$(cat {pid_file} 2>/dev/null) || exit 0; "
            f"kill -TERM -- -$p 2>/dev/null; sleep 1; kill -KILL -- -$p 2>/dev/null; exit 0"
        )
        await self._exec(script, 10)

    async def read(self, path: str, writable: bool = False) -> bytes:
        """A file's bytes; an OSError-like message (ENOENT ...) if it cannot be read."""
        quoted = shlex.quote(path)
        checks = [
            f"[ -e {quoted} ] || exit 3",
            f"[ -d {quoted} ] && exit 4",
            f"[ -r {quoted} ] || exit 5",
        ]
        if writable:
            checks.append(f"[ -w {quoted} ] || exit 6")
        checks += [
            f"[ $(stat -L -c %s -- {quoted}) -le {self.max_read} ] || exit 7",
            f"base64 -w0 -- {quoted}",
        ]
        result = await self._exec("\n".join(checks), 60)
        if result.return_code in _READ_ERRORS:
            raise FileError(f"{_READ_ERRORS[result.return_code]}, open '{path}'")
        if result.return_code != 0:
            raise FileError(f"cannot read '{path}': {(result.stderr or '').strip()[:500]}")
        try:
            return base64.b64decode(result.stdout or "", validate=True)
        except ValueError as exc:
            raise BridgeFailure(f"reading {path} returned damaged data") from exc

    async def write(self, path: str, data: bytes) -> None:
        """Write `data` to `path`, creating its parent directories."""
        quoted = shlex.quote(path)
        parent = shlex.quote(path.rsplit("/", 1)[0] or "/")
        chunks = [data[i : i + WRITE_CHUNK] for i in range(0, len(data), WRITE_CHUNK)] or [b""]
        for index, chunk in enumerate(chunks):
            encoded = base64.b64encode(chunk).decode()
            redirect = ">" if index == 0 else ">>"
            prefix = f"mkdir -p -- {parent} && " if index == 0 else ""
            script = f"{prefix}printf %s {encoded or "''"} | base64 -d {redirect} {quoted}"
            result = await self._exec(script, 60)
            if result.return_code != 0:
                detail = (result.stderr or "").strip().splitlines()
                raise FileError(
                    f"cannot write '{path}': {detail[-1] if detail else 'status ' + str(result.return_code)}"
                )

    async def working_directory(self) -> str:
        """The target's default working directory (where a plain exec starts)."""
        result = await self._exec("pwd", 30)
        found = (result.stdout or "").strip().splitlines()
        if result.return_code != 0 or not found or not found[-1].startswith("/"):
            raise BridgeFailure(f"cannot learn the container's working directory: {result.stderr}")
        return found[-1]


class FileError(Exception):
    """A file operation the container refused (missing file, permissions): the model's error."""


def new_token() -> str:
    return uuid.uuid4().hex[:16]


def _kept(text: str | None, limit: int) -> tuple[str, bool]:
    """The last `limit` bytes of a stream that `tail` kept to `limit + 1`, and whether it was cut."""
    data = (text or "").encode("utf-8", "surrogateescape")
    if len(data) <= limit:
        return text or "", False
    return data[-limit:].decode("utf-8", "replace"), True

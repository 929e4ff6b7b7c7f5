"""Run one SandboxFusion `run_code` request in atoll's own sandbox.

Each request gets a fresh workspace directory, bound at /workspace in a box
with no network, an unprivileged uid, a read-only system and resource
limits (atoll.core.sandbox); the program file and the request's `files` are
written there, the program runs with /workspace as its working directory,
and `fetch_files` are read back from it afterwards. The status mapping is
SandboxFusion's: a non-zero exit or a time-out is `Failed`, and only a
failure of the sandbox itself is `SandboxError` (which its client raises on).
"""

from __future__ import annotations

import base64
import binascii
import logging
import os
import secrets
import stat
import tempfile
from dataclasses import dataclass
from pathlib import Path, PurePosixPath

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.fusion.protocol import (
    CommandRunResult,
    CommandRunStatus,
    RunCodeRequest,
    RunCodeResponse,
    RunStatus,
)
from atoll.core.sandbox.spec import (
    NOBODY,
    Limits,
    Mount,
    Network,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    Status,
)
from atoll.core.sizes import GiB, MiB

log = logging.getLogger(__name__)

WORKDIR = "/workspace"
# The longest run a request may ask for; SandboxFusion has no such cap, but a
# loopback service shared by a trainer's many workers should not be held for hours.
MAX_RUN_TIMEOUT_S = 300.0
DEFAULT_MEMORY_BYTES = 1 * GiB
MAX_FETCH_BYTES = 16 * MiB  # per fetched file; a larger one is left out of `files`
_TIMED_OUT = {Status.CPU_TIME_LIMIT, Status.WALL_TIME_LIMIT}


class RequestError(ValueError):
    """The request cannot be run as given (a bad file name or content): the caller's error."""


@dataclass(frozen=True)
class Runtime:
    """How one language runs: its interpreter on this machine and its file suffix."""

    interpreter: tuple[str, ...]  # candidates, the first that exists is used
    suffix: str

    def argv(self, program: str) -> list[str]:
        for candidate in self.interpreter:
            if os.path.exists(candidate):
                return [candidate, program]
        raise SandboxError(
            f"{' or '.join(self.interpreter)} is not installed on the machine serving the sandbox"
        )


RUNTIMES: dict[str, Runtime] = {
    "python": Runtime(("/usr/bin/python3",), ".py"),
    "nodejs": Runtime(("/usr/bin/node", "/usr/local/bin/node"), ".js"),
}

# Why a language SandboxFusion knows does not run here, where there is more to say than "not served".
_UNAVAILABLE: dict[str, str] = {
    "julia": "no Julia runtime is installed on this machine",
}


def unavailable_message(language: str) -> str:
    """The one line a request in a language this sandbox does not run gets back."""
    reason = _UNAVAILABLE.get(language, "this sandbox does not serve it")
    served = ", ".join(sorted(RUNTIMES))
    return f"{language} is not available: {reason} (available: {served})"


def run_code(request: RunCodeRequest, backend: SandboxBackend) -> RunCodeResponse:
    """Run `request` through `backend`; RequestError for a request that cannot be run."""
    if not 0 < request.run_timeout <= MAX_RUN_TIMEOUT_S:
        raise RequestError(f"run_timeout must be above 0 and at most {MAX_RUN_TIMEOUT_S:g} s")
    runtime = RUNTIMES.get(request.language)
    if runtime is None:
        return RunCodeResponse(
            status=RunStatus.SANDBOX_ERROR, message=unavailable_message(request.language)
        )
    with tempfile.TemporaryDirectory(prefix="atoll-fusion-") as tmp:
        workspace = Path(tmp) / "workspace"
        workspace.mkdir()
        program = f"tmp{secrets.token_hex(6)}{runtime.suffix}"
        _write_files(workspace, request.files)
        try:
            (workspace / program).write_bytes(request.code.encode("utf-8"))
        except UnicodeEncodeError:
            raise RequestError("code is not valid Unicode text (a lone surrogate)") from None
        _hand_over(workspace)
        try:
            result = backend.run(
                runtime.argv(program),
                _spec(workspace, request),
                None if request.stdin is None else request.stdin.encode("utf-8"),
            )
        except SandboxError as exc:
            return RunCodeResponse(status=RunStatus.SANDBOX_ERROR, message=str(exc))
        except Exception as exc:  # a backend's own bug is still the sandbox's failure, not a run's
            log.exception("the sandbox backend failed")
            message = f"the sandbox failed: {type(exc).__name__}: {exc}"
            return RunCodeResponse(status=RunStatus.SANDBOX_ERROR, message=message)
        run_result = _command_result(result)
        return RunCodeResponse(
            status=_run_status(run_result),
            message="",
            run_result=run_result,
            files=_fetch(workspace, request.fetch_files),
        )


def _spec(workspace: Path, request: RunCodeRequest) -> SandboxSpec:
    memory = request.memory_limit_MB * MiB if request.memory_limit_MB > 0 else DEFAULT_MEMORY_BYTES
    return SandboxSpec(
        mounts=(Mount(workspace, WORKDIR, writable=True),),
        workdir=WORKDIR,
        env={
            "PATH": "/usr/local/bin:/usr/bin:/bin",
            "LANG": "C.UTF-8",
            "HOME": WORKDIR,
            "PYTHONDONTWRITEBYTECODE": "1",
        },
        network=Network.NONE,
        limits=Limits(
            # A runtime's own threads (Node's compiler and collector) add CPU time beside the
            # program's; the wall clock is the limit the request names.
            cpu_seconds=request.run_timeout * 2 + 1,
            wall_seconds=request.run_timeout,
            memory_bytes=memory,
        ),
    )


def _relative(name: str) -> PurePosixPath:
    path = PurePosixPath(name)
    if not name or path.is_absolute() or ".." in path.parts or str(path) in ("", "."):
        raise RequestError(f"file names must be relative paths inside the workspace: {name!r}")
    return path


def _write_files(workspace: Path, files: dict[str, str | None]) -> None:
    """The request's files (base64), below the workspace; None entries are skipped, as upstream."""
    for name, content in files.items():
        if content is None:
            continue
        try:
            data = base64.b64decode(content, validate=True)
        except (binascii.Error, ValueError):
            raise RequestError(f"files[{name!r}] is not base64") from None
        target = workspace / _relative(name)
        try:
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
        except OSError as exc:  # a name that is also another file's directory, say
            raise RequestError(f"cannot write files[{name!r}]: {exc.strerror}") from None


def _hand_over(workspace: Path) -> None:
    """Make the workspace the sandbox uid's own, so the program may write beside its files."""
    for directory, _dirs, names in os.walk(workspace):
        for path in (directory, *(os.path.join(directory, n) for n in names)):
            if os.geteuid() == 0:
                os.chown(path, NOBODY, NOBODY)
            else:  # a backend that maps ids itself (Docker) still needs the files writable
                os.chmod(path, 0o777 if os.path.isdir(path) else 0o666)


def _fetch(workspace: Path, names: list[str]) -> dict[str, str]:
    """The named files the program left, base64; missing, odd or outside ones are left out.

    The program could have replaced a name with a link to a host file, so each
    path is resolved and must still lie inside the workspace and be a regular
    file. Nothing runs in the box any more when this reads.
    """
    root = os.path.realpath(workspace)
    fetched: dict[str, str] = {}
    for name in names:
        try:
            resolved = os.path.realpath(workspace / _relative(name))
        except RequestError:
            continue
        if not resolved.startswith(root + os.sep):
            continue
        try:
            fd = os.open(resolved, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError:
            continue
        with os.fdopen(fd, "rb") as handle:
            info = os.fstat(handle.fileno())
            if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FETCH_BYTES:
                continue
            fetched[name] = base64.b64encode(handle.read(MAX_FETCH_BYTES)).decode("ascii")
    return fetched


def _command_result(result: SandboxResult) -> CommandRunResult:
    stdout = result.stdout.decode("utf-8", errors="replace")
    stderr = result.stderr.decode("utf-8", errors="replace")
    if result.status in _TIMED_OUT:
        return CommandRunResult(
            status=CommandRunStatus.TIME_LIMIT_EXCEEDED,
            execution_time=result.wall_seconds,
            stdout=stdout,
            stderr=stderr,
        )
    # Killed by a signal: negative, as Python's subprocess (and so SandboxFusion) reports it.
    code = result.exit_code if result.exit_code is not None else -(result.signal or 9)
    if result.status is not Status.OK and code == 0:
        code = 1  # a limit hit (memory, output) is never a success
    return CommandRunResult(
        status=CommandRunStatus.FINISHED,
        execution_time=result.wall_seconds,
        return_code=code,
        stdout=stdout,
        stderr=stderr,
    )


def _run_status(run: CommandRunResult) -> RunStatus:
    if run.status is CommandRunStatus.TIME_LIMIT_EXCEEDED or run.return_code != 0:
        return RunStatus.FAILED
    return RunStatus.SUCCESS

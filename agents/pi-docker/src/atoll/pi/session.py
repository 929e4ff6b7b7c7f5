"""One Pi run on the host, its tools carried out on an exec target through the bridge.

Shared by the standalone rollout (the target is the rollout's own container)
and the Harbor agent (the target is the trial's environment). Pi runs in JSON
mode with no session, no discovered extensions, skills, prompt templates,
themes or context files, only the four tools of the shipped extension, a
private config dir, HOME and TMPDIR, and an environment holding nothing of
the host's but PATH, proxies and the one API key variable. The prompt goes in
on stdin.

Limits end Pi cleanly: past the turn limit the extension aborts by itself;
past the wall clock or the output-size limit the bridge asks it to abort. Pi
then ends with its own `aborted` stop reason and all its events. Only if it
does not exit within a grace period is it terminated, then killed. Whatever
happens (an exception, a cancelled task, Ctrl-C) the process group is gone
when this returns.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import tempfile
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any, Literal

from atoll.core import process_group
from atoll.core.sizes import KiB, MiB
from atoll.pi import pi_config
from atoll.pi.bridge import Bridge
from atoll.pi.events import EventLog, compact_update, is_update
from atoll.pi.install import PiInstall
from atoll.pi.settings import PiSettings
from atoll.pi.target import ExecTarget, ToolTarget

TOOLS = ("read", "write", "edit", "bash")
EXTENSION_FILE = "atoll_bridge.ts"
HELLO_TIMEOUT_S = 60.0
ABORT_GRACE_S = 15.0
TERM_GRACE_S = 5.0
READ_CHUNK = 64 * KiB
MAX_READ_BYTES = 8 * MiB
# Host variables Pi may need besides the key: reaching the endpoint through a proxy.
PASSED_THROUGH = (
    "HTTP_PROXY",
    "HTTPS_PROXY",
    "NO_PROXY",
    "http_proxy",
    "https_proxy",
    "no_proxy",
    "SSL_CERT_FILE",
    "NODE_EXTRA_CA_CERTS",
)

EVENTS_FILE = "events.jsonl"
BRIDGE_FILE = "bridge.jsonl"
STDERR_FILE = "pi-stderr.log"


class SessionError(RuntimeError):
    """Pi could not be run at all (not a model failure); the message says why."""


def extension_path() -> Path:
    return Path(str(resources.files("atoll.pi").joinpath("extension", EXTENSION_FILE)))


def extension_sha256() -> str:
    return hashlib.sha256(extension_path().read_bytes()).hexdigest()


Outcome = Literal["completed", "limit", "error"]


@dataclass
class SessionResult:
    """What one Pi run produced, before any scoring: the caller turns it into a record."""

    log: EventLog
    bridge: Bridge
    exit_code: int | None
    limit: str | None  # "max_turns", "timeout", "output" or None
    infrastructure_error: str | None
    workdir: str
    argv: list[str]
    config_sha256: str
    settings: PiSettings
    pi_config: dict[str, Any] = field(default_factory=dict)  # models.json and settings.json
    timings: dict[str, float] = field(default_factory=dict)
    stderr_tail: str = ""
    terminated: bool = False  # Pi had to be signalled after the abort grace
    stored_bytes: int = 0  # of the events file
    compacted_updates: int = 0  # message_update events stored without their snapshots

    @property
    def outcome(self) -> Outcome:
        """`error` (infrastructure: never a score), `limit`, or `completed`."""
        if self.infrastructure_error is not None:
            return "error"
        if self.limit is not None:
            return "limit"
        return "completed"


@dataclass(frozen=True)
class SessionRequest:
    settings: PiSettings
    prompt: str
    run_dir: Path  # the records: events, the bridge's log, Pi's stderr
    run_id: str
    workdir: str | None = None  # the tools' working directory; default: the target's
    # Pi's config dir, HOME and working directory; default `run_dir/pi`. A run whose
    # run_dir the container can see (a Harbor trial's log dir) keeps them elsewhere.
    private_dir: Path | None = None


def _private_dirs(private: Path) -> dict[str, Path]:
    dirs = {name: private / name for name in ("config", "home", "tmp", "cwd")}
    for path in (private, *dirs.values()):
        path.mkdir(parents=True, exist_ok=True)
        os.chmod(path, 0o700)
    return dirs


def _socket_dir() -> Path:
    """A short private directory for the socket (a unix socket path holds 107 bytes)."""
    base = tempfile.gettempdir()
    if len(base) > 60:
        base = "/tmp"
    return Path(tempfile.mkdtemp(prefix="atoll-pi-", dir=base))


def pi_argv(pi: PiInstall, settings: PiSettings, system_prompt: Path | None) -> list[str]:
    argv = [
        str(pi.node.path),
        str(pi.cli),
        "--mode",
        "json",
        "--no-session",
        "--offline",
        "--provider",
        pi_config.PROVIDER,
        "--model",
        settings.model,
        "--no-builtin-tools",
        "--tools",
        ",".join(TOOLS),
        "--no-extensions",
        "--extension",
        str(extension_path()),
        "--no-skills",
        "--no-prompt-templates",
        "--no-themes",
        "--no-context-files",
    ]
    if settings.thinking is not None:
        argv += ["--thinking", settings.thinking]
    if system_prompt is not None:
        argv += ["--system-prompt", str(system_prompt)]
    return argv


def _portable(argv: list[str]) -> list[str]:
    """Pi's arguments without this machine's paths (their contents are hashed apart)."""
    placeholders = {"--extension": "<extension>", "--system-prompt": "<system prompt file>"}
    portable = list(argv)
    for index, arg in enumerate(argv[:-1]):
        if arg in placeholders:
            portable[index + 1] = placeholders[arg]
    return portable


def _environment(
    dirs: dict[str, Path],
    settings: PiSettings,
    key: str,
    socket: Path,
    run_id: str,
    workdir: str,
    environ: Mapping[str, str],
) -> dict[str, str]:
    env = {name: environ[name] for name in PASSED_THROUGH if environ.get(name)}
    env.update(
        {
            "PATH": environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
            "HOME": str(dirs["home"]),
            "TMPDIR": str(dirs["tmp"]),
            "LANG": "C.UTF-8",
            "NO_COLOR": "1",
            "PI_CODING_AGENT_DIR": str(dirs["config"]),
            "PI_OFFLINE": "1",
            "PI_SKIP_VERSION_CHECK": "1",
            "PI_TELEMETRY": "0",
            "ATOLL_PI_BRIDGE": str(socket),
            "ATOLL_PI_ROLLOUT": run_id,
            "ATOLL_PI_WORKDIR": workdir,
            "ATOLL_PI_MAX_TURNS": str(settings.max_turns),
            settings.api_key_env: key,
        }
    )
    return env


async def run_session(
    request: SessionRequest,
    target: ExecTarget,
    pi: PiInstall,
    *,
    environ: Mapping[str, str] | None = None,
    on_event: Callable[[dict[str, Any]], None] | None = None,
) -> SessionResult:
    """Run Pi once on `request.prompt`; its tools act on `target`. Records go in `run_dir`."""
    environ = os.environ if environ is None else environ
    settings = request.settings
    key = settings.api_key(environ)
    run_dir = request.run_dir
    run_dir.mkdir(parents=True, exist_ok=True)
    dirs = _private_dirs(request.private_dir or run_dir / "pi")
    config = pi_config.write(dirs["config"], settings)
    system_prompt = None
    if settings.system_prompt is not None:
        system_prompt = dirs["config"] / "system-prompt.md"
        shutil.copyfile(settings.system_prompt, system_prompt)
    tools = ToolTarget(
        target,
        command_timeout_s=settings.command_timeout_s,
        output_bytes=settings.command_output_bytes,
        max_read=MAX_READ_BYTES,
    )
    timings: dict[str, float] = {}
    began = time.monotonic()
    workdir = request.workdir or await tools.working_directory()
    socket_dir = _socket_dir()
    socket = socket_dir / "bridge.sock"
    bridge = Bridge(socket, request.run_id, tools, run_dir / BRIDGE_FILE)
    argv = pi_argv(pi, settings, system_prompt)
    result = SessionResult(
        log=EventLog(),
        bridge=bridge,
        exit_code=None,
        limit=None,
        infrastructure_error=None,
        workdir=workdir,
        argv=argv,
        config_sha256=config.sha256(_portable(argv[2:])),
        settings=settings,
        pi_config={"models.json": config.models, "settings.json": config.settings},
        timings=timings,
    )
    try:
        await bridge.start()
        env = _environment(dirs, settings, key, socket, request.run_id, workdir, environ)
        await _drive(request, argv, env, dirs["cwd"], run_dir, bridge, result, on_event)
    finally:
        await bridge.close()
        shutil.rmtree(socket_dir, ignore_errors=True)
        shutil.rmtree(dirs["tmp"], ignore_errors=True)
        timings["pi_total_s"] = round(time.monotonic() - began, 4)
    result.limit = result.limit or bridge.limit
    if bridge.infrastructure_error and not result.infrastructure_error:
        result.infrastructure_error = bridge.infrastructure_error
    _conclude(result)
    return result


async def _drive(
    request: SessionRequest,
    argv: list[str],
    env: dict[str, str],
    cwd: Path,
    run_dir: Path,
    bridge: Bridge,
    result: SessionResult,
    on_event: Callable[[dict[str, Any]], None] | None,
) -> None:
    settings = request.settings
    timings = result.timings
    spawned = time.monotonic()
    with (
        (run_dir / EVENTS_FILE).open("wb") as events,
        (run_dir / STDERR_FILE).open("wb") as stderr,
    ):
        process = await asyncio.create_subprocess_exec(
            *argv,
            stdin=asyncio.subprocess.PIPE,
            stdout=asyncio.subprocess.PIPE,
            stderr=stderr,
            cwd=str(cwd),
            env=env,
            start_new_session=True,  # its own process group, signalled as one
        )
        tasks: list[asyncio.Task[Any]] = []
        try:
            assert process.stdin is not None and process.stdout is not None
            with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                # A Pi that died at once is reported below (it never loaded the extension).
                process.stdin.write(request.prompt.encode("utf-8"))
                await process.stdin.drain()
                process.stdin.close()
            pump = asyncio.create_task(
                _pump(process.stdout, events, result, bridge, settings, on_event)
            )
            hello = asyncio.create_task(bridge.connected.wait())
            exited = asyncio.create_task(process.wait())
            tasks = [pump, hello, exited]
            await _supervise(process, pump, hello, exited, bridge, result, settings, spawned)
            await pump
            result.exit_code = process.returncode
        finally:
            await _stop(process, result)
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            events.flush()
            os.fsync(events.fileno())
    if bridge.first_op_at is not None:
        timings["first_tool_call_s"] = round(bridge.first_op_at - spawned, 4)
    result.stderr_tail = _tail(run_dir / STDERR_FILE)


async def _supervise(
    process: asyncio.subprocess.Process,
    pump: asyncio.Task[None],
    hello: asyncio.Task[bool],
    exited: asyncio.Task[int],
    bridge: Bridge,
    result: SessionResult,
    settings: PiSettings,
    spawned: float,
) -> None:
    """Wait for Pi to exit, enforcing the hello deadline and the wall clock."""
    deadline = spawned + settings.timeout_s
    done, _ = await asyncio.wait(
        {hello, exited}, timeout=HELLO_TIMEOUT_S, return_when="FIRST_COMPLETED"
    )
    if hello in done:
        result.timings["pi_start_s"] = round(time.monotonic() - spawned, 4)
    elif exited not in done:
        result.infrastructure_error = (
            f"Pi did not load the atoll bridge extension within {HELLO_TIMEOUT_S:.0f} s"
        )
        bridge.abort("infrastructure")
        await _terminate(process)
    if not hello.done():
        hello.cancel()
    while not exited.done():
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            break
        await asyncio.wait({exited}, timeout=remaining)
    if not exited.done():
        result.limit = result.limit or "timeout"
        bridge.abort("timeout")
        await asyncio.wait({exited}, timeout=ABORT_GRACE_S)
    if not exited.done():
        result.terminated = True
        await _terminate(process)
    await exited
    if bridge.hello is None and result.infrastructure_error is None:
        result.infrastructure_error = "Pi exited before loading the atoll bridge extension"
    with contextlib.suppress(asyncio.TimeoutError):
        await asyncio.wait_for(asyncio.shield(pump), timeout=30)


async def _pump(
    stdout: asyncio.StreamReader,
    sink: Any,
    result: SessionResult,
    bridge: Bridge,
    settings: PiSettings,
    on_event: Callable[[dict[str, Any]], None] | None,
) -> None:
    """Copy Pi's event stream to the events file (updates compacted), feeding the event log.

    The output limit counts what is kept: Pi's own per-delta snapshots would
    make any long answer look like runaway output.
    """
    pending = b""
    log = result.log
    while True:
        chunk = await stdout.read(READ_CHUNK)
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        at = time.time()
        for line in lines:
            _keep(sink, line, result)
            event = log.feed(line + b"\n", at)
            if event is not None and on_event is not None:
                on_event(event)
        if result.stored_bytes + len(pending) > settings.max_output_bytes and result.limit is None:
            result.limit = "output"
            bridge.abort("output")
    if pending:
        _keep(sink, pending, result)
        log.feed(pending)


def _keep(sink: Any, line: bytes, result: SessionResult) -> None:
    if is_update(line):
        line = compact_update(line)
        result.compacted_updates += 1
    sink.write(line + b"\n")
    result.stored_bytes += len(line) + 1


async def _terminate(process: asyncio.subprocess.Process) -> None:
    """Stop Pi's whole process group (SIGTERM, SIGKILL after a grace), then collect Pi."""
    await asyncio.to_thread(process_group.stop_group, process.pid, TERM_GRACE_S)
    await process.wait()


async def _stop(process: asyncio.subprocess.Process, result: SessionResult) -> None:
    """Leave no Pi process behind, whatever stopped the run (also a cancelled task).

    The group is stopped even when Pi has exited: children it left there (none
    are expected: its tools run in the container) go too.
    """
    if process.returncode is None:
        result.terminated = True
    await asyncio.shield(_terminate(process))


def _conclude(result: SessionResult) -> None:
    """Turn what the stream says into the infrastructure verdict."""
    log = result.log
    if result.infrastructure_error is not None:
        return
    if log.stop_reason == "error":
        result.infrastructure_error = f"the model provider failed: {log.error_message or 'error'}"
    elif not log.agent_ended and result.limit is None:
        result.infrastructure_error = (
            f"Pi ended (status {result.exit_code}) without finishing the run: "
            f"{result.stderr_tail.strip().splitlines()[-1] if result.stderr_tail.strip() else 'no message'}"
        )


def _tail(path: Path, limit: int = 4000) -> str:
    try:
        data = path.read_bytes()
    except OSError:
        return ""
    return data[-limit:].decode("utf-8", "replace")

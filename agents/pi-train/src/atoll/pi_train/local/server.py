"""The local Tinker-API service: SkyRL tx on 127.0.0.1, started from the managed environment.

One server per machine user, recorded in `server.json` under the managed
environment's cache (pid, port, base model). `up` starts it in its own process
group and waits until `/api/v1/healthz` answers; `down` stops the whole group
(API process and engine) and waits until no process of it is left.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

import httpx

from atoll.core import process_group, run_lock
from atoll.core.durable import atomic_write_json
from atoll.core.processes import alive, cmdline
from atoll.pi_train import env as managed_env

# The SDK checks only the prefix; SkyRL tx accepts any key.
LOCAL_API_KEY = "tml-local"
# Fixed shapes: every new batch size recompiles the engine's functions. The sampler runs one
# sequence at a time: SkyRL tx pads every sampling batch to `sample_max_num_sequences`, and
# most requests carry one prompt (a rollout's turn, a logprob computation), so at 8 a single
# prompt paid for eight. On CPU nothing is gained by batching prompts: pi-train's
# update-measuring test spent 45 s sampling at 8 and 16 s at 1 (its whole call 100 s, then 64 s).
# Every training run (and every served training state) holds one LoRA adapter slot for
# as long as SkyRL tx keeps its model loaded, and slot 0 is the base model's: 8 slots
# filled up after seven runs on one server. 32 is SkyRL tx's own default.
BACKEND_CONFIG = {
    "max_lora_adapters": 32,
    "max_lora_rank": 8,
    "sample_max_num_sequences": 1,
    "train_micro_batch_size": 1,
}
START_DEADLINE_S = 240.0
STOP_DEADLINE_S = 20.0


class ServerError(Exception):
    """The local server cannot be started, reached or stopped; the message says why."""


@dataclass(frozen=True)
class ServerState:
    pid: int
    port: int
    base_model: str
    log: str

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def exports(self) -> str:
        return f"export TINKER_BASE_URL={self.base_url}\nexport TINKER_API_KEY={LOCAL_API_KEY}"


def state_dir() -> Path:
    """`$ATOLL_TINKER_LOCAL_DIR`, else `local/` beside the managed environment.

    Holds the server's record, log, database and checkpoints; a separate
    directory gives a separate server (tests use one of their own).
    """
    explicit = os.environ.get("ATOLL_TINKER_LOCAL_DIR")
    return Path(explicit) if explicit else managed_env.cache_root() / "local"


def _state_file() -> Path:
    return state_dir() / "server.json"


def owned(state: ServerState) -> bool:
    """Whether the live process `state` names is the server atoll started there.

    The record's pid alone proves nothing once that process has gone (after
    a reboot the number may be a stranger's), so the process must run our
    serve script on the recorded port with this state directory's
    checkpoints, as `_start` launched it.
    """
    if not alive(state.pid):
        return False
    argv = cmdline(state.pid)
    script = str(managed_env.managed_script("serve"))

    def value(flag: str) -> str | None:
        return argv[argv.index(flag) + 1] if flag in argv[:-1] else None

    return (
        script in argv
        and value("--port") == str(state.port)
        and value("--checkpoints-base") == str(state_dir() / "checkpoints")
    )


def _record() -> ServerState | None:
    try:
        return ServerState(**json.loads(_state_file().read_text()))
    except (OSError, ValueError, TypeError):
        return None


def status() -> ServerState | None:
    """The recorded server if it still runs and is ours, else None (a stale record is dropped)."""
    state = _record()
    if state is None:
        return None
    if not owned(state):
        _state_file().unlink(missing_ok=True)
        return None
    return state


def answers(base_url: str, timeout: float = 2.0) -> bool:
    try:
        return httpx.get(f"{base_url}/api/v1/healthz", timeout=timeout).status_code == 200
    except httpx.HTTPError:
        return False


def free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def default_base_model(say: Callable[[str], None]) -> Path:
    """The tiny model of seed 0 in the cache, built on first use."""
    from atoll.pi_train.local import tiny_model

    target = managed_env.cache_root() / "tiny-model-seed0"
    if not (target / "config.json").is_file():
        tiny_model.build(target, seed=0, say=say)
    return target


def up(
    say: Callable[[str], None], base_model: Path | None = None, port: int | None = None
) -> ServerState:
    """Start the server unless one runs (then it must serve the same base model); wait until it answers.

    A server this call starts is stopped again if the call does not return it
    (an error, Ctrl-C, SIGTERM): only a server that answers outlives `up`.
    """
    with process_group.Owner(STOP_DEADLINE_S) as owner:
        state, started = _running_or_started(say, base_model, port, owner)
        if started:
            try:
                _wait_ready(state)
            except BaseException:
                owner.stop()
                _state_file().unlink(missing_ok=True)
                raise
            owner.release()
    return state


def _running_or_started(
    say: Callable[[str], None],
    base_model: Path | None,
    port: int | None,
    owner: process_group.Owner,
) -> tuple[ServerState, bool]:
    """The server that runs, else one started by `owner` and recorded; and whether it was started."""
    with run_lock.wait(state_dir() / "server.lock"):
        running = status()
        model = str((base_model or default_base_model(say)).resolve())
        if running is not None:
            if running.base_model != model:
                raise ServerError(
                    f"a local Tinker server already runs at {running.base_url} with base model "
                    f"{running.base_model}; `atoll tinker local down` first"
                )
            if port not in (None, running.port):
                raise ServerError(f"a local Tinker server already runs at {running.base_url}")
            return running, False
        if not (Path(model) / "config.json").is_file():
            raise ServerError(f"{model} is not a model directory (no config.json)")
        env = managed_env.ensure(say)
        chosen = port or free_port()
        state = _start(env, model, chosen, owner)
        atomic_write_json(_state_file(), asdict(state))
    return state, True


def _start(
    env: managed_env.ManagedEnv, model: str, port: int, owner: process_group.Owner
) -> ServerState:
    work = state_dir()
    log = work / "server.log"
    argv = [
        str(env.python),
        str(managed_env.managed_script("serve")),
        "--base-model",
        model,
        "--backend",
        "jax",
        "--backend-config",
        json.dumps(BACKEND_CONFIG),
        "--checkpoints-base",
        str(work / "checkpoints"),
        "--database-url",
        f"sqlite:///{work / 'tinker.db'}",
        "--host",
        "127.0.0.1",
        "--port",
        str(port),
    ]
    child_env = {
        **os.environ,
        "PATH": f"{env.bin}{os.pathsep}{os.environ.get('PATH', '')}",
        "HF_HUB_OFFLINE": "1",
        "JAX_PLATFORMS": "cpu",
        "JAX_COMPILATION_CACHE_DIR": str(managed_env.cache_root() / "jax-cache"),
    }
    child_env.pop("VIRTUAL_ENV", None)
    with log.open("ab") as sink:
        process = owner.spawn(
            argv,
            cwd=work,
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )
    return ServerState(pid=process.pid, port=port, base_model=model, log=str(log))


def log_tail(log: str | Path, lines: int = 12) -> str:
    """The last lines of a starting server's log: what a start-up error shows."""
    try:
        return "\n".join(Path(log).read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return "(no log)"


def _wait_ready(state: ServerState) -> None:
    """Return once the server answers; ServerError (its log's tail) if it exits or never does."""
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if answers(state.base_url):
            return
        if not alive(state.pid):
            raise ServerError(
                f"the local Tinker server exited while starting:\n{log_tail(state.log)}"
            )
        time.sleep(0.5)
    raise ServerError(
        f"the local Tinker server did not answer within {START_DEADLINE_S:.0f} s:\n{log_tail(state.log)}"
    )


def down() -> ServerState | None:
    """Stop the recorded server's whole process group; the state it had, or None if none ran.

    Only a group whose leader is ours (`owned`) is signalled: a record whose
    pid now names another process is dropped without touching that process.
    """
    state = _record()
    if state is None:
        return None
    if not owned(state):
        _state_file().unlink(missing_ok=True)
        return None
    _stop_group(state)
    return state


def _stop_group(state: ServerState) -> None:
    """Stop the recorded server's group; its record goes once nothing of it runs."""
    try:
        process_group.stop_group(state.pid, STOP_DEADLINE_S)
    except process_group.GroupStillRunning as exc:
        raise ServerError(
            f"processes of the local Tinker server are still running: {exc}"
        ) from None
    _state_file().unlink(missing_ok=True)

"""Launch `atoll tinker serve`'s server (managed/openai_serve.py) and wait until it answers.

The server needs the tinker SDK and tinker-cookbook, so it runs in the
managed Python 3.11 environment; this side starts it in its own process
group on 127.0.0.1, waits until `/v1/models` answers, and stops the whole
group afterwards. `serving()` is what `atoll pi train promote` uses;
`atoll tinker serve` runs the same in the foreground. The server gives a
request in flight a moment to finish when it is stopped, so its group gets
`STOP_GRACE_S` before SIGKILL: a sample that takes minutes never holds a
stop up.
"""

from __future__ import annotations

import contextlib
import os
import subprocess
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import httpx

from atoll.core import process_group
from atoll.pi_train import env as managed_env
from atoll.pi_train.local.server import START_DEADLINE_S, log_tail

SERVE_KEY_VARIABLE = "ATOLL_SERVE_API_KEY"
#: The server's own shutdown gives requests in flight 2 s (managed/openai_serve.py).
STOP_GRACE_S = 5.0


class ServeError(Exception):
    """The server cannot start or stopped; the message says why."""


def default_name(base_model: str) -> str:
    """The name a base model is served under without `--served-model-name`: a model
    directory's own name, else the Tinker model name itself."""
    return Path(base_model).name if Path(base_model).is_dir() else base_model


@dataclass(frozen=True)
class ServeSpec:
    base_model: str
    renderer: str
    tinker_url: str
    port: int
    model_path: str | None = None
    served_name: str | None = None
    max_tokens: int | None = None
    state_path: str | None = None  # the training state saved with `model_path` (SkyRL tx)

    @property
    def name(self) -> str:
        """The model name callers send: `--served-model-name`, else the base model's name."""
        return self.served_name or default_name(self.base_model)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def exports(self) -> str:
        """Lines a script can `eval`: where the server is and which model it serves."""
        return f"export ATOLL_SERVE_BASE_URL={self.base_url}\nexport ATOLL_SERVE_MODEL={self.name}"


def _argv(env: managed_env.ManagedEnv, spec: ServeSpec) -> list[str]:
    argv = [
        str(env.python),
        str(managed_env.managed_script("openai_serve")),
        "--base-model",
        spec.base_model,
        "--renderer",
        spec.renderer,
        "--served-model-name",
        spec.name,
        "--tinker-url",
        spec.tinker_url,
        "--port",
        str(spec.port),
    ]
    if spec.model_path:
        argv += ["--model-path", spec.model_path]
    if spec.state_path:
        argv += ["--state-path", spec.state_path]
    if spec.max_tokens is not None:
        argv += ["--max-tokens", str(spec.max_tokens)]
    return argv


def start(
    spec: ServeSpec,
    log: Path,
    say: Callable[[str], None],
    owner: process_group.Owner,
    caller_key: str | None = None,
) -> subprocess.Popen[bytes]:
    """Start the server in its own process group, which `owner` stops; its output goes to `log`."""
    if not os.environ.get("TINKER_API_KEY"):
        raise ServeError(
            "TINKER_API_KEY is not set: export your Tinker key (for the local server, "
            '`eval "$(atoll tinker local up --print-env)"`)'
        )
    env = managed_env.ensure(say)
    child_env = {
        **os.environ,
        "HF_HUB_OFFLINE": "1"
        if Path(spec.base_model).is_dir()
        else os.environ.get("HF_HUB_OFFLINE", "0"),
    }
    child_env.pop("VIRTUAL_ENV", None)
    child_env.pop(SERVE_KEY_VARIABLE, None)
    child_env["PYTHONPATH"] = managed_env.portable_path(child_env)
    if caller_key:
        child_env[SERVE_KEY_VARIABLE] = caller_key
    log.parent.mkdir(parents=True, exist_ok=True)
    with log.open("ab") as sink:
        return owner.spawn(
            _argv(env, spec),
            env=child_env,
            stdin=subprocess.DEVNULL,
            stdout=sink,
            stderr=subprocess.STDOUT,
        )


def wait_ready(
    process: subprocess.Popen[bytes], spec: ServeSpec, log: Path, caller_key: str | None = None
) -> None:
    """Return once `/v1/models` answers; ServeError (the log's tail) if the server exits first."""
    headers = {"authorization": f"Bearer {caller_key}"} if caller_key else {}
    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise ServeError(
                f"the server exited while starting (status {process.returncode}):\n{log_tail(log)}"
            )
        with contextlib.suppress(httpx.HTTPError):
            if httpx.get(f"{spec.base_url}/models", headers=headers, timeout=2).status_code == 200:
                return
        time.sleep(0.5)
    raise ServeError(f"the server did not answer within {START_DEADLINE_S:.0f} s:\n{log_tail(log)}")


@contextlib.contextmanager
def serving(
    spec: ServeSpec, log: Path, say: Callable[[str], None], caller_key: str | None = None
) -> Iterator[ServeSpec]:
    """The server running for the block, stopped with everything it started on the way out."""
    with process_group.Owner(STOP_GRACE_S) as owner:
        process = start(spec, log, say, owner, caller_key)
        wait_ready(process, spec, log, caller_key)
        yield spec

"""Start the run's Tinker policy server and speak to it.

The server (`managed/policy_server.py`) needs the tinker SDK and
tinker-cookbook, which live in atoll-pi-train's managed Python 3.11
environment, so it runs there as a child process group of the run; Reef
proxies guidance calls to it, and the training barrier posts each step's
batch to it. It starts from the run's last durable checkpoint (training state
with its optimizer), so a killed run resumes with exactly the weights its
committed steps made.
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import httpx

from atoll.core import process_group
from atoll.guidance_ttt.services.cancel import Cancellation

START_DEADLINE_S = 300.0
# A step's forward_backward, optimizer step and two saves; minutes on hosted Tinker.
TRAIN_TIMEOUT_S = 3600.0
SCRIPT = "policy_server.py"


class PolicyUnavailable(RuntimeError):
    """The Tinker policy server cannot start or answer; the message says why."""


class PolicyRefused(RuntimeError):
    """The policy server refused a request; a retry with the same content cannot succeed."""


@dataclass(frozen=True)
class PolicyStart:
    """Where the policy's weights come from when its server starts."""

    trained_steps: int
    resume_state: str | None  # the last trained step's state, with its optimizer
    load_weights: str | None  # a warm start's state (weights only), before any step
    sampler_name: str  # what `system_fingerprint` names until the next step


@dataclass(frozen=True)
class PolicySettings:
    base_model: str
    renderer: str
    tinker_url: str
    lora_rank: int
    port: int
    served_name: str

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def script_path() -> Path:
    path = Path(str(resources.files("atoll.guidance_ttt.training") / "managed" / SCRIPT))
    if not path.is_file():
        raise PolicyUnavailable(f"atoll-guidance-ttt is incomplete: managed/{SCRIPT} is missing")
    return path


def _argv(python: Path, settings: PolicySettings, start: PolicyStart) -> list[str]:
    argv = [
        str(python),
        str(script_path()),
        "--base-model",
        settings.base_model,
        "--renderer",
        settings.renderer,
        "--tinker-url",
        settings.tinker_url,
        "--lora-rank",
        str(settings.lora_rank),
        "--served-model-name",
        settings.served_name,
        "--port",
        str(settings.port),
        "--trained-steps",
        str(start.trained_steps),
        "--sampler-name",
        start.sampler_name,
    ]
    if start.resume_state:
        argv += ["--resume-state", start.resume_state]
    elif start.load_weights:
        argv += ["--load-weights", start.load_weights]
    return argv


class TinkerPolicy:
    """A client of the running policy server."""

    def __init__(self, url: str, cancellation: Cancellation | None = None) -> None:
        self.url = url
        self.cancellation = cancellation or Cancellation()
        self._http = self.cancellation.http_client(base_url=url, timeout=httpx.Timeout(60.0))

    def close(self) -> None:
        self._http.close()

    def status(self) -> dict[str, Any]:
        return self._call("GET", "/atoll/status", "the status read")

    def train(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """One step of the method (`/atoll/train`); its saved paths, metrics and timings."""
        return self._call(
            "POST",
            "/atoll/train",
            f"training step {body.get('step')}",
            json=dict(body),
            timeout=TRAIN_TIMEOUT_S,
        )

    def logprob_sums(self, sequences: Sequence[tuple[Sequence[int], Sequence[int]]]) -> list[float]:
        """Summed completion logprobs of (prompt, completion) token sequences, current weights."""
        body = {
            "sequences": [
                {"prompt_tokens": list(p), "completion_tokens": list(c)} for p, c in sequences
            ]
        }
        answer = self._call("POST", "/atoll/logprobs", "the logprob read", json=body, timeout=600)
        return [float(x) for x in answer["sums"]]

    def _call(
        self, method: str, path: str, what: str, timeout: float = 60.0, **kwargs: Any
    ) -> dict[str, Any]:
        try:
            response = self._http.request(method, path, timeout=timeout, **kwargs)
        except httpx.TransportError as exc:
            self.cancellation.check(f"the Tinker policy answered {what}")
            raise PolicyUnavailable(
                f"no answer from the Tinker policy at {self.url} to {what}: {exc}"
            ) from exc
        if response.status_code in (400, 409):
            raise PolicyRefused(f"the Tinker policy refused {what}: {_message(response)}")
        if response.is_error:
            raise PolicyUnavailable(
                f"the Tinker policy answered {what} with HTTP {response.status_code}: {_message(response)}"
            )
        body = response.json()
        if not isinstance(body, dict):
            raise PolicyUnavailable(f"the Tinker policy answered {what} with {body!r}")
        return body


def _message(response: httpx.Response) -> str:
    with contextlib.suppress(ValueError, KeyError, TypeError):
        return str(response.json()["error"]["message"])
    return response.text[:300]


@contextlib.contextmanager
def serving_policy(
    settings: PolicySettings,
    start: PolicyStart,
    log: Path,
    environ: Mapping[str, str],
    cancellation: Cancellation,
) -> Iterator[TinkerPolicy]:
    """The policy server running for the block, stopped with its whole process group after."""
    from atoll.pi_train import ensure_managed_env, trainer_environment

    key = environ.get("TINKER_API_KEY", "")
    if not key:
        raise PolicyUnavailable(
            "training=tinker needs TINKER_API_KEY: export your Tinker key (for the local "
            'server, `eval "$(atoll tinker local up --print-env)"`)'
        )
    env = ensure_managed_env(lambda line: None)
    child_env = {**trainer_environment(settings.base_model, key)}
    child_env.update({k: v for k, v in environ.items() if k.startswith(("TINKER_", "HF_"))})
    child_env.pop("VIRTUAL_ENV", None)
    # The server would demand this bearer token of Reef and the barrier, which send none.
    child_env.pop("ATOLL_SERVE_API_KEY", None)
    log.parent.mkdir(parents=True, exist_ok=True)
    _wait_port_free(settings.port, cancellation)
    with process_group.Owner() as owner:
        with log.open("ab") as sink:
            process = owner.spawn(
                _argv(env.python, settings, start),
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=sink,
                stderr=subprocess.STDOUT,
            )
        policy = TinkerPolicy(settings.url, cancellation)
        try:
            _wait_ready(process, policy, log, cancellation)
            yield policy
        finally:
            policy.close()


def _wait_port_free(port: int, cancellation: Cancellation, wait_s: float = 15.0) -> None:
    """Give a killed run's policy server the moments it takes to notice and leave the port."""
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        cancellation.check("starting the Tinker policy")
        with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
            if probe.connect_ex(("127.0.0.1", port)) != 0:
                return
        time.sleep(0.25)
    raise PolicyUnavailable(
        f"port {port} (tinker_policy_port) is taken by another process; stop it or choose "
        "another port with --ak tinker_policy_port=PORT (and point Reef's upstream there)"
    )


def _wait_ready(
    process: subprocess.Popen[bytes], policy: TinkerPolicy, log: Path, cancellation: Cancellation
) -> None:
    from atoll.pi_train import log_tail

    deadline = time.monotonic() + START_DEADLINE_S
    while time.monotonic() < deadline:
        cancellation.check("starting the Tinker policy")
        if process.poll() is not None:
            raise PolicyUnavailable(
                f"the Tinker policy server exited while starting (status {process.returncode}); "
                f"its log {log} ends:\n{log_tail(log)}"
            )
        with contextlib.suppress(PolicyUnavailable, PolicyRefused, httpx.HTTPError):
            policy.status()
            return
        time.sleep(0.5)
    raise PolicyUnavailable(
        f"the Tinker policy server did not answer within {START_DEADLINE_S:.0f} s; "
        f"its log {log} ends:\n{log_tail(log)}"
    )


def loopback(url: str) -> bool:
    """Whether a Tinker URL is on this machine: atoll's local server (SkyRL tx) is the only one."""
    host = httpx.URL(url).host
    return host in ("127.0.0.1", "localhost", "::1") or host.startswith("127.")

"""SIGTERM or Ctrl-C to `atoll tinker serve` stops its server's whole group, a sample in flight or not.

The server itself also ends on SIGTERM with a sample in flight: it gives the
request a moment, then cancels it (the command, seeing it gone, exits 2).

The server (managed/openai_serve.py) leads a process group of its own, so a
signal to the command never reaches it: the command must stop it. Here the
real command serves the tiny model from the session's local Tinker server,
a chat completion with a long sample of a length no other request asks for
(a fresh sampler compile, then three thousand decoding steps: it stays in flight
for many seconds) is pending, and the command gets the signal. Within a bound the command has exited, and no
process of the server's group, nor any child of the command, runs.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
import time
from pathlib import Path

import httpx
import pytest
from support.processes import children_of, running
from support.waiting import wait_for

from atoll.core import process_group

pytestmark = [pytest.mark.slow, pytest.mark.timeout(900)]

# Seconds from the signal until nothing of the server may run: its 2 s shutdown for the
# request in flight, the command's 5 s grace before SIGKILL, and a busy machine's margin.
# (A stop that waited for the sample, or for a 15 s grace, takes longer.)
STOP_BOUND_S = 12.0


def _pending_completion(
    url: str, model: str, max_tokens: int, outcome: dict[str, object]
) -> threading.Thread:
    """A chat completion in flight on a thread; `outcome` gets its status or its error."""

    def ask() -> None:
        try:
            response = httpx.post(
                f"{url}/chat/completions",
                json={"model": model, "messages": [{"role": "user", "content": "Count on."}],
                      "max_tokens": max_tokens},
                timeout=300,
            )  # fmt: skip
            outcome["status"] = response.status_code
        except httpx.HTTPError as exc:
            outcome["error"] = type(exc).__name__

    thread = threading.Thread(target=ask, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize(
    ("target", "signum"),
    [("command", signal.SIGTERM), ("command", signal.SIGINT), ("server", signal.SIGTERM)],
)
def test_a_signal_stops_the_servers_group_while_a_sample_is_pending(
    target: str,
    signum: signal.Signals,
    server_env: dict[str, str],
    venv_bin: Path,
    tiny_model: Path,
    tmp_path: Path,
) -> None:
    ready = tmp_path / "ready.json"
    server: int | None = None
    command = subprocess.Popen(
        [str(venv_bin / "atoll"), "tinker", "serve", "--base-model", str(tiny_model),
         "--renderer", "qwen3", "--ready-file", str(ready)],
        env=server_env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        wait_for(lambda: ready.exists() or command.poll() is not None, 300, "the server answers")
        assert ready.exists(), command.stderr.read() if command.stderr else ""
        (server,) = children_of(command.pid)
        members = process_group.members(server)
        assert server in members  # it leads its own group
        answered = json.loads(ready.read_text())
        outcome: dict[str, object] = {}
        # One length per signal: each test compiles a sampler of its own.
        length = 3000 + int(signum) + (100 if target == "server" else 0)
        asking = _pending_completion(answered["base_url"], answered["model"], length, outcome)
        time.sleep(2.0)  # the request has reached the sampler, whose compile takes far longer
        assert not outcome, f"the sample was not pending: {outcome}"

        signalled = time.monotonic()
        if target == "command":
            command.send_signal(signum)
        else:  # the server on its own: nobody SIGKILLs it, it must end by itself
            os.kill(server, signum)
        _, err = command.communicate(timeout=60)  # stderr read meanwhile: a full pipe blocks
        wanted = 0 if target == "command" else 2  # 2: the command saw its server exit
        assert command.returncode == wanted, err
        wait_for(
            lambda: not process_group.group_alive(server), STOP_BOUND_S, "the server's group ends"
        )
        assert time.monotonic() - signalled < STOP_BOUND_S
        assert not [pid for pid in members if running(pid)]
        assert not running(server)
        assert not ready.exists()
        asking.join(timeout=30)  # the caller is answered or cut off, never left waiting
        assert not asking.is_alive() and outcome
    finally:  # a failed test leaves nothing either
        if command.poll() is None:
            command.kill()
            command.wait()
        if server is not None:
            process_group.stop_group(server, 5.0)

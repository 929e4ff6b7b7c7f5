"""A judge for a batch of trials: found, relayed or started, then stopped and forgotten.

Two things run trials of a judged task: a Harbor job (the `frontiercs-judge`
job plugin) and a reef-eval episode. Both need the same two variables set
while their trials run, `FRONTIERCS_JUDGE_URL` for agents on the host and
`FRONTIERCS_JUDGE_SOCKET_DIR` for verifiers without a network, so the
decision lives here once:

- a judge `FRONTIERCS_JUDGE_URL` names is checked and used (and left
  running); if `FRONTIERCS_JUDGE_SOCKET_DIR` is set too, its socket must
  answer, else a relay from a fresh socket to that judge runs meanwhile;
- otherwise the embedded judge starts in this process on a free loopback
  port and on the socket (in `FRONTIERCS_JUDGE_SOCKET_DIR` if set, else a
  fresh directory), with its compile cache under the given state directory.

What it exported is restored by `stop()`; what it started, it stops. The
judge and the relay run in-process on purpose: they cannot outlive it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

from atoll.judge import judge_socket
from atoll.judge.client import JudgeClient
from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge, JudgeSetup
from atoll.judge.judge_socket import SOCKET_DIR_ENV
from atoll.judge.relay import UnixToTcpRelay

HEALTH_TIMEOUT_S = 5.0


class JudgeNotReady(Exception):
    """No judge can serve the trials; the message says what to change."""


class JudgeForTrials:
    """Set up the judge the trials of one job or episode use; use as a context manager."""

    def __init__(
        self,
        state_dir: Path,
        say: Callable[[str], None] = lambda _message: None,
        ray: str | None = None,
    ) -> None:
        self.state_dir = state_dir
        self.ray = ray  # the embedded judge judges on this Ray cluster (an address, `auto`)
        self.url: str | None = None
        self._say = say
        self._judge: EmbeddedJudge | None = None
        self._relay: UnixToTcpRelay | None = None
        self._created_dir: Path | None = None
        self._exported: dict[str, str | None] = {}

    def __enter__(self) -> JudgeForTrials:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self) -> None:
        """Find, relay or start the judge; on any failure, undo everything and raise."""
        try:
            self._start()
        except BaseException as exc:
            self.stop()
            if isinstance(exc, (judge_socket.SocketDirError, OSError)):
                raise JudgeNotReady(str(exc)) from exc
            raise

    def _start(self) -> None:
        named = os.environ.get(JUDGE_URL_ENV, "").strip().rstrip("/")
        named_dir = os.environ.get(SOCKET_DIR_ENV, "").strip()
        if named:
            if self.ray is not None:
                raise JudgeNotReady(
                    f"{JUDGE_URL_ENV}={named} names a running judge, which judges where it was "
                    f"started; unset it to judge on the Ray cluster at {self.ray}"
                )
            if not answers(named):
                raise JudgeNotReady(
                    f"{JUDGE_URL_ENV}={named} does not answer GET /health; start that judge, "
                    f"or unset {JUDGE_URL_ENV} to run the embedded one"
                )
            self.url = named
            if named_dir:
                path = judge_socket.socket_path(Path(named_dir))
                if not judge_socket.answers(path):
                    raise JudgeNotReady(
                        f"{SOCKET_DIR_ENV}={named_dir} holds no judge socket that answers; "
                        f"unset it to relay trials to {named}"
                    )
                self._say(f"using the judge at {named} and its socket {path} (left running)")
                return
            directory = self._own_socket_dir()
            self._relay = UnixToTcpRelay(judge_socket.bind(directory), named)
            self._relay.start()
            self._export(SOCKET_DIR_ENV, str(directory))
            self._say(f"using the judge at {named} (left running); trials reach it via {directory}")
            return
        directory = Path(named_dir) if named_dir else self._own_socket_dir()
        judge = self._judge = EmbeddedJudge(
            JudgeSetup(state_dir=self.state_dir, ray=self.ray), socket_dir=directory
        )
        try:
            self.url = judge.start()
        except (judge_socket.SocketDirError, OSError):
            raise
        except Exception as exc:
            raise JudgeNotReady(f"the embedded judge did not start: {exc}") from exc
        self._export(JUDGE_URL_ENV, self.url)
        self._export(SOCKET_DIR_ENV, str(directory))
        self._say(
            f"embedded judge at {self.url} and {directory / judge_socket.SOCKET_NAME} "
            f"(data in {self.state_dir})"
        )

    def _own_socket_dir(self) -> Path:
        self._created_dir = judge_socket.new_socket_dir()
        return self._created_dir

    def _export(self, name: str, value: str) -> None:
        self._exported.setdefault(name, os.environ.get(name))
        os.environ[name] = value

    def stop(self) -> None:
        """Stop what was started and restore the environment (idempotent)."""
        judge, self._judge = self._judge, None
        relay, self._relay = self._relay, None
        if judge is not None:
            judge.stop()
        if relay is not None:
            relay.close()
        created, self._created_dir = self._created_dir, None
        if created is not None:
            judge_socket.remove(created, created=True)
        exported, self._exported = self._exported, {}
        for name, previous in exported.items():
            if previous is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = previous


def answers(url: str, timeout_s: float = HEALTH_TIMEOUT_S) -> bool:
    """Whether a judge answers GET /health at `url`."""
    with JudgeClient(url, request_timeout=timeout_s) as client:
        return client.health()

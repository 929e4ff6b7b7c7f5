"""The `frontiercs-judge` Harbor job plugin: a judge for the whole job, without a second terminal.

The agent's scorer finds the judge through `FRONTIERCS_JUDGE_URL`; a task's
verifier, which has no network, through the unix socket in
`FRONTIERCS_JUDGE_SOCKET_DIR` (see `judge_socket`). At job start:

- a judge `FRONTIERCS_JUDGE_URL` names is checked and used (and left
  running); if `FRONTIERCS_JUDGE_SOCKET_DIR` is set too, its socket must
  answer, else a relay from a fresh socket to that judge runs for the job;
- otherwise the embedded judge starts in this process on a free loopback
  port and on the socket (in `FRONTIERCS_JUDGE_SOCKET_DIR` if set, else a
  fresh directory), with its compile cache under `<job_dir>/frontiercs-judge`.

Whatever is missing is exported for the job and restored after it. The judge
and the relay run in-process on purpose: they cannot outlive the Harbor
process, whatever ends it (job end, Ctrl-C, a failed start of another
plugin), so nothing is left to clean up by pid.
"""

from __future__ import annotations

import atexit
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import httpx
from harbor.models.job.plugin import BaseJobPlugin
from rich.console import Console

from atoll.judge import judge_socket
from atoll.judge.embedded import JUDGE_URL_ENV, EmbeddedJudge, JudgeSetup
from atoll.judge.judge_socket import SOCKET_DIR_ENV
from atoll.judge.relay import UnixToTcpRelay

if TYPE_CHECKING:
    from harbor.job import Job
    from harbor.models.job.result import JobResult

JUDGE_SUBDIR = "frontiercs-judge"
HEALTH_TIMEOUT_S = 5.0


class FrontierCSJudgePlugin(BaseJobPlugin):
    """Finds the judge named by FRONTIERCS_JUDGE_URL, or runs the embedded one for the job."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        if kwargs:
            raise SystemExit(
                f"frontiercs-judge: error: this plugin takes no options (got {', '.join(kwargs)}); "
                f"set {JUDGE_URL_ENV} to use a judge that is already running"
            )
        self.url: str | None = None
        self._judge: EmbeddedJudge | None = None
        self._relay: UnixToTcpRelay | None = None
        self._created_dir: Path | None = None
        self._exported: dict[str, str | None] = {}
        self._console = Console(stderr=True, highlight=False, soft_wrap=True)

    async def on_job_start(self, job: Job) -> None:
        atexit.register(self.stop)
        try:
            self._start(Path(job.job_dir).resolve() / JUDGE_SUBDIR)
        except BaseException as exc:
            self.stop()
            if isinstance(exc, (judge_socket.SocketDirError, RuntimeError, OSError)):
                raise SystemExit(f"frontiercs-judge: error: {exc}") from exc
            raise

    def _start(self, state_dir: Path) -> None:
        named = os.environ.get(JUDGE_URL_ENV, "").strip().rstrip("/")
        named_dir = os.environ.get(SOCKET_DIR_ENV, "").strip()
        if named:
            if not answers(named):
                raise SystemExit(
                    f"frontiercs-judge: error: {JUDGE_URL_ENV}={named} does not answer GET /health; "
                    f"start that judge, or unset {JUDGE_URL_ENV} to run the embedded one for the job"
                )
            self.url = named
            if named_dir:
                path = judge_socket.socket_path(Path(named_dir))
                if not judge_socket.answers(path):
                    raise SystemExit(
                        f"frontiercs-judge: error: {SOCKET_DIR_ENV}={named_dir} holds no judge "
                        f"socket that answers; unset it to relay trials to {named}"
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
        judge = self._judge = EmbeddedJudge(JudgeSetup(state_dir=state_dir), socket_dir=directory)
        try:
            self.url = judge.start()
        except Exception as exc:
            raise RuntimeError(f"the embedded judge did not start: {exc}") from exc
        self._export(JUDGE_URL_ENV, self.url)
        self._export(SOCKET_DIR_ENV, str(directory))
        self._say(
            f"embedded judge at {self.url} and {directory / judge_socket.SOCKET_NAME} "
            f"for this job (data in {state_dir})"
        )

    def _own_socket_dir(self) -> Path:
        self._created_dir = judge_socket.new_socket_dir()
        return self._created_dir

    def _export(self, name: str, value: str) -> None:
        self._exported.setdefault(name, os.environ.get(name))
        os.environ[name] = value

    def _say(self, message: str) -> None:
        self._console.print(f"frontiercs-judge: {message}")

    async def on_job_end(self, job_result: JobResult) -> None:
        self.stop()

    def stop(self) -> None:
        """Stop what this plugin started and restore the environment (idempotent).

        A judge that was found running is left alone.
        """
        atexit.unregister(self.stop)
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
    """Whether a judge answers GET /health at `url` with 200."""
    try:
        return httpx.get(f"{url}/health", timeout=timeout_s).status_code == 200
    except httpx.HTTPError:
        return False

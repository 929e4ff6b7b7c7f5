"""Build and run the embedded judge: from the command line, or in-process on loopback.

`EmbeddedJudge` starts the same HTTP server as `atoll judge serve` on a free
loopback port in a background thread, so callers that were given no
`FRONTIERCS_JUDGE_URL` (the Harbor verifier, the benchmark, tests) speak to a
judge exactly as they would to a remote one.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from atoll.judge.engine import Engine
from atoll.judge.problems import load_problems
from atoll.judge.server import create_app
from atoll.judge.service import DEFAULT_MAX_QUEUE, JudgeService
from atoll.judge.store import Store

JUDGE_URL_ENV = "FRONTIERCS_JUDGE_URL"
STATE_ENV = "ATOLL_JUDGE_STATE"


def default_state_dir() -> Path:
    """Where results and cached binaries live unless told otherwise."""
    if os.environ.get(STATE_ENV):
        return Path(os.environ[STATE_ENV])
    base = os.environ.get("XDG_STATE_HOME") or str(Path.home() / ".local" / "state")
    return Path(base) / "atoll" / "judge"


@dataclass
class JudgeSetup:
    problems_dir: Path | None = None
    state_dir: Path | None = None
    workers: int | None = None
    max_queue: int = DEFAULT_MAX_QUEUE
    backend: str = "bwrap"

    @property
    def state(self) -> Path:
        return self.state_dir or default_state_dir()

    def engine(self) -> Engine:
        return Engine(load_problems(self.problems_dir), self.state, self.workers, self.backend)

    def service(self, results: Path | None = None) -> JudgeService:
        """The judge service; results in `results` (default: the state dir's judge.sqlite)."""
        store = Store(results or self.state / "judge.sqlite")
        return JudgeService(self.engine(), store, max_queue=self.max_queue)


def serve(host: str, port: int, setup: JudgeSetup) -> None:
    """Run the judge in the foreground until interrupted (`atoll judge serve`)."""
    service = setup.service()
    service.start()
    uvicorn.run(create_app(service), host=host, port=port, log_level="info", access_log=False)


class EmbeddedJudge:
    """An in-process judge on 127.0.0.1:<free port>; use as a context manager.

    It shares the state dir's compile cache with every other judge, but keeps
    its results in a private database that lives as long as it does: they
    matter only to this process, and a second process starting on the same
    state dir must not mistake them for work a crashed server left behind.
    """

    def __init__(self, setup: JudgeSetup | None = None) -> None:
        self.setup = setup or JudgeSetup()
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._service: JudgeService | None = None
        self._results: tempfile.TemporaryDirectory[str] | None = None

    def __enter__(self) -> EmbeddedJudge:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 30.0) -> str:
        self._results = tempfile.TemporaryDirectory(prefix="atoll-judge-results-")
        service = self._service = self.setup.service(Path(self._results.name) / "judge.sqlite")
        service.start()
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        config = uvicorn.Config(create_app(service), log_level="warning", access_log=False)
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(
            target=self._server.run, kwargs={"sockets": [sock]}, name="embedded-judge", daemon=True
        )
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the embedded judge did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._service is not None:
            self._service.close()
        if self._results is not None:
            self._results.cleanup()
        self._server = None
        self._thread = None
        self._service = None
        self._results = None

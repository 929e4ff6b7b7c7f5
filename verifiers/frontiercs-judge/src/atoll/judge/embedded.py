"""Build and run the embedded judge: from the command line, or in-process on loopback.

`EmbeddedJudge` starts the same HTTP server as `atoll judge serve` on a free
loopback port in a background thread, so callers that were given no
`FRONTIERCS_JUDGE_URL` (the Harbor verifier, the benchmark, tests) speak to a
judge exactly as they would to a remote one. Both can also serve the judge's
unix socket (see `judge_socket`), which is how trials without a network reach it.
"""

from __future__ import annotations

import os
import socket
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import uvicorn

from atoll.core.sandbox import owners
from atoll.core.termination import sigterm_unwinds
from atoll.core.user_dirs import state_dir
from atoll.judge import judge_socket, leftovers, read_deadline
from atoll.judge.checkout import ProblemSet, assemble, configured_home
from atoll.judge.engine import Engine
from atoll.judge.judging import Judging
from atoll.judge.problems import load_problems
from atoll.judge.service import DEFAULT_MAX_QUEUE, JudgeService
from atoll.judge.store import Store

JUDGE_URL_ENV = "FRONTIERCS_JUDGE_URL"
STATE_ENV = "ATOLL_JUDGE_STATE"


def default_state_dir() -> Path:
    """Where results and cached binaries live unless told otherwise: `judge/` in atoll's state."""
    if os.environ.get(STATE_ENV):
        return Path(os.environ[STATE_ENV])
    return state_dir("judge")


@dataclass
class JudgeSetup:
    problems_dir: Path | None = None
    state_dir: Path | None = None
    workers: int | None = None
    max_queue: int = DEFAULT_MAX_QUEUE
    backend: str = "bwrap"
    read_timeout_s: float = read_deadline.DEFAULT_SECONDS
    frontiercs: Path | None = None  # a FrontierCS checkout; default: FRONTIERCS_HOME
    ray: str | None = None  # judge on the Ray cluster at this address (`auto`), not here

    @property
    def state(self) -> Path:
        return self.state_dir or default_state_dir()

    @property
    def checkout(self) -> Path | None:
        return self.frontiercs or configured_home()

    def problem_set(self) -> ProblemSet:
        """atoll's problems (or `problems_dir`'s) and, with a checkout, all of its problems."""
        return assemble(load_problems(self.problems_dir), self.checkout)

    def engine(self, problems: ProblemSet | None = None, only: str | None = None) -> Engine:
        """An engine for every problem (or `only` that one, which must exist) on this machine.

        Made once the sandbox groups of this state dir's killed judges are removed.
        """
        leftovers.claim_state_dir(self.state)
        served = (problems or self.problem_set()).problems
        if only is not None and only in served:
            served = {only: served[only]}
        return Engine(served, self.state, self.workers, self.backend)

    def judging(self, problems: ProblemSet | None = None) -> Judging:
        """What judges the submissions: this machine's engine, or the Ray cluster's judge nodes."""
        if self.ray is None:
            return self.engine(problems)
        from atoll.judge.ray_engine import RayEngine
        from atoll.judge.ray_node import NodeSetup

        served = (problems or self.problem_set()).problems
        node = NodeSetup(
            problems_dir=str(self.problems_dir.resolve()) if self.problems_dir else None,
            frontiercs=str(self.checkout.resolve()) if self.checkout else None,
            backend=self.backend,
            problem_ids=tuple(served),
        )
        return RayEngine(served, node, self.ray)

    def service(
        self, results: Path | None = None, problems: ProblemSet | None = None
    ) -> JudgeService:
        """The judge service; results in `results` (default: the state dir's judge.sqlite)."""
        engine = self.judging(problems)
        store = Store(results or self.state / "judge.sqlite")
        return JudgeService(engine, store, max_queue=self.max_queue)


def tcp_listener(family: socket.AddressFamily = socket.AF_INET) -> socket.socket:
    """A TCP socket to listen on, whose connections asyncio sets TCP_NODELAY on.

    asyncio disables Nagle's algorithm only on sockets whose `proto` says TCP,
    and a socket made as `socket(AF_INET, SOCK_STREAM)` says 0: then every
    answer, written as headers and body apart, waited for the client's
    delayed ACK, 40 ms per request (a submission and each poll of its result).
    """
    sock = socket.socket(family, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    return sock


class JudgeServer(uvicorn.Server):
    """uvicorn's server for the judge's app: its shutdown first answers the polls it holds.

    uvicorn waits for every request in flight before it stops; a poll of a
    result held until the result is final (see `result_wait`) would keep it
    waiting for as long as the poll may be held.
    """

    def __init__(self, config: uvicorn.Config, release: Callable[[], None]) -> None:
        super().__init__(config)
        self._release = release

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        self._release()
        await super().shutdown(sockets)


def serve(
    host: str,
    port: int,
    setup: JudgeSetup,
    socket_dir: Path | None = None,
    announce: Callable[[str], None] = print,
) -> None:
    """Run the judge in the foreground until interrupted (`atoll judge serve`).

    It listens on `host:port` and on `<socket_dir>/judge.sock`; without a
    `socket_dir`, a fresh directory is made and removed again at exit.
    """
    created = socket_dir is None
    directory = socket_dir or judge_socket.new_socket_dir()
    try:
        unix = judge_socket.bind(directory)
    except judge_socket.SocketDirError:
        if created:
            judge_socket.remove(directory, created=True)
        raise
    try:
        tcp = tcp_listener(socket.AF_INET6 if ":" in host else socket.AF_INET)
        try:
            tcp.bind((host, port))
        except OSError as exc:
            tcp.close()
            raise judge_socket.SocketDirError(
                f"cannot listen on {host}:{port}: {exc.strerror}; pick another --port"
            ) from None
        problems = setup.problem_set()
        service = setup.service(problems=problems)
        service.start()
        try:
            announce(f"serving {problems.describe()}")
            announce(f"judge on http://{host}:{port} and on {directory / judge_socket.SOCKET_NAME}")
            announce(f"export {judge_socket.SOCKET_DIR_ENV}={directory}")
            from atoll.judge.server import create_app  # the HTTP app: only a serving judge loads it

            app = create_app(service)
            config = read_deadline.config(app, setup.read_timeout_s, "info")
            # uvicorn re-raises the signal that stopped it; SIGTERM's default action
            # would end the process before the socket directory is removed.
            with sigterm_unwinds():
                JudgeServer(config, app.state.result_waits.release).run(sockets=[tcp, unix])
        finally:
            # Its sandboxes, runs and cgroups go now, not with the interpreter's exit hooks.
            service.close()
    finally:
        unix.close()
        judge_socket.remove(directory, created=created)


class EmbeddedJudge:
    """An in-process judge on 127.0.0.1:<free port>; use as a context manager.

    It shares the state dir's compile cache with every other judge, but keeps
    its results in a private database that lives as long as it does: they
    matter only to this process, and a second process starting on the same
    state dir must not mistake them for work a crashed server left behind.
    """

    def __init__(self, setup: JudgeSetup | None = None, socket_dir: Path | None = None) -> None:
        self.setup = setup or JudgeSetup()
        self.socket_dir = socket_dir
        self.url = ""
        self._server: uvicorn.Server | None = None
        self._thread: threading.Thread | None = None
        self._service: JudgeService | None = None
        self._results: tempfile.TemporaryDirectory[str] | None = None
        self._sockets: list[socket.socket] = []

    def __enter__(self) -> EmbeddedJudge:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()

    def start(self, timeout_s: float = 30.0) -> str:
        """Serve on a free loopback port (and the socket, if given); the judge's URL.

        On failure, call `stop()`: it releases whatever was started.
        """
        sockets = self._sockets = []
        if self.socket_dir is not None:  # first: the error a user is most likely to meet
            sockets.append(judge_socket.bind(self.socket_dir))
        sock = tcp_listener()
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
        sockets.insert(0, sock)
        leftovers.remove_stale_temp_dirs()
        self._results = tempfile.TemporaryDirectory(
            prefix=f"{leftovers.RESULTS_PREFIX}{owners.own_tag()}-"
        )
        service = self._service = self.setup.service(Path(self._results.name) / "judge.sqlite")
        service.start()
        from atoll.judge.server import create_app  # the HTTP app: only a serving judge loads it

        app = create_app(service, embedded=True)  # its port is of the moment: not its identity
        config = read_deadline.config(app, self.setup.read_timeout_s, "warning")
        self._server = JudgeServer(config, app.state.result_waits.release)
        self._thread = threading.Thread(
            target=self._server.run,
            kwargs={"sockets": sockets},
            name="embedded-judge",
            daemon=True,
        )
        self._thread.start()
        deadline = time.monotonic() + timeout_s
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the embedded judge did not start")
            time.sleep(0.01)
        self.url = f"http://127.0.0.1:{port}"
        return self.url

    def wait_idle(self, timeout_s: float = 10.0) -> bool:
        """Until the judge has nothing under way (see `Engine.wait_idle`): for a caller
        about to time other work beside it."""
        if self._service is None:
            raise RuntimeError("the embedded judge is not started")
        return self._service.engine.wait_idle(timeout_s)

    def stop(self) -> None:
        if self._server is not None:
            self._server.should_exit = True
        if self._thread is not None:
            self._thread.join(timeout=10)
        if self._service is not None:
            self._service.close()
        if self._results is not None:
            self._results.cleanup()
        for sock in self._sockets:
            sock.close()
        if self.socket_dir is not None:
            judge_socket.remove(self.socket_dir, created=False)
        self._sockets = []
        self._server = None
        self._thread = None
        self._service = None
        self._results = None

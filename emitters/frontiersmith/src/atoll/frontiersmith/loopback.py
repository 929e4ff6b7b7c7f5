"""An ASGI app served by uvicorn on a loopback port, inside the caller's event loop.

The metered endpoint's handlers await the run's `PaidChat`, whose HTTP
client belongs to the loop that made it; so uvicorn runs as a task of that
loop, not in a thread of its own as the embedded judge does. It leaves the
process's signals and logging alone: Ctrl-C stops the FrontierSmith run, as
it did before, and uvicorn's loggers propagate to whatever the run set up.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
from collections.abc import AsyncIterator, Generator
from typing import Any

import uvicorn

LOOPBACK = "127.0.0.1"


class _LoopServer(uvicorn.Server):
    """uvicorn's server without its signal handlers: the host process keeps its own."""

    @contextlib.contextmanager
    def capture_signals(self) -> Generator[None, None, None]:
        yield


def _bound(port: int) -> socket.socket:
    """A listening loopback TCP socket on `port`, made as asyncio's own servers are.

    With IPPROTO_TCP, so that asyncio sets TCP_NODELAY on its connections
    (see atoll.judge.embedded's `tcp_listener`: a JSON answer is written as
    headers and body apart, and Nagle's algorithm would hold the body for the
    client's delayed ACK); with SO_REUSEADDR, so that a resumed search gets
    its port back while the last run's connections linger in TIME_WAIT.
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
        sock.listen(128)
    except OSError:
        sock.close()
        raise
    return sock


def _listener(port: int) -> socket.socket:
    """On `port` when it is free, else on any free port."""
    try:
        return _bound(port)
    except OSError:
        if not port:
            raise
        return _bound(0)


@contextlib.asynccontextmanager
async def serving(app: Any, port: int = 0) -> AsyncIterator[int]:
    """Serve `app` on loopback `port` (any free port where it is 0 or taken); the port bound.

    On leaving, the listener closes first and requests in flight are
    answered before it returns: a paid request the agent made is settled,
    not cut off and left uncertain.
    """
    sock = _listener(port)
    config = uvicorn.Config(
        app, lifespan="off", log_config=None, log_level="warning", access_log=False
    )
    server = _LoopServer(config)
    task = asyncio.create_task(server.serve(sockets=[sock]), name="loopback-asgi")
    try:
        while not server.started:
            if task.done():
                await task  # its exception, else the plain failure below
                raise RuntimeError("the loopback server stopped while starting")
            await asyncio.sleep(0.005)
        yield sock.getsockname()[1]
    finally:
        server.should_exit = True
        try:
            await task  # cancelled with it when the caller is
        finally:
            sock.close()

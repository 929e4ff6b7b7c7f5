"""Requests an httpx client has in flight, failed at once from another thread.

A thread blocked reading an HTTP answer (a long-polled result, a model
answering for minutes) cannot be interrupted by closing its client: httpx's
`close()` closes the socket, and on Linux a close does not wake a thread
blocked in `recv`. A socket `shutdown()` does. So a client that must be
stoppable from another thread hooks `InFlight.attach` into its requests;
`abort()` then shuts every socket the client has connected, which makes
each blocked read fail with an `httpx` transport error at once, and every
socket connected later is shut as soon as it connects.
"""

from __future__ import annotations

import contextlib
import socket
import threading
import weakref
from typing import Any

import httpx

__all__ = ["InFlight"]

# httpcore's trace events for a new connection, over TCP and over a Unix socket.
_CONNECTED = frozenset(
    {"connection.connect_tcp.complete", "connection.connect_unix_socket.complete"}
)


class InFlight:
    """The sockets of the requests it is attached to, to shut down all at once."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._sockets: weakref.WeakSet[socket.socket] = weakref.WeakSet()
        self._aborted = False

    @property
    def aborted(self) -> bool:
        return self._aborted

    def attach(self, request: httpx.Request) -> None:
        """An httpx `request` event hook: the connection this request opens is remembered."""
        request.extensions["trace"] = self._trace

    def abort(self) -> None:
        """Fail every request in flight now, and every connection opened from now on."""
        with self._lock:
            self._aborted = True
            sockets = list(self._sockets)
        for sock in sockets:
            _shut(sock)

    def _trace(self, event: str, info: dict[str, Any]) -> None:
        if event not in _CONNECTED:
            return
        sock = info["return_value"].get_extra_info("socket")
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._sockets.add(sock)
            aborted = self._aborted
        if aborted:
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    # shutdown(), unlike close(), wakes a thread blocked reading the socket.
    with contextlib.suppress(OSError):
        sock.shutdown(socket.SHUT_RDWR)

"""One container's attached stdio: feed stdin, demultiplex and cap stdout/stderr.

The engine multiplexes a non-TTY container's output on the attach connection
as frames (1 byte stream id, 3 zero bytes, 4 bytes big-endian length). Output
is read here, live, rather than from the engine's logs, so that a program
flooding its output is stopped at the cap instead of filling the disk.
"""

from __future__ import annotations

import contextlib
import select
import socket
import threading
import time
from typing import Any

from atoll.core.sandbox.capture import Capture
from atoll.core.sizes import KiB

_HEADER = 8
_CHUNK = 64 * KiB  # bytes per socket read or write
_STDOUT, _STDERR = 1, 2


def raw_socket(attached: Any) -> socket.socket:
    """The plain socket under what docker-py's `attach_socket` returns."""
    sock = getattr(attached, "_sock", attached)
    if not isinstance(sock, socket.socket):
        raise TypeError(f"cannot use {type(attached).__name__} as a socket")
    return sock


class AttachedStreams:
    """Reads frames off an attach socket; `pump` returns when there is nothing more for now."""

    def __init__(self, sock: socket.socket, stdout_cap: int, stderr_cap: int) -> None:
        self._sock = sock
        self._sock.setblocking(False)
        self._buffer = bytearray()
        self.stdout = Capture(stdout_cap)
        self.stderr = Capture(stderr_cap)
        self.closed = False
        self.overflowed = False
        self._writer: threading.Thread | None = None

    def send_stdin(self, data: bytes | None) -> None:
        """Write `data` in the background, then close our sending half (EOF for the program)."""
        if data is None:
            return

        def write() -> None:
            with contextlib.suppress(OSError):
                view = memoryview(data)
                while view:
                    _, ready, _ = select.select([], [self._sock], [], 1.0)
                    if not ready:
                        continue
                    try:
                        sent = self._sock.send(view[:_CHUNK])
                    except BlockingIOError:
                        continue
                    view = view[sent:]
                self._sock.shutdown(socket.SHUT_WR)

        self._writer = threading.Thread(target=write, name="sandbox-stdin", daemon=True)
        self._writer.start()

    def pump(self, timeout: float) -> None:
        """Read whatever arrives within `timeout` seconds; sets `closed` at EOF."""
        if self.closed:
            return
        ready, _, _ = select.select([self._sock], [], [], max(timeout, 0.0))
        if not ready:
            return
        while True:
            try:
                chunk = self._sock.recv(_CHUNK)
            except BlockingIOError:
                break
            except OSError:
                self.closed = True
                break
            if not chunk:
                self.closed = True
                break
            self._buffer += chunk
            self._frames()
            if self.overflowed:
                break

    def _frames(self) -> None:
        while len(self._buffer) >= _HEADER:
            size = int.from_bytes(self._buffer[4:8], "big")
            if len(self._buffer) < _HEADER + size:
                return
            kind = self._buffer[0]
            payload = bytes(self._buffer[_HEADER : _HEADER + size])
            del self._buffer[: _HEADER + size]
            target = self.stderr if kind == _STDERR else self.stdout if kind == _STDOUT else None
            if target is not None and not target.add(payload):
                self.overflowed = True

    def drain(self, timeout: float) -> None:
        """Read (and drop past the caps) what is still in flight after a kill.

        The engine will not finish removing a container while its output sits
        unread on the attach connection, so the connection must reach EOF.
        """
        give_up = time.monotonic() + timeout
        while not self.closed and time.monotonic() < give_up:
            self.pump(0.05)

    def close(self) -> None:
        with contextlib.suppress(OSError):
            self._sock.close()
        if self._writer is not None:
            self._writer.join(timeout=2.0)

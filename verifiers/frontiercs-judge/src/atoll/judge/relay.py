"""A relay from the judge's unix socket to a judge that listens elsewhere.

When `FRONTIERCS_JUDGE_URL` names a running judge (another machine, another
port), trials still reach it through the one socket they are given: each
connection on the socket is joined, byte for byte, to a new TCP (or TLS, for
https) connection to that judge. The relay reads nothing it forwards, so the
judge's protocol is untouched; it runs on its own event loop in a daemon
thread and stops with `close()` or with the process.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import ssl
import threading
from urllib.parse import urlsplit

from atoll.core.sizes import KiB

CHUNK_BYTES = 64 * KiB


class RelayError(Exception):
    """The relay cannot start; the message says why."""


class UnixToTcpRelay:
    """Serve `listener` (a bound, listening unix socket) by forwarding to `url`'s host and port."""

    def __init__(self, listener: socket.socket, url: str) -> None:
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise RelayError(f"cannot relay to {url!r}: expected http://HOST:PORT or https://...")
        self.host = parts.hostname
        self.port = parts.port or (443 if parts.scheme == "https" else 80)
        self._tls = ssl.create_default_context() if parts.scheme == "https" else None
        self._listener = listener
        self._loop = asyncio.new_event_loop()
        self._server: asyncio.base_events.Server | None = None
        self._ready = threading.Event()
        self._failure: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="judge-relay", daemon=True)

    def start(self, timeout_s: float = 10.0) -> None:
        self._thread.start()
        if not self._ready.wait(timeout_s):
            raise RelayError("the judge relay did not start")
        if self._failure is not None:
            raise RelayError(f"the judge relay did not start: {self._failure}")

    def close(self) -> None:
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(timeout=10)
        self._listener.close()

    def _run(self) -> None:
        asyncio.set_event_loop(self._loop)
        try:
            self._server = self._loop.run_until_complete(
                asyncio.start_unix_server(self._serve, sock=self._listener)
            )
        except BaseException as exc:  # reported to start()
            self._failure = exc
            self._ready.set()
            return
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            for task in asyncio.all_tasks(self._loop):
                task.cancel()
            with contextlib.suppress(Exception):
                self._loop.run_until_complete(asyncio.sleep(0))
            self._loop.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            up_reader, up_writer = await asyncio.open_connection(
                self.host, self.port, ssl=self._tls
            )
        except OSError:
            writer.close()  # the client sees a closed connection: the judge is unreachable
            return
        try:
            await asyncio.gather(_pump(reader, up_writer), _pump(up_reader, writer))
        finally:
            for end in (writer, up_writer):
                with contextlib.suppress(OSError):
                    end.close()


async def _pump(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """Copy one direction; at its end, half-close so that the other direction can finish."""
    try:
        while chunk := await reader.read(CHUNK_BYTES):
            writer.write(chunk)
            await writer.drain()
        if writer.can_write_eof():
            writer.write_eof()
    except OSError:
        writer.close()  # a reset on one side ends the other at once

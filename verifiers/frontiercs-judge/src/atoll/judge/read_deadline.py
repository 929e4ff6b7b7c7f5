"""A deadline for reading each request: a half-sent request is dropped, not held forever.

uvicorn bounds only the idle time between requests on a kept-alive
connection; a client that opens a connection and sends nothing, half the
headers, or a body one byte at a time keeps it (and whatever it holds) for
ever. Here every request has to arrive whole within `seconds` of its first
byte (or of the connection's opening): past that the judge answers
408 when it has not begun a response, and closes the connection. Only the
reading is bounded; a request that has arrived is answered however long
judging takes.
"""

from __future__ import annotations

import asyncio
import json
import logging
from typing import Any

import h11
import uvicorn
from uvicorn.protocols.http.h11_impl import H11Protocol

log = logging.getLogger(__name__)

DEFAULT_SECONDS = 30.0
_READ = frozenset({h11.IDLE, h11.SEND_BODY})  # their states while a request is arriving


class DeadlineH11Protocol(H11Protocol):
    """uvicorn's h11 protocol with a per-request read deadline (`seconds`)."""

    seconds = DEFAULT_SECONDS

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        self._deadline: asyncio.TimerHandle | None = None
        super().connection_made(transport)
        self._arm()

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and self.conn.their_state in _READ:
            self._arm()
        super().data_received(data)
        self._settle()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        # A pipelined request may have begun arriving while the last one was answered.
        if self.conn.their_state is h11.SEND_BODY or (
            self.conn.their_state is h11.IDLE and self.conn.trailing_data[0]
        ):
            self._arm()
        self._settle()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        super().connection_lost(exc)

    def _settle(self) -> None:
        """Stop the clock once the request has arrived whole (or the connection is done)."""
        if self.conn.their_state not in _READ:
            self._disarm()
        elif self.conn.their_state is h11.IDLE and not self.conn.trailing_data[0]:
            if self.cycle is not None and not self.cycle.response_complete:
                return  # waiting for the body of a request being answered: keep counting
            if self.timeout_keep_alive_task is not None:
                self._disarm()  # idle between requests: uvicorn's keep-alive bound applies

    def _arm(self) -> None:
        self._disarm()
        self._deadline = self.loop.call_later(self.seconds, self._expired)

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _expired(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        log.info(
            "dropped a connection from %s: no whole request within %.0f s",
            self.client,
            self.seconds,
        )
        if self.cycle is None or self.cycle.response_complete:
            body = json.dumps(
                {"error": f"the request did not arrive whole within {self.seconds:g} s"}
            ).encode()
            self.transport.write(
                b"HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\n"
                b"connection: close\r\ncontent-length: " + str(len(body)).encode() + b"\r\n\r\n"
                + body
            )  # fmt: skip
        self.transport.close()


def protocol(seconds: float) -> type[DeadlineH11Protocol]:
    """The protocol class with a read deadline of `seconds`, to give uvicorn as `http`."""
    return type("DeadlineH11Protocol", (DeadlineH11Protocol,), {"seconds": seconds})


def config(app: Any, read_timeout_s: float, log_level: str) -> uvicorn.Config:
    """uvicorn's configuration for the judge: h11 with the read deadline, no access log."""
    return uvicorn.Config(app, http=protocol(read_timeout_s), log_level=log_level, access_log=False)

"""A run's stop switch: once thrown, nothing new is sampled and every wait ends promptly.

Harbor cancels an agent (a trial timeout, Ctrl-C) by cancelling its asyncio
task, but the search runs on threads that asyncio cannot interrupt, and those
threads spend their time blocked in long HTTP calls (a guidance inference or an
executor answer may take many minutes). Closing a client does not wake a
thread blocked in a read, so every HTTP client of a run is built here: its
sockets are remembered as they connect (`atoll.core.http_abort`), and
`cancel()` shuts them down, which makes the blocked read fail at once. Loops check `cancelled` between calls and
wait with `wait()` instead of sleeping.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable
from typing import Any

import httpx

from atoll.core.http_abort import InFlight


class RunCancelled(Exception):
    """The run was stopped on request; rerunning the same command resumes it."""


class Cancellation:
    """One run's stop switch, shared by the controller, the step's threads and the clients."""

    def __init__(self) -> None:
        self._event = threading.Event()
        self._lock = threading.Lock()
        self._in_flight = InFlight()
        self._callbacks: list[Callable[[], None]] = []

    @property
    def cancelled(self) -> bool:
        return self._event.is_set()

    def cancel(self) -> None:
        """Stop the run: fail every call in flight and every call still to come."""
        with self._lock:
            if self._event.is_set():
                return
            self._event.set()
            callbacks = list(self._callbacks)
        self._in_flight.abort()
        for callback in callbacks:
            with contextlib.suppress(Exception):
                callback()

    def check(self, before: str) -> None:
        """Raise `RunCancelled` if the run was stopped; `before` names what would have happened."""
        if self._event.is_set():
            raise RunCancelled(f"the run was cancelled before {before}")

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True (at once) when the run is cancelled."""
        return self._event.wait(seconds)

    def on_cancel(self, callback: Callable[[], None]) -> None:
        """Call `callback` when the run is cancelled (now, if it already is)."""
        with self._lock:
            if not self._event.is_set():
                self._callbacks.append(callback)
                return
        callback()

    def http_client(self, **kwargs: Any) -> httpx.Client:
        """An httpx client whose requests fail at once, sent or in flight, after `cancel()`."""

        def before_send(request: httpx.Request) -> None:
            self.check(f"{request.method} {request.url.path}")
            self._in_flight.attach(request)

        hooks = kwargs.pop("event_hooks", {})
        hooks = {**hooks, "request": [*hooks.get("request", []), before_send]}
        return httpx.Client(event_hooks=hooks, **kwargs)

"""Long polls of `GET /result/{sid}?wait=S`: held until the result is final, or S seconds.

The authority's protocol has a client poll a result at its own pace, and a
result that became final waits for the client's next turn (a quarter of a
second by default), each turn costing both sides a request. atoll's judge
also takes `wait`: an answer still `queued` is held for up to that many
seconds (at most `MAX_WAIT_S`) and sent the moment the result is final.
Without `wait` nothing changes. Every answer about a submission names the
longest hold in the `RESULT_WAIT_HEADER` header, so that a client learns
from its first poll that it may ask (the authority sends no such header,
and its clients are asked nothing new).

The dispatcher threads announce each final result (`ResultWaits.final`);
the held requests wait on the server's event loop. A server that shuts
down lets every held request answer at once (`release`).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator, Awaitable, Callable

from atoll.judge.client import RESULT_WAIT_HEADER

__all__ = ["MAX_WAIT_S", "RESULT_WAIT_HEADER", "ResultWaits", "parse_wait"]

#: The longest a poll is held: short enough for a client's read timeout, or a proxy's.
MAX_WAIT_S = 5.0


def parse_wait(raw: str | None) -> float | None:
    """The seconds a poll may be held (None: not asked), at most `MAX_WAIT_S`.

    ValueError for anything but a finite, non-negative number.
    """
    if raw is None:
        return None
    try:
        seconds = float(raw)
    except ValueError:
        seconds = math.nan
    if not math.isfinite(seconds) or seconds < 0:
        raise ValueError(
            f"wait {raw[:40]!r} is not a number of seconds >= 0 "
            f"(a poll is held at most {MAX_WAIT_S:g} s)"
        )
    return min(seconds, MAX_WAIT_S)


class ResultWaits:
    """The held polls, by submission id, each a future its announcement sets."""

    def __init__(self) -> None:
        self._loop: asyncio.AbstractEventLoop | None = None
        self._held: dict[int, list[asyncio.Future[None]]] = {}
        self._released = False

    def final(self, sid: int) -> None:
        """`sid`'s result is final and stored (from any thread): its held polls answer now."""
        loop = self._loop
        # A poll is held before it reads the result, and this follows the write: a poll
        # this misses read it final.
        if loop is not None and sid in self._held:
            with contextlib.suppress(RuntimeError):  # the loop is closed: nothing is held
                loop.call_soon_threadsafe(self._wake, sid)

    def release(self) -> None:
        """Answer every held poll now, and hold none from here on (the server stops)."""
        self._released = True
        loop = self._loop
        if loop is not None:
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._wake_all)

    @contextlib.asynccontextmanager
    async def holding(self, sid: int) -> AsyncIterator[Callable[[float], Awaitable[None]]]:
        """Within the block, `await until(seconds)` returns once `sid` is final or time is up.

        Read the result inside the block, before waiting: an announcement
        made after that read reaches the wait.
        """
        loop = self._loop = asyncio.get_running_loop()
        future: asyncio.Future[None] = loop.create_future()
        held = self._held.setdefault(sid, [])
        held.append(future)

        async def until(seconds: float) -> None:
            if self._released or seconds <= 0:
                return
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(asyncio.shield(future), seconds)

        try:
            yield until
        finally:
            held.remove(future)
            if not held and self._held.get(sid) is held:
                del self._held[sid]

    def _wake(self, sid: int) -> None:
        for future in self._held.get(sid, ()):
            if not future.done():
                future.set_result(None)

    def _wake_all(self) -> None:
        for sid in list(self._held):
            self._wake(sid)

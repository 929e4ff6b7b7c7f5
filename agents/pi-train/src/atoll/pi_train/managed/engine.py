"""SkyRL tx's engine, woken by its API server when work arrives rather than looking ten times a second.

Run by the managed Python 3.11 interpreter in place of `python -m tx.tinker.engine`
(the environment's `uv` shim does it when serve.py names this script).

SkyRL tx 0.3.0's engine queries its database for pending requests, then sleeps
0.1 s, forever. On two cores an idle server spent about 3 % of a core on those
queries (0.65 s of CPU in 20 s), for as long as it lived, and every request
waited 50 ms on average for the next look. serve.py sends a datagram to the
socket named by `ATOLL_TINKER_WAKE` after each request that leaves the engine
work; here the pause at the end of the engine's loop waits for that datagram,
and looks again after `IDLE_LOOK_S` regardless, so a lost datagram costs at
most that much time and never a request. The engine's own code runs
unchanged: its module's clock is one whose `sleep` is this wait.
"""

from __future__ import annotations

import contextlib
import os
import select
import socket
import time
from typing import Any

from tx.tinker import engine

WAKE_VARIABLE = "ATOLL_TINKER_WAKE"
IDLE_LOOK_S = 1.0


class WakeClock:
    """The `time` module as the engine's loop sees it, but with a `sleep` that a wake ends."""

    def __init__(self, wake: socket.socket) -> None:
        self.wake = wake

    def sleep(self, seconds: float) -> None:
        """The pause between two looks for work: until a wake, `IDLE_LOOK_S` at most.

        Every wake queued so far is taken here, before the next look: one that
        arrives after this returns stays queued and ends the next pause at once.
        """
        ready, _, _ = select.select([self.wake], [], [], max(seconds, IDLE_LOOK_S))
        if ready:
            with contextlib.suppress(BlockingIOError):
                while True:
                    self.wake.recv(64)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


def main() -> None:
    name = os.environ.get(WAKE_VARIABLE)
    if name:
        wake = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM | socket.SOCK_NONBLOCK)
        wake.bind("\0" + name)  # abstract: nothing on disk to leave behind
        engine.time = WakeClock(wake)
    engine.main()


if __name__ == "__main__":
    main()

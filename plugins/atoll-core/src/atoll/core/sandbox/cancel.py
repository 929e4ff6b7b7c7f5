"""A way for another thread to end a sandboxed run early, whatever the backend.

A caller that runs a sandbox in a worker thread (an async environment, a
judge that gives up on a submission) hands `run` a CancelToken and calls
`cancel()` from anywhere; the run is killed and returns at once.
"""

from __future__ import annotations

import contextlib
import os


class CancelToken:
    """Lets another thread stop a run early: `cancel()` wakes the run's supervisor.

    A pipe rather than a threading.Event, so a supervisor waiting in one
    `select` notices it without polling (`fileno()`); a backend that polls
    reads `cancelled`. Cancelling before the run starts ends it as soon as it
    starts. Close the token (or use it as a context manager) when the run is over.
    """

    def __init__(self) -> None:
        self._read, self._write = os.pipe()
        os.set_blocking(self._write, False)
        self.cancelled = False

    def fileno(self) -> int:
        return self._read

    def cancel(self) -> None:
        self.cancelled = True
        with contextlib.suppress(OSError):
            os.write(self._write, b"x")

    def close(self) -> None:
        for fd in (self._read, self._write):
            with contextlib.suppress(OSError):
                os.close(fd)
        self._read = self._write = -1

    def __enter__(self) -> CancelToken:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

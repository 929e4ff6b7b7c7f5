"""Sessions of one spec for parallel runs: a run borrows an idle one, or a new one is opened.

A session runs one command at a time (its runs share a network namespace,
see `bwrap_session`), so a caller that runs cases in parallel keeps a pool:
as many sessions as runs have ever overlapped, each reused run after run.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Iterator, Sequence

from atoll.core.sandbox.base import SandboxBackend
from atoll.core.sandbox.session import SandboxSession
from atoll.core.sandbox.spec import Limits, SandboxError, SandboxSpec


class SessionPool:
    """Sessions of `spec` (with `slots`) on `backend`, opened on demand and kept until `close`."""

    def __init__(
        self, backend: SandboxBackend, spec: SandboxSpec, slots: Sequence[str] = ()
    ) -> None:
        self.backend = backend
        self.spec = spec
        self.slots = tuple(slots)
        self._idle: list[SandboxSession] = []
        self._lock = threading.Lock()
        self._closed = False

    @contextlib.contextmanager
    def lease(self) -> Iterator[SandboxSession]:
        """An idle session (or a new one) for the duration of the block."""
        with self._lock:
            if self._closed:
                raise SandboxError("the sandbox session pool is closed")
            session = self._idle.pop() if self._idle else None
        if session is None:
            session = self.backend.session(self.spec, self.slots)
        try:
            yield session
        finally:
            with self._lock:
                if self._closed:
                    session.close()
                else:
                    self._idle.append(session)

    def warm(self, limits: Limits, runs: int, sessions: int) -> None:
        """Have `sessions` sessions (opening those missing) each get ready for `runs` runs.

        For parallel runs to come, while the CPUs have time to spare (see
        `SandboxSession.warm`); the sessions are idle again when it returns.
        """
        with contextlib.ExitStack() as stack:
            leased = [stack.enter_context(self.lease()) for _ in range(sessions)]
            for session in leased:
                session.warm(limits, runs)

    def close(self) -> None:
        """Close every session (one in use closes once its run is over)."""
        with self._lock:
            self._closed = True
            idle, self._idle = self._idle, []
        for session in idle:
            session.close()

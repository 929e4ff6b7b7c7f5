"""The contract every sandbox backend fulfils, so callers never care which one runs.

A backend turns (argv, SandboxSpec, stdin) into a SandboxResult. It must be
safe to call `run` from many threads at once: a judge runs dozens of short
programs per submission in parallel through one backend object. Whether a
backend keeps this contract is what `atoll.core.sandbox.conformance` checks,
for ours and for a third party's.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence

from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.session import OneOffSession, SandboxSession
from atoll.core.sandbox.spec import Pipes, SandboxResult, SandboxSpec


class SandboxBackend(ABC):
    """One way of isolating a command (bubblewrap, Docker, ...)."""

    #: The short name `get_backend` knows this backend by.
    name: str = ""
    #: Whether `run` can join a program to host pipes (`pipes=`); if not, it refuses them.
    supports_pipes: bool = False

    @abstractmethod
    def check(self) -> None:
        """Raise SandboxError, with the fix in its message, if this backend cannot work here."""

    @abstractmethod
    def run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None = None,
        *,
        pipes: Pipes | None = None,
        cancel: CancelToken | None = None,
    ) -> SandboxResult:
        """Run `argv` inside the box described by `spec` and report how it ended.

        Program failures (crash, limit hit) are statuses in the result; only a
        failure of the sandbox itself raises SandboxError. With `pipes`, the
        program reads and writes those descriptors (the backend closes them)
        and the result's stdout is empty; a backend that cannot join a program
        to host pipes (`supports_pipes` false) raises SandboxError, after
        closing them. With `cancel`, another thread may end the run early
        (`cancel.cancel()`): the program is killed and the run returns at
        once, as a WALL_TIME_LIMIT, since it was stopped before it finished.
        """

    def session(self, spec: SandboxSpec, slots: Sequence[str] = ()) -> SandboxSession:
        """A box for `spec` that runs one command after another (see `atoll.core.sandbox.session`).

        `slots` are in-box directories for each run's own mounts. A backend
        that can prepare a box once overrides this; by default every run is a
        box of its own, which is as isolated and only slower.
        """
        return OneOffSession(self, spec, tuple(slots))

    def leftovers(self) -> list[str]:
        """What this process's finished runs left on the machine (none between runs).

        Each entry names one thing a user could find and remove (a container
        ID, a cgroup directory). The conformance suite calls this after each
        check; a backend that leaves nothing of its own behind keeps the default.
        """
        return []

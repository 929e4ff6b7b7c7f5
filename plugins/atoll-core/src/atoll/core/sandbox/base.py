"""The contract every sandbox backend fulfils, so callers never care which one runs.

A backend turns (argv, SandboxSpec, stdin) into a SandboxResult. It must be
safe to call `run` from many threads at once: a judge runs dozens of short
programs per submission in parallel through one backend object.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Sequence
from typing import TYPE_CHECKING

from atoll.core.sandbox.spec import Pipes, SandboxResult, SandboxSpec

if TYPE_CHECKING:
    from atoll.core.sandbox.supervise import CancelToken


class SandboxBackend(ABC):
    """One way of isolating a command (bubblewrap, Docker, ...)."""

    #: The short name `get_backend` knows this backend by.
    name: str = ""

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
        to host pipes raises SandboxError, after closing them. `cancel` lets
        another thread end the run early: it is killed and reported as out
        of wall time.
        """

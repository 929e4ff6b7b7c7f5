"""A backend whose every run shares its box with a hostile run before it: the suite, through sessions.

`run(argv, spec)` opens a bubblewrap session for `spec`, first runs in it a
program that tries to leave something for the next run (a file in /tmp, a
process in the background, SysV and POSIX IPC objects, its limits spent on a
fork bomb), then the check's own program, and closes the session. Passing
the whole conformance suite this way means that a run in a shared box meets
every limit, isolation and audit a run in a box of its own meets, whatever
ran in that box before it.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from atoll.core.sandbox import (
    CancelToken,
    Limits,
    Pipes,
    SandboxBackend,
    SandboxResult,
    SandboxSpec,
    get_backend,
)
from atoll.core.sizes import MiB

# Leaves: /tmp/poison, a detached sleeper, a SysV segment and a POSIX queue; then
# spends its process budget, so that the next run's must be fresh.
POISON = [
    "sh",
    "-c",
    "echo poison > /tmp/poison; setsid sleep 60 </dev/null >/dev/null 2>&1 & "
    "ipcmk -M 4096 >/dev/null; "
    'python3 -c \'import ctypes; rt = ctypes.CDLL("librt.so.1"); '
    'rt.mq_open(b"/poison", 0o100 | 0o2, 0o666, None)\'; '
    "for i in $(seq 40); do sleep 60 & done; exit 0",
]
POISON_LIMITS = Limits(cpu_seconds=5, wall_seconds=10, memory_bytes=256 * MiB, processes=16)


class PoisonedSessions(SandboxBackend):
    """The bwrap backend's sessions, each check's run preceded by `POISON` in the same box."""

    name = "bwrap-session"
    supports_pipes = True

    def __init__(self) -> None:
        self.inner = get_backend("bwrap")
        self.poison_results: list[SandboxResult] = []

    def check(self) -> None:
        self.inner.check()

    def run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None = None,
        *,
        pipes: Pipes | None = None,
        cancel: CancelToken | None = None,
    ) -> SandboxResult:
        try:
            session = self.inner.session(dataclasses.replace(spec, limits=Limits()))
        except BaseException:
            if pipes is not None:
                pipes.close()
            raise
        with session:
            try:
                poison = dataclasses.replace(POISON_LIMITS, stdout_bytes=MiB)
                self.poison_results.append(session.run(POISON, poison))
            except BaseException:
                if pipes is not None:
                    pipes.close()
                raise
            return session.run(
                argv,
                spec.limits,
                stdin,
                stdin_seekable=spec.stdin_seekable,
                pipes=pipes,
                cancel=cancel,
            )

    def leftovers(self) -> list[str]:
        return self.inner.leftovers()

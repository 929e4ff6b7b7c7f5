"""SIGTERM that unwinds like any other ending, so that cleanup code runs.

Python's default action for SIGTERM ends the process on the spot: no
`finally`, no `atexit`. Whatever atoll starts for a job (a Reef stack, a
judge, a container, a socket directory) is stopped by code of that kind, so
a `kill`, a scheduler's stop or a CI timeout must leave through it too. Here
SIGTERM becomes an exception raised in the main thread: `SystemExit(143)`
(the status a shell reports for a process SIGTERM ended) or, for code whose
cleanup is written for Ctrl-C, `Terminated`, a `KeyboardInterrupt` that
still says it was SIGTERM, so that the command can exit 143 rather than
Ctrl-C's 130 (`interrupted_status`).

Only the default action is replaced: a host that handles SIGTERM itself
(Harbor, a test runner, an application embedding atoll) keeps its handler,
and off the main thread, where Python cannot set handlers, nothing changes.
Event loops use `loop_signal_handlers`: the loop runs the callback instead.
"""

from __future__ import annotations

import asyncio
import contextlib
import signal
from collections.abc import Callable, Iterable, Iterator
from types import FrameType
from typing import Any


class Terminated(KeyboardInterrupt):
    """SIGTERM, raised where the cleanup is Ctrl-C's: caught by `except KeyboardInterrupt`."""


#: The statuses a shell reports for a process that SIGINT or SIGTERM ended.
INTERRUPTED_STATUS = 128 + signal.SIGINT
TERMINATED_STATUS = 128 + signal.SIGTERM


def interrupted_status(exc: BaseException) -> int:
    """The exit status for a command that `exc` interrupted: 143 for SIGTERM, 130 for Ctrl-C."""
    return TERMINATED_STATUS if isinstance(exc, Terminated) else INTERRUPTED_STATUS


class UnwindOnSigterm:
    """Installs SIGTERM -> exception while the default action is in place; `restore` undoes it.

    For a lifetime that spans calls (a Harbor job plugin's start and end
    hooks); `sigterm_unwinds` is the same for one block of code.
    """

    def __init__(self, interrupt: bool = False) -> None:
        self.interrupt = interrupt
        self._previous: Any = None
        self._installed = False

    def install(self) -> bool:
        """Whether the handler is now in place (False: a host's handler or not the main thread)."""
        if self._installed:
            return True
        try:
            current = signal.getsignal(signal.SIGTERM)
            if current not in (signal.SIG_DFL, None):
                return False
            signal.signal(signal.SIGTERM, self._handle)
        except ValueError:  # not the main thread: signals are the host's
            return False
        self._previous, self._installed = current, True
        return True

    def restore(self) -> None:
        """Put the previous action back, unless someone replaced ours meanwhile (idempotent)."""
        if not self._installed:
            return
        self._installed = False
        with contextlib.suppress(ValueError):
            if signal.getsignal(signal.SIGTERM) == self._handle:
                signal.signal(signal.SIGTERM, self._previous or signal.SIG_DFL)

    def _handle(self, signum: int, _frame: FrameType | None) -> None:
        if self.interrupt:
            raise Terminated
        raise SystemExit(128 + signum)


@contextlib.contextmanager
def sigterm_unwinds(interrupt: bool = False) -> Iterator[None]:
    """Within the block, SIGTERM raises SystemExit(143), or `Terminated` with `interrupt`."""
    handler = UnwindOnSigterm(interrupt)
    handler.install()
    try:
        yield
    finally:
        handler.restore()


@contextlib.contextmanager
def sigterm_kept() -> Iterator[None]:
    """After the block, SIGTERM is handled as it was before it, whatever the block set.

    For library calls that take the signal over for good: `ray.init()` sets
    its own SIGTERM handler (`sys.exit(15)`) in the main thread and
    `ray.shutdown()` leaves it there, so a process that once joined a Ray
    cluster would lose its host's handling of SIGTERM, or the default that
    `sigterm_unwinds` relies on, for the rest of its life. Off the main
    thread, where Python cannot set handlers, nothing changes.
    """
    before = signal.getsignal(signal.SIGTERM)  # None: a handler not set from Python
    try:
        yield
    finally:
        if before is not None:
            with contextlib.suppress(ValueError):  # not the main thread
                signal.signal(signal.SIGTERM, before)


@contextlib.contextmanager
def signals_deferred(
    signals: Iterable[signal.Signals] = (signal.SIGTERM, signal.SIGINT),
) -> Iterator[Callable[[], bool]]:
    """Within the block, `signals` are noted instead of acted on; after it, the first is re-sent.

    For cleanup that must finish once begun (stopping a child's process
    group): a second Ctrl-C or SIGTERM during it would otherwise raise
    inside the cleanup and leave the child running. The block gets a
    function that says whether a signal came, so it can hurry (SIGKILL
    instead of waiting out a grace). After the block the previous handlers
    are back and the first noted signal is raised again, so the process
    still ends the way that signal asks. An ignored signal stays ignored;
    off the main thread nothing changes.
    """
    noted: list[int] = []
    previous: dict[signal.Signals, Any] = {}

    def note(signum: int, _frame: FrameType | None) -> None:
        noted.append(signum)

    for signum in signals:
        try:
            current = signal.getsignal(signum)
            if current is signal.SIG_IGN:
                continue
            signal.signal(signum, note)
        except ValueError:  # not the main thread: signals are the main thread's
            break
        previous[signum] = current
    try:
        yield lambda: bool(noted)
    finally:
        for signum, action in previous.items():
            signal.signal(signum, signal.SIG_DFL if action is None else action)
        if noted:
            signal.raise_signal(noted[0])


@contextlib.contextmanager
def loop_signal_handlers(
    loop: asyncio.AbstractEventLoop,
    callback: Callable[[], object],
    signals: Iterable[signal.Signals] = (signal.SIGTERM,),
) -> Iterator[None]:
    """Within the block, the running loop calls `callback` on each of `signals`.

    Where the loop cannot take signal handlers (not the main thread, not a
    Unix loop) nothing is installed and the signals keep their actions.
    """
    chosen = tuple(signals)
    for signum in chosen:
        with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
            loop.add_signal_handler(signum, callback)
    try:
        yield
    finally:
        for signum in chosen:
            with contextlib.suppress(NotImplementedError, RuntimeError, ValueError):
                loop.remove_signal_handler(signum)

"""One process at a time per run directory, and a refusal that names the one that has it.

Two commands on one run directory would do the work twice into one record (a
Guidance-TTT archive, a FrontierSmith ledger, an Euler or Pi training log, the
judge's database), so each takes this lock for as long as it works there and
a second one is refused in one line of one shape:

    /runs/a is in use by `atoll euler eval` (pid 1234 on box, since 2025-01-02T03:04:05Z);
    wait for it to end or use another --out

The same lock serves the places that wait their turn rather than refuse
(one engine start, one stack start, one install at a time): `wait` holds it
once it is free, and with a timeout refuses in the same shape when it has
waited that long:

    the engine in /state is in use by `atoll docker up` (pid 1234 on box,
    since 2025-01-02T03:04:05Z), still after 900 s of waiting; wait for it to end or stop it

The lock is flock(2) on a lock file (or on a directory itself, for the short
waits of `wait`): the kernel lets go of it when its process ends, SIGKILL
included, so the lock alone says whether the directory is held. Who holds it
is said by a record beside it (`<lock file>.holder.json` unless the caller
names another): written atomically once the lock is held, removed before the
lock is let go. A killed holder leaves its record behind; the record names
the holder's pid and the kernel's start time of that pid, and one whose
process no longer runs is never named as the holder of a lock held by
whoever came next.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import socket
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from atoll.core.durable import atomic_write_json
from atoll.core.processes import start_time

__all__ = [
    "ADVICE",
    "HOLDER_SUFFIX",
    "UNKNOWN_HOLDER",
    "Holder",
    "Lock",
    "RunDirInUse",
    "acquire",
    "command_summary",
    "holder",
    "holder_file",
    "try_acquire",
    "wait",
]

HOLDER_SUFFIX = ".holder.json"
ADVICE = "wait for it to end or stop it"
UNKNOWN_HOLDER = "another process (it has not said which yet)"
# How many words of this process's command line a record keeps when the caller names none.
_COMMAND_WORDS = 4
# How often a wait with a timeout asks for the lock: first, and at the longest.
_FIRST_PAUSE_S = 0.01
_LONGEST_PAUSE_S = 0.5


@dataclass(frozen=True)
class Holder:
    """The process a holder record names."""

    pid: int
    host: str
    command: str
    since: str
    started: int | None = None  # the kernel's start time of `pid`, which tells a reused pid

    @classmethod
    def this_process(cls, command: str) -> Holder:
        return cls(
            pid=os.getpid(),
            host=socket.gethostname(),
            command=command,
            since=time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            started=start_time(os.getpid()),
        )

    @classmethod
    def read(cls, record: Path) -> Holder | None:
        """The record's holder; None when there is none or it is not one."""
        try:
            data = json.loads(record.read_text("utf-8"))
            started = data.get("started")
            return cls(
                pid=int(data["pid"]),
                host=str(data["host"]),
                command=str(data["command"]),
                since=str(data["since"]),
                started=None if started is None else int(started),
            )
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def runs(self) -> bool:
        """Whether the process still runs; one on another host is taken at its word."""
        if self.host != socket.gethostname():
            return True
        now = start_time(self.pid)
        return now is not None and (self.started is None or now == self.started)

    def __str__(self) -> str:
        return f"`{self.command}` (pid {self.pid} on {self.host}, since {self.since})"


class RunDirInUse(RuntimeError):
    """Another process holds the lock; `holder` is who, where its record says so."""

    def __init__(self, message: str, holder: Holder | None) -> None:
        super().__init__(message)
        self.holder = holder


class Lock:
    """A held lock: `release` (or the end of a `with` block) lets go of it."""

    def __init__(self, path: Path, fd: int, record: Path | None) -> None:
        self.path = path
        self.record = record
        self._fd: int | None = fd
        self._pid = os.getpid()
        self._mutex = threading.Lock()

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Remove the holder record, then let go of the lock; again is a no-op.

        A forked child that inherited the lock only closes its copy: the
        record is its parent's, and so is the lock.
        """
        with self._mutex:
            fd, self._fd = self._fd, None
        if fd is None:
            return
        try:
            if self.record is not None and os.getpid() == self._pid:
                with contextlib.suppress(OSError):
                    self.record.unlink()
        finally:
            os.close(fd)

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.release()


def holder_file(path: Path) -> Path:
    """Where the holder of the lock file `path` says who it is, unless its caller names a file."""
    return path.with_name(path.name + HOLDER_SUFFIX)


def command_summary(argv: list[str] | None = None) -> str:
    """This process's command in a few words, without its options: `atoll emit frontiersmith`.

    What a holder record says when its caller names no command; the values
    of options (keys, paths) are left out.
    """
    words = list(sys.argv if argv is None else argv) or ["python"]
    summary = [Path(words[0]).name or "python"]
    for word in words[1:_COMMAND_WORDS]:
        if word.startswith("-"):
            break
        summary.append(word)
    return " ".join(summary)


def acquire(
    path: Path,
    *,
    command: str | None = None,
    what: str | None = None,
    advice: str = ADVICE,
    record: Path | None = None,
) -> Lock:
    """Hold the lock file `path` (created with its directory), or raise `RunDirInUse`.

    Never waits. The refusal reads `<what> is in use by <holder>; <advice>`,
    `what` being the lock's directory unless given. Once held, the record
    (`record`, else `holder_file(path)`) names this process and `command`
    (else `command_summary()`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    record = record or holder_file(path)
    fd = _open(path)
    if not _flock(fd, wait=False):
        os.close(fd)
        raise _refusal(path, record, what, advice)
    return _held(path, fd, record, command)


def try_acquire(path: Path) -> Lock | None:
    """Hold `path` (a lock file, created, or a directory) if nobody does; None if someone does.

    For work that goes on either way and only does more as the holder (a
    scorer that cleans its work directory first); it writes no record.
    """
    fd = _open(path)
    if _flock(fd, wait=False):
        return Lock(path, fd, None)
    os.close(fd)
    return None


def wait(
    path: Path,
    timeout: float | None = None,
    *,
    command: str | None = None,
    what: str | None = None,
    advice: str = ADVICE,
    error: Callable[[str], Exception] | None = None,
) -> Lock:
    """Hold `path` (a lock file, created with its directory, or a directory), waiting its turn.

    For work one process at a time does while others wait (an engine start,
    an install, a bundle moved into place). With `timeout` (seconds), a wait
    that long ends in `RunDirInUse`, in `acquire`'s shape with the wait's
    length, or in `error(message)` (the caller's own one-line error, which
    its command line already prints) caused by it; without, it waits for as
    long as the lock is held. A lock file gets `acquire`'s holder record, so
    that a waiter that gives up can name who kept it; a directory locked
    itself gets none and leaves no file behind.
    """
    directory = path.is_dir()
    if not directory:
        path.parent.mkdir(parents=True, exist_ok=True)
    record = None if directory else holder_file(path)
    fd = _open(path)
    if timeout is None:
        _flock(fd, wait=True)
    elif not _flock_within(fd, timeout):
        os.close(fd)
        refusal = _refusal(path, record, what, advice, waited=timeout)
        if error is None:
            raise refusal
        raise error(str(refusal)) from refusal
    return _held(path, fd, record, command)


def holder(path: Path, record: Path | None = None) -> Holder | None:
    """Who holds the lock file `path`, by its record; None when no running process is named."""
    named = Holder.read(record or holder_file(path))
    return named if named is not None and named.runs() else None


def _held(path: Path, fd: int, record: Path | None, command: str | None) -> Lock:
    """The lock just taken on `fd`, with its holder record written (when it keeps one)."""
    lock = Lock(path, fd, record)
    if record is None:
        return lock
    try:
        atomic_write_json(record, _record(Holder.this_process(command or command_summary())))
    except BaseException:
        lock.release()
        raise
    return lock


def _refusal(
    path: Path, record: Path | None, what: str | None, advice: str, waited: float | None = None
) -> RunDirInUse:
    """The one refusal of both `acquire` and `wait`: who holds `path`, and what to do."""
    named = None if record is None else holder(path, record)
    after = "" if waited is None else f", still after {waited:g} s of waiting"
    return RunDirInUse(
        f"{what or path.parent} is in use by {named or UNKNOWN_HOLDER}{after}; {advice}", named
    )


def _record(named: Holder) -> dict[str, Any]:
    return {key: value for key, value in asdict(named).items() if value is not None}


def _open(path: Path) -> int:
    if path.is_dir():
        return os.open(path, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    return os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)


def _flock(fd: int, *, wait: bool) -> bool:
    try:
        fcntl.flock(fd, fcntl.LOCK_EX if wait else fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return False
    except BaseException:
        os.close(fd)
        raise
    return True


def _flock_within(fd: int, timeout: float) -> bool:
    """Take the lock on `fd` if it comes free within `timeout` seconds.

    flock(2) has no timeout of its own, so this asks without blocking, at
    first every 10 ms and then at most every half second, until it is free or
    the time is up; it asks once more at the end.
    """
    deadline = time.monotonic() + timeout
    pause = _FIRST_PAUSE_S
    while not _flock(fd, wait=False):
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        try:
            time.sleep(min(pause, left))
        except BaseException:  # an interrupted wait lets go of its descriptor like a failed one
            os.close(fd)
            raise
        pause = min(pause * 2, _LONGEST_PAUSE_S)
    return True

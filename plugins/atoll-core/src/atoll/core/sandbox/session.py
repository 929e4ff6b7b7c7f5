"""A box that runs command after command, each run as isolated as in a box of its own.

Why: preparing a box (namespaces, a dozen mounts) can cost more than the
short programs a judge runs in it; a judge runs 70 of them per submission.
A session prepares the box once for a spec (its mounts, environment, uid,
network) and runs each command with its own limits, stdin and per-run mounts.

What a run must never notice of the runs before it, on any backend: their
files (each run has a fresh /tmp; read-only mounts stay read-only), their
processes (none is left when a run ends), their IPC objects, and their use of
the limits (each run has its own CPU, memory, process and output budget and
its own counters). What runs do share is the spec's writable mounts, which
the caller chose to share. Runs of one session do not overlap (a second
waits for the first); for parallel runs open several sessions.

Per-run mounts land on `slots` (empty directories the session makes in the
box for them) or inside another per-run mount of the same run.
"""

from __future__ import annotations

import dataclasses
import threading
from abc import ABC, abstractmethod
from collections.abc import Sequence
from pathlib import PurePosixPath
from typing import TYPE_CHECKING

from atoll.core.sandbox.cancel import CancelToken
from atoll.core.sandbox.spec import (
    Limits,
    Mount,
    Pipes,
    SandboxError,
    SandboxResult,
    SandboxSpec,
    mount_target,
)

if TYPE_CHECKING:
    from atoll.core.sandbox.base import SandboxBackend


class SandboxSession(ABC):
    """One prepared box; `run` runs one command in it. Close it (or use `with`) when done."""

    def __init__(self, spec: SandboxSpec, slots: tuple[str, ...]) -> None:
        self.spec = spec
        self.slots = tuple(mount_target(slot) for slot in slots)
        for target in (*self.slots, *(m.target for m in spec.mounts)):
            if PurePosixPath(mount_target(target)) == PurePosixPath("/tmp"):
                raise SandboxError("a session gives every run a fresh /tmp: mount elsewhere")
        self._one_at_a_time = threading.Lock()
        self.closed = False
        # The last run's mounts and spec, checked and made: a judge's runs repeat them.
        self._last_mounts: tuple[tuple[Mount, ...], tuple[Mount, ...]] | None = None
        self._last_spec: tuple[Limits, bool, SandboxSpec] | None = None

    def run(
        self,
        argv: Sequence[str],
        limits: Limits | None = None,
        stdin: bytes | None = None,
        *,
        mounts: Sequence[Mount] = (),
        stdin_seekable: bool | None = None,
        pipes: Pipes | None = None,
        cancel: CancelToken | None = None,
    ) -> SandboxResult:
        """Run `argv` in the box with `limits` (default: the spec's), as `SandboxBackend.run`.

        `mounts` are this run's own, on the session's slots; `stdin_seekable`
        defaults to the spec's. SandboxError for a mount off the slots.
        """
        with self._one_at_a_time:
            try:
                if self.closed:
                    raise SandboxError("this sandbox session is closed; open another")
                ordered = self._checked_mounts(tuple(mounts))
            except SandboxError:
                if pipes is not None:
                    pipes.close()
                raise
            spec = self._spec_for(
                self.spec.limits if limits is None else limits,
                self.spec.stdin_seekable if stdin_seekable is None else stdin_seekable,
            )
            return self._run(argv, spec, stdin, ordered, pipes, cancel)

    def _checked_mounts(self, mounts: tuple[Mount, ...]) -> tuple[Mount, ...]:
        """`_check_mounts`, done once for mounts the same as the last run's."""
        last = self._last_mounts
        if last is not None and last[0] == mounts:
            return last[1]
        ordered = self._check_mounts(mounts)
        self._last_mounts = (mounts, ordered)
        return ordered

    def _spec_for(self, limits: Limits, stdin_seekable: bool) -> SandboxSpec:
        """The session's spec with a run's limits and stdin, made once for the same as the last run's."""
        last = self._last_spec
        if last is not None and last[1] == stdin_seekable and last[0] == limits:
            return last[2]
        spec = dataclasses.replace(self.spec, limits=limits, stdin_seekable=stdin_seekable)
        self._last_spec = (limits, stdin_seekable, spec)
        return spec

    @abstractmethod
    def _run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None,
        mounts: tuple[Mount, ...],
        pipes: Pipes | None,
        cancel: CancelToken | None,
    ) -> SandboxResult:
        """One run, its mounts checked and ordered (parents first)."""

    def warm(self, limits: Limits | None = None, runs: int = 1) -> None:
        """Get ready now for `runs` runs with `limits` (default: the spec's) to come.

        A hint, for a caller with time to spare before its runs (a judge
        compiling the program its cases run): a backend that prepares runs
        ahead does it now, which takes that work off the runs' path; the runs
        are what they would be anyway. Others ignore it.
        """
        with self._one_at_a_time:
            if not self.closed:
                self._warm(self.spec.limits if limits is None else limits, runs)

    def _warm(self, limits: Limits, runs: int) -> None:  # noqa: B027 - most backends prepare nothing
        """What `warm` does, the session held."""

    def close(self) -> None:
        """Release the box (after the run in progress, if any); runs after this raise SandboxError."""
        with self._one_at_a_time:
            if not self.closed:
                self.closed = True
                self._release()

    def _release(self) -> None:  # noqa: B027 - a session that holds nothing has nothing to release
        """What `close` frees: the backend's hold on the box."""

    def __enter__(self) -> SandboxSession:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _check_mounts(self, mounts: Sequence[Mount]) -> tuple[Mount, ...]:
        """`mounts` parents first; SandboxError for a target neither a slot nor inside a mount."""
        ordered = sorted(mounts, key=lambda m: len(PurePosixPath(mount_target(m.target)).parts))
        slots = {PurePosixPath(slot) for slot in self.slots}
        placed: list[PurePosixPath] = []
        for mount in ordered:
            target = PurePosixPath(mount_target(mount.target))
            if target == PurePosixPath("/tmp"):
                raise SandboxError("a session gives every run a fresh /tmp: mount elsewhere")
            inside = any(target.is_relative_to(p) and target != p for p in placed)
            if target not in slots and not inside and not target.is_relative_to("/tmp"):
                known = ", ".join(self.slots) or "none"
                raise SandboxError(
                    f"a run's mount target {target} is not a slot of its session (slots: "
                    f"{known}); open the session with it among its slots"
                )
            placed.append(target)
        return tuple(ordered)


class OneOffSession(SandboxSession):
    """A session whose every run is a box of its own: for backends that prepare nothing."""

    def __init__(self, backend: SandboxBackend, spec: SandboxSpec, slots: tuple[str, ...]) -> None:
        super().__init__(spec, slots)
        self.backend = backend

    def _run(
        self,
        argv: Sequence[str],
        spec: SandboxSpec,
        stdin: bytes | None,
        mounts: tuple[Mount, ...],
        pipes: Pipes | None,
        cancel: CancelToken | None,
    ) -> SandboxResult:
        whole = dataclasses.replace(spec, mounts=(*spec.mounts, *mounts))
        return self.backend.run(argv, whole, stdin, pipes=pipes, cancel=cancel)

"""The durable archive of one run: a JSON snapshot, an event journal, and a committed copy.

Under `<state_dir>/guidance-run/`:

- `library.json`: the working archive as of the last step barrier (a snapshot
  with a generation number);
- `library.journal.jsonl`: every selection and rollout since that snapshot,
  one fsync'd line each, so one rollout costs one small append, not a rewrite;
- `committed-library.json`: a byte copy of `library.json` made only after the
  trainer's commit was checked, the only archive a resume restores.

At the step barrier `finish_step` folds the journal into a new snapshot
(generation + 1) and empties the journal. A crash between the two leaves
journal lines of the old generation, which the loader skips; a crash in the
middle of an append leaves a torn last line, which the loader ignores. Replay
goes through the same `Archive.apply_*` code as a live run.
"""

from __future__ import annotations

import contextlib
import json
import threading
from pathlib import Path
from typing import Any, Self

from atoll.core import run_lock
from atoll.core.durable import atomic_write_bytes, canonical_json, fsync_dir
from atoll.guidance_ttt.search.archive import Archive, ArchiveError, Rollout, Selection, StepEnd
from atoll.guidance_ttt.search.node import Node
from atoll.guidance_ttt.state.jsonl_journal import Journal, JournalCorrupt, read_journal
from atoll.guidance_ttt.state.run_dir import RunDir

FORMAT = "atoll.guidance_ttt.library/1"


class LibraryError(RuntimeError):
    """The archive files are missing, inconsistent, locked, or could not be written."""


class Library:
    """An archive whose every change is durable before the call returns.

    Open it with `create`, `open` or `restore_committed`; one process at a time
    (a file lock guards the run directory). Safe to call from several threads.
    """

    def __init__(
        self,
        paths: RunDir,
        archive: Archive,
        generation: int,
        journal: Journal,
        lock: run_lock.Lock,
        pending: int,
    ) -> None:
        self.paths = paths
        self._archive = archive
        self._generation = generation
        self._journal = journal
        self._lock = lock
        self._seq = pending
        self._mutex = threading.Lock()
        self._broken: str | None = None

    # ----- opening ------------------------------------------------------------------------

    @classmethod
    def create(cls, state_dir: Path, archive: Archive) -> Self:
        """Start a run's archive (e.g. `Archive.seeded(...)`); refuses to overwrite one."""
        paths = RunDir(state_dir)
        paths.directory.mkdir(parents=True, exist_ok=True)
        lock = _acquire(paths)
        try:
            working = paths.working_archive
            if working.exists():
                raise LibraryError(
                    f"{working} already exists; resume the run or choose a new state directory"
                )
            if archive.selections or archive.finished:
                raise LibraryError("a new library must start at a step barrier")
            atomic_write_bytes(working, _snapshot(archive, 0))
            journal = Journal(paths.archive_journal)
            journal.truncate()
        except BaseException:
            lock.release()
            raise
        return cls(paths, archive, 0, journal, lock, 0)

    @staticmethod
    def discard_unstarted(state_dir: Path, *, has_steps: bool) -> bool:
        """Remove the archive files of a first start that stopped before its first step.

        A first start writes the archive, then the resume state; a start killed
        in between leaves an archive no step ever touched (step 0, no rollout)
        and no way to resume it. That archive is the seed and nothing else, so
        it is removed and the start is done again. Anything else (a step's
        journal, an archive past step 0) is refused, never removed. Returns
        whether there was anything to remove.
        """
        paths = RunDir(state_dir)
        directory = paths.directory
        files = [paths.working_archive, paths.committed_archive, paths.archive_journal]
        if not any(path.exists() for path in files):
            return False
        lock = _acquire(paths)
        try:
            if has_steps:
                raise LibraryError(
                    f"{directory} holds step journals but no resume state; it is not an "
                    "unfinished first start: restore its resume-state.json or choose a new "
                    "state directory"
                )
            for path in files[:2]:
                if path.exists():
                    archive, _ = _load_snapshot(path)
                    if archive.step or archive.total_rollouts or archive.selections:
                        raise LibraryError(
                            f"{path} is at step {archive.step} with {archive.total_rollouts} "
                            "rollouts but has no resume state beside it; restore its "
                            "resume-state.json or choose a new state directory"
                        )
            for path in files:
                path.unlink(missing_ok=True)
            fsync_dir(directory)
        finally:
            lock.release()
        return True

    @classmethod
    def open(cls, state_dir: Path) -> Self:
        """The working archive: the last snapshot plus the journal's events since."""
        paths = RunDir(state_dir)
        working = paths.working_archive
        if not working.exists():
            raise LibraryError(f"{working} does not exist; no run was started in {state_dir}")
        lock = _acquire(paths)
        try:
            archive, generation = _load_snapshot(working)
            journal_path = paths.archive_journal
            try:
                read = read_journal(journal_path)
            except JournalCorrupt as exc:
                raise LibraryError(str(exc)) from None
            pending = _replay(archive, generation, read.records, journal_path)
            journal = Journal(journal_path, valid_length=read.valid_length)
        except BaseException:
            lock.release()
            raise
        return cls(paths, archive, generation, journal, lock, pending)

    @classmethod
    def restore_committed(cls, state_dir: Path) -> Self:
        """Reset the working archive to the committed one, discarding uncommitted work."""
        paths = RunDir(state_dir)
        committed = paths.committed_archive
        if not committed.exists():
            raise LibraryError(f"{committed} does not exist; no step of this run was committed")
        lock = _acquire(paths)
        try:
            archive, committed_generation = _load_snapshot(committed)
            # Empty the journal first: its events belong to the abandoned, uncommitted work.
            journal = Journal(paths.archive_journal)
            try:
                journal.truncate()
                working = paths.working_archive
                generation = committed_generation
                if working.exists():
                    with contextlib.suppress(ValueError, KeyError, TypeError):
                        generation = max(generation, json.loads(working.read_bytes())["generation"])
                generation += 1
                atomic_write_bytes(working, _snapshot(archive, generation))
            except BaseException:
                journal.close()
                raise
        except BaseException:
            lock.release()
            raise
        return cls(paths, archive, generation, journal, lock, 0)

    # ----- the run's operations -----------------------------------------------------------

    @property
    def archive(self) -> Archive:
        """The in-memory archive (read it; change it only through this library)."""
        return self._archive

    @property
    def generation(self) -> int:
        return self._generation

    def select(self, step: int, group: int) -> Node:
        """The group's parent for `step`, chosen by PUCT once and recorded durably."""
        with self._mutex:
            self._usable()
            selection = self._archive.choose(step, group)
            if group in self._archive.selections:
                return self._archive.nodes[selection.node_id]
            self._append("selection", selection.to_json(), None)
            self._archive.apply_selection(selection)
            return self._archive.nodes[selection.node_id]

    def select_step(self, step: int, groups: int) -> list[Node]:
        """Parents for groups 0 … groups − 1, chosen in group order."""
        return [self.select(step, group) for group in range(groups)]

    def record(self, rollout: Rollout) -> int | None:
        """Book one finished rollout (failed ones too); the new child's id, or None."""
        with self._mutex:
            self._usable()
            self._archive.check_rollout(rollout)
            child = self._archive.child_of(rollout)
            self._append("rollout", rollout.to_json(), child)
            applied = self._archive.apply_rollout(rollout)
            assert applied == child
            return child

    def finish_step(self, step: int) -> StepEnd:
        """Run the step-end filter and fold the journal into a new `library.json`."""
        with self._mutex:
            self._usable()
            self._archive.check_step(step)
            try:
                end = self._archive.finish_step(step)
                generation = self._generation + 1
                atomic_write_bytes(self.paths.working_archive, _snapshot(self._archive, generation))
                self._generation = generation
                self._seq = 0
                self._journal.truncate()
            except OSError as exc:
                self._broken = f"compacting the archive failed ({exc}); reopen the library"
                raise LibraryError(self._broken) from exc
            return end

    def commit(self) -> None:
        """Copy the working archive to `committed-library.json`, atomically; only at a barrier."""
        with self._mutex:
            self._usable()
            if self._seq:
                raise LibraryError(
                    f"step {self._archive.step} has {self._seq} unfolded events; "
                    "finish the step before committing the archive"
                )
            data = self.paths.working_archive.read_bytes()
            atomic_write_bytes(self.paths.committed_archive, data)

    def close(self) -> None:
        with self._mutex:
            self._journal.close()
            self._lock.release()
            self._broken = self._broken or "the library is closed"

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ----- helpers ------------------------------------------------------------------------

    def _usable(self) -> None:
        if self._broken:
            raise LibraryError(self._broken)

    def _append(self, kind: str, event: dict[str, Any], child: int | None) -> None:
        record = {
            "generation": self._generation,
            "seq": self._seq,
            "kind": kind,
            "event": event,
            "child_id": child,
        }
        try:
            self._journal.append(record)
        except OSError as exc:
            self._broken = f"appending to {self._journal.path} failed ({exc}); reopen the library"
            raise LibraryError(self._broken) from exc
        self._seq += 1


def peek(state_dir: Path, *, attempts: int = 3) -> Archive:
    """The working archive as a reader sees it now, without the lock and without writing.

    For tools that look at a run that may be running (or was killed): the
    last snapshot plus the journal's events since. A step barrier that folds
    the journal between the two reads makes them disagree; the read is then
    done again, up to `attempts` times.
    """
    paths = RunDir(state_dir)
    working = paths.working_archive
    if not working.exists():
        raise LibraryError(f"{working} does not exist; no run was started in {state_dir}")
    failure = ""
    for _ in range(attempts):
        archive, generation = _load_snapshot(working)
        try:
            records = read_journal(paths.archive_journal).records
            _replay(archive, generation, records, paths.archive_journal)
        except (LibraryError, JournalCorrupt) as exc:
            failure = str(exc)
        else:
            return archive
    raise LibraryError(failure)


def _acquire(paths: RunDir) -> run_lock.Lock:
    try:
        return run_lock.acquire(paths.archive_lock)
    except run_lock.RunDirInUse as exc:
        raise LibraryError(str(exc)) from None


def _snapshot(archive: Archive, generation: int) -> bytes:
    return canonical_json(
        {"format": FORMAT, "generation": generation, "archive": archive.to_json()}
    )


def _load_snapshot(path: Path) -> tuple[Archive, int]:
    try:
        data = json.loads(path.read_bytes())
    except (OSError, ValueError) as exc:
        raise LibraryError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("format") != FORMAT:
        raise LibraryError(f"{path}: not a Guidance-TTT archive of format {FORMAT}")
    try:
        return Archive.from_json(data["archive"]), int(data["generation"])
    except ArchiveError as exc:
        raise LibraryError(f"{path}: {exc}") from None
    except (KeyError, TypeError, ValueError) as exc:
        raise LibraryError(f"{path}: malformed archive ({exc!r})") from None


def _replay(archive: Archive, generation: int, records: list[dict[str, Any]], path: Path) -> int:
    """Apply the journal's events of the snapshot's generation; the number applied."""
    applied = 0
    for number, record in enumerate(records, start=1):
        try:
            record_generation = int(record["generation"])
            if record_generation < generation:
                continue  # folded into the snapshot before a crash emptied the journal
            if record_generation > generation or int(record["seq"]) != applied:
                raise LibraryError(
                    f"{path}: line {number} does not follow the snapshot (generation "
                    f"{record_generation}, seq {record['seq']}); the files do not belong together"
                )
            event = record["event"]
            if record["kind"] == "selection":
                archive.apply_selection(Selection.from_json(event))
            elif record["kind"] == "rollout":
                child = archive.apply_rollout(Rollout.from_json(event))
                if child != record["child_id"]:
                    raise LibraryError(
                        f"{path}: line {number} made node {child}, the journal says "
                        f"{record['child_id']}"
                    )
            else:
                raise LibraryError(f"{path}: line {number} has unknown kind {record['kind']!r}")
        except ArchiveError as exc:
            raise LibraryError(f"{path}: line {number} cannot be replayed: {exc}") from None
        except (KeyError, TypeError, ValueError) as exc:
            raise LibraryError(f"{path}: line {number} is malformed ({exc!r})") from None
        applied += 1
    return applied

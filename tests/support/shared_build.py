"""One costly build shared by all the xdist workers of a run: the first to ask builds it.

Tests of one module spread over all workers, so a module fixture that builds
something costly (a FrontierSmith campaign with real Harbor trials) was built
once per worker: four times the same minute on two cores. Here the first
worker to ask builds under an exclusive lock on a file in the run's shared
temporary root, and every other worker blocks on that lock, then reads what
was built.

A build is a directory of files plus a JSON-able record (what the tests read
that is no file: the command's output, the requests the scripted model got).
The files are written in place and the record last, atomically: a directory
without its record is an interrupted build, which the next worker to take
the lock removes and builds again (a worker that dies releases its lock).

A build that raises is recorded as failed, and every other worker fails with
the same message instead of building again: the builds here are
deterministic (a scripted model, the same commands), so a second attempt
would spend the same minutes to fail the same way, once per worker. A build
that skips (a prerequisite missing) is recorded as skipped for the same
reason.

The files are shared, so the tests only read them; each test that must
change something copies it first. `Built.assert_unchanged` (called by the
fixtures at teardown) compares every path's size, mode and modification time
with what the build left, so a test that writes there anyway is caught
rather than seen by another worker's test.
"""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from support.engine_lock import file_locked

from atoll.core.durable import atomic_write_json

RECORD = "record.json"
FINGERPRINT = "fingerprint.json"
FILES = "files"


class SharedBuildFailed(Exception):
    """The build failed in the worker that ran it; this worker did not run it again."""


@dataclass(frozen=True)
class Built:
    """A finished build: its record and the directory of its files (read them, never write)."""

    name: str
    record: dict[str, Any]
    files: Path

    def assert_unchanged(self) -> None:
        """Fail naming what changed, when a path under `files` differs from what the build left."""
        left = json.loads((self.files.parent / FINGERPRINT).read_text())
        now = fingerprint(self.files)
        added = sorted(now.keys() - left.keys())
        removed = sorted(left.keys() - now.keys())
        changed = sorted(p for p in now.keys() & left.keys() if now[p] != left[p])
        assert not (added or removed or changed), (
            f"a test wrote into the shared build {self.name!r} at {self.files} (copy it first): "
            f"added {added[:5]}, removed {removed[:5]}, changed {changed[:5]}"
        )


def copied(path: Path, into: Path) -> Path:
    """A copy of a shared file or directory in `into`, for a test that writes, even to read.

    SQLite writes beside a database it only reads (its WAL and shared-memory
    files come and go), so a ledger is opened from a copy.
    """
    copy = into / path.name
    if path.is_dir():
        shutil.copytree(path, copy, symlinks=True)
    else:
        shutil.copy2(path, copy)
    return copy


def run_root(factory: pytest.TempPathFactory) -> Path:
    """The temporary root every worker of this run shares (the basetemp itself without xdist)."""
    base = factory.getbasetemp()
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


def fingerprint(files: Path) -> dict[str, list[int]]:
    """Every path under `files` (itself included): mode, size and modification time."""
    found: dict[str, list[int]] = {}
    for top, dirs, names in os.walk(files):
        for name in [".", *dirs, *names]:
            path = Path(top, name)
            stat = path.lstat()
            found[str(path.relative_to(files))] = [stat.st_mode, stat.st_size, stat.st_mtime_ns]
    return found


def shared_build(root: Path, name: str, build: Callable[[Path], dict[str, Any]]) -> Built:
    """The build called `name` under `root`: built here by `build(files)` if no worker has yet.

    `build` fills the empty directory it is given and returns the record; the
    files stay where it wrote them, so paths the build recorded stay true.
    """
    place = root / f"shared-{name}"
    with file_locked(root / f"shared-{name}.lock", exclusive=True):
        if (place / RECORD).is_file():
            return _read(name, place)
        return _build(name, place, build)


def _who() -> str:
    worker = os.environ.get("PYTEST_XDIST_WORKER", "the main process")
    return f"{worker} (pid {os.getpid()})"


def _read(name: str, place: Path) -> Built:
    outcome = json.loads((place / RECORD).read_text())
    if "failed" in outcome:
        raise SharedBuildFailed(
            f"the shared build {name!r} failed in {outcome['by']}: {outcome['failed']}"
        )
    if "skipped" in outcome:
        pytest.skip(outcome["skipped"])
    return Built(name, outcome["built"], place / FILES)


def _build(name: str, place: Path, build: Callable[[Path], dict[str, Any]]) -> Built:
    files = place / FILES
    if place.exists():
        shutil.rmtree(place)  # an interrupted build: nothing in it is known to be whole
    files.mkdir(parents=True)
    try:
        record = build(files)
    except pytest.skip.Exception as exc:
        atomic_write_json(place / RECORD, {"skipped": exc.msg, "by": _who()})
        raise
    except (Exception, pytest.fail.Exception) as exc:
        message = f"{type(exc).__name__}: {exc}"
        atomic_write_json(place / RECORD, {"failed": message, "by": _who()})
        raise
    atomic_write_json(place / FINGERPRINT, fingerprint(files))
    atomic_write_json(place / RECORD, {"built": record, "by": _who()})
    return Built(name, record, files)

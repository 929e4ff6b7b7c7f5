"""Submissions and their results in SQLite, so that nothing finished is ever lost.

The authoritative server forgets a result once it has been read and loses
everything on a restart. Here a final result is committed (WAL, synchronous
FULL) before anyone can read it, stays readable any number of times, and
survives a SIGKILL. Submissions still queued or running when the judge died
are handed back by `unfinished()` to be judged again; one that has already
been started too many times is marked as an infrastructure error instead,
never given a score.
"""

from __future__ import annotations

import json
import sqlite3
import threading
import time
from dataclasses import dataclass
from enum import StrEnum
from pathlib import Path
from typing import Any

from atoll.core import run_lock

MAX_ATTEMPTS = 3
# Ids are SQLite rowids; a larger integer cannot even be bound as a parameter.
MAX_SID = 2**63 - 1

_SCHEMA = """
CREATE TABLE IF NOT EXISTS submissions (
    sid INTEGER PRIMARY KEY AUTOINCREMENT,
    pid TEXT NOT NULL,
    lang TEXT NOT NULL,
    source BLOB NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    result TEXT,
    created REAL NOT NULL,
    finished REAL
);
CREATE INDEX IF NOT EXISTS submissions_state ON submissions(state);
"""


class State(StrEnum):
    QUEUED = "queued"
    RUNNING = "running"
    FINAL = "final"  # a result in the authority's shape: done, or error (compile)
    INFRASTRUCTURE_ERROR = "infrastructure_error"


@dataclass(frozen=True)
class Submission:
    sid: int
    pid: str
    lang: str
    source: bytes
    state: State
    attempts: int
    result: dict[str, Any] | None


class StoreBusy(Exception):
    """Another judge process serves from the same database."""


class Store:
    """One SQLite file; every method is a short transaction, safe from any thread.

    One judge process owns a database at a time (`atoll.core.run_lock` on
    `<database>.lock`, released even by SIGKILL): a second one would take the
    first one's running work for work left behind by a crash and judge it
    again, so it is refused with one line naming the judge that has it.
    """

    def __init__(self, path: Path) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.path = path
        try:
            self._owner = run_lock.acquire(
                path.with_name(path.name + ".lock"),
                what=str(path),
                advice="stop it or give this one another --state-dir",
            )
        except run_lock.RunDirInUse as exc:
            raise StoreBusy(str(exc)) from None
        self._db = sqlite3.connect(path, check_same_thread=False, isolation_level=None)
        self._lock = threading.Lock()
        with self._lock:
            self._db.execute("PRAGMA journal_mode=WAL")
            self._db.execute("PRAGMA synchronous=FULL")
            self._db.executescript(_SCHEMA)

    def close(self) -> None:
        with self._lock:
            self._db.close()
        self._owner.release()

    def add(self, pid: str, lang: str, source: bytes) -> int:
        with self._lock:
            cursor = self._db.execute(
                "INSERT INTO submissions (pid, lang, source, state, created) VALUES (?, ?, ?, ?, ?)",
                (pid, lang, source, State.QUEUED.value, time.time()),
            )
            return int(cursor.lastrowid or 0)

    def start(self, sid: int) -> int:
        """Mark `sid` running and return how many times it has now been started."""
        with self._lock:
            self._db.execute(
                "UPDATE submissions SET state = ?, attempts = attempts + 1 WHERE sid = ?",
                (State.RUNNING.value, sid),
            )
            row = self._db.execute("SELECT attempts FROM submissions WHERE sid = ?", (sid,))
            return int(row.fetchone()[0])

    def put_back(self, sid: int) -> None:
        """`sid` was left by a judge that stopped in order: queued again, its attempt uncounted.

        Attempts count the starts a crash interrupted; an orderly stop is none.
        """
        with self._lock:
            self._db.execute(
                "UPDATE submissions SET state = ?, attempts = MAX(attempts - 1, 0) "
                "WHERE sid = ? AND state = ?",
                (State.QUEUED.value, sid, State.RUNNING.value),
            )

    def finish(self, sid: int, result: dict[str, Any]) -> None:
        self._end(sid, State.FINAL, result)

    def fail(self, sid: int, message: str) -> None:
        self._end(
            sid, State.INFRASTRUCTURE_ERROR, {"status": "infrastructure_error", "error": message}
        )

    def _end(self, sid: int, state: State, result: dict[str, Any]) -> None:
        text = json.dumps(result, separators=(",", ":"))
        with self._lock:
            self._db.execute(
                "UPDATE submissions SET state = ?, result = ?, finished = ? WHERE sid = ?",
                (state.value, text, time.time(), sid),
            )

    def get(self, sid: int) -> Submission | None:
        if not 0 < sid <= MAX_SID:
            return None
        with self._lock:
            row = self._db.execute(
                "SELECT sid, pid, lang, source, state, attempts, result FROM submissions "
                "WHERE sid = ?",
                (sid,),
            ).fetchone()
        return _row(row) if row else None

    def pending_count(self) -> int:
        with self._lock:
            row = self._db.execute(
                "SELECT COUNT(*) FROM submissions WHERE state IN (?, ?)",
                (State.QUEUED.value, State.RUNNING.value),
            ).fetchone()
        return int(row[0])

    def unfinished(self) -> list[Submission]:
        """Submissions accepted but not finished (a previous run died), oldest first."""
        with self._lock:
            rows = self._db.execute(
                "SELECT sid, pid, lang, source, state, attempts, result FROM submissions "
                "WHERE state IN (?, ?) ORDER BY sid",
                (State.QUEUED.value, State.RUNNING.value),
            ).fetchall()
        return [_row(row) for row in rows]


def _row(row: tuple[Any, ...]) -> Submission:
    sid, pid, lang, source, state, attempts, result = row
    return Submission(
        sid=int(sid),
        pid=str(pid),
        lang=str(lang),
        source=bytes(source),
        state=State(state),
        attempts=int(attempts),
        result=json.loads(result) if result else None,
    )

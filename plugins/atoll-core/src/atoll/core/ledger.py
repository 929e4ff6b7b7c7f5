"""The budget ledger: money for paid requests, reserved before dispatch and settled after.

A run that pays a provider per request must never spend more than its
limit, must never pay twice for the same answer, and must be able to say
afterwards exactly what it paid for. The ledger keeps all three promises
in one SQLite file, in integer micro-dollars (no float rounding):

- a paid request first *reserves* its worst-case cost; the reservation
  fails, and nothing is sent, when it does not fit under the limit;
- just before the request leaves it is marked *dispatched*; its answer
  *settles* it at the exact cost the provider's usage implies, and the
  receipt keeps the exact request and the whole answer for replay;
- a transport failure after dispatch leaves the reservation standing and
  marks the receipt *uncertain*: the provider may have charged for it, so
  it is never re-sent blindly; a person *reconciles* it (at the worst case,
  or at the cost the provider's dashboard shows) before its request may go
  out again. A process that dies mid-request leaves a *dispatched* receipt,
  which `recover()` turns into an uncertain one;
- requests a provider refused outright settle at zero (*rejected*), and
  reservations that never left (*released*) cost nothing;
- an answer that settles above its reservation (the worst case reserved
  was not the worst case) is flagged: `over_reservation()` lists such
  receipts and `totals()` counts them and by how much they went over.

A new ledger needs an explicit limit. The limit is never changed by opening
the ledger with another number: `raise_limit` is the one explicit way, and
it is recorded with a reason.

Work that costs time rather than money (a Harbor trial, a sandboxed run)
gets a *worker receipt* in the same file, so that one place says what a
run used and what it left behind.

This module is the store; the records it keeps and the money units are in
`atoll.core.ledger_receipts`, and exported from here too.
"""

from __future__ import annotations

import json
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from atoll.core.durable import canonical_json, fsync_dir
from atoll.core.ledger_receipts import (
    MICRO,
    OPEN_STATES,
    BudgetExhausted,
    LedgerError,
    Receipt,
    State,
    Totals,
    WorkerReceipt,
    format_usd,
    request_key,
    usd_to_micro,
)

__all__ = [
    "MICRO",
    "OPEN_STATES",
    "SCHEMA_VERSION",
    "BudgetExhausted",
    "Ledger",
    "LedgerError",
    "Receipt",
    "State",
    "Totals",
    "WorkerReceipt",
    "format_usd",
    "request_key",
    "usd_to_micro",
]

SCHEMA_VERSION = 1


_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS limits (
    id INTEGER PRIMARY KEY,
    limit_micro INTEGER NOT NULL CHECK (limit_micro > 0),
    set_at REAL NOT NULL,
    reason TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS receipts (
    id INTEGER PRIMARY KEY,
    key TEXT NOT NULL,
    label TEXT NOT NULL,
    model TEXT NOT NULL,
    state TEXT NOT NULL,
    reserved_micro INTEGER NOT NULL CHECK (reserved_micro >= 0),
    cost_micro INTEGER CHECK (cost_micro IS NULL OR cost_micro >= 0),
    request TEXT NOT NULL,
    response TEXT,
    usage TEXT,
    http_status INTEGER,
    error TEXT,
    verdict TEXT,
    created_at REAL NOT NULL,
    dispatched_at REAL,
    settled_at REAL,
    latency_s REAL
);
CREATE INDEX IF NOT EXISTS receipts_by_key ON receipts (key);
CREATE TABLE IF NOT EXISTS workers (
    id INTEGER PRIMARY KEY,
    label TEXT NOT NULL,
    environment TEXT NOT NULL,
    name TEXT NOT NULL,
    state TEXT NOT NULL,
    started_at REAL NOT NULL,
    ended_at REAL,
    seconds REAL,
    detail TEXT NOT NULL
);
"""

_COLUMNS = (
    "id, key, label, model, state, reserved_micro, cost_micro, request, response, usage, "
    "http_status, error, verdict, created_at, settled_at, latency_s"
)


class Ledger:
    """One run's ledger file. Thread-safe; one process at a time (the caller holds a run lock)."""

    def __init__(self, path: Path, connection: sqlite3.Connection) -> None:
        self.path = path
        self._db = connection
        self._lock = threading.RLock()

    # -- opening ---------------------------------------------------------------------------

    @classmethod
    def create(cls, path: Path, limit_micro: int, *, reason: str = "initial limit") -> Ledger:
        """A new ledger with an explicit limit; refuses to touch an existing file."""
        if limit_micro <= 0:
            raise LedgerError("a new ledger needs a limit above zero")
        if path.exists():
            raise LedgerError(f"a ledger already exists at {path}; open it instead")
        path.parent.mkdir(parents=True, exist_ok=True)
        # Built beside the target and renamed into place: a ledger file is whole or absent.
        building = path.with_name(f".{path.name}.{os.getpid()}.building")
        building.unlink(missing_ok=True)
        ledger = cls(building, _connect(building))
        try:
            ledger._db.executescript(_SCHEMA)  # executescript commits by itself
            with ledger._transaction() as db:
                db.execute("INSERT INTO meta VALUES ('schema_version', ?)", (str(SCHEMA_VERSION),))
                db.execute("INSERT INTO meta VALUES ('created_at', ?)", (repr(time.time()),))
                db.execute(
                    "INSERT INTO limits (limit_micro, set_at, reason) VALUES (?, ?, ?)",
                    (limit_micro, time.time(), reason),
                )
            ledger._db.execute("PRAGMA journal_mode = DELETE")  # fold the WAL in before the rename
        finally:
            ledger.close()
        try:
            os.link(building, path)  # fails if another process created the ledger meanwhile
        except FileExistsError:
            raise LedgerError(f"a ledger already exists at {path}; open it instead") from None
        finally:
            building.unlink(missing_ok=True)
        fsync_dir(path.parent)
        ledger = cls.open(path)
        return ledger

    @classmethod
    def open(cls, path: Path, *, expect_limit_micro: int | None = None) -> Ledger:
        """An existing ledger; with `expect_limit_micro`, refuse one whose limit differs."""
        if not path.is_file():
            raise LedgerError(f"no ledger at {path}")
        ledger = cls(path, _connect(path))
        version = ledger._meta("schema_version")
        if version != str(SCHEMA_VERSION):
            ledger.close()
            raise LedgerError(
                f"{path} is ledger schema {version}, this code reads {SCHEMA_VERSION}"
            )
        if expect_limit_micro is not None and expect_limit_micro != ledger.limit_micro:
            limit = ledger.limit_micro
            ledger.close()
            raise LedgerError(
                f"the ledger's limit is {format_usd(limit)}, not {format_usd(expect_limit_micro)}; "
                "a limit is changed only explicitly"
            )
        return ledger

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the limit -------------------------------------------------------------------------

    @property
    def limit_micro(self) -> int:
        with self._lock:
            row = self._db.execute("SELECT limit_micro FROM limits ORDER BY id DESC LIMIT 1")
            return int(row.fetchone()[0])

    def raise_limit(self, limit_micro: int, reason: str) -> None:
        """Raise the limit, on the record; lowering it below what is committed is refused."""
        if not reason.strip():
            raise LedgerError("a limit change needs a reason")
        with self._transaction() as db:
            committed = _committed(db)
            if limit_micro < committed:
                raise LedgerError(
                    f"the new limit {format_usd(limit_micro)} is below the "
                    f"{format_usd(committed)} already committed"
                )
            db.execute(
                "INSERT INTO limits (limit_micro, set_at, reason) VALUES (?, ?, ?)",
                (limit_micro, time.time(), reason),
            )

    def totals(self) -> Totals:
        with self._lock:
            rows = self._db.execute(
                "SELECT state, COALESCE(SUM(reserved_micro), 0), COALESCE(SUM(cost_micro), 0), "
                "COUNT(*) FROM receipts GROUP BY state"
            ).fetchall()
            over = self._db.execute(
                "SELECT COUNT(*), COALESCE(SUM(cost_micro - reserved_micro), 0) FROM receipts "
                "WHERE cost_micro IS NOT NULL AND cost_micro > reserved_micro"
            ).fetchone()
        spent = open_ = uncertain = 0
        for state, reserved, cost, count in rows:
            if state in OPEN_STATES:
                open_ += int(reserved)
            else:
                spent += int(cost)
            if state == State.UNCERTAIN:
                uncertain = int(count)
        return Totals(self.limit_micro, spent, open_, uncertain, int(over[0]), int(over[1]))

    # -- paid requests ---------------------------------------------------------------------

    def reserve(
        self, key: str, label: str, model: str, request: Mapping[str, Any], amount_micro: int
    ) -> int:
        """Reserve `amount_micro` for a request; its receipt id, or BudgetExhausted (nothing sent)."""
        if amount_micro < 0:
            raise LedgerError("a reservation cannot be negative")
        body = canonical_json(dict(request)).decode()
        with self._transaction() as db:
            limit = int(
                db.execute("SELECT limit_micro FROM limits ORDER BY id DESC LIMIT 1").fetchone()[0]
            )
            available = limit - _committed(db)
            if amount_micro > available:
                raise BudgetExhausted(amount_micro, available, limit)
            cursor = db.execute(
                "INSERT INTO receipts (key, label, model, state, reserved_micro, request, created_at)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (key, label, model, State.RESERVED, amount_micro, body, time.time()),
            )
            return int(cursor.lastrowid or 0)

    def dispatch(self, receipt_id: int) -> None:
        """The request is about to leave: from here on, losing its answer makes it uncertain."""
        self._move(receipt_id, (State.RESERVED,), State.DISPATCHED, dispatched_at=time.time())

    def settle(
        self,
        receipt_id: int,
        cost_micro: int,
        *,
        response: Mapping[str, Any],
        usage: Mapping[str, Any] | None,
        http_status: int = 200,
        latency_s: float | None = None,
    ) -> None:
        """The answer arrived: settle at its exact cost and keep it for replay."""
        self._move(
            receipt_id,
            (State.DISPATCHED,),
            State.ANSWERED,
            cost_micro=cost_micro,
            response=canonical_json(dict(response)).decode(),
            usage=None if usage is None else canonical_json(dict(usage)).decode(),
            http_status=http_status,
            latency_s=latency_s,
            settled_at=time.time(),
        )

    def over_reservation(self) -> list[Receipt]:
        """Settled receipts whose cost went above their reservation: the worst case reserved
        was not the worst case (a provider that ignored the output bound, or a price that
        changed), so the limit may have been passed by that much."""
        with self._lock:
            rows = self._db.execute(
                f"SELECT {_COLUMNS} FROM receipts WHERE cost_micro IS NOT NULL "
                "AND cost_micro > reserved_micro ORDER BY id"
            ).fetchall()
        return [_receipt(row) for row in rows]

    def reject(self, receipt_id: int, http_status: int, error: str) -> None:
        """The provider refused the request outright (400/401/403/404/422...): zero cost."""
        self._move(
            receipt_id,
            (State.DISPATCHED,),
            State.REJECTED,
            cost_micro=0,
            http_status=http_status,
            error=error,
            settled_at=time.time(),
        )

    def release(self, receipt_id: int, error: str) -> None:
        """The request never left this machine (no connection was made): zero cost."""
        self._move(
            receipt_id,
            (State.RESERVED, State.DISPATCHED),
            State.RELEASED,
            cost_micro=0,
            error=error,
            settled_at=time.time(),
        )

    def mark_uncertain(self, receipt_id: int, error: str, http_status: int | None = None) -> None:
        """The answer was lost after dispatch: keep the reservation, block re-sending."""
        self._move(
            receipt_id,
            (State.DISPATCHED,),
            State.UNCERTAIN,
            error=error,
            http_status=http_status,
        )

    def judge(self, receipt_id: int, verdict: str) -> None:
        """Record what the caller made of an answer (`valid`, or why it was invalid)."""
        with self._transaction() as db:
            db.execute("UPDATE receipts SET verdict = ? WHERE id = ?", (verdict, receipt_id))

    def reconcile(self, receipt_id: int, cost_micro: int | None = None, note: str = "") -> Receipt:
        """Settle an uncertain receipt at `cost_micro` (default: its whole reservation)."""
        current = self.receipt(receipt_id)
        if current.state != State.UNCERTAIN:
            raise LedgerError(f"receipt {receipt_id} is {current.state}, not uncertain")
        cost = current.reserved_micro if cost_micro is None else cost_micro
        if cost < 0:
            raise LedgerError("a reconciled cost cannot be negative")
        self._move(
            receipt_id,
            (State.UNCERTAIN,),
            State.RECONCILED,
            cost_micro=cost,
            settled_at=time.time(),
            error=f"{current.error or ''} | reconciled at {format_usd(cost)}"
            + (f": {note}" if note else ""),
        )
        return self.receipt(receipt_id)

    def recover(self) -> list[Receipt]:
        """After a crash: release what never left, make what was in flight uncertain.

        Call only while holding the run's lock (no live process owns these
        receipts). Returns every uncertain receipt.
        """
        with self._transaction() as db:
            now = time.time()
            db.execute(
                "UPDATE receipts SET state = ?, cost_micro = 0, settled_at = ?, "
                "error = 'released: the process stopped before sending it' WHERE state = ?",
                (State.RELEASED, now, State.RESERVED),
            )
            db.execute(
                "UPDATE receipts SET state = ?, error = 'the process stopped while the request "
                "was in flight: the provider may have charged for it' WHERE state = ?",
                (State.UNCERTAIN, State.DISPATCHED),
            )
        return self.uncertain()

    # -- reading ---------------------------------------------------------------------------

    def receipt(self, receipt_id: int) -> Receipt:
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM receipts WHERE id = ?", (receipt_id,)
            ).fetchone()
        if row is None:
            raise LedgerError(f"no receipt {receipt_id}")
        return _receipt(row)

    def answered(self, key: str) -> Receipt | None:
        """The first answered receipt for a request identity, for replay."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM receipts WHERE key = ? AND state = ? ORDER BY id LIMIT 1",
                (key, State.ANSWERED),
            ).fetchone()
        return None if row is None else _receipt(row)

    def blocking(self, key: str) -> Receipt | None:
        """An unreconciled uncertain receipt for this identity: its request must not go out."""
        with self._lock:
            row = self._db.execute(
                f"SELECT {_COLUMNS} FROM receipts WHERE key = ? AND state = ? ORDER BY id LIMIT 1",
                (key, State.UNCERTAIN),
            ).fetchone()
        return None if row is None else _receipt(row)

    def uncertain(self) -> list[Receipt]:
        return self.receipts(states=(State.UNCERTAIN,))

    def receipts(self, *, states: tuple[State, ...] | None = None) -> list[Receipt]:
        query = f"SELECT {_COLUMNS} FROM receipts"
        params: tuple[Any, ...] = ()
        if states:
            query += f" WHERE state IN ({', '.join('?' for _ in states)})"
            params = tuple(str(s) for s in states)
        with self._lock:
            rows = self._db.execute(query + " ORDER BY id", params).fetchall()
        return [_receipt(row) for row in rows]

    # -- worker receipts -------------------------------------------------------------------

    def start_work(self, label: str, environment: str, name: str, detail: Mapping[str, Any]) -> int:
        """Record, before it starts, a piece of work that may leave something behind."""
        with self._transaction() as db:
            cursor = db.execute(
                "INSERT INTO workers (label, environment, name, state, started_at, detail) "
                "VALUES (?, ?, ?, 'running', ?, ?)",
                (label, environment, name, time.time(), canonical_json(dict(detail)).decode()),
            )
            return int(cursor.lastrowid or 0)

    def end_work(self, work_id: int, state: str, detail: Mapping[str, Any] | None = None) -> None:
        now = time.time()
        with self._transaction() as db:
            row = db.execute(
                "SELECT started_at, detail FROM workers WHERE id = ?", (work_id,)
            ).fetchone()
            if row is None:
                raise LedgerError(f"no worker receipt {work_id}")
            merged = {**json.loads(row[1]), **dict(detail or {})}
            db.execute(
                "UPDATE workers SET state = ?, ended_at = ?, seconds = ?, detail = ? WHERE id = ?",
                (state, now, now - float(row[0]), canonical_json(merged).decode(), work_id),
            )

    def work(self, *, states: tuple[str, ...] | None = None) -> list[WorkerReceipt]:
        query = (
            "SELECT id, label, environment, name, state, started_at, ended_at, seconds, detail "
            "FROM workers"
        )
        params: tuple[Any, ...] = ()
        if states:
            query += f" WHERE state IN ({', '.join('?' for _ in states)})"
            params = states
        with self._lock:
            rows = self._db.execute(query + " ORDER BY id", params).fetchall()
        return [
            WorkerReceipt(
                id=int(r[0]),
                label=r[1],
                environment=r[2],
                name=r[3],
                state=r[4],
                started_at=float(r[5]),
                ended_at=None if r[6] is None else float(r[6]),
                seconds=None if r[7] is None else float(r[7]),
                detail=json.loads(r[8]),
            )
            for r in rows
        ]

    # -- internals -------------------------------------------------------------------------

    def _meta(self, key: str) -> str | None:
        with self._lock:
            try:
                row = self._db.execute("SELECT value FROM meta WHERE key = ?", (key,)).fetchone()
            except sqlite3.DatabaseError as exc:
                raise LedgerError(f"{self.path} is not a ledger: {exc}") from None
        return None if row is None else str(row[0])

    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def _move(self, receipt_id: int, allowed: tuple[State, ...], to: State, **columns: Any) -> None:
        with self._transaction() as db:
            row = db.execute("SELECT state FROM receipts WHERE id = ?", (receipt_id,)).fetchone()
            if row is None:
                raise LedgerError(f"no receipt {receipt_id}")
            if row[0] not in allowed:
                raise LedgerError(f"receipt {receipt_id} is {row[0]}; cannot make it {to}")
            assignments = ", ".join(f"{name} = ?" for name in ("state", *columns))
            db.execute(
                f"UPDATE receipts SET {assignments} WHERE id = ?",
                (str(to), *columns.values(), receipt_id),
            )


def _connect(path: Path) -> sqlite3.Connection:
    # isolation_level=None: transactions are explicit (BEGIN IMMEDIATE), so a
    # reservation's check and insert are one atomic step even across processes.
    db = sqlite3.connect(path, isolation_level=None, check_same_thread=False, timeout=30)
    db.execute("PRAGMA journal_mode = WAL")
    db.execute("PRAGMA synchronous = FULL")
    return db


def _committed(db: sqlite3.Connection) -> int:
    open_states = ", ".join(f"'{s}'" for s in OPEN_STATES)
    row = db.execute(
        "SELECT COALESCE(SUM(CASE WHEN state IN ("
        + open_states
        + ") THEN reserved_micro ELSE COALESCE(cost_micro, 0) END), 0) FROM receipts"
    ).fetchone()
    return int(row[0])


def _receipt(row: tuple[Any, ...]) -> Receipt:
    return Receipt(
        id=int(row[0]),
        key=row[1],
        label=row[2],
        model=row[3],
        state=State(row[4]),
        reserved_micro=int(row[5]),
        cost_micro=None if row[6] is None else int(row[6]),
        request=json.loads(row[7]),
        response=None if row[8] is None else json.loads(row[8]),
        usage=None if row[9] is None else json.loads(row[9]),
        http_status=row[10],
        error=row[11],
        verdict=row[12],
        created_at=float(row[13]),
        settled_at=None if row[14] is None else float(row[14]),
        latency_s=None if row[15] is None else float(row[15]),
    )

"""What a budget ledger holds: receipts and their states, totals, and money as micro-dollars.

The records and units the ledger's SQLite store (`atoll.core.ledger`) reads and
writes, apart from the store itself: a report, a meter or a receipt's reader
needs these and no database. `atoll.core.ledger` exports every name here.
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping
from dataclasses import dataclass
from decimal import ROUND_CEILING, Decimal, InvalidOperation
from enum import StrEnum
from typing import Any

from atoll.core.durable import canonical_json

MICRO = 1_000_000


class LedgerError(Exception):
    """The ledger cannot do what was asked (missing, already there, wrong limit...)."""


class BudgetExhausted(LedgerError):
    """A reservation does not fit under the limit: nothing was sent."""

    def __init__(self, needed_micro: int, available_micro: int, limit_micro: int) -> None:
        self.needed_micro = needed_micro
        self.available_micro = available_micro
        self.limit_micro = limit_micro
        super().__init__(
            f"budget exhausted: a request needs up to {format_usd(needed_micro)} but only "
            f"{format_usd(available_micro)} of {format_usd(limit_micro)} is left"
        )


class State(StrEnum):
    RESERVED = "reserved"  # counted, not yet sent
    DISPATCHED = "dispatched"  # sent (or about to be): its fate is in the provider's hands
    ANSWERED = "answered"  # settled at the exact cost of an answer
    REJECTED = "rejected"  # the provider refused it outright: settled at zero
    RELEASED = "released"  # never left this machine: costs nothing
    UNCERTAIN = "uncertain"  # lost after dispatch: the reservation stands until reconciled
    RECONCILED = "reconciled"  # an uncertain receipt a person settled


# States whose money is the reservation rather than a settled cost.
OPEN_STATES = (State.RESERVED, State.DISPATCHED, State.UNCERTAIN)


@dataclass(frozen=True)
class Receipt:
    """One paid request as the ledger knows it."""

    id: int
    key: str
    label: str
    model: str
    state: State
    reserved_micro: int
    cost_micro: int | None
    request: dict[str, Any]
    response: dict[str, Any] | None
    usage: dict[str, Any] | None
    http_status: int | None
    error: str | None
    verdict: str | None
    created_at: float
    settled_at: float | None
    latency_s: float | None

    @property
    def committed_micro(self) -> int:
        """What this receipt counts against the limit now."""
        if self.state in OPEN_STATES:
            return self.reserved_micro
        return self.cost_micro or 0

    @property
    def over_reservation_micro(self) -> int:
        """How far its settled cost went above what was reserved for it (0: within it)."""
        if self.state in OPEN_STATES or self.cost_micro is None:
            return 0
        return max(0, self.cost_micro - self.reserved_micro)


@dataclass(frozen=True)
class WorkerReceipt:
    """One piece of remote or sandboxed work: where it ran, how long, and how to clean it up."""

    id: int
    label: str
    environment: str
    name: str
    state: str
    started_at: float
    ended_at: float | None
    seconds: float | None
    detail: dict[str, Any]


@dataclass(frozen=True)
class Totals:
    limit_micro: int
    spent_micro: int  # settled costs
    open_micro: int  # standing reservations (reserved, dispatched, uncertain)
    uncertain: int  # receipts waiting for reconciliation
    # settled above their reservation: the provider charged more than the worst case reserved
    over_reservation: int = 0
    over_reservation_micro: int = 0  # by how much, in all

    @property
    def available_micro(self) -> int:
        return self.limit_micro - self.spent_micro - self.open_micro


def usd_to_micro(value: str | float | Decimal) -> int:
    """Dollars as integer micro-dollars, rounded up (a budget or a price is never undercounted)."""
    try:
        amount = Decimal(str(value))
    except InvalidOperation:
        raise LedgerError(f"{value!r} is not an amount of dollars") from None
    if not amount.is_finite() or amount < 0:
        raise LedgerError(f"{value!r} is not a non-negative amount of dollars")
    return int((amount * MICRO).to_integral_value(rounding=ROUND_CEILING))


def format_usd(micro: int) -> str:
    """Micro-dollars for people: `$0.012345`."""
    sign = "-" if micro < 0 else ""
    whole, frac = divmod(abs(micro), MICRO)
    return f"{sign}${whole}.{frac:06d}"


def request_key(request: Mapping[str, Any]) -> str:
    """A request's identity: the sha256 of its canonical JSON (schema included)."""
    return hashlib.sha256(canonical_json(dict(request))).hexdigest()

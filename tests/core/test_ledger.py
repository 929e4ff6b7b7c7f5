"""The budget ledger: reservations, settlement, uncertainty and the limit, on a real SQLite file."""

from __future__ import annotations

import multiprocessing
import sqlite3
from pathlib import Path

import pytest

from atoll.core.ledger import (
    BudgetExhausted,
    Ledger,
    LedgerError,
    State,
    format_usd,
    request_key,
    usd_to_micro,
)

BODY = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}


def _ledger(tmp_path: Path, limit: int = 1_000) -> Ledger:
    return Ledger.create(tmp_path / "ledger.sqlite", limit)


def test_amounts_are_integer_micro_dollars_rounded_up() -> None:
    assert usd_to_micro("2.5") == 2_500_000
    assert usd_to_micro("0.0000001") == 1
    assert format_usd(1_234_567) == "$1.234567"
    with pytest.raises(LedgerError):
        usd_to_micro("-1")
    with pytest.raises(LedgerError):
        usd_to_micro("nan")


def test_a_new_ledger_needs_an_explicit_limit(tmp_path: Path) -> None:
    with pytest.raises(LedgerError, match="above zero"):
        Ledger.create(tmp_path / "l.sqlite", 0)
    Ledger.create(tmp_path / "l.sqlite", 5).close()
    with pytest.raises(LedgerError, match="already exists"):
        Ledger.create(tmp_path / "l.sqlite", 5)


def test_opening_with_another_limit_is_refused_and_changes_nothing(tmp_path: Path) -> None:
    _ledger(tmp_path, 100).close()
    with pytest.raises(LedgerError, match=r"limit is \$0.000100"):
        Ledger.open(tmp_path / "ledger.sqlite", expect_limit_micro=500)
    with Ledger.open(tmp_path / "ledger.sqlite") as ledger:
        assert ledger.limit_micro == 100
        ledger.raise_limit(300, "more seeds")
        assert ledger.limit_micro == 300
        with pytest.raises(LedgerError, match="reason"):
            ledger.raise_limit(400, " ")


def test_reservation_beyond_the_limit_sends_nothing(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 1_000)
    first = ledger.reserve(request_key(BODY), "mutate", "m", BODY, 700)
    with pytest.raises(BudgetExhausted) as caught:
        ledger.reserve("other", "mutate", "m", BODY, 400)
    assert caught.value.available_micro == 300
    ledger.dispatch(first)
    ledger.settle(first, 120, response={"ok": 1}, usage={"prompt_tokens": 1})
    # the settled cost, not the reservation, now counts
    assert ledger.totals().spent_micro == 120 and ledger.totals().open_micro == 0
    ledger.reserve("other", "mutate", "m", BODY, 880)
    assert ledger.totals().available_micro == 0


def test_uncertain_keeps_its_reservation_until_reconciled(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 1_000)
    key = request_key(BODY)
    rid = ledger.reserve(key, "solve", "m", BODY, 600)
    ledger.dispatch(rid)
    ledger.mark_uncertain(rid, "ReadTimeout")
    assert ledger.blocking(key) is not None
    assert ledger.totals().open_micro == 600 and ledger.totals().uncertain == 1
    reconciled = ledger.reconcile(rid, 250, note="dashboard")
    assert reconciled.state is State.RECONCILED and reconciled.cost_micro == 250
    assert ledger.blocking(key) is None
    assert ledger.totals().spent_micro == 250 and ledger.totals().uncertain == 0
    with pytest.raises(LedgerError, match="not uncertain"):
        ledger.reconcile(rid)


def test_rejected_and_released_cost_nothing(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 1_000)
    a = ledger.reserve("a", "x", "m", BODY, 500)
    ledger.dispatch(a)
    ledger.reject(a, 422, "bad schema")
    b = ledger.reserve("b", "x", "m", BODY, 500)
    ledger.release(b, "connect refused")
    assert ledger.totals().spent_micro == 0 and ledger.totals().available_micro == 1_000
    assert [r.state for r in ledger.receipts()] == [State.REJECTED, State.RELEASED]


def test_recover_after_a_crash(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 1_000)
    never_sent = ledger.reserve("a", "x", "m", BODY, 100)
    in_flight = ledger.reserve("b", "x", "m", BODY, 200)
    ledger.dispatch(in_flight)
    ledger.close()
    reopened = Ledger.open(tmp_path / "ledger.sqlite")
    (uncertain,) = reopened.recover()
    assert uncertain.id == in_flight
    assert reopened.receipt(never_sent).state is State.RELEASED
    assert reopened.totals().open_micro == 200


def test_a_settled_receipt_keeps_the_exact_request_and_answer(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    key = request_key(BODY)
    rid = ledger.reserve(key, "x", "m", BODY, 10)
    ledger.dispatch(rid)
    ledger.settle(rid, 3, response={"choices": []}, usage={"completion_tokens": 2}, latency_s=0.5)
    receipt = ledger.answered(key)
    assert receipt is not None
    assert receipt.request == BODY and receipt.response == {"choices": []}
    assert receipt.usage == {"completion_tokens": 2} and receipt.latency_s == 0.5
    with pytest.raises(LedgerError, match="cannot make it"):
        ledger.settle(rid, 3, response={}, usage=None)


def test_a_cost_settled_above_its_reservation_is_flagged(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path, 1_000)
    within = ledger.reserve("a", "x", "m", BODY, 100)
    ledger.dispatch(within)
    ledger.settle(within, 100, response={}, usage=None)  # exactly the reservation: fine
    over = ledger.reserve("b", "x", "m", BODY, 100)
    ledger.dispatch(over)
    ledger.settle(over, 160, response={}, usage=None)  # the provider charged more
    totals = ledger.totals()
    assert (totals.over_reservation, totals.over_reservation_micro) == (1, 60)
    assert [r.id for r in ledger.over_reservation()] == [over]
    assert ledger.receipt(over).over_reservation_micro == 60
    assert ledger.receipt(within).over_reservation_micro == 0
    ledger.close()
    assert Ledger.open(tmp_path / "ledger.sqlite").totals().over_reservation == 1  # on record


def test_worker_receipts(tmp_path: Path) -> None:
    ledger = _ledger(tmp_path)
    wid = ledger.start_work("trial", "atoll-local", "task__abc", {"dir": "x"})
    assert [w.state for w in ledger.work(states=("running",))] == ["running"]
    ledger.end_work(wid, "done", {"reward": 0.5})
    (work,) = ledger.work()
    assert work.detail == {"dir": "x", "reward": 0.5} and work.seconds is not None


def _reserve_many(path: str, count: int) -> int:
    ledger = Ledger.open(Path(path))
    won = 0
    for i in range(count):
        try:
            ledger.reserve(f"{path}{i}", "x", "m", BODY, 7)
            won += 1
        except BudgetExhausted:
            pass
    ledger.close()
    return won


@pytest.mark.slow
def test_concurrent_processes_never_overspend(tmp_path: Path) -> None:
    _ledger(tmp_path, 700).close()
    path = str(tmp_path / "ledger.sqlite")
    with multiprocessing.get_context("spawn").Pool(3) as pool:
        won = sum(pool.starmap(_reserve_many, [(path, 60)] * 3))
    assert won == 100
    with Ledger.open(Path(path)) as ledger:
        assert ledger.totals().open_micro == 700


def test_a_file_that_is_not_a_ledger(tmp_path: Path) -> None:
    path = tmp_path / "x.sqlite"
    sqlite3.connect(path).execute("CREATE TABLE t (a)").connection.commit()
    with pytest.raises(LedgerError, match="not a ledger"):
        Ledger.open(path)

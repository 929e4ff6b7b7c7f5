"""The judge's worker budget: a dialogue holds two units, and waiters are served in order.

Each step waits for the state it needs (a thread holding its units, a thread
queued) instead of sleeping, so the order asserted is the budget's and not the
scheduler's on a busy machine.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable

import pytest

from atoll.judge.worker_budget import WorkerBudget


def _hold(
    budget: WorkerBudget, units: int, log: list[str], name: str, release: threading.Event
) -> threading.Thread:
    def run() -> None:
        with budget.held(units):
            log.append(name)
            release.wait(30)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _until(condition: Callable[[], bool], what: str) -> None:
    deadline = time.monotonic() + 30
    while not condition():
        assert time.monotonic() < deadline, f"timed out waiting until {what}"
        time.sleep(0.005)


def test_units_are_shared_up_to_the_budget() -> None:
    budget = WorkerBudget(4)
    log: list[str] = []
    release = threading.Event()
    threads = [_hold(budget, 1, log, f"checked-{i}", release) for i in range(4)]
    _until(lambda: len(log) == 4, "four one-unit cases hold their units at once")
    assert budget.waiting == 0
    release.set()
    for thread in threads:
        thread.join(5)


def test_two_dialogues_fill_four_units_and_a_third_waits() -> None:
    budget = WorkerBudget(4)
    log: list[str] = []
    first, later = threading.Event(), threading.Event()
    held = [_hold(budget, 2, log, name, first) for name in ("a", "b")]
    _until(lambda: len(log) == 2, "both dialogues hold two units each")
    waiting = _hold(budget, 2, log, "c", later)
    _until(lambda: budget.waiting == 1, "the third dialogue is queued")
    assert sorted(log) == ["a", "b"]
    first.set()
    for thread in held:
        thread.join(5)
    _until(lambda: len(log) == 3, "the third dialogue runs once two units are free")
    assert log[2] == "c"
    later.set()
    waiting.join(5)


def test_a_waiting_dialogue_is_not_overtaken_by_later_single_units() -> None:
    budget = WorkerBudget(2)
    log: list[str] = []
    first, rest = threading.Event(), threading.Event()
    holder = _hold(budget, 1, log, "checked", first)
    _until(lambda: log == ["checked"], "a checked case holds one unit")
    dialogue = _hold(budget, 2, log, "dialogue", rest)
    _until(lambda: budget.waiting == 1, "the dialogue is queued for two units")
    # One unit is free, but the dialogue asked first.
    latecomer = _hold(budget, 1, log, "late", rest)
    _until(lambda: budget.waiting == 2, "the latecomer is queued behind the dialogue")
    assert log == ["checked"]
    first.set()
    holder.join(5)
    _until(lambda: len(log) >= 2, "the dialogue runs once the checked case ends")
    assert log == ["checked", "dialogue"]
    rest.set()
    for thread in (dialogue, latecomer):
        thread.join(5)
    assert log == ["checked", "dialogue", "late"]


def test_a_dialogue_on_a_budget_of_one_takes_the_whole_budget() -> None:
    """Never more than there is (so it runs: test_judge_frontiercs runs a real dialogue on one
    worker), and nothing else runs beside it."""
    budget = WorkerBudget(1)
    log: list[str] = []
    first, rest = threading.Event(), threading.Event()
    dialogue = _hold(budget, 2, log, "dialogue", first)
    _until(lambda: log == ["dialogue"], "the dialogue holds the one unit")
    checked = _hold(budget, 1, log, "checked", rest)
    _until(lambda: budget.waiting == 1, "the checked case is queued behind it")
    assert log == ["dialogue"]
    first.set()
    dialogue.join(5)
    _until(lambda: log == ["dialogue", "checked"], "the checked case runs once it ends")
    rest.set()
    checked.join(5)
    with pytest.raises(ValueError, match="at least one unit"):
        WorkerBudget(0)

"""The judge's worker budget: a dialogue holds two units, and waiters are served in order."""

from __future__ import annotations

import threading
import time

import pytest

from atoll.judge.worker_budget import WorkerBudget


def _hold(
    budget: WorkerBudget, units: int, log: list[str], name: str, release: threading.Event
) -> threading.Thread:
    def run() -> None:
        with budget.held(units):
            log.append(name)
            release.wait(5)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread


def _settle() -> None:
    time.sleep(0.1)


def test_units_are_shared_up_to_the_budget() -> None:
    budget = WorkerBudget(4)
    log: list[str] = []
    release = threading.Event()
    threads = [_hold(budget, 1, log, f"checked-{i}", release) for i in range(4)]
    _settle()
    assert sorted(log) == [f"checked-{i}" for i in range(4)]  # four one-unit cases at once
    release.set()
    for thread in threads:
        thread.join(5)


def test_two_dialogues_fill_four_units_and_a_third_waits() -> None:
    budget = WorkerBudget(4)
    log: list[str] = []
    first, later = threading.Event(), threading.Event()
    held = [_hold(budget, 2, log, name, first) for name in ("a", "b")]
    _settle()
    waiting = _hold(budget, 2, log, "c", later)
    _settle()
    assert log == ["a", "b"]
    first.set()
    for thread in held:
        thread.join(5)
    _settle()
    assert log == ["a", "b", "c"]
    later.set()
    waiting.join(5)


def test_a_waiting_dialogue_is_not_overtaken_by_later_single_units() -> None:
    budget = WorkerBudget(2)
    log: list[str] = []
    first, rest = threading.Event(), threading.Event()
    holder = _hold(budget, 1, log, "checked", first)
    _settle()
    dialogue = _hold(budget, 2, log, "dialogue", rest)
    _settle()
    latecomer = _hold(
        budget, 1, log, "late", rest
    )  # one unit is free, but the dialogue asked first
    _settle()
    assert log == ["checked"]
    first.set()
    holder.join(5)
    _settle()
    assert log == ["checked", "dialogue"]
    rest.set()
    for thread in (dialogue, latecomer):
        thread.join(5)
    assert log == ["checked", "dialogue", "late"]


def test_one_worker_still_runs_a_dialogue() -> None:
    budget = WorkerBudget(1)
    with budget.held(2):  # a dialogue takes the whole budget, never more than there is
        pass
    with pytest.raises(ValueError, match="at least one unit"):
        WorkerBudget(0)

"""The sandboxes a submission's cases run in, readied while the judge is idle and while its
program compiles."""

from __future__ import annotations

import contextlib
import math
import time
from collections.abc import Iterator
from pathlib import Path

from atoll.core.sandbox import SessionPool, cgroupfs, get_backend
from atoll.core.sandbox.bwrap_session import MAX_PREPARED, spare_groups
from atoll.judge.engine import PROGRAM_BOX, PROGRAM_SLOTS, TOOL_BOX, TOOL_SLOTS, Engine
from atoll.judge.problems import Problem
from atoll.judge.warming import EXTRA_SHARE, REFILL_DELAY_S, REFILL_STEP, Warming


def _run_groups(dirs: set[str]) -> set[str]:
    """One directory per run's cgroup: its memory one on cgroup v1 (never shared by runs)."""
    return dirs if cgroupfs.unified() else {d for d in dirs if "/memory/" in d}


@contextlib.contextmanager
def _warming() -> Iterator[Warming]:
    """Warming over a program and a tool session pool of their own, two workers; all
    closed on exit, the warming first (as the engine closes them)."""
    backend = get_backend("bwrap")
    programs = SessionPool(backend, PROGRAM_BOX, PROGRAM_SLOTS)
    tools = SessionPool(backend, TOOL_BOX, TOOL_SLOTS)
    warming = Warming(programs, tools, workers=2)
    try:
        yield warming
    finally:
        warming.close()
        programs.close()
        tools.close()


def _share(problem: Problem) -> int:
    """The runs each of two sessions readies for `problem`."""
    return min(MAX_PREPARED, math.ceil(EXTRA_SHARE * len(problem.cases) / 2))


def test_each_session_readies_more_than_an_even_share_of_the_cases(problem0: Problem) -> None:
    """The workers do not share the cases evenly: each session readies a quarter more than
    its share (up to what a session holds), so that none makes a run among the cases."""
    before = spare_groups()
    with _warming() as warming:
        warming.wait(warming.start(problem0))
        ready = _run_groups(spare_groups() - before)
        assert _share(problem0) > len(problem0.cases) / 2
        assert len(ready) == 2 * _share(problem0), (len(ready), _share(problem0))
    assert not any(_run_groups(spare_groups()) & ready)


def _waiting(groups: set[str], expected: int, timeout_s: float = 10.0) -> set[str]:
    """Those of `groups` with a process in them (a prepared run waits in its group; a
    finished run's is empty), once `expected` are, or `timeout_s` has passed: a prepared
    run joins its group as it starts."""
    deadline = time.monotonic() + timeout_s
    while True:
        waiting = {g for g in groups if (Path(g) / "cgroup.procs").read_text().strip()}
        if len(waiting) >= expected or time.monotonic() > deadline:
            return waiting
        time.sleep(0.02)


def test_an_idle_judge_readies_the_runs_of_the_next_submission(
    problem0: Problem, state_dir: Path, sources: dict[str, bytes]
) -> None:
    """After a verdict, once idle, the judge removes the finished runs' cgroups and readies
    as many runs as warming would, for the next submission's compile to find them ready."""
    before = spare_groups()
    engine = Engine({"0": problem0}, state_dir, workers=2)
    try:
        assert engine.judge("0", sources["shelf"])["status"] == "done"
        assert engine.wait_idle(30)
        held = _run_groups(spare_groups() - before)
        share = _share(problem0)
        # Each session's share of runs ready to start (and the compiler's next run); of the
        # 70 finished runs, none is left. What is left empty is the compiler session's: its
        # two finished runs (the limits check's, the compile's) and its next run, which may
        # not have joined its group yet.
        waiting = _waiting(held, 2 * share)
        assert 2 * share <= len(waiting) < 2 * share + 3, (len(waiting), share)
        assert len(held - waiting) <= 3, len(held - waiting)
    finally:
        engine.close()
    assert not _run_groups(spare_groups()) & held


def test_a_submission_arriving_stops_the_refill(problem0: Problem) -> None:
    """A refill waits a moment after the verdict and gives up as the next submission
    arrives: a resubmission sent straight away does not wait for it."""
    before = spare_groups()
    with _warming() as warming:
        with warming.judging(refill=problem0):
            pass
        with warming.judging():  # the next one, at once, held past the refill's delay
            time.sleep(4 * REFILL_DELAY_S)
        assert warming.wait_idle(10)
        # Nothing, or the few runs of the one step begun before the arrival.
        assert len(_run_groups(spare_groups() - before)) <= 2 * REFILL_STEP
        with warming.judging(refill=problem0):
            pass
        assert warming.wait_idle(10)
        assert len(_run_groups(spare_groups() - before)) == 2 * _share(problem0)
    assert get_backend("bwrap").leftovers() == []


def test_closing_the_judge_stops_a_refill_under_way(problem0: Problem) -> None:
    """Closed while it refills, the judge's sessions close with nothing left behind."""
    before = spare_groups()
    with _warming() as warming:
        with warming.judging(refill=problem0):
            pass
        deadline = time.monotonic() + 10
        while not _run_groups(spare_groups() - before) and time.monotonic() < deadline:
            time.sleep(0.002)  # until the refill has begun
    assert warming.wait_idle(1)
    assert not _run_groups(spare_groups() - before)
    assert get_backend("bwrap").leftovers() == []

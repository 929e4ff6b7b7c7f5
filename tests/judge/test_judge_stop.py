"""A judge that stops waits for the cases running, not for the rest of their submission.

Harbor cancels a Guidance-TTT trial, and SIGTERM stops `atoll judge serve`,
while a submission is being judged; waiting for its every case made a stop
take as long as the whole judging. What the stop interrupts is put back in
the queue uncounted (an orderly stop is no crash) and judged in full by the
next start.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from judge_problem_sets import make_problem_set
from support.waiting import wait_for

from atoll.judge.engine import Engine
from atoll.judge.problems import load_problems
from atoll.judge.service import JudgeService
from atoll.judge.store import State, Store

pytestmark = [pytest.mark.slow, pytest.mark.timeout(300)]

#: Eight copies of the smallest case of problem 0: the sleeper meets the wall clock on each.
CASES = [21] * 8


def _service(problems: Path, state: Path) -> JudgeService:
    engine = Engine(load_problems(problems), state, workers=2)
    return JudgeService(engine, Store(state / "judge.sqlite"))


def test_a_stop_mid_judging_waits_for_running_cases_and_the_next_start_judges_it_all(
    tmp_path: Path, sources: dict[str, bytes]
) -> None:
    problems = make_problem_set(tmp_path / "problems", CASES)
    state = tmp_path / "state"
    service = _service(problems, state)
    service.start()
    sid = service.submit("0", "cpp", sources["sleeper"])
    store = service.store
    wait_for(lambda: store.get(sid).state is State.RUNNING, 120, "the submission never started")
    # Past the compile, into the first cases (each waits out its wall clock).
    wait_for(lambda: service.engine.compile_cache.cached(sources["sleeper"]), 120, "no compile")
    time.sleep(0.5)
    wall_per_case = load_problems(problems)["0"].cases[0].limits.wall_seconds
    stopping = time.monotonic()
    service.close()
    stopped_in = time.monotonic() - stopping
    all_cases = wall_per_case * len(CASES) / 2  # two workers
    assert stopped_in < all_cases / 2, (stopped_in, all_cases)

    later = Store(state / "judge.sqlite")
    left = later.get(sid)
    assert left is not None and left.state is State.QUEUED and left.attempts == 0
    assert left.result is None
    later.close()

    again = _service(problems, state)
    again.start()
    try:
        wait_for(lambda: again.store.get(sid).state is State.FINAL, 240, "never judged again")
        result = again.store.get(sid).result
    finally:
        again.close()
    assert result is not None and result["status"] == "done"
    assert [case["status"] for case in result["cases"]] == ["wall_time_limit"] * len(CASES)

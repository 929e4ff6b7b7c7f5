"""Cases judged one after another in one sandbox session: nothing of a case reaches the next.

With one worker, the two cases of the small problem set run in the same
session, case 1 first. Each program below tries to reach case 2 from case 1
(a file, a daemon, a limit crossed) and refuses to answer, or cannot, where
it did: both cases score what the single-row packer scores, or case 1 shows
its limit and case 2 is untouched by it.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from support.judge_reference import row_ratio

from atoll.judge.engine import Engine
from atoll.judge.problems import Problem, load_problems

pytestmark = pytest.mark.timeout(300)


@pytest.fixture(scope="module")
def one_worker(state_dir: Path, small_problems: Path) -> Iterator[Engine]:
    engine = Engine(load_problems(small_problems), state_dir, workers=1)
    yield engine
    engine.close()


@pytest.fixture(scope="module")
def row_ratios(problem0: Problem) -> list[float]:
    return [row_ratio(problem0.case_input(i).decode()) for i in (20, 12)]


def test_a_file_left_by_a_case_is_not_seen_by_the_next(
    one_worker: Engine, sources: dict[str, bytes], row_ratios: list[float]
) -> None:
    result = one_worker.judge("0", sources["case_marker"])
    assert [c["status"] for c in result["cases"]] == ["ok", "ok"], result["cases"]
    assert [c["scoreRatio"] for c in result["cases"]] == pytest.approx(row_ratios, abs=1e-6)


def test_a_daemon_left_by_a_case_dies_with_it(
    one_worker: Engine, sources: dict[str, bytes], row_ratios: list[float]
) -> None:
    """Its daemon would flood case 1's stdout 300 ms on, and be seen in case 2's /proc."""
    result = one_worker.judge("0", sources["case_daemon"])
    assert [c["status"] for c in result["cases"]] == ["ok", "ok"], result["cases"]
    assert [c["scoreRatio"] for c in result["cases"]] == pytest.approx(row_ratios, abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize(
    ("limit", "first"),
    [(0, "memory_limit"), (1, "cpu_time_limit"), (2, "ok")],
    ids=["memory", "cpu", "processes"],
)
def test_a_limit_crossed_in_a_case_leaves_the_next_its_whole_budget(
    limit: int,
    first: str,
    one_worker: Engine,
    sources: dict[str, bytes],
    row_ratios: list[float],
) -> None:
    """Case 2 forks 120 children and touches 200 MiB, within its own limits only."""
    source = f"#define LIMIT {limit}\n".encode() + sources["limit_then_row"]
    result = one_worker.judge("0", source)
    cases = result["cases"]
    if first == "cpu_time_limit":  # a machine too busy to give it half a core: the wall clock
        assert cases[0]["status"] in ("cpu_time_limit", "wall_time_limit"), cases
    else:
        assert cases[0]["status"] == first, cases
    assert cases[1]["status"] == "ok", cases
    assert cases[1]["scoreRatio"] == pytest.approx(row_ratios[1], abs=1e-6)
    assert cases[1]["time"] < 1.5e9  # its own CPU time, not the spinner's
    assert cases[1]["memory"] >= 200 * 2**20

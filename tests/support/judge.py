"""A small embedded FrontierCS judge for tests: problem 0 cut down to two small cases."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

from atoll.judge.embedded import EmbeddedJudge, JudgeSetup
from atoll.judge.problems import BUILTIN_PROBLEMS

JUDGE_PROGRAMS = Path(__file__).parents[1] / "judge" / "programs"


@contextmanager
def small_judge(root: Path, cases: tuple[int, ...] = (1, 2)) -> Iterator[str]:
    """Run the real embedded judge on a copy of problem 0 holding only `cases`; yields its URL."""
    problem = root / "problems" / "0"
    (problem / "testdata").mkdir(parents=True)
    for name in ("problem.toml", "statement.txt", "LICENSE"):
        shutil.copy(BUILTIN_PROBLEMS / "0" / name, problem / name)
    for number, case in enumerate(cases, start=1):
        source = BUILTIN_PROBLEMS / "0" / "testdata" / f"{case}.in"
        shutil.copy(source, problem / "testdata" / f"{number}.in")
    setup = JudgeSetup(problems_dir=root / "problems", state_dir=root / "state", workers=2)
    with EmbeddedJudge(setup) as embedded, shared(embedded):
        yield embedded.url


class Idles(Protocol):
    def wait_idle(self, timeout_s: float) -> bool: ...


#: The judges kept open across tests in this process (see `shared`).
_open: list[Idles] = []


@contextmanager
def shared[J: Idles](judge: J) -> Iterator[J]:
    """`judge` (an engine or an embedded judge) open across tests: after each test it is
    waited idle (`wait_for_open_judges`), since a judge readies sandboxes for its next
    submission in the background after a verdict, and a test counting this process's
    cgroups must count its own alone."""
    _open.append(judge)
    try:
        yield judge
    finally:
        _open.remove(judge)


def wait_for_open_judges(timeout_s: float = 30.0) -> None:
    """Until every judge open across tests has nothing under way."""
    for judge in list(_open):
        if not judge.wait_idle(timeout_s):
            raise AssertionError(f"{judge!r} was still busy after {timeout_s} s")

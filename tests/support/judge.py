"""A small embedded FrontierCS judge for tests: problem 0 cut down to two small cases."""

from __future__ import annotations

import shutil
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

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
    with EmbeddedJudge(setup) as embedded:
        yield embedded.url

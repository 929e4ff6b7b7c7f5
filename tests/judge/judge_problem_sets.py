"""Small copies of problem 0, so that a test judges two cases rather than seventy."""

from __future__ import annotations

import shutil
from pathlib import Path

from atoll.judge.problems import BUILTIN_PROBLEMS


def make_problem_set(root: Path, cases: list[int]) -> Path:
    """A copy of problem 0 holding only `cases` (renumbered 1..k) under `root`."""
    source = BUILTIN_PROBLEMS / "0"
    target = root / "0"
    (target / "testdata").mkdir(parents=True)
    for name in ("problem.toml", "statement.txt", "LICENSE"):
        shutil.copy(source / name, target / name)
    for number, case in enumerate(cases, start=1):
        shutil.copy(source / "testdata" / f"{case}.in", target / "testdata" / f"{number}.in")
    return root

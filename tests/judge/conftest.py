"""Fixtures of the judge tests: test programs compiled once, small problem sets, engines.

Programs are compiled once per session twice over: by plain g++ (to run them
outside the judge and check their outputs independently) and by the judge's
own compile cache, which every test shares through one session state dir.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from judge_problem_sets import make_problem_set
from support.judge import shared

from atoll.judge.compiler import FLAGS
from atoll.judge.embedded import EmbeddedJudge, JudgeSetup
from atoll.judge.engine import Engine
from atoll.judge.problems import Problem, load_problems

PROGRAMS = Path(__file__).parent / "programs"


@pytest.fixture(scope="session")
def sources() -> dict[str, bytes]:
    return {path.stem: path.read_bytes() for path in sorted(PROGRAMS.glob("*.cpp"))}


@pytest.fixture(scope="session")
def binaries(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """Well-behaved test programs built with plain g++, to be run outside the judge."""
    out = tmp_path_factory.mktemp("plain-binaries")
    built = {}
    for name in ("row", "shelf", "turn", "search", "row_seek", "row_mmap"):
        target = out / name
        subprocess.run(
            ["g++", *FLAGS, str(PROGRAMS / f"{name}.cpp"), "-o", str(target)], check=True
        )
        built[name] = target
    return built


@pytest.fixture(scope="session")
def problem0() -> Problem:
    return load_problems()["0"]


@pytest.fixture(scope="session")
def state_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("judge-state")


@pytest.fixture(scope="session")
def small_problems(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Problem 0 with two cases: a median one (n = 160) and the largest (62,017 cells)."""
    return make_problem_set(tmp_path_factory.mktemp("problems-small"), [21, 13])


@pytest.fixture(scope="session")
def full_engine(state_dir: Path) -> Iterator[Engine]:
    with shared(Engine(load_problems(), state_dir)) as engine:
        yield engine
    engine.close()


@pytest.fixture(scope="session")
def small_engine(state_dir: Path, small_problems: Path) -> Iterator[Engine]:
    with shared(Engine(load_problems(small_problems), state_dir)) as engine:
        yield engine
    engine.close()


@pytest.fixture(scope="session")
def small_judge(state_dir: Path, small_problems: Path) -> Iterator[EmbeddedJudge]:
    """An embedded judge over HTTP on the two-case problem set."""
    setup = JudgeSetup(problems_dir=small_problems, state_dir=state_dir)
    with EmbeddedJudge(setup) as judge, shared(judge):
        yield judge

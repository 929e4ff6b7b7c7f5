"""Fixtures for the grader: a fresh copy of a tiny task, submissions, and a leftover audit."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from support.processes import files_of_uid, processes_of_uid

from atoll.checker import GradeReport, grade_task
from atoll.checker.grader import SHARED_WRITABLE

TASKS = Path(__file__).parent / "tasks"


@pytest.fixture
def toy() -> Iterator[Path]:
    """A copy of the toy task (three instances; the score is the number printed).

    It sits where any user could reach it (pytest's own temporary directory is
    private to root), so that only the grader's locks keep a submission out.
    """
    base = Path(tempfile.mkdtemp(prefix="atoll-checker-test-", dir="/tmp"))
    try:
        base.chmod(0o755)
        destination = base / "toy"
        shutil.copytree(TASKS / "toy", destination)
        yield destination
    finally:
        shutil.rmtree(base, ignore_errors=True)


@pytest.fixture
def program(tmp_path: Path) -> Callable[[str], Path]:
    """Write a submission's source to a file and return its path."""
    counter = iter(range(1_000_000))

    def write(source: str) -> Path:
        path = tmp_path / f"submission-{next(counter)}.py"
        path.write_text(source)
        return path

    return write


@pytest.fixture
def graded(toy: Path, program: Callable[[str], Path]) -> Callable[[str], GradeReport]:
    """Grade a submission's source on the toy task; check nothing of it is left afterwards."""

    def run(source: str) -> GradeReport:
        report = grade_task(toy, program(source), out_dir=toy / "out")
        uid = report.isolation.get("uid")
        if uid is not None:
            assert processes_of_uid(uid) == [], "the submission left processes running"
            assert files_of_uid(uid, SHARED_WRITABLE) == [], (
                "the submission left files in the shared temp dirs"
            )
        return report

    return run

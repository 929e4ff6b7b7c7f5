"""Problems are directories: a new one needs data and a checker, not judge code."""

from __future__ import annotations

from pathlib import Path

import pytest

from atoll.judge.engine import Engine
from atoll.judge.problems import ProblemError, load_problems

pytestmark = pytest.mark.timeout(120)

CHECKER = """
from atoll.judge.verdict import CaseStatus, CheckResult


def prepare(data: bytes) -> int:
    return int(data)


def check(n: int, output: bytes) -> CheckResult:
    if output.split() == [str(2 * n).encode()]:
        return CheckResult(CaseStatus.OK, 1.0, "Ratio: 1")
    return CheckResult(CaseStatus.WRONG_ANSWER, 0.0, "not twice the input")
"""

DOUBLER = b'#include <cstdio>\nint main(){long long n; scanf("%lld",&n); printf("%lld\\n", 2*n);}\n'


def make_doubling_problem(root: Path) -> Path:
    problem = root / "double"
    (problem / "tests").mkdir(parents=True)
    (problem / "problem.toml").write_text(
        'id = "double"\ntitle = "Double it"\nstatement = "statement.md"\ntests = "tests"\n'
        'checker = "check.py"\ncpu_seconds = 1.0\nwall_seconds = 2.0\nmemory_mib = 64\n'
    )
    (problem / "statement.md").write_text("Print twice the input.\n")
    (problem / "check.py").write_text(CHECKER)
    for i, value in enumerate((3, 10, 21), start=1):
        (problem / "tests" / f"{i}.in").write_text(f"{value}\n")
    return root


def test_a_problem_with_its_own_checker_file(tmp_path: Path, state_dir: Path) -> None:
    problems = load_problems(make_doubling_problem(tmp_path / "problems"))
    assert list(problems) == ["double"]
    assert problems["double"].limits.memory_bytes == 64 * 2**20
    engine = Engine(problems, state_dir)
    try:
        good = engine.judge("double", DOUBLER)
        bad = engine.judge("double", DOUBLER.replace(b"2*n", b"3*n"))
    finally:
        engine.close()
    assert good["score"] == 100.0 and good["passed"] is True
    assert bad["score"] == 0.0 and {c["status"] for c in bad["cases"]} == {"wrong_answer"}


@pytest.mark.parametrize(
    ("edit", "needle"),
    [
        (lambda p: (p / "problem.toml").write_text("id = [\n"), "not valid TOML"),
        (lambda p: (p / "check.py").unlink(), "is missing"),
        (lambda p: (p / "check.py").write_text("raise RuntimeError('boom')\n"), "fails to load"),
        (lambda p: [f.unlink() for f in (p / "tests").iterdir()], "no test inputs"),
    ],
)
def test_broken_problem_directories_are_named(tmp_path: Path, edit, needle: str) -> None:
    root = make_doubling_problem(tmp_path / "problems")
    edit(root / "double")
    with pytest.raises(ProblemError, match=needle):
        load_problems(root)

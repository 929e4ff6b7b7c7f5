"""`atoll judge score` for people iterating by hand."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest
from support.judge_reference import row_ratio

from atoll.judge.problems import Problem

pytestmark = pytest.mark.timeout(120)

PROGRAMS = Path(__file__).parent / "programs"


def score(venv_bin: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(venv_bin / "atoll"), "judge", "score", *args],
        capture_output=True,
        text=True,
        timeout=120,
        env={"PATH": "/usr/bin:/bin", "COLUMNS": "160"},
    )


@pytest.mark.slow
def test_prints_each_case_and_the_total(
    venv_bin: Path, small_problems: Path, state_dir: Path, problem0: Problem
) -> None:
    done = score(
        venv_bin, str(PROGRAMS / "row.cpp"), "--problem", "0",
        "--problems", str(small_problems), "--state-dir", str(state_dir),
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    expected = [row_ratio(problem0.case_input(i).decode()) for i in (20, 12)]
    for number, ratio in enumerate(expected, start=1):
        assert re.search(rf"│\s+{number} │ ok\s+│ {ratio:.9f} │", done.stdout)
    total = float(re.search(r"Score: ([0-9.]+)", done.stdout).group(1))
    assert total == pytest.approx(50 * sum(expected), abs=1e-6)


@pytest.mark.slow
def test_compile_error_exits_1(venv_bin: Path, small_problems: Path, state_dir: Path) -> None:
    done = score(
        venv_bin, str(PROGRAMS / "broken.cpp"),
        "--problems", str(small_problems), "--state-dir", str(state_dir),
    )  # fmt: skip
    assert done.returncode == 1
    assert "undefined_symbol" in done.stdout and "Score: 0" in done.stdout


@pytest.mark.slow
@pytest.mark.parametrize(
    ("args", "needle"),
    [(["missing.cpp"], "cannot read missing.cpp"), (["--problem", "5"], "unknown problem '5'")],
)
def test_bad_input_is_one_clear_line(
    args: list[str], needle: str, venv_bin: Path, small_problems: Path, state_dir: Path
) -> None:
    if args[0] == "--problem":
        args = [str(PROGRAMS / "row.cpp"), *args]
    done = score(venv_bin, *args, "--problems", str(small_problems), "--state-dir", str(state_dir))
    assert done.returncode == 2
    assert needle in done.stderr
    assert "Traceback" not in done.stderr and len(done.stderr.strip().splitlines()) == 1

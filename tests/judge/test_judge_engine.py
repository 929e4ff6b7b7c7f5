"""Judging real programs end to end (compile, sandbox, check), against independent answers."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from judge_problem_sets import make_problem_set
from support.engine import docker_engine
from support.judge_reference import ratio as reference_ratio
from support.judge_reference import row_ratio

from atoll.judge.engine import Engine
from atoll.judge.problems import Problem, load_problems

pytestmark = pytest.mark.timeout(300)


@pytest.mark.slow
def test_single_row_packer_scores_the_authoritys_27_8105(
    full_engine: Engine, sources: dict[str, bytes], problem0: Problem
) -> None:
    result = full_engine.judge("0", sources["row"])
    assert result["status"] == "done"
    assert result["score"] == pytest.approx(27.810517627, abs=1e-4)
    assert len(result["cases"]) == 70
    for index, case in enumerate(result["cases"]):
        expected = row_ratio(problem0.case_input(index).decode())
        assert case["status"] == "ok"
        assert case["scoreRatio"] == pytest.approx(expected, abs=1e-6)
    assert result["passed"] is False


@pytest.mark.slow
@pytest.mark.parametrize("program", ["shelf", "turn"])
def test_per_case_ratios_match_an_independent_checker(
    program: str,
    full_engine: Engine,
    sources: dict[str, bytes],
    binaries: dict[str, Path],
    problem0: Problem,
) -> None:
    result = full_engine.judge("0", sources[program])
    assert result["status"] == "done"
    expected = []
    for index in range(70):
        data = problem0.case_input(index)
        out = subprocess.run([binaries[program]], input=data, capture_output=True, check=True)
        expected.append(reference_ratio(data.decode(), out.stdout.decode()))
    assert all(r > 0 for r in expected)  # every case valid: a real test of the geometry
    got = [case["scoreRatio"] for case in result["cases"]]
    assert got == pytest.approx(expected, abs=1e-6)
    assert result["score"] == pytest.approx(100 * sum(expected) / 70, abs=1e-4)


def test_resubmission_skips_the_compile(small_engine: Engine, sources: dict[str, bytes]) -> None:
    source = sources["row"] + b"\n// resubmitted\n"
    first = small_engine.judge("0", source)
    second = small_engine.judge("0", source)
    assert first["judge"]["compileCached"] is False
    assert second["judge"]["compileCached"] is True
    assert second["judge"]["compileSeconds"] == 0.0
    assert second["score"] == first["score"] > 0


def test_compile_error_is_an_invalid_submission(
    small_engine: Engine, sources: dict[str, bytes]
) -> None:
    result = small_engine.judge("0", sources["broken"])
    assert result["status"] == "error"
    assert "undefined_symbol" in result["error"]


def test_compiler_cannot_read_host_files(small_engine: Engine, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("int leaked = 424242;\n")
    source = f'#include "{secret}"\nint main() {{ return leaked; }}\n'.encode()
    result = small_engine.judge("0", source)
    assert result["status"] == "error"
    assert "No such file" in result["error"]
    assert "424242" not in result["error"]


@pytest.mark.parametrize(
    ("program", "status"),
    [
        ("crash_ratio", "runtime_error"),
        ("sleeper", "wall_time_limit"),
        ("hog", "memory_limit"),
        ("reserve", "memory_limit"),
        ("flood", "output_limit"),
        ("leading_zero", "presentation_error"),
    ],
)
@pytest.mark.slow
def test_failing_programs_get_zero_with_a_distinct_status(
    program: str, status: str, small_engine: Engine, sources: dict[str, bytes]
) -> None:
    result = small_engine.judge("0", sources[program])
    assert result["status"] == "done"
    assert [case["status"] for case in result["cases"]] == [status, status]
    assert [case["scoreRatio"] for case in result["cases"]] == [0.0, 0.0]
    assert result["score"] == 0.0
    if status == "wall_time_limit":
        assert all(3.9e9 <= case["wallTime"] <= 15e9 for case in result["cases"])
        assert all(case["time"] < 0.5e9 for case in result["cases"])


@pytest.mark.slow
def test_limits_are_the_authoritys(small_engine: Engine, sources: dict[str, bytes]) -> None:
    # A spinning program stops at 2 s of CPU, or at 4 s of wall clock first when
    # other work on the machine leaves it less than half a core.
    result = small_engine.judge("0", sources["spin"])
    assert result["score"] == 0.0
    for case in result["cases"]:
        assert case["status"] in ("cpu_time_limit", "wall_time_limit")
        assert case["time"] <= 3.0e9  # ns
        if case["status"] == "cpu_time_limit":
            assert case["time"] >= 1.5e9  # the reported CPU runs a little short under load
        else:
            assert 3.9e9 <= case["wallTime"] <= 15e9


@pytest.mark.slow
def test_fork_bomb_fails_and_the_judge_keeps_working(
    small_engine: Engine, sources: dict[str, bytes], problem0: Problem
) -> None:
    bomb = small_engine.judge("0", sources["forkbomb"])
    assert bomb["score"] == 0.0
    assert not any(case["ok"] for case in bomb["cases"])
    after = small_engine.judge("0", sources["row"])
    expected = [row_ratio(problem0.case_input(i).decode()) for i in (20, 12)]
    assert [c["scoreRatio"] for c in after["cases"]] == pytest.approx(expected, abs=1e-6)


def test_stack_may_grow_to_the_memory_limit(
    small_engine: Engine, sources: dict[str, bytes], problem0: Problem
) -> None:
    result = small_engine.judge("0", sources["deep_row"])  # recurses ~90 MiB deep first
    expected = [row_ratio(problem0.case_input(i).decode()) for i in (20, 12)]
    assert [c["status"] for c in result["cases"]] == ["ok", "ok"]
    assert [c["scoreRatio"] for c in result["cases"]] == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
def test_stderr_logging_and_blank_padding_are_allowed(
    small_engine: Engine, sources: dict[str, bytes], problem0: Problem
) -> None:
    result = small_engine.judge("0", sources["chatty_row"])
    expected = [row_ratio(problem0.case_input(i).decode()) for i in (20, 12)]
    assert [c["status"] for c in result["cases"]] == ["ok", "ok"]
    assert [c["scoreRatio"] for c in result["cases"]] == pytest.approx(expected, abs=1e-6)


@pytest.mark.slow
@pytest.mark.parametrize("program", ["row_seek", "row_mmap"])
def test_a_program_that_seeks_or_maps_its_stdin_scores_as_with_a_file(
    program: str,
    small_engine: Engine,
    sources: dict[str, bytes],
    binaries: dict[str, Path],
    problem0: Problem,
) -> None:
    """stdin is the case's input as a file, as at the authority: it can be sized, sought, mapped.

    `row_seek` sizes it with seekg/tellg (FrontierCS problem 47's model
    solution does), `row_mmap` with fstat and mmap; on a pipe both fail.
    """
    result = small_engine.judge("0", sources[program])
    expected = []
    for index in (20, 12):  # the small set's cases 1 and 2
        case_input = problem0.cases[index].input
        with case_input.open("rb") as stdin:  # a file, as the authority's memfd is
            out = subprocess.run([binaries[program]], stdin=stdin, capture_output=True, check=True)
        expected.append(reference_ratio(case_input.read_text(), out.stdout.decode()))
    assert expected == pytest.approx(
        [row_ratio(problem0.case_input(i).decode()) for i in (20, 12)], abs=1e-9
    )
    assert [c["status"] for c in result["cases"]] == ["ok", "ok"], result["cases"]
    assert [c["scoreRatio"] for c in result["cases"]] == pytest.approx(expected, abs=1e-6)
    assert result["score"] == pytest.approx(100 * sum(expected) / 2, abs=1e-4)


@pytest.mark.slow
@pytest.mark.docker
def test_the_docker_backend_gives_the_program_a_file_stdin_too(
    tmp_path: Path, sources: dict[str, bytes], problem0: Problem
) -> None:
    docker_engine()
    problems = load_problems(make_problem_set(tmp_path / "problems", [13]))
    engine = Engine(problems, tmp_path / "state", workers=1, backend="docker")
    try:
        results = [engine.judge("0", sources[name]) for name in ("row_seek", "row_mmap")]
    finally:
        engine.close()
    expected = row_ratio(problem0.case_input(12).decode())
    for result in results:
        assert [c["status"] for c in result["cases"]] == ["ok"], result["cases"]
        assert result["cases"][0]["scoreRatio"] == pytest.approx(expected, abs=1e-6)

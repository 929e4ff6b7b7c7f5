"""Inputs kept in memory: the same bytes as the file, within the byte bound, least recently used out first."""

from __future__ import annotations

from pathlib import Path

from atoll.judge.case_inputs import CaseInputs
from atoll.judge.problems import load_problems


def _files(tmp_path: Path, sizes: dict[str, int]) -> dict[str, Path]:
    paths = {}
    for name, size in sizes.items():
        paths[name] = tmp_path / f"{name}.in"
        paths[name].write_bytes(name[:1].encode() * size)  # `size` bytes
    return paths


def test_a_kept_input_is_not_read_again(tmp_path: Path) -> None:
    paths = _files(tmp_path, {"a": 10})
    inputs = CaseInputs(max_bytes=100, max_one_bytes=100)
    assert inputs.read(paths["a"]) == b"a" * 10
    paths["a"].unlink()  # a second read from the file would fail
    assert inputs.read(paths["a"]) == b"a" * 10
    assert inputs.kept_bytes == 10


def test_the_least_recently_used_input_goes_first(tmp_path: Path) -> None:
    paths = _files(tmp_path, {"a": 40, "b": 40, "c": 40})
    inputs = CaseInputs(max_bytes=100, max_one_bytes=100)
    inputs.read(paths["a"])
    inputs.read(paths["b"])
    inputs.read(paths["a"])  # b is now the least recently used
    inputs.read(paths["c"])
    assert inputs.kept_bytes == 80
    paths["a"].unlink()
    paths["c"].unlink()
    assert inputs.read(paths["a"]) == b"a" * 40
    assert inputs.read(paths["c"]) == b"c" * 40
    paths["b"].write_bytes(b"changed")  # b was dropped: read from the file again
    assert inputs.read(paths["b"]) == b"changed"


def test_an_input_over_the_single_bound_is_read_each_time(tmp_path: Path) -> None:
    paths = _files(tmp_path, {"big": 60, "small": 5})
    inputs = CaseInputs(max_bytes=100, max_one_bytes=50)
    inputs.read(paths["small"])
    assert inputs.read(paths["big"]) == b"b" * 60
    assert inputs.kept_bytes == 5
    paths["big"].write_bytes(b"new")
    assert inputs.read(paths["big"]) == b"new"


def test_problem_inputs_equal_their_files() -> None:
    problem = load_problems()["0"]
    for index in (0, len(problem.cases) - 1):
        assert problem.case_input(index) == problem.cases[index].input.read_bytes()
        assert problem.case_input(index) == problem.cases[index].input.read_bytes()

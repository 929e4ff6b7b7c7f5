"""C++ submissions: compiled once per grading with the judge's flags, then run per instance."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest
from support import ci
from support.processes import files_of_uid, processes_of_uid

from atoll.checker import CheckerError, Contract, GradeReport, grade_task
from atoll.checker.grader import SHARED_WRITABLE, Compile, Limits
from atoll.judge.compiler import COMPILE_LIMITS, FLAGS


@pytest.fixture(autouse=True)
def _gxx() -> None:
    ci.gxx_fixture()


GOOD = r"""
#include <iostream>
#include <string>
int main() {
    std::string text((std::istreambuf_iterator<char>(std::cin)), std::istreambuf_iterator<char>());
    auto at = text.find("\"case\":");
    int c = std::stoi(text.substr(at + 7));
    std::cout << "{\"x\": " << (0.2 + c / 10.0) << "}" << std::endl;
}
"""


def judge_compile() -> dict:
    limits = {
        name: getattr(COMPILE_LIMITS, name)
        for name in (
            "cpu_seconds",
            "wall_seconds",
            "memory_bytes",
            "processes",
            "open_files",
            "file_size_bytes",
            "stdout_bytes",
            "stderr_bytes",
        )
    }
    return {"flags": list(FLAGS), "limits": limits}


@pytest.fixture
def cpp_toy(toy: Path) -> Path:
    path = toy / "tests" / "contract.json"
    contract = json.loads(path.read_text())
    path.write_text(json.dumps(contract | {"language": "cpp", "compile": judge_compile()}))
    return toy


@pytest.fixture
def graded_cpp(cpp_toy: Path, tmp_path: Path) -> Callable[[str], GradeReport]:
    def run(source: str) -> GradeReport:
        submission = tmp_path / "solution.cpp"
        submission.write_text(source)
        report = grade_task(cpp_toy, submission, out_dir=cpp_toy / "out")
        uid = report.isolation["uid"]  # neither the compiler nor the program left anything
        assert processes_of_uid(uid) == [] and files_of_uid(uid, SHARED_WRITABLE) == []
        return report

    return run


@pytest.mark.slow
def test_a_cpp_submission_is_compiled_once_and_run_per_instance(graded_cpp):
    report = graded_cpp(GOOD)
    assert report.statuses == ["ok"] * 3
    assert report.scores == pytest.approx([0.2, 0.3, 0.4])
    assert report.isolation["compiler"].endswith("g++")
    assert report.isolation["compile_seconds"] > 0
    assert report.contract["compile"]["flags"] == list(FLAGS)


@pytest.mark.slow
def test_a_cpp_submission_that_does_not_compile_scores_zero_with_the_compilers_message(
    graded_cpp,
):
    report = graded_cpp("int main() { return undefined_name; }\n")
    assert report.reward == 0.0
    assert report.statuses == ["crash"] * 3
    detail = report.cases[0].detail
    assert detail.startswith("compilation failed:")
    assert "undefined_name" in detail and len(detail) < 2100


def test_contract_language_and_compile_are_validated():
    base = {"schema": "atoll.checker.contract/1", "seed": 1, "check_seeds": [1, 2, 3]}
    python = Contract.from_json(base)
    assert python.language == "python" and python.submission_name == "solution.py"
    assert "language" not in python.to_json()  # a Python contract reads as before
    cpp = Contract.from_json(base | {"language": "cpp", "compile": judge_compile()})
    assert cpp.submission_name == "solution.cpp"
    assert cpp.compile == Compile(FLAGS, Limits(**judge_compile()["limits"]))
    assert Contract.from_json(cpp.to_json()) == cpp
    bad = [
        base | {"language": "cpp"},
        base | {"language": "rust", "compile": judge_compile()},
        base | {"compile": judge_compile()},
        base | {"language": "cpp", "compile": judge_compile() | {"flags": []}},
        base | {"language": "cpp", "compile": judge_compile() | {"flags": ["-o/etc/x"]}},
        base | {"language": "cpp", "compile": {"flags": ["-O2"]}},
    ]
    for data in bad:
        with pytest.raises(CheckerError):
            Contract.from_json(data)
